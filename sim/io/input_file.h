#pragma once
// Reading a user's input file whole (scenario, topology, calibration profile, device profile,
// nccl-tests output): only a regular file, and only up to a size limit, so a path that names a
// character device (/dev/zero), a FIFO or a directory, or a runaway file, is one clear error
// instead of a read that never ends or takes all memory.

#include <cstdint>
#include <filesystem>
#include <string>

namespace adaptsim::io {

// Every input adaptsim reads is hand-written YAML or a tool's text output: the largest shipped one
// is a few kB, a long nccl-tests log a few MB. 64 MiB is far above both and far below memory.
inline constexpr std::uint64_t kMaxInputFileBytes = 64ull << 20;

// The file's bytes. Throws InputError naming the path: missing or unreadable ("cannot read the
// file: No such file or directory"), not a regular file ("is a character device, not a regular
// file"), or larger than `max_bytes`. Never blocks on a FIFO (it is opened non-blocking and
// rejected before any read).
std::string read_input_file(const std::filesystem::path& path,
                            std::uint64_t max_bytes = kMaxInputFileBytes);

// The same checks without reading, for a caller that names the file in its own input and reports
// the problem at that key ("x.yaml:4: key 'topology.file': /dev/zero: is a character device, not a
// regular file"); read_input_file still checks again when it reads. Throws InputError.
void check_input_file(const std::filesystem::path& path,
                      std::uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace adaptsim::io
