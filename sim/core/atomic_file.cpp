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
                 std::string_view content) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw RuntimeFailure(path.string() + ": cannot write (" + std::strerror(errno) + ")");
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) throw RuntimeFailure(path.string() + ": write failed (" + std::strerror(errno) + ")");
}

}  // namespace

void write_files_atomic(const std::vector<OutputFile>& files) {
  std::vector<std::filesystem::path> temporaries;
  std::size_t renamed = 0;
  const auto clean_up = [&] {
    std::error_code ec;
    for (std::size_t i = 0; i < temporaries.size(); ++i)
      std::filesystem::remove(i < renamed ? files[i].path : temporaries[i], ec);
  };
  try {
    for (std::size_t i = 0; i < files.size(); ++i) {
      const OutputFile& f = files[i];
      if (f.path.filename().empty() || f.path.filename() == "." || f.path.filename() == "..") {
        throw RuntimeFailure(f.path.string() + ": not a file name");
      }
      temporaries.push_back(temporary_for(f.path, i));
      write_whole(temporaries.back(), f.path, f.content);
    }
    for (; renamed < files.size(); ++renamed) {
      std::error_code ec;
      std::filesystem::rename(temporaries[renamed], files[renamed].path, ec);
      if (ec) {
        throw RuntimeFailure(files[renamed].path.string() +
                             ": cannot rename the temporary file: " + ec.message());
      }
    }
  } catch (...) {
    clean_up();
    throw;
  }
}

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  write_files_atomic({{path, std::string(content)}});
}

}  // namespace adaptsim
