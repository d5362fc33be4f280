#pragma once
// The record a testbed keeps under /run/adaptsim-testbed/<prefix>.state, so that whatever the
// owner process leaves behind (a crash, SIGKILL) can be found and removed by the next run.
//
// Liveness is an exclusive flock on the file, held by the owner for the testbed's life: the
// kernel drops it when the owner dies, however it dies, and a reused pid cannot fake it. The file
// also names the owner (pid and start time, for `status` and `down`) and every object, appended
// *before* the object is created, so the record is never missing something that exists.
//
// Text, one record per line:
//   owner <pid> <start time in clock ticks since boot>
//   topology <name>
//   subnet <10.x.0.0/16>
//   host <ns> <ip> <egress B/s> <ingress B/s>
//   sysctl <key> <old> <new>          (machine-wide, raised by this testbed)
//   netns <name> | link <name>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hw/testbed/testbed_plan.h"

namespace adaptsim::testbed {

inline constexpr const char* kStateDir = "/run/adaptsim-testbed";

std::filesystem::path state_path(const std::string& prefix);

struct StateRecord {
  std::string prefix;
  int owner_pid = 0;
  std::uint64_t owner_start_ticks = 0;
  std::string topology;
  std::string subnet;
  std::vector<std::string> host_lines;    // "<ns> <ip> <egress> <ingress>"
  std::vector<std::string> sysctl_lines;  // "<key> <old> <new>"
  std::vector<PlannedObject> objects;     // in creation order
};

// Parses a state file's text; unknown lines are ignored (forward compatibility).
StateRecord parse_state(const std::string& prefix, const std::string& text);

// The start time of a process (field 22 of /proc/<pid>/stat), or nullopt if it does not exist.
std::optional<std::uint64_t> process_start_ticks(int pid);

// The owner's handle on its state file: created locked, appended to, removed at teardown.
class StateFile {
 public:
  // Creates and locks the file. Throws RuntimeFailure when another live process holds the prefix
  // (naming its pid) or the directory cannot be written.
  static StateFile create(const std::string& prefix, const std::string& topology,
                          const std::string& subnet);
  StateFile() = default;
  StateFile(StateFile&& other) noexcept;
  StateFile& operator=(StateFile&& other) noexcept;
  ~StateFile();  // closes (releasing the lock) but keeps the file: only remove() deletes it

  void append(const std::string& line);
  void record(const PlannedObject& object);
  // Deletes the file and releases the lock.
  void remove();
  bool open() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

// A state file found on disk, with whether its owner still holds it.
struct FoundState {
  StateRecord record;
  bool owner_alive = false;
};

// Every state file in kStateDir (sorted by prefix); the lock of each is probed, not kept.
std::vector<FoundState> list_states();

// For the stale path: opens the prefix's file and takes its lock if the owner is gone. Returns
// the record and keeps holding the lock in `lock_fd` (the caller removes the objects, then calls
// release_stale); nullopt when there is no file or its owner is alive (then *owner_alive).
std::optional<StateRecord> claim_stale(const std::string& prefix, int* lock_fd, bool* owner_alive);
void release_stale(const std::string& prefix, int lock_fd);

}  // namespace adaptsim::testbed
