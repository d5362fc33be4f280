#include "hw/testbed/state_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "sim/core/error.h"

namespace adaptsim::testbed {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

std::string read_fd(int fd) {
  std::string text;
  char buf[8192];
  ::lseek(fd, 0, SEEK_SET);
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buf, static_cast<std::size_t>(got));
  }
  return text;
}

// Whether `fd` is still the file at `path` (not unlinked or replaced since it was opened).
bool same_file(int fd, const std::filesystem::path& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

void ensure_dir() {
  std::error_code ec;
  std::filesystem::create_directories(kStateDir, ec);
  if (ec) {
    throw RuntimeFailure(std::string("cannot create ") + kStateDir + ": " + ec.message());
  }
}

}  // namespace

std::filesystem::path state_path(const std::string& prefix) {
  return std::filesystem::path(kStateDir) / (prefix + ".state");
}

StateRecord parse_state(const std::string& prefix, const std::string& text) {
  StateRecord r;
  r.prefix = prefix;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    std::string rest;
    std::getline(words >> std::ws, rest);
    if (tag == "owner") {
      std::istringstream o(rest);
      o >> r.owner_pid >> r.owner_start_ticks;
    } else if (tag == "topology") {
      r.topology = rest;
    } else if (tag == "subnet") {
      r.subnet = rest;
    } else if (tag == "host") {
      r.host_lines.push_back(rest);
    } else if (tag == "sysctl") {
      r.sysctl_lines.push_back(rest);
    } else if ((tag == "netns" || tag == "link") && !rest.empty()) {
      r.objects.push_back({tag == "netns" ? ObjectKind::kNetns : ObjectKind::kLink, rest});
    }
  }
  return r;
}

std::optional<std::uint64_t> process_start_ticks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  // Field 2 (comm) is in parentheses and may hold spaces: count fields after the last ')'.
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

StateFile StateFile::create(const std::string& prefix, const std::string& topology,
                            const std::string& subnet) {
  ensure_dir();
  const std::filesystem::path path = state_path(prefix);
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw RuntimeFailure("cannot create " + path.string() + ": " + errno_text());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const StateRecord other = parse_state(prefix, read_fd(fd));
      ::close(fd);
      throw RuntimeFailure("testbed prefix \"" + prefix + "\" is in use by process " +
                           std::to_string(other.owner_pid) + " (`adaptsim-testbed down --prefix " +
                           prefix + "` stops it; or choose another prefix)");
    }
    if (!same_file(fd, path)) {  // removed by a stale sweep between open and flock: retry
      ::close(fd);
      continue;
    }
    if (!read_fd(fd).empty()) {
      ::close(fd);
      throw RuntimeFailure("testbed prefix \"" + prefix + "\": " + path.string() +
                           " was left by a dead process while this one started; try again");
    }
    StateFile file;
    file.fd_ = fd;
    file.path_ = path;
    const int pid = static_cast<int>(::getpid());
    file.append("owner " + std::to_string(pid) + " " +
                std::to_string(process_start_ticks(pid).value_or(0)));
    file.append("topology " + topology);
    file.append("subnet " + subnet);
    return file;
  }
  throw RuntimeFailure("cannot lock " + path.string() + ": it keeps being replaced");
}

StateFile::StateFile(StateFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

StateFile& StateFile::operator=(StateFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

StateFile::~StateFile() {
  if (fd_ >= 0) ::close(fd_);
}

void StateFile::append(const std::string& line) {
  if (fd_ < 0) throw RuntimeFailure("state file is closed");
  const std::string text = line + "\n";
  // One write per record: O_APPEND makes it atomic, and a crash keeps every record written.
  if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    throw RuntimeFailure("cannot write " + path_.string() + ": " + errno_text());
  }
}

void StateFile::record(const PlannedObject& object) {
  append((object.kind == ObjectKind::kNetns ? "netns " : "link ") + object.name);
}

void StateFile::remove() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: nobody can claim it as stale in between
  ::close(fd_);
  fd_ = -1;
}

std::vector<FoundState> list_states() {
  std::vector<FoundState> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(kStateDir, ec);
  if (ec) return out;
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() != ".state") continue;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    FoundState found;
    // A shared probe: fails while the owner holds its exclusive lock.
    found.owner_alive = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
    found.record = parse_state(p.stem().string(), read_fd(fd));
    ::close(fd);
    out.push_back(std::move(found));
  }
  std::sort(out.begin(), out.end(), [](const FoundState& a, const FoundState& b) {
    return a.record.prefix < b.record.prefix;
  });
  return out;
}

std::optional<StateRecord> claim_stale(const std::string& prefix, int* lock_fd, bool* owner_alive) {
  *lock_fd = -1;
  *owner_alive = false;
  const std::filesystem::path path = state_path(prefix);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *owner_alive = true;
    ::close(fd);
    return std::nullopt;
  }
  if (!same_file(fd, path)) {  // removed by someone else meanwhile
    ::close(fd);
    return std::nullopt;
  }
  *lock_fd = fd;
  return parse_state(prefix, read_fd(fd));
}

void release_stale(const std::string& prefix, int lock_fd) {
  ::unlink(state_path(prefix).c_str());
  if (lock_fd >= 0) ::close(lock_fd);
}

}  // namespace adaptsim::testbed
