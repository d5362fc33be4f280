#include "hw/live/elastic_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

json cluster_to_json(const runtime::ClusterConfig& c) {
  return {{"version", c.version}, {"workers", c.workers}};
}

// The cluster in `j`, or the reason it is not a valid one.
std::optional<runtime::ClusterConfig> cluster_from_json(const json& j, int capacity,
                                                        std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<runtime::ClusterConfig> {
    *error = why;
    return std::nullopt;
  };
  if (!j.is_object() || !j.contains("version") || !j.contains("workers"))
    return fail("expected {\"version\": V, \"workers\": [...]}");
  if (!j.at("version").is_number_integer() || j.at("version").get<long long>() < 0 ||
      j.at("version").get<long long>() > std::numeric_limits<int>::max())
    return fail("'version' must be an integer >= 0");
  const json& workers = j.at("workers");
  if (!workers.is_array() || workers.empty()) return fail("'workers' must be a non-empty list");
  runtime::ClusterConfig c;
  c.version = j.at("version").get<int>();
  std::set<int> seen;
  for (const json& w : workers) {
    if (!w.is_number_integer() || w.get<long long>() < 0 || w.get<long long>() >= capacity)
      return fail("'workers' holds " + w.dump() + ", expected worker ids 0.." +
                  std::to_string(capacity - 1));
    if (!seen.insert(w.get<int>()).second)
      return fail("'workers' holds worker " + w.dump() + " twice");
    c.workers.push_back(w.get<int>());
  }
  return c;
}

// A finished temporary file linked to `target`: false when `target` exists already.
bool create_exclusive(const fs::path& target, const std::string& content) {
  const fs::path tmp = target.parent_path() / (std::string(".") + target.filename().string() + "." +
                                               std::to_string(::getpid()));
  write_file_atomic(tmp, content);
  const int rc = ::link(tmp.c_str(), target.c_str());
  const int err = errno;
  std::error_code ec;
  fs::remove(tmp, ec);
  if (rc == 0) return true;
  if (err == EEXIST) return false;
  throw RuntimeFailure(target.string() + ": cannot create: " + std::string(std::strerror(err)));
}

fs::path started_file(const fs::path& dir, int worker, int version) {
  return dir / "started" / ("w" + std::to_string(worker) + ".v" + std::to_string(version));
}

}  // namespace

FileStore::FileStore(fs::path dir, int capacity) : dir_(std::move(dir)), capacity_(capacity) {}

void FileStore::create(const runtime::ClusterConfig& first) const {
  for (const char* sub : {"notices", "addresses", "records", "leases", "started"})
    fs::create_directories(dir_ / sub);
  put(first);
}

std::string cluster_json(const runtime::ClusterConfig& cluster) {
  return cluster_to_json(cluster).dump() + "\n";
}

std::optional<runtime::ClusterConfig> parse_cluster(const std::string& text, int capacity,
                                                    std::string* error) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    *error = std::string("the cluster document is not JSON: ") + e.what();
    return std::nullopt;
  }
  std::string why;
  std::optional<runtime::ClusterConfig> c = cluster_from_json(j, capacity, &why);
  if (!c) *error = "invalid cluster document: " + why;
  return c;
}

std::optional<runtime::ClusterConfig> FileStore::get(std::string* error) const {
  const fs::path file = dir_ / "cluster.json";
  const std::optional<std::string> text = read_text(file);
  if (!text) {
    *error = file.string() + ": the config store is unavailable (cannot read it)";
    return std::nullopt;
  }
  std::string why;
  std::optional<runtime::ClusterConfig> c = parse_cluster(*text, capacity_, &why);
  if (!c) *error = file.string() + ": " + why;
  return c;
}

void FileStore::put(const runtime::ClusterConfig& cluster) const {
  write_file_atomic(dir_ / "cluster.json", cluster_json(cluster));
}

bool FileStore::swap(int expected_version, const runtime::ClusterConfig& cluster) const {
  const fs::path lock_file = dir_ / "lock";
  const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw RuntimeFailure(lock_file.string() + ": cannot open: " + std::strerror(errno));
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the lock
  } unlock{fd};
  if (::flock(fd, LOCK_EX) != 0) {
    throw RuntimeFailure(lock_file.string() + ": cannot lock: " + std::strerror(errno));
  }
  std::string error;
  const std::optional<runtime::ClusterConfig> now = get(&error);
  if (!now || now->version != expected_version) return false;
  put(cluster);
  return true;
}

