#include "sim/run/scenario.h"

#include <algorithm>
#include <cctype>

#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/output.h"
#include "sim/run/progress.h"

namespace adaptsim::run {
namespace {

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;  // YAML text of each value
};

std::vector<SweepAxis> read_sweep(io::MapReader& top) {
  std::vector<SweepAxis> axes;
  if (!top.has("sweep")) {
    top.accept("sweep");
    return axes;
  }
  io::MapReader sweep = top.map("sweep");
  for (auto it = sweep.node().begin(); it != sweep.node().end(); ++it) {
    const std::string key = it->first.Scalar();
    sweep.accept(key);
    if (key == "sweep" || key.rfind("sweep.", 0) == 0) {
      sweep.fail(key, "a sweep cannot change the sweep itself");
    }
    const auto values = sweep.list(key);
    if (values.empty()) sweep.fail(key, "expected a non-empty list of values");
    SweepAxis axis{key, {}};
    for (const YAML::Node& v : values) {
      YAML::Emitter e;
      e.SetMapFormat(YAML::Flow);
      e.SetSeqFormat(YAML::Flow);
      e << v;
      // Rows are told apart by their sweep values: a value listed twice gives twin rows.
      if (std::find(axis.values.begin(), axis.values.end(), e.c_str()) != axis.values.end()) {
        sweep.fail(
            key, std::string("value ") + e.c_str() + " is listed twice; expected each value once");
      }
      axis.values.emplace_back(e.c_str());
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

// Output file names (the scenario's name, its CSV): not hidden, not "." or "..", no characters a
// shell or another file system would trip on, and short enough that every file derived from them
// (NAME.manifest.json, NAME.compare.json, their temporaries) stays within NAME_MAX (255 bytes).
constexpr std::size_t kMaxOutputNameChars = 200;
constexpr std::string_view kOutputNameRule =
    "1 to 200 letters, digits, '-', '_' and '.', starting with a letter or digit";

bool valid_output_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxOutputNameChars ||
      !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A value in a message, cut to a readable length.
std::string shown(const std::string& value) {
  return "\"" + (value.size() > 40 ? value.substr(0, 40) + "...\" (" +
                                         std::to_string(value.size()) + " characters)"
                                   : value + "\"");
}

std::string column_name(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// hw/testbed's rule (testbed_plan.h valid_prefix), checked here so that `simctl validate` reports
// it at its key: interface names are at most 15 characters and "-u<k>a" must fit.
bool valid_testbed_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.size() > 12 || !std::isalpha(static_cast<unsigned char>(prefix[0])))
    return false;
  return std::all_of(prefix.begin(), prefix.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

// "host:port" with a non-empty host and a port in 1..65535.
bool valid_host_port(const std::string& entry) {
  const auto colon = entry.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) return false;
  const std::string port = entry.substr(colon + 1);
  if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      }))
    return false;
  const int p = std::stoi(port);
  return p >= 1 && p <= 65535;
}

runtime::LiveOptions read_live(io::MapReader& top) {
  runtime::LiveOptions o;
  if (auto live = top.optional_map("live")) {
    o.placement = live->choice_or("placement", {"local", "testbed", "hosts"}, o.placement);
    o.timeout_ns = live->duration_ns_or("timeout", o.timeout_ns);
    o.congestion_control = live->string_or("congestion_control", o.congestion_control);
    o.verify = live->boolean_or("verify", o.verify);
    o.prefix = live->string_or("prefix", o.prefix);
    o.compute = live->choice_or("compute", {"auto", "sleep", "spin", "gpu"}, o.compute);
    if (!valid_testbed_prefix(o.prefix)) {
      live->fail("prefix",
                 "expected 1 to 12 letters and digits, starting with a letter (it names "
                 "the testbed's namespaces and interfaces)");
    }
    if (live->has("hosts")) {
      o.hosts = live->string_list("hosts");
      for (const std::string& h : o.hosts) {
        if (!valid_host_port(h))
          live->fail("hosts", "expected host:port entries, got \"" + h + "\"");
      }
    }
    if (o.placement == "hosts" && o.hosts.empty()) {
      live->fail("placement", "placement hosts needs `hosts: [host:port, ...]`, one per rank");
    }
    if (o.placement != "hosts" && !o.hosts.empty()) {
      live->fail("hosts", "hosts are only used with `placement: hosts`");
    }
    if (auto sysctls = live->optional_map("host_sysctls")) {
      // net.* sysctls of every testbed host's namespace (TCP behaviour under study, e.g.
      // net.ipv4.tcp_slow_start_after_idle: 0); set after the testbed is built.
      for (auto it = sysctls->node().begin(); it != sysctls->node().end(); ++it) {
        const std::string key = it->first.Scalar();
        sysctls->accept(key);
        const bool valid_key =
            key.rfind("net.", 0) == 0 && std::all_of(key.begin(), key.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_';
            });
        if (!valid_key) {
          sysctls->fail(key,
                        "expected a network namespace's sysctl, net.<...> (letters, digits, "
                        "'_' and '.')");
        }
        if (!it->second.IsScalar() || it->second.Scalar().empty() ||
            it->second.Scalar().find_first_of(" \t\n=") != std::string::npos) {
          sysctls->fail(key, "expected one value without spaces");
        }
        o.host_sysctls.emplace_back(key, it->second.Scalar());
      }
      if (o.placement != "testbed") {
        live->fail("host_sysctls",
                   "set in the testbed's host namespaces; expected placement: "
                   "testbed");
      }
    }
    // An elastic run's config store: the run's folder, or etcd (an endpoint, or empty: a private
    // etcd the launcher starts on loopback for the run).
    o.config_store = live->choice_or("config_store", {"file", "etcd"}, o.config_store);
    o.etcd = live->string_or("etcd", o.etcd);
    if (!o.etcd.empty() && !valid_host_port(o.etcd)) {
      live->fail("etcd", "expected host:port of an etcd's client URL, got \"" + o.etcd + "\"");
    }
    if (!o.etcd.empty() && o.config_store != "etcd") {
      live->fail("etcd", "an etcd endpoint is used with `config_store: etcd`");
    }
    if (o.config_store == "etcd" && o.placement == "hosts") {
      live->fail("config_store",
                 "etcd is started on this machine (loopback, or a testbed server's namespace): "
                 "expected placement: local or testbed");
    }
    if (!o.etcd.empty() && o.placement != "local") {
      live->fail("etcd",
                 "a running etcd is reached on this machine's loopback, which the testbed's "
                 "namespaces do not share: leave live.etcd out (the launcher starts one in the "
                 "first server's namespace) or use placement: local");
    }
    if (auto fault = live->optional_map("fault")) {
      o.fault_kill_rank = static_cast<int>(fault->integer("kill_rank", 0, 1 << 20));
      o.fault_after_sends = static_cast<std::uint64_t>(fault->integer("after_sends", 0));
      fault->finish();
    }
    live->finish();
  }
  return o;
}

