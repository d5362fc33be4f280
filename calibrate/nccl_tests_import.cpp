#include "calibrate/nccl_tests_import.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/coll/collective.h"
#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/core/units.h"
#include "sim/io/input_file.h"

namespace adaptsim::calibrate {
namespace {

using Json = nlohmann::json;

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string t;
  while (in >> t)
    out.push_back(t);
  return out;
}

std::optional<double> to_double(std::string_view s) {
  const std::string t(trim(s));
  double v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<long long> to_integer(std::string_view s) {
  const std::string t(trim(s));
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

// The most ranks a profile holds (io::parse_calibration_profile, sweep.ranks).
constexpr long long kMaxRanks = 1 << 20;

// `v` as a whole number when it is from 0 to `max`, else 0, as when it is absent: header counts
// (iterations, step factor) outside what a profile holds are unknown. Converting a double
// outside the target type's range is undefined behaviour, so no number from a file is cast
// without this.
long long whole_or_zero(std::optional<double> v, double max) {
  return v && *v >= 0 && *v <= max ? static_cast<long long>(*v) : 0;
}

// A rank count for finish(): 0 when not a number >= 0, at most kMaxRanks + 1 (an error there).
long long rank_count(std::optional<double> v) {
  if (!v || !(*v >= 0)) return 0;
  return static_cast<long long>(std::min(*v, static_cast<double>(kMaxRanks + 1)));
}

// A row's size: sizes are at most 1 PiB (sim/core/units.h), as everywhere in adaptsim.
void check_size(double size, const std::string& where) {
  if (!(size <= static_cast<double>(kMaxSizeBytes))) {
    std::ostringstream text;
    text << size;
    throw InputError(where + ": size " + text.str() + " B is beyond 1 PiB");
  }
}

// Bytes per element of nccl-tests' and adaptsim's type names; 0 when unknown.
std::size_t type_size(const std::string& type) {
  static const std::map<std::string, std::size_t> sizes = {
      {"int8", 1},     {"uint8", 1},    {"char", 1},   {"f8e4m3", 1},  {"f8e5m2", 1},
      {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"half", 2},   {"float16", 2}, {"bfloat16", 2},
      {"bf16", 2},     {"int", 4},      {"int32", 4},  {"uint32", 4},  {"float", 4},
      {"float32", 4},  {"int64", 8},    {"uint64", 8}, {"double", 8},  {"float64", 8}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}

// "./build/all_reduce_perf" or "all_reduce_perf_mpi" -> "all_reduce".
std::string collective_from_program(std::string program) {
  const auto slash = program.find_last_of('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  const auto perf = program.find("_perf");
  if (perf == std::string::npos) return "";
  return program.substr(0, perf);
}

struct RowExtra {
  long long root = -1;
};

// The collective from the shape of the first row: see the header.
std::string infer_collective(const std::vector<coll::SweepRow>& rows,
                             const std::vector<RowExtra>& extra, int n_ranks) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const coll::SweepRow& r = rows[i];
    if (r.count == 0) continue;
    const bool reduces = r.redop != "none";
    const std::size_t es = type_size(r.type);
    if (n_ranks > 1 && es > 0 &&
        r.size_bytes == r.count * es * static_cast<std::uint64_t>(n_ranks)) {
      return reduces ? "reduce_scatter" : "all_gather";
    }
    if (extra[i].root >= 0) return reduces ? "reduce" : "broadcast";
    return reduces ? "all_reduce" : "sendrecv";
  }
  return "all_reduce";
}

void finish(NcclTestsImport& out, const std::vector<RowExtra>& extra,
            const std::set<std::string>& hostnames, const std::string& label,
            const NcclTestsImportOptions& options, long long ranks_listed,
            long long ranks_product) {
  if (out.rows.empty())
    throw InputError(label + ": no result rows found (is this nccl-tests output?)");
  long long n_ranks = 0;
  if (options.n_ranks > 0) {
    n_ranks = options.n_ranks;
  } else if (ranks_listed > 0) {
    n_ranks = ranks_listed;
  } else if (ranks_product > 0) {
    n_ranks = ranks_product;
    out.notes.push_back("rank count " + std::to_string(ranks_product) +
                        " from nThread x nGpus (pass --ranks when several processes ran)");
  } else {
    throw InputError(label + ": the rank count is not in the file; pass --ranks N");
  }
  if (n_ranks > kMaxRanks) {
    throw InputError(label + ": more than " + std::to_string(kMaxRanks) +
                     " ranks; expected at most that");
  }
  out.n_ranks = static_cast<int>(n_ranks);
  if (!options.collective.empty()) {
    out.collective = options.collective;
  } else if (out.collective.empty()) {
    out.collective = infer_collective(out.rows, extra, out.n_ranks);
    out.notes.push_back("collective " + out.collective +
                        " inferred from the rows (pass --collective when wrong)");
  }
  const std::optional<coll::Collective> collective = coll::parse_collective(out.collective);
  if (!collective) {
    throw InputError(label + ": unknown collective \"" + out.collective +
                     "\" (known: " + coll::known_collectives() + ")");
  }
  out.hosts = static_cast<int>(hostnames.size());
  out.first_hostname = hostnames.empty() ? "" : *hostnames.begin();
  const std::string link_class = !options.link_class.empty() ? options.link_class
                                 : out.hosts > 1             ? "nccl_inter"
                                                             : "nccl_intra";
  for (coll::SweepRow& r : out.rows) {
    r.collective = *collective;
    r.n_ranks = out.n_ranks;
    r.link_class = link_class;
    r.algorithm = "nccl";
  }
}

// --- text ----------------------------------------------------------------------------------

// Drops mpirun's --tag-output prefix "[1,0]<stdout>:".
std::string untag(const std::string& line) {
  if (line.empty() || line[0] != '[') return line;
  const auto tag = line.find("]<std");
  if (tag == std::string::npos) return line;
  const auto colon = line.find(">:", tag);
  if (colon == std::string::npos) return line;
  return line.substr(colon + 2);
}

}  // namespace

std::string nccl_version_from_code(long code) {
  if (code <= 0) return "";
  const long major_unit = code >= 10000 ? 10000 : 1000;
  const long major = code / major_unit;
  const long minor = (code % major_unit) / 100;
  const long patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

NcclTestsImport parse_nccl_tests_text(const std::string& text, const std::string& label,
                                      const NcclTestsImportOptions& options) {
  // Host names go into the profile, whose YAML must be UTF-8 (io::parse_yaml); JSON strings are
  // UTF-8 already (nlohmann checks).
  if (const std::size_t at = invalid_utf8_at(text); at != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    throw InputError(label + ":" + std::to_string(line) +
                     ": expected UTF-8 text, found a byte that is not (offset " +
                     std::to_string(at) + ")");
  }
  NcclTestsImport out;
  std::vector<RowExtra> extra;
  std::set<std::string> hostnames;
  std::set<long long> ranks;
  long long nthread = 0, ngpus = 0;
  int lead = 0;               // columns before the first time column (from the header)
  bool error_column = false;  // old format: max abs error instead of #wrong
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string where = label + ":" + std::to_string(line_no);
    const std::string line(trim(untag(raw)));
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::string content(trim(std::string_view(line).substr(1)));
      const auto t = tokens(content);
      if (t.empty()) continue;
      if (content.rfind("Collective test starting:", 0) == 0 && t.size() >= 4) {
        out.collective = collective_from_program(t[3]);
      } else if (content.rfind("nccl-tests version", 0) == 0) {
        for (const std::string& tok : t) {
          if (tok.rfind("nccl-library=", 0) == 0) {
            if (auto code = to_integer(tok.substr(13)))
              out.nccl_version = nccl_version_from_code(*code);
          }
        }
      } else if (t[0] == "nThread") {
        for (std::size_t i = 0; i + 1 < t.size(); ++i) {
          if (t[i] == "nThread") nthread = to_integer(t[i + 1]).value_or(0);
          if (t[i] == "nGpus") ngpus = to_integer(t[i + 1]).value_or(0);
          if (t[i] == "step:" && t[i + 1].find("(factor)") != std::string::npos) {
            out.step_factor = static_cast<std::uint64_t>(
                whole_or_zero(to_integer(t[i + 1].substr(0, t[i + 1].find('('))), 1 << 20));
          }
          if (t[i] == "iters:") {
            const int v = static_cast<int>(whole_or_zero(to_integer(t[i + 1]), 1 << 30));
            if (i > 0 && t[i - 1] == "warmup") {
              out.warmup_iters = v;
            } else if (i == 0 || t[i - 1] != "agg") {
              out.iters = v;
            }
          }
        }
      } else if (t[0] == "Rank" && t.size() >= 2) {
        if (auto r = to_integer(t[1])) ranks.insert(*r);
        for (std::size_t i = 0; i + 1 < t.size(); ++i) {
          if (t[i] == "on") {
            hostnames.insert(t[i + 1]);
            break;
          }
        }
      } else if (std::find(t.begin(), t.end(), "size") != t.end() &&
                 std::find(t.begin(), t.end(), "count") != t.end()) {
        const auto time = std::find_if(
            t.begin(), t.end(), [](const std::string& s) { return s == "time" || s == "cputime"; });
        if (time != t.end()) lead = static_cast<int>(time - t.begin());
        error_column = std::find(t.begin(), t.end(), "error") != t.end();
      }
      continue;
    }
    const auto t = tokens(line);
    // A result row starts with its size; anything else (NCCL INFO lines, "host:pid:tid ...",
    // warnings) is not nccl-tests' table.
    if (!to_integer(t[0])) continue;
    int l = lead;
    if (l == 0) l = t.size() == 13 || t.size() == 9 ? 5 : 4;  // no header: guess by width
    if (static_cast<int>(t.size()) < l + 4) {
      throw InputError(
          where + ": expected size, count, type, redop" + std::string(l == 5 ? ", root" : "") +
          " and time, algbw, busbw, #wrong columns, got " + std::to_string(t.size()) + " fields");
    }
    const auto size = to_integer(t[0]);
    const auto count = to_integer(t[1]);
    if (!size || !count || *size < 0 || *count < 0) {
      throw InputError(where + ": expected integer size and count, got \"" + t[0] + "\" \"" + t[1] +
                       "\"");
    }
    check_size(static_cast<double>(*size), where);
    RowExtra e;
    if (l >= 5) e.root = to_integer(t[4]).value_or(-1);
    // Blocks of 4: out-of-place, then in-place; a single block is in-place (trace replay).
    const int blocks = static_cast<int>(t.size()) >= l + 8 ? 2 : 1;
    for (int b = 0; b < blocks; ++b) {
      const std::size_t at = static_cast<std::size_t>(l + 4 * b);
      const auto time = to_double(t[at]);
      const auto algbw = to_double(t[at + 1]);
      const auto busbw = to_double(t[at + 2]);
      if (!time || !algbw || !busbw) {
        throw InputError(where + ": expected time, algbw and busbw numbers, got \"" + t[at] +
                         "\" \"" + t[at + 1] + "\" \"" + t[at + 2] + "\"");
      }
      coll::SweepRow r;
      r.size_bytes = static_cast<std::uint64_t>(*size);
      r.count = static_cast<std::uint64_t>(*count);
      r.type = t[2];
      r.redop = t[3];
      r.in_place = blocks == 1 || b == 1;
      r.time_us = *time;
      r.algbw_GBps = *algbw;
      r.busbw_GBps = *busbw;
      // "#wrong" counts elements; the old "error" column is a max abs error (not a count), and
      // "N/A" means unchecked: neither is a wrong count.
      if (!error_column) {
        // Printed with %g: "0", "12", "1e+06".
        if (auto w = to_double(t[at + 3]); w && *w > 0) {
          r.wrong = static_cast<std::uint64_t>(std::llround(*w));
        }
      }
      out.rows.push_back(r);
      extra.push_back(e);
    }
  }
  finish(out, extra, hostnames, label, options, static_cast<long long>(ranks.size()),
         rank_count(static_cast<double>(nthread) * static_cast<double>(ngpus)));
  return out;
}

// --- JSON ----------------------------------------------------------------------------------

namespace {

std::string norm(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// Whether a normalised key is `name`, possibly followed by a unit ("Size (B)" -> "sizeb",
// "AlgBW (GB/s)" -> "algbwgbs", "time_us" -> "timeus").
bool names(const std::string& key, std::string_view name) {
  if (key.size() < name.size() || key.compare(0, name.size(), name) != 0) return false;
  const std::string_view unit = std::string_view(key).substr(name.size());
  for (std::string_view u : {"", "b", "bytes", "us", "usec", "gbs", "gbps", "elements"}) {
    if (unit == u) return true;
  }
  return false;
}

// The member of `obj` named one of `names` (first name first), or nullptr.
const Json* member(const Json& obj, std::initializer_list<std::string_view> candidates) {
  if (!obj.is_object()) return nullptr;
  for (std::string_view name : candidates) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (names(norm(it.key()), name)) return &it.value();
    }
  }
  return nullptr;
}

std::optional<double> number_of(const Json* v) {
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) return to_double(v->get<std::string>());
  return std::nullopt;
}

