#pragma once
// Output files written whole or not at all: the content goes to a hidden temporary file in the
// target's directory (so the rename stays within one file system) and is renamed over the
// target, so a run that fails or is interrupted never leaves a half-written CSV or profile, and a
// reader never sees one. In sim/core so that every layer and tool (sim/io's outputs, the sweeps of
// hw/tcp and hw/nccl, calibrate) writes files the same way.

#include <filesystem>
#include <string_view>

namespace adaptsim {

// Atomically replaces `path` with `content`. Throws RuntimeFailure naming the path on any I/O
// error (a missing directory included), leaving no temporary file behind.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);

}  // namespace adaptsim