void FileStore::renew_lease(int worker) const {
  const fs::path f = dir_ / "leases" / (std::string("w") + std::to_string(worker));
  // Creating or truncating the file sets its modification time to now.
  const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

std::vector<int> FileStore::live_leases(TimeNs lifetime_ns) const {
  std::vector<int> out;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const TimeNs now_ns = static_cast<TimeNs>(now.tv_sec) * kNsPerSecond + now.tv_nsec;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "leases", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 2 || name[0] != 'w') continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    const TimeNs at = static_cast<TimeNs>(st.st_mtim.tv_sec) * kNsPerSecond + st.st_mtim.tv_nsec;
    if (now_ns - at <= lifetime_ns) out.push_back(std::stoi(name.substr(1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path FileStore::notice_file(int version) const {
  return dir_ / "notices" / (std::string("v") + std::to_string(version) + ".json");
}

bool FileStore::post_notice(const runtime::RunnerNotice& notice) const {
  return create_exclusive(notice_file(notice.cluster.version), notice_json(notice));
}

std::vector<int> FileStore::notice_versions() const {
  std::vector<int> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "notices", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() < 7 || name[0] != 'v' || !name.ends_with(".json")) continue;
    const std::string digits = name.substr(1, name.size() - 6);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    out.push_back(std::stoi(digits));
  }
  std::sort(out.begin(), out.end());
  return out;
}

runtime::RunnerNotice FileStore::read_notice(int version) const {
  const fs::path file = notice_file(version);
  const std::optional<std::string> text = read_text(file);
  if (!text) throw RuntimeFailure(file.string() + ": cannot read the runners' notice");
  runtime::RunnerNotice n = notice_from_json(*text, file.string());
  std::string why;
  if (!cluster_from_json(cluster_to_json(n.cluster), capacity_, &why) ||
      n.cluster.version != version) {
    throw RuntimeFailure(file.string() + ": invalid notice: " +
                         (why.empty() ? "its version is not " + std::to_string(version) : why));
  }
  return n;
}

void FileStore::mark_started(int worker, int version) const {
  const fs::path f = started_file(dir_, worker, version);
  const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw RuntimeFailure(f.string() + ": cannot create: " + std::strerror(errno));
  ::close(fd);
}

bool FileStore::started(int worker, int version) const {
  std::error_code ec;
  return fs::exists(started_file(dir_, worker, version), ec);
}

void FileStore::publish_address(int version, int worker, const std::string& address) const {
  const fs::path d = dir_ / "addresses" / (std::string("v") + std::to_string(version));
  fs::create_directories(d);
  write_file_atomic(d / (std::string("w") + std::to_string(worker)), address);
}

std::optional<std::string> FileStore::address(int version, int worker) const {
  return read_text(dir_ / "addresses" / (std::string("v") + std::to_string(version)) /
                   (std::string("w") + std::to_string(worker)));
}

void FileStore::write_checkpoint(const std::vector<std::vector<float>>& tensors,
                                 std::span<const std::uint64_t> words) const {
  std::vector<std::string_view> parts;
  for (const std::vector<float>& t : tensors)
    parts.emplace_back(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(float));
  parts.emplace_back(reinterpret_cast<const char*>(words.data()), words.size_bytes());
  write_file_atomic(dir_ / "checkpoint.bin", parts);
}

void FileStore::read_checkpoint(std::vector<std::vector<float>>& tensors,
                                std::span<std::uint64_t> words) const {
  const fs::path file = dir_ / "checkpoint.bin";
  std::uint64_t expected = words.size_bytes();
  for (const std::vector<float>& t : tensors)
    expected += t.size() * sizeof(float);
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) throw RuntimeFailure(file.string() + ": cannot read the checkpoint: " + ec.message());
  if (size != expected) {
    throw RuntimeFailure(file.string() + ": the checkpoint holds " + std::to_string(size) +
                         " bytes, expected " + std::to_string(expected) + " of model state");
  }
  std::ifstream in(file, std::ios::binary);
  for (std::vector<float>& t : tensors)
    in.read(reinterpret_cast<char*>(t.data()),
            static_cast<std::streamsize>(t.size() * sizeof(float)));
  in.read(reinterpret_cast<char*>(words.data()), static_cast<std::streamsize>(words.size_bytes()));
  if (!in) throw RuntimeFailure(file.string() + ": cannot read the checkpoint");
}

void FileStore::write_record(int worker, const runtime::RunRecord& record) const {
  write_file_atomic(
      dir_ / "records" /
          (std::string("w") + std::to_string(worker) + "-" + std::to_string(::getpid()) + ".json"),
      record_json(record));
}

std::vector<runtime::RunRecord> FileStore::read_records() const {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "records", ec)) {
    const std::string name = e.path().filename().string();
    if (!name.empty() && name[0] != '.' && name.ends_with(".json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<runtime::RunRecord> out;
  for (const fs::path& f : files) {
    const std::optional<std::string> text = read_text(f);
    if (!text) throw RuntimeFailure(f.string() + ": cannot read the process's record");
    out.push_back(record_from_json(*text, f.string()));
  }
  return out;
}

std::string notice_json(const runtime::RunnerNotice& n) {
  return json{{"cluster", cluster_to_json(n.cluster)},
              {"restart", n.restart},
              {"step", n.step},
              {"notified_at_ns", n.notified_at},
              {"resize_begin_ns", n.resize_begin},
              {"agreed_state", n.agreed_state}}
      .dump();
}

runtime::RunnerNotice notice_from_json(const std::string& text, const std::string& label) {
  try {
    const json j = json::parse(text);
    runtime::RunnerNotice n;
    n.cluster.version = j.at("cluster").at("version").get<int>();
    n.cluster.workers = j.at("cluster").at("workers").get<std::vector<int>>();
    n.restart = j.at("restart").get<bool>();
    n.step = j.at("step").get<int>();
    n.notified_at = j.at("notified_at_ns").get<TimeNs>();
    n.resize_begin = j.at("resize_begin_ns").get<TimeNs>();
    n.agreed_state = j.at("agreed_state").get<std::string>();
    return n;
  } catch (const json::exception& e) {
    throw RuntimeFailure(label + ": unreadable runners' notice: " + e.what());
  }
}

namespace {
json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}
double number_from(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}
}  // namespace

std::string record_json(const runtime::RunRecord& r) {
  json steps = json::array();
  for (std::size_t k = 0; k < r.step_sum_s.size(); ++k) {
    json readings = json::object();
    for (const auto& [key, value] : r.step_readings[k])
      readings[key] = number(value);
    steps.push_back({{"sum_s", r.step_sum_s[k]},
                     {"batch", r.step_batch[k]},
                     {"strategy", r.step_strategy[k]},
                     {"decision", r.step_decision[k]},
                     {"bytes", r.step_bytes[k]},
                     {"workers", r.step_workers[k]},
                     {"readings", readings}});
  }
  return json{{"warmup_steps", r.warmup_steps},
              {"total_steps", r.total_steps},
              {"workers", r.workers},
              {"elastic", r.elastic},
              {"steps", steps},
              {"compute_s", r.compute_s},
              {"link_s", r.link_s},
              {"wait_s", r.wait_s},
              {"measured", r.measured},
              {"worker_step_mean_s", r.worker_step_mean_s}}
      .dump();
}

runtime::RunRecord record_from_json(const std::string& text, const std::string& label) {
  try {
    const json j = json::parse(text);
    runtime::RunRecord r;
    r.warmup_steps = j.at("warmup_steps").get<int>();
    r.total_steps = j.at("total_steps").get<int>();
    r.workers = j.at("workers").get<int>();
    r.elastic = j.at("elastic").get<bool>();
    for (const json& s : j.at("steps")) {
      r.step_sum_s.push_back(s.at("sum_s").get<double>());
      r.step_batch.push_back(s.at("batch").get<int>());
      r.step_strategy.push_back(s.at("strategy").get<std::string>());
      r.step_decision.push_back(s.at("decision").get<std::string>());
      r.step_bytes.push_back(s.at("bytes").get<double>());
      r.step_workers.push_back(s.at("workers").get<int>());
      std::map<std::string, double> readings;
      for (const auto& [key, value] : s.at("readings").items())
        readings[key] = number_from(value);
      r.step_readings.push_back(std::move(readings));
    }
    r.compute_s = j.at("compute_s").get<double>();
    r.link_s = j.at("link_s").get<double>();
    r.wait_s = j.at("wait_s").get<double>();
    r.measured = j.at("measured").get<double>();
    r.worker_step_mean_s = j.at("worker_step_mean_s").get<std::vector<double>>();
    if (static_cast<int>(r.step_sum_s.size()) != r.total_steps)
      throw RuntimeFailure(label + ": the record has " + std::to_string(r.step_sum_s.size()) +
                           " steps of " + std::to_string(r.total_steps));
    return r;
  } catch (const json::exception& e) {
    throw RuntimeFailure(label + ": unreadable process record: " + e.what());
  }
}

}  // namespace adaptsim::live
