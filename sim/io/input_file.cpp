#include "sim/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::io {
namespace {

std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

InputError too_large(const std::filesystem::path& path, std::uint64_t max_bytes) {
  return InputError(path.string() + ": larger than " + format_size(max_bytes) +
                    ", the limit for an input file");
}

}  // namespace

void check_input_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(path.string() + ": cannot read the file (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(path.string() + ": is " + std::string(file_kind(st.st_mode)) +
                     ", not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large(path, max_bytes);
}

std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. The file's type is
  // then checked on the open descriptor, so it cannot change between the check and the read.
  const Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    throw InputError(path.string() + ": cannot read the file (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) {
    throw InputError(path.string() + ": cannot read the file (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(path.string() + ": is " + std::string(file_kind(st.st_mode)) +
                     ", not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw too_large(path, max_bytes);
  // Read to the end, not to st_size: a file that grows while read is still bounded.
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(path.string() + ": cannot read the file (" + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large(path, max_bytes);
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace adaptsim::io
