#include "sim/core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "sim/core/error.h"

namespace adaptsim {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  // A hidden sibling named after the process, so concurrent writers never share one. (Built by
  // appending: GCC 12 warns falsely (-Wrestrict, bug 105651) on a string literal + std::string.)
  std::string tmp_name(1, '.');
  tmp_name.append(path.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
  const std::filesystem::path tmp = path.parent_path() / tmp_name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw RuntimeFailure(path.string() + ": cannot write (" + std::strerror(errno) + ")");
    }
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw RuntimeFailure(path.string() + ": write failed (" + std::strerror(errno) + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw RuntimeFailure(path.string() + ": cannot rename the temporary file: " + ec.message());
  }
}

}  // namespace adaptsim
