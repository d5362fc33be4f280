#include "hw/testbed/sysctl_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"

namespace adaptsim::testbed {
namespace {

std::filesystem::path key_path(const SysctlPaths& paths, const std::string& key) {
  std::string rel = key;
  std::replace(rel.begin(), rel.end(), '.', '/');
  return paths.proc_sys / rel;
}

// Holds <state dir>/sysctl.lock exclusively for its lifetime.
class SysctlLock {
 public:
  explicit SysctlLock(const SysctlPaths& paths) {
    std::error_code ec;
    std::filesystem::create_directories(paths.state_dir, ec);
    const std::filesystem::path path = paths.state_dir / "sysctl.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw RuntimeFailure("cannot open " + path.string() + ": " + strerror(errno));
    // Holders only read and write a few small files, so a blocking wait is short.
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        throw RuntimeFailure("cannot lock " + path.string() + ": " + strerror(errno));
      }
    }
  }
  ~SysctlLock() { ::close(fd_); }
  SysctlLock(const SysctlLock&) = delete;
  SysctlLock& operator=(const SysctlLock&) = delete;

 private:
  int fd_ = -1;
};

// One "key value" line per saved original; the value is the rest of the line (a list sysctl's
// words are separated by spaces).
std::map<std::string, std::string> read_saved(const std::filesystem::path& path) {
  std::map<std::string, std::string> saved;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) continue;
    saved[line.substr(0, space)] = line.substr(space + 1);
  }
  return saved;
}

void write_saved(const std::filesystem::path& path,
                 const std::map<std::string, std::string>& saved) {
  std::string text;
  for (const auto& [k, v] : saved)
    text.append(k).append(1, ' ').append(v).append(1, '\n');
  write_file_atomic(path, text);
}

// The whole value, its words joined by single spaces (a list sysctl separates them by tabs or
// spaces).
bool read_value(const std::filesystem::path& path, std::string* value) {
  std::ifstream in(path);
  std::string word, out;
  while (in >> word)
    out += (out.empty() ? "" : " ") + word;
  if (out.empty()) return false;
  *value = out;
  return true;
}

// Writes with one write(2), as sysctl files expect; returns errno or 0.
int write_value(const std::filesystem::path& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const std::string text = value + "\n";
  const ssize_t put = ::write(fd, text.data(), text.size());
  const int err = put == static_cast<ssize_t>(text.size()) ? 0 : (put < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

}  // namespace

bool valid_sysctl_key(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' ||
      key.find("..") != std::string::npos) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

namespace {

// What to write to one key given its current value (nothing: leave it), or a note saying why it
// is left alone (`*skip`).
using Target =
    std::function<std::optional<std::string>(const std::string& current, std::string* skip)>;

// Under the lock, for each key: reads it, asks `targets[i]` what to write, saves the original
// before the first write of the key (a crash in between leaves a restorable record, never a lost
// original), writes, and records the change. Keys not present, left alone or not writable are
// described in *notes.
std::vector<SysctlChange> change_sysctls(const std::vector<std::string>& keys,
                                         const std::vector<Target>& targets,
                                         std::vector<std::string>* notes,
                                         const SysctlPaths& paths) {
  std::vector<SysctlChange> changes;
  if (keys.empty()) return changes;
  SysctlLock lock(paths);
  const std::filesystem::path saved_path = paths.state_dir / "sysctl.saved";
  std::map<std::string, std::string> saved = read_saved(saved_path);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (!valid_sysctl_key(key)) throw RuntimeFailure("invalid sysctl key \"" + key + "\"");
    const std::filesystem::path path = key_path(paths, key);
    std::string current, skip;
    if (!read_value(path, &current)) {
      if (notes) notes->push_back(key + ": not present on this kernel, left alone");
      continue;
    }
    const std::optional<std::string> target = targets[i](current, &skip);
    if (!target) {
      if (notes && !skip.empty()) notes->push_back(key + ": " + skip + ", left alone");
      continue;
    }
    if (saved.find(key) == saved.end()) {
      saved[key] = current;
      write_saved(saved_path, saved);
    }
    if (const int err = write_value(path, *target); err != 0) {
      if (notes) {
        notes->push_back(key + ": cannot change " + current + " -> " + *target + " (" +
                         strerror(err) + "), left alone");
      }
      continue;
    }
    changes.push_back({key, current, *target});
  }
  return changes;
}

}  // namespace

std::vector<SysctlChange> raise_sysctls(
    const std::vector<std::pair<std::string, std::uint64_t>>& at_least,
    std::vector<std::string>* notes, const SysctlPaths& paths) {
  std::vector<std::string> keys;
  std::vector<Target> targets;
  for (const auto& [key, wanted] : at_least) {
    keys.push_back(key);
    targets.push_back(
        [wanted](const std::string& current, std::string* skip) -> std::optional<std::string> {
          std::uint64_t value = 0;
          try {
            value = std::stoull(current);
          } catch (const std::exception&) {
            *skip = "not an integer (" + current + ")";
            return std::nullopt;
          }
          if (value >= wanted) return std::nullopt;
          return std::to_string(wanted);
        });
  }
  return change_sysctls(keys, targets, notes, paths);
}

std::vector<SysctlChange> include_in_sysctl_lists(
    const std::vector<std::pair<std::string, std::string>>& words, std::vector<std::string>* notes,
    const SysctlPaths& paths) {
  std::vector<std::string> keys;
  std::vector<Target> targets;
  for (const auto& [key, word] : words) {
    keys.push_back(key);
    targets.push_back(
        [word](const std::string& current, std::string*) -> std::optional<std::string> {
          std::istringstream list(current);
          for (std::string w; list >> w;)
            if (w == word) return std::nullopt;
          return current + " " + word;
        });
  }
  return change_sysctls(keys, targets, notes, paths);
}

std::vector<SysctlChange> restore_sysctls_if_last(const std::function<bool()>& others_alive,
                                                  const SysctlPaths& paths) {
  std::vector<SysctlChange> restored;
  const std::filesystem::path saved_path = paths.state_dir / "sysctl.saved";
  if (!std::filesystem::exists(saved_path)) return restored;
  SysctlLock lock(paths);
  if (others_alive()) return restored;
  const std::map<std::string, std::string> saved = read_saved(saved_path);
  for (const auto& [key, original] : saved) {
    const std::filesystem::path path = key_path(paths, key);
    std::string current;
    read_value(path, &current);
    if (write_value(path, original) == 0) restored.push_back({key, current, original});
  }
  std::error_code ec;
  std::filesystem::remove(saved_path, ec);
  return restored;
}

}  // namespace adaptsim::testbed