std::string string_of(const Json* v) {
  if (!v) return "";
  if (v->is_string()) return std::string(trim(v->get<std::string>()));
  if (v->is_number_integer()) return std::to_string(v->get<long long>());
  return "";
}

bool truthy(const Json* v) {
  if (!v) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0;
  if (v->is_string()) {
    const std::string s = norm(v->get<std::string>());
    return s == "true" || s == "1" || s == "yes" || s == "inplace";
  }
  return false;
}

// The result list: "results" (or "rows", "data") at the top level or one level down, or the
// document itself when it is a list.
const Json* results_of(const Json& doc) {
  if (doc.is_array()) return &doc;
  if (const Json* r = member(doc, {"results", "rows", "data"}); r && r->is_array()) return r;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it->is_object()) {
      if (const Json* r = member(*it, {"results", "rows"}); r && r->is_array()) return r;
    }
  }
  return nullptr;
}

}  // namespace

NcclTestsImport parse_nccl_tests_json(const std::string& text, const std::string& label,
                                      const NcclTestsImportOptions& options) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw InputError(label + ": invalid JSON: " + e.what());
  }
  NcclTestsImport out;
  const Json* results = results_of(doc);
  if (!results)
    throw InputError(label + ": no \"results\" list found (is this nccl-tests -J output?)");
  const Json* config = member(doc, {"config"});
  const Json& cfg = config ? *config : doc;

  std::vector<RowExtra> extra;
  int index = 0;
  for (const Json& row : *results) {
    const std::string where = label + ": results[" + std::to_string(index++) + "]";
    if (!row.is_object()) throw InputError(where + ": expected an object");
    const auto size = number_of(member(row, {"size", "sizebytes", "bytes", "nbytes"}));
    if (!size || *size < 0) throw InputError(where + ": no size");
    check_size(*size, where);
    coll::SweepRow base;
    base.size_bytes = static_cast<std::uint64_t>(*size);
    base.count = static_cast<std::uint64_t>(
        whole_or_zero(number_of(member(row, {"count", "nelem", "elements", "nelements"})),
                      static_cast<double>(kMaxSizeBytes)));
    base.type = string_of(member(row, {"type", "datatype", "dtype"}));
    if (base.type.empty()) base.type = "float";
    base.redop = string_of(member(row, {"redop", "op", "reduceop"}));
    if (base.redop.empty()) base.redop = "none";
    RowExtra e;
    const auto root = number_of(member(row, {"root"}));
    e.root = root && *root >= 0 ? whole_or_zero(root, static_cast<double>(kMaxRanks)) : -1;

    auto add = [&](const Json& perf, bool in_place) {
      const auto time = number_of(member(perf, {"time", "timeus", "cputime", "avgus"}));
      if (!time) return;
      coll::SweepRow r = base;
      r.in_place = in_place;
      r.time_us = *time;
      r.algbw_GBps = number_of(member(perf, {"algbw", "algbwgbps", "algbandwidth"})).value_or(0);
      r.busbw_GBps = number_of(member(perf, {"busbw", "busbwgbps", "busbandwidth"})).value_or(0);
      if (r.algbw_GBps == 0 && r.time_us > 0) {
        r.algbw_GBps = static_cast<double>(r.size_bytes) / (r.time_us * 1e3);
      }
      const auto wrong = number_of(member(perf, {"nwrong", "wrong", "errors"}));
      r.wrong = wrong && *wrong > 0 ? static_cast<std::uint64_t>(std::llround(*wrong)) : 0;
      out.rows.push_back(r);
      extra.push_back(e);
    };
    const Json* oop = member(row, {"outofplace"});
    const Json* ip = member(row, {"inplace"});
    const bool nested = (oop && oop->is_object()) || (ip && ip->is_object());
    if (nested) {
      if (oop && oop->is_object()) add(*oop, false);
      if (ip && ip->is_object()) add(*ip, true);
    } else {
      add(row, truthy(ip));
    }
  }

  std::set<std::string> hostnames;
  int devices = 0;
  for (const Json* list : {member(doc, {"devices"}), member(cfg, {"devices"})}) {
    if (!list || !list->is_array() || devices > 0) continue;
    for (const Json& d : *list) {
      ++devices;
      const std::string h = string_of(member(d, {"hostname", "host"}));
      if (!h.empty()) hostnames.insert(h);
    }
  }
  long long listed = 0;
  for (const Json* obj : std::initializer_list<const Json*>{&doc, &cfg}) {
    if (auto n = number_of(member(*obj, {"nranks", "worldsize", "ranks", "totalranks"}))) {
      listed = rank_count(n);
      break;
    }
  }
  const double nthreads = number_of(member(cfg, {"nthreads", "nthread"})).value_or(1);
  const double ngpus = number_of(member(cfg, {"ngpus"})).value_or(0);
  const long long product = rank_count(nthreads * ngpus * std::max(1, devices));

  out.step_factor =
      static_cast<std::uint64_t>(whole_or_zero(number_of(member(cfg, {"stepfactor"})), 1 << 20));
  out.iters =
      static_cast<int>(whole_or_zero(number_of(member(cfg, {"iterations", "iters"})), 1 << 30));
  out.warmup_iters =
      static_cast<int>(whole_or_zero(number_of(member(cfg, {"warmupiters"})), 1 << 30));
  if (const Json* v = member(doc, {"ncclversion"})) {
    out.nccl_version =
        v->is_number() ? nccl_version_from_code(static_cast<long>(whole_or_zero(number_of(v), 1e9)))
                       : string_of(v);
  }
  out.collective = string_of(member(doc, {"collective", "test", "collectivetest"}));
  if (!out.collective.empty()) {
    if (auto c = collective_from_program(out.collective); !c.empty()) out.collective = c;
  } else if (const Json* args = member(doc, {"args", "argv"});
             args && args->is_array() && !args->empty() && (*args)[0].is_string()) {
    out.collective = collective_from_program((*args)[0].get<std::string>());
  }
  finish(out, extra, hostnames, label, options, listed, product);
  return out;
}

NcclTestsImport import_nccl_tests(const std::filesystem::path& path,
                                  const NcclTestsImportOptions& options) {
  return parse_nccl_tests(io::read_input_file(path), path.string(), options);
}

NcclTestsImport parse_nccl_tests(const std::string& text, const std::string& label,
                                 const NcclTestsImportOptions& options) {
  const std::string_view content = trim(text);
  if (content.empty()) throw InputError(label + ": empty file");
  if (content.front() == '{' || content.front() == '[') {
    return parse_nccl_tests_json(text, label, options);
  }
  return parse_nccl_tests_text(text, label, options);
}

}  // namespace adaptsim::calibrate
