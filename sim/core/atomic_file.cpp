#include "sim/core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "sim/core/error.h"

namespace adaptsim {
namespace {

// A hidden sibling of `path`, unique per process and file of the group; the target's name is cut
// so that the temporary's stays within NAME_MAX whatever the target's length. (Built by
// appending: GCC 12 warns falsely (-Wrestrict, bug 105651) on a string literal + std::string.)
std::filesystem::path temporary_for(const std::filesystem::path& path, std::size_t index) {
  std::string name(1, '.');
  name.append(path.filename().string().substr(0, 100))
      .append(".tmp.")
      .append(std::to_string(::getpid()))
      .append(".")
      .append(std::to_string(index));
  return path.parent_path() / name;
}

void write_whole(const std::filesystem::path& tmp, const std::filesystem::path& path,
                 const std::vector<std::string_view>& parts) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw RuntimeFailure(path.string() + ": cannot write (" + std::strerror(errno) + ")");
  for (std::string_view part : parts)
    out.write(part.data(), static_cast<std::streamsize>(part.size()));
  out.flush();
  if (!out) throw RuntimeFailure(path.string() + ": write failed (" + std::strerror(errno) + ")");
}

// The group's files, each as its parts, written and renamed all or none (see the header).
void write_all(const std::vector<std::filesystem::path>& paths,
               const std::vector<std::vector<std::string_view>>& contents) {
  std::vector<std::filesystem::path> temporaries;
  std::size_t renamed = 0;
  const auto clean_up = [&] {
    std::error_code ec;
    for (std::size_t i = 0; i < temporaries.size(); ++i)
      std::filesystem::remove(i < renamed ? paths[i] : temporaries[i], ec);
  };
  try {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      const std::filesystem::path& path = paths[i];
      if (path.filename().empty() || path.filename() == "." || path.filename() == "..") {
        throw RuntimeFailure(path.string() + ": not a file name");
      }
      temporaries.push_back(temporary_for(path, i));
      write_whole(temporaries.back(), path, contents[i]);
    }
    for (; renamed < paths.size(); ++renamed) {
      std::error_code ec;
      std::filesystem::rename(temporaries[renamed], paths[renamed], ec);
      if (ec) {
        throw RuntimeFailure(paths[renamed].string() +
                             ": cannot rename the temporary file: " + ec.message());
      }
    }
  } catch (...) {
    clean_up();
    throw;
  }
}

}  // namespace

void write_files_atomic(const std::vector<OutputFile>& files) {
  std::vector<std::filesystem::path> paths;
  std::vector<std::vector<std::string_view>> contents;
  for (const OutputFile& f : files) {
    paths.push_back(f.path);
    contents.push_back({f.content});
  }
  write_all(paths, contents);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  write_all({path}, {{content}});
}

void write_file_atomic(const std::filesystem::path& path,
                       const std::vector<std::string_view>& parts) {
  write_all({path}, {parts});
}

}  // namespace adaptsim
