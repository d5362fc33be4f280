#pragma once
// Reads the output of NVIDIA/nccl-tests (all_reduce_perf & co.) into measurement rows, so that a
// profile can be made from runs on machines where only nccl-tests was run.
//
// Text (stdout): the header line "# nThread 1 nGpus 8 minBytes 8 maxBytes ... step: 2(factor)
// warmup iters: 5 iters: 20 ...", the "#  Rank  0 Group  0 Pid ... on HOST device ..." lines (one
// per rank; older versions without "Group"), optionally "# Collective test starting:
// all_reduce_perf" and "# nccl-tests version ... nccl-library=22809", the column header, and one
// row per size:
//   size count type redop [root] time algbw busbw #wrong|error time algbw busbw #wrong|error
// out-of-place then in-place (the root column is absent before nccl-tests 2.10; "error", the max
// absolute error, before #wrong; "N/A" when unchecked). Lines prefixed by mpirun's
// --tag-output ("[1,0]<stdout>:") are read as well.
//
// JSON (nccl-tests -J, util.cu): {"config": {"nthreads", "ngpus", "minimum_bytes", ...},
// "devices": [{"hostname", ...}], "results": [{"size", "count", "type", "redop", "root",
// "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}], "nccl_version",
// "args": [...]}. Read tolerantly: fields are found by name wherever they are (case and
// punctuation ignored: "algbw", "alg_bw", "algbw_GBps" are one name), rows may also be flat
// (time/algbw/busbw at the row's top level, with an "in_place" flag).
//
// The collective: "# Collective test starting: X_perf", the program in "args", or inferred from
// the rows: size = count x element size x n_ranks means all_gather (no operator) or
// reduce_scatter (with one); a root >= 0 broadcast or reduce; otherwise all_reduce (with an
// operator) or sendrecv. n_ranks: the Rank lines (text); nthreads x ngpus x max(1, devices)
// (JSON, whose "devices" lists one entry per process). The link class: nccl_intra when every
// rank is on one host name, nccl_inter otherwise.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "calibrate/measurement.h"

namespace adaptsim::calibrate {

struct NcclTestsImport {
  std::vector<coll::SweepRow> rows;  // out-of-place and in-place rows, in file order
  std::string collective;
  int n_ranks = 0;
  int hosts = 0;                  // distinct host names; 0 when none were given
  std::string first_hostname;     // empty when none was given
  std::string nccl_version;       // "2.28.9"; empty when unknown
  std::uint64_t step_factor = 0;  // 0 when additive or unknown
  int iters = 0;
  int warmup_iters = 0;
  std::vector<std::string> notes;  // inferences made (the collective, the rank count)
};

struct NcclTestsImportOptions {
  std::string collective;  // empty: from the file
  std::string link_class;  // empty: nccl_intra / nccl_inter from the host names
  int n_ranks = 0;         // 0: from the file
};

// The format is chosen by the first non-blank character ('{' or '[' = JSON). Throws InputError
// "file:line: ..." (text) or "file: ..." (JSON) when nothing can be read.
NcclTestsImport import_nccl_tests(const std::filesystem::path& path,
                                  const NcclTestsImportOptions& options = {});
// The same from the file's text (`label` names it in messages): the format chosen as above.
NcclTestsImport parse_nccl_tests(const std::string& text, const std::string& label,
                                 const NcclTestsImportOptions& options = {});
NcclTestsImport parse_nccl_tests_text(const std::string& text, const std::string& label,
                                      const NcclTestsImportOptions& options = {});
NcclTestsImport parse_nccl_tests_json(const std::string& text, const std::string& label,
                                      const NcclTestsImportOptions& options = {});

// 22809 -> "2.28.9" (NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9; 2708 ->
// "2.7.8" before).
std::string nccl_version_from_code(long code);

}  // namespace adaptsim::calibrate
