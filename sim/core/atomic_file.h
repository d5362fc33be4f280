#pragma once
// Output files written whole or not at all: the content goes to a hidden temporary file in the
// target's directory (so the rename stays within one file system) and is renamed over the
// target, so a run that fails or is interrupted never leaves a half-written CSV or profile, and a
// reader never sees one. A run's files (CSV, manifest, traces) are written as one group: all or
// none. In sim/core so that every layer and tool (sim/io's outputs, the sweeps of hw/tcp and
// hw/nccl, calibrate) writes files the same way.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace adaptsim {

struct OutputFile {
  std::filesystem::path path;
  std::string content;
};

// Writes every file to a temporary sibling and only when all are written renames them to their
// names. A failure removes the temporaries and any file of the group already renamed, so a failed
// run leaves none of its files. Throws RuntimeFailure naming the path on any I/O error (a missing
// directory included).
void write_files_atomic(const std::vector<OutputFile>& files);

// One file: atomically replaces `path` with `content`.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
// One file whose content is `parts` one after another, written without joining them first (a
// checkpoint's tensors: no copy of the whole in memory).
void write_file_atomic(const std::filesystem::path& path,
                       const std::vector<std::string_view>& parts);

}  // namespace adaptsim
