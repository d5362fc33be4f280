#pragma once
// Machine-wide sysctls that testbeds raise (or whose lists they extend) while any of them is up,
// and restore afterwards.
//
// Why: the live transport asks for 4 MiB socket buffers (hw/tcp TcpTransportOptions), which the
// kernel silently caps at net.core.{r,w}mem_max (212992 on a stock kernel). These two are global:
// a network namespace shows the machine's values read-only (kernel 6.x), so they cannot be set per
// host.
//
// Protocol (under an flock on <state dir>/sysctl.lock): a testbed raises a key only when it is
// lower than wanted, and the first raise of a key saves its original value in
// <state dir>/sysctl.saved. Whoever finds no other live testbed at its teardown (or when removing
// a stale one) writes the saved values back and deletes the file; so concurrent testbeds never
// lower each other's settings, and a crash's raise is undone by the next run's cleanup.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace adaptsim::testbed {

struct SysctlPaths {
  std::filesystem::path proc_sys = "/proc/sys";
  std::filesystem::path state_dir = "/run/adaptsim-testbed";
};

struct SysctlChange {
  std::string key;
  std::string old_value, new_value;
};

// Raises each key (dotted, e.g. "net.core.rmem_max") to at least its value. Returns the changes
// made; a key that cannot be written (read-only here, e.g. inside a container) is skipped and
// described in *notes. Throws RuntimeFailure when the lock or saved file cannot be used.
std::vector<SysctlChange> raise_sysctls(
    const std::vector<std::pair<std::string, std::uint64_t>>& at_least,
    std::vector<std::string>* notes, const SysctlPaths& paths = {});

// Adds each word to its list sysctl (e.g. "cubic" to net.ipv4.tcp_allowed_congestion_control,
// which a network namespace's default congestion control must be taken from) where the list
// lacks it, saving the original as raise_sysctls does; same notes, same restore.
std::vector<SysctlChange> include_in_sysctl_lists(
    const std::vector<std::pair<std::string, std::string>>& words, std::vector<std::string>* notes,
    const SysctlPaths& paths = {});

// Restores every saved original when `others_alive()` (evaluated under the lock) is false.
// Returns what it restored.
std::vector<SysctlChange> restore_sysctls_if_last(const std::function<bool()>& others_alive,
                                                  const SysctlPaths& paths = {});

// Whether the dotted key is made of letters, digits, '_', '-' and single dots.
bool valid_sysctl_key(const std::string& key);

}  // namespace adaptsim::testbed