// A hosts placement lists one address per rank: the point's servers times GPUs per server.
void check_live_hosts(io::MapReader& top, const runtime::LiveOptions& live,
                      const topo::ClusterSpec& spec) {
  if (live.placement != "hosts") return;
  const std::size_t ranks = static_cast<std::size_t>(spec.servers) * spec.server.gpus;
  if (live.hosts.size() != ranks) {
    io::MapReader l = top.map("live");
    l.fail("hosts", std::to_string(live.hosts.size()) + " hosts for " + std::to_string(ranks) +
                        " ranks (servers x GPUs per server of the topology); list one per rank");
  }
}

// What every sweep point is loaded with.
struct PointInputs {
  std::filesystem::path dir;  // the scenario's folder: relative paths resolve against it
  std::uint64_t seed = 1;
  Mode mode = Mode::kSim;
  const io::CalibrationProfile* calibration = nullptr;
  runtime::LiveOptions live;
  runtime::LiveBackend* backend = nullptr;
  LoadCache* cache = nullptr;
};

ScenarioPoint load_point(const io::Document& doc, const PointInputs& in,
                         std::vector<std::pair<std::string, std::string>> assignments) {
  const std::filesystem::path& dir = in.dir;
  io::MapReader top(doc, doc.root(), "");
  top.accept("calibration");
  top.accept("live");
  top.accept("name");
  top.accept("description");
  top.accept("seed");
  top.accept("mode");
  top.accept("sweep");
  top.accept("output");

  io::MapReader topo = top.map("topology");
  std::filesystem::path file = topo.string("file");
  if (file.is_relative()) file = dir / file;
  try {
    io::check_input_file(file);
  } catch (const InputError& e) {
    topo.fail("file", std::string("topology file ") + e.what());
  }
  io::Params overrides;
  if (auto params = topo.optional_map("params")) {
    for (auto it = params->node().begin(); it != params->node().end(); ++it) {
      const std::string name = it->first.Scalar();
      params->accept(name);
      overrides[name] = io::Param{it->second, doc.where(it->second), &doc};
    }
  }
  topo.finish();

  ScenarioPoint point;
  point.assignments = std::move(assignments);
  point.topology = io::load_topology(in.cache->topology(file), overrides);
  point.nominal = point.topology.spec;
  if (in.mode == Mode::kLive) check_live_hosts(top, in.live, point.nominal);
  if (in.calibration) {
    point.calibrated = io::apply_calibration_with_report(point.topology.spec, *in.calibration);
  }

  io::MapReader w = top.map("workload");
  std::vector<std::string> kinds;
  for (const auto& k : workload_kinds())
    kinds.push_back(k.name);
  const std::string kind = w.choice("kind", kinds);
  const PointContext ctx{point.topology, point.nominal, in.seed,  in.mode,       dir,
                         in.live,        in.backend,    in.cache, in.calibration};
  for (const auto& k : workload_kinds()) {
    if (k.name == kind) point.workload = k.parse(w, ctx);
  }
  top.finish();
  return point;
}

}  // namespace

