#include "sim/io/output.h"

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "sim/core/error.h"

namespace adaptsim::io {

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

void CsvTable::add_row(std::vector<std::string> row) {
  if (row.size() != columns_.size()) {
    throw std::logic_error("CSV row of " + std::to_string(row.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  }
  rows_.push_back(std::move(row));
}

namespace {
void append_cell(std::string& out, const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) {
    out += cell;
    return;
  }
  out += '"';
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}
}  // namespace

std::size_t CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return i;
  }
  return npos;
}

std::string CsvTable::render() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      append_cell(out, cells[i]);
    }
    out += '\n';
  };
  line(columns_);
  for (const auto& r : rows_)
    line(r);
  return out;
}

std::string fmt_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string fmt_general(double value, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace adaptsim::io
