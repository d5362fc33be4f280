#pragma once
// Reads or writes a sysctl as one named network namespace (/run/netns/<ns>) sees it: a forked
// child enters the namespace (setns) and reads or writes /proc/sys/net there. No program is
// executed, so this works where `sysctl` is not installed. (Tests use it to check what the hosts
// get.)

#include <optional>
#include <string>

namespace adaptsim::testbed {

// "net.core.rmem_max" -> "/proc/sys/net/core/rmem_max".
std::string sysctl_path(const std::string& key);

// The value (trailing newline removed), or nullopt when the namespace has no such sysctl. Throws
// RuntimeFailure when the namespace cannot be entered.
std::optional<std::string> read_netns_sysctl(const std::string& ns, const std::string& key);

// Writes `value` to the sysctl as namespace `ns` sees it. Throws RuntimeFailure naming the
// namespace, the key, the value and the kernel's reason when it cannot.
void write_netns_sysctl(const std::string& ns, const std::string& key, const std::string& value);

}  // namespace adaptsim::testbed