std::uint64_t parse_seed(const std::string& text, const std::string& origin) {
  // Digits only: strtoull would wrap "-1" to 2^64 - 1, and a double parse would round "1e23".
  const bool digits =
      !text.empty() && text.size() <= 19 && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
  if (!digits || std::stoull(text) > static_cast<std::uint64_t>(INT64_MAX)) {
    throw InputError(origin + ": expected a whole number from 0 to 9223372036854775807, got " +
                     shown(text));
  }
  return std::stoull(text);
}

namespace {

// load_scenario and parse_scenario, from the file as parsed (`base.path()` is the file's path).
Scenario load_document(io::Document base, const LoadOptions& options) {
  const std::filesystem::path path = base.path();
  const std::vector<std::string>& overrides = options.overrides;
  const std::optional<std::uint64_t>& seed = options.seed;
  const std::optional<std::filesystem::path>& calibration = options.calibration;
  // --set "sweep.topology.params.servers=[...]" names a sweep key, not a path under `sweep`.
  base.set_path_keyed("sweep");
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--set " + o +
                       ": expected key=value (e.g. --set topology.params.servers=16)");
    }
    // Errors name the override; a very long one is cut so that the message stays one readable line.
    base.set(o.substr(0, eq), o.substr(eq + 1),
             "--set " + (o.size() > 120 ? o.substr(0, 120) + "..." : o));
  }
  // --seed goes into the document too, so the resolved scenario in the manifest shows the seed
  // the run used.
  if (seed) base.set("seed", std::to_string(*seed), "--seed " + std::to_string(*seed));

  Scenario sc;
  sc.path = path;
  sc.file_hash = io::fnv1a_hex(base.text());
  sc.overrides = overrides;
  {
    YAML::Emitter e;
    e << base.root();
    sc.resolved_yaml = e.c_str();
  }
  io::MapReader top(base, base.root(), "");
  sc.name = top.string("name");
  if (!valid_output_name(sc.name)) {
    top.fail("name", "expected " + std::string(kOutputNameRule) + " (it names output files), got " +
                         shown(sc.name));
  }
  sc.description = top.string_or("description", "");
  sc.seed = seed ? *seed : static_cast<std::uint64_t>(top.integer_or("seed", 1, 0));
  sc.mode = top.choice_or("mode", {"sim", "live"}, "sim") == "live" ? Mode::kLive : Mode::kSim;
  if (options.mode) sc.mode = *options.mode;
  sc.live = read_live(top);
  if (sc.mode == Mode::kLive && !options.backend) {
    throw InputError(path.string() + ": live runs need the live backend (simctl run --live)");
  }
  if (auto out = top.optional_map("output")) {
    sc.csv_name = out->string_or("csv", sc.name + ".csv");
    if (sc.csv_name.find('/') != std::string::npos) {
      out->fail("csv", "expected a file name, not a path (use simctl run -o DIR for the folder)");
    }
    if (!valid_output_name(sc.csv_name)) {
      out->fail("csv", "expected " + std::string(kOutputNameRule) + ", got " + shown(sc.csv_name));
    }
    if (sc.csv_name == sc.name + ".manifest.json") {
      out->fail("csv", "expected a name other than the manifest's, " + sc.name + ".manifest.json");
    }
    out->finish();
  } else {
    sc.csv_name = sc.name + ".csv";
  }
  // Calibration profile: the command line's, else the scenario's (relative to the scenario).
  std::optional<io::CalibrationProfile> profile;
  if (calibration) {
    sc.calibration = *calibration;
    top.accept("calibration");
  } else if (top.has("calibration")) {
    sc.calibration = top.string("calibration");
    if (sc.calibration.is_relative()) sc.calibration = path.parent_path() / sc.calibration;
    try {
      io::check_input_file(sc.calibration);
    } catch (const InputError& e) {
      top.fail("calibration", std::string("calibration profile ") + e.what());
    }
  } else {
    top.accept("calibration");
  }
  if (!sc.calibration.empty()) profile = io::load_calibration_profile(sc.calibration);

  const std::vector<SweepAxis> axes = read_sweep(top);
  std::size_t total = 1;
  for (const auto& a : axes) {
    sc.sweep_columns.push_back(column_name(a.key));
    if (total > kMaxSweepPoints / a.values.size()) {
      top.fail("sweep", "the sweep's axes multiply to more than " +
                            std::to_string(kMaxSweepPoints) + " points; expected at most that");
    }
    total *= a.values.size();
  }

  LoadCache cache;
  PointInputs in;
  in.dir = path.parent_path();
  in.seed = sc.seed;
  in.mode = sc.mode;
  in.calibration = profile ? &*profile : nullptr;
  in.live = sc.live;
  in.backend = options.backend;
  in.cache = &cache;
  // Each point starts from the file without its sweep: the value lists are not parsed again.
  const io::Document point_base = base.clone_without("sweep");
  ProgressBar bar("simctl: validating " + std::to_string(total) + " sweep points", total,
                  options.progress && stderr_is_terminal(), options.progress_after);
  // Cartesian product, first axis outermost.
  std::vector<std::size_t> index(axes.size(), 0);
  while (true) {
    io::Document doc = point_base.clone();
    std::vector<std::pair<std::string, std::string>> assignments;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const std::string& value = axes[a].values[index[a]];
      doc.set(axes[a].key, value,
              "sweep " + axes[a].key + "=" + value + " (" + path.string() + ")");
      assignments.emplace_back(axes[a].key, value);
    }
    ScenarioPoint point = load_point(doc, in, std::move(assignments));
    sc.task_count += point.workload->tasks().size();
    ++sc.point_count;
    if (options.keep_points) sc.points.push_back(std::move(point));
    bar.update(sc.point_count);
    if (axes.empty()) break;
    bool wrapped = true;  // the odometer rolled over: every combination is done
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) {
        wrapped = false;
        break;
      }
      index[a] = 0;
    }
    if (wrapped) break;
  }
  bar.finish();
  return sc;
}

}  // namespace

Scenario load_scenario(const std::filesystem::path& path, const LoadOptions& options) {
  return load_document(io::Document::load_file(path), options);
}

Scenario parse_scenario(const std::string& text, const std::filesystem::path& path,
                        const LoadOptions& options) {
  return load_document(io::Document::parse_string(text, path.string()), options);
}

}  // namespace adaptsim::run
