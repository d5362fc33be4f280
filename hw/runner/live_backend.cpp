#include "hw/runner/live_backend.h"

#include <unistd.h>

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hw/runner/link_sampler.h"
#include "hw/testbed/command.h"
#include "hw/testbed/signal_teardown.h"
#include "hw/testbed/testbed.h"
#include "hw/testbed/traffic.h"
#include "sim/core/error.h"
#include "sim/core/install_paths.h"
#include "sim/core/units.h"
#include "sim/io/output.h"
#include "sim/runtime/system_config.h"
#include "sim/runtime/timeline.h"
#include "sim/train/learn_spec.h"

namespace adaptsim::runner {
namespace fs = std::filesystem;

namespace {

// A tool of this build or installation: $`env_var`, else beside the running simctl (the installed
// bin/), else <build>/`folder`/`name` in the build tree (sim/core/install_paths.h), else on $PATH;
// RuntimeFailure naming `purpose` otherwise.
fs::path find_build_tool(const char* env_var, const std::string& folder, const std::string& name,
                         const std::string& purpose) {
  if (const char* env = std::getenv(env_var)) return env;
  if (auto sibling = find_sibling_tool(name, folder)) {
    std::error_code ec;
    const fs::path canonical = fs::canonical(*sibling, ec);
    return ec ? *sibling : canonical;
  }
  if (auto found = testbed::find_program(name)) return *found;
  throw RuntimeFailure("cannot find the " + name + " tool" + purpose + " (build it, or set " +
                       env_var + ")");
}

}  // namespace

std::filesystem::path find_live_tool() {
  return find_build_tool("ADAPTSIM_LIVE_TOOL", "hw/live", "adaptsim-live", "");
}

std::filesystem::path find_traffic_tool() {
  return find_build_tool("ADAPTSIM_TRAFFIC_TOOL", "hw/testbed", "adaptsim-traffic",
                         " for the background traffic");
}

std::string live_config_yaml(const runtime::LiveTrainingTask& task,
                             const std::filesystem::path& progress_file,
                             const std::filesystem::path& timeline_dir,
                             const std::filesystem::path& messages_dir) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << task.model;
  out << YAML::Key << "batch_per_gpu" << YAML::Value << task.batch_per_gpu;
  out << YAML::Key << "device" << YAML::Value << task.device.string();
  if (!task.precision.empty()) out << YAML::Key << "precision" << YAML::Value << task.precision;
  out << YAML::Key << "compute_scale" << YAML::Value << task.compute_scale;
  out << YAML::Key << "warmup_steps" << YAML::Value << task.warmup_steps;
  out << YAML::Key << "steps" << YAML::Value << task.measured_steps;
  out << YAML::Key << "seed" << YAML::Value << task.seed;
  out << YAML::Key << "timeout" << YAML::Value << std::to_string(task.live.timeout_ns) + "ns";
  out << YAML::Key << "compute_mode" << YAML::Value << task.live.compute;
  out << YAML::Key << "verify" << YAML::Value << task.live.verify;
  if (!task.live.congestion_control.empty()) {
    out << YAML::Key << "congestion_control" << YAML::Value << task.live.congestion_control;
  }
  if (!progress_file.empty()) {
    out << YAML::Key << "progress_file" << YAML::Value << progress_file.string();
  }
  if (!timeline_dir.empty()) {
    out << YAML::Key << "timeline_dir" << YAML::Value << timeline_dir.string();
  }
  if (!messages_dir.empty()) {
    out << YAML::Key << "messages_dir" << YAML::Value << messages_dir.string();
  }
  out << YAML::EndMap;
  // The system, policy and monitors as their own readers read them back (one line each).
  std::string text =
      std::string(out.c_str()) + "\nsystem: " + runtime::system_yaml(task.system) + "\n";
  if (!task.seam.policy_yaml.empty()) text += "policy: " + task.seam.policy_yaml + "\n";
  if (!task.seam.monitors_yaml.empty()) text += "monitors: " + task.seam.monitors_yaml + "\n";
  // The compute stragglers (the ranks' step loop stretches their compute); NIC stragglers are the
  // testbed's caps, changed by this backend (NicStragglers).
  std::vector<runtime::Straggler> compute;
  for (const runtime::Straggler& s : task.stragglers)
    if (s.compute_factor != 1) compute.push_back(s);
  if (!compute.empty()) {
    text += "stragglers:\n";
    for (const runtime::Straggler& s : compute) {
      text += "  - {worker: " + std::to_string(s.worker) +
              ", from_step: " + std::to_string(s.from_step) +
              ", compute: " + io::fmt_fixed(s.compute_factor, 9) + "}\n";
    }
  }
  if (task.learn) text += "learn: " + train::learn_spec_yaml(*task.learn) + "\n";
  if (const auto& e = task.elastic) {
    // The topology's workers and GPUs per host, then the scenario's elastic: keys.
    auto ns = [](TimeNs t) { return std::to_string(t) + "ns"; };
    text +=
        "elastic: {capacity: " + std::to_string(task.nominal.servers * task.nominal.server.gpus) +
        ", ranks_per_host: " + std::to_string(task.nominal.server.gpus) + ", mechanism: " +
        (e->mechanism == runtime::ResizeMechanism::kKungFu ? "kungfu" : "restart") +
        (e->initial_workers > 0 ? ", initial_workers: " + std::to_string(e->initial_workers)
                                : std::string()) +
        ", retry: " + ns(e->retry_ns) + ", failure_timeout: " + ns(e->failure_timeout_ns) +
        ", optimizer_slots: " + std::to_string(e->optimizer_slots) +
        ", framework_init: " + ns(e->framework_init_ns) + "}\n";
    if (!task.failures.empty()) {
      text += "failures:\n";
      for (const runtime::WorkerFailure& f : task.failures) {
        text += "  - " + runtime::failure_yaml(f) + "\n";
      }
    }
  }
  return text;
}

runtime::TrainingResult parse_live_result(const std::string& json_text, const std::string& label) {
  try {
    const auto j = nlohmann::json::parse(json_text);
    return runtime::training_result_from_json(j.at("result").dump(), label);
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFailure(label + ": unreadable live result: " + e.what());
  }
}

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The traffic matrix from every rank's rank<r>.messages.csv (run_live_training's messages_dir).
std::vector<runtime::PairTraffic> read_pair_traffic(const fs::path& dir, int ranks) {
  std::vector<runtime::PairTraffic> out;
  for (int r = 0; r < ranks; ++r) {
    const fs::path file = dir / ("rank" + std::to_string(r) + ".messages.csv");
    std::istringstream in(read_file(file));
    std::string line;
    if (!std::getline(in, line) || line != "dst_rank,messages,bytes") {
      throw RuntimeFailure(file.string() + ": not a rank's messages file");
    }
    while (std::getline(in, line)) {
      runtime::PairTraffic p;
      p.src = r;
      char c1 = 0, c2 = 0;
      std::istringstream row(line);
      if (!(row >> p.dst >> c1 >> p.messages >> c2 >> p.bytes) || c1 != ',' || c2 != ',') {
        throw RuntimeFailure(file.string() + ": a malformed row '" + line + "'");
      }
      out.push_back(p);
    }
  }
  return out;
}

// A scratch folder for one run, removed afterwards.
// The run's scratch folder, removed when the run ends, and also when SIGINT, SIGTERM or SIGHUP
// ends the process: the signal teardown (install_signal_teardown) then runs `rm -rf` on it, as it
// removes a testbed, since no destructor runs.
struct ScratchDir {
  fs::path path;
  std::unique_ptr<testbed::EmergencyTeardown> on_signal;
  int slot = -1;
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "adaptsim-live-XXXXXX").string();
    if (!::mkdtemp(templ.data())) throw RuntimeFailure("cannot create a temporary folder");
    path = templ;
    on_signal = std::make_unique<testbed::EmergencyTeardown>(
        "/bin/rm", std::vector<std::vector<std::string>>{{"rm", "-rf", "--", path.string()}}, "");
    slot = testbed::register_emergency(on_signal.get());
  }
  ~ScratchDir() {
    testbed::unregister_emergency(slot);
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// One background flow's adaptsim-traffic pair on the testbed: the sink in the destination host's
// namespace (started first, ready when it says where it listens), the source in the source host's,
// following rank 0's progress file.
struct TrafficPair {
  std::string name;  // "background[0] (x0 -> s0)"
  std::unique_ptr<testbed::BackgroundCommand> sink, source;
};

std::vector<TrafficPair> start_background(const runtime::LiveTrainingTask& task,
                                          const testbed::Testbed& bed, const fs::path& dir,
                                          const fs::path& progress) {
  const fs::path tool = find_traffic_tool();
  // The tools outlive no run: twice the run's timeout bounds them even if nobody stops them.
  const std::string timeout = std::to_string(task.live.timeout_ns * 2 / kNsPerMs) + "ms";
  std::vector<TrafficPair> pairs;
  for (std::size_t f = 0; f < task.background.flows.size(); ++f) {
    const io::BackgroundFlow& flow = task.background.flows[f];
    TrafficPair pair;
    pair.name = "background[" + std::to_string(f) + "] (" + flow.from + " -> " + flow.to + ")";
    const testbed::Host& to = bed.hosts().at(static_cast<std::size_t>(flow.to_host));
    const std::string address = to.ip + ":" + std::to_string(7900 + f);
    const std::string tag = dir.string() + "/traffic" + std::to_string(f);
    std::vector<std::string> sink = bed.exec_prefix(flow.to_host);
    sink.insert(sink.end(), {tool.string(), "sink", "--listen", address, "--timeout", timeout});
    pair.sink =
        std::make_unique<testbed::BackgroundCommand>(sink, tag + "-sink.out", tag + "-sink.err");
    if (!pair.sink->wait_for_line("listening on", 10 * kNsPerSecond)) {
      const testbed::CommandResult r = pair.sink->stop();
      throw RuntimeFailure(pair.name + ": the sink on " + flow.to + " did not start (" +
                           testbed::describe_failure(sink, r) + ")");
    }
    std::vector<std::string> source = bed.exec_prefix(flow.from_host);
    source.insert(source.end(), {tool.string(), "source", "--to", address, "--connections",
                                 std::to_string(flow.connections), "--progress", progress.string(),
                                 "--timeout", timeout, "-q"});
    if (!task.live.congestion_control.empty()) {
      source.insert(source.end(), {"--congestion-control", task.live.congestion_control});
    }
    if (flow.rate_Bps > 0) {
      source.insert(source.end(), {"--rate", io::fmt_fixed(flow.rate_Bps, 3) + "B/s"});
    }
    const io::BackgroundSchedule& when = flow.when;
    if (when.by_step()) {
      source.insert(source.end(), {"--start-step", std::to_string(*when.start_step)});
      if (when.stop_step) {
        source.insert(source.end(), {"--stop-step", std::to_string(*when.stop_step)});
      }
    } else {
      source.insert(source.end(), {"--start-time", std::to_string(*when.start_ns) + "ns"});
      if (when.stop_ns) {
        source.insert(source.end(), {"--stop-time", std::to_string(*when.stop_ns) + "ns"});
      }
    }
    pair.source = std::make_unique<testbed::BackgroundCommand>(source, tag + "-source.out",
                                                               tag + "-source.err");
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

// The NIC stragglers of a testbed run: a thread follows rank 0's progress file and, once rank 0
// has started a straggler's step, sets its server's NIC caps (both directions) to the straggler's
// rate, as the simulation changes the links' capacity when rank 0 starts that step (sim_env.h).
class NicStragglers {
 public:
  NicStragglers(const testbed::Testbed& bed, const runtime::LiveTrainingTask& task,
                fs::path progress)
      : bed_(bed), progress_(std::move(progress)) {
    for (const runtime::Straggler& s : task.stragglers)
      if (s.nic_bandwidth_Bps) pending_.push_back(s);
    std::sort(pending_.begin(), pending_.end(),
              [](const auto& a, const auto& b) { return a.from_step < b.from_step; });
    gpus_ = task.nominal.server.gpus;
    if (!pending_.empty()) thread_ = std::thread([this] { follow(); });
  }
  ~NicStragglers() { stop(); }
  NicStragglers(const NicStragglers&) = delete;
  NicStragglers& operator=(const NicStragglers&) = delete;
  // Ends the thread; what failed, or empty.
  std::string stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return failure_;
  }

 private:
  void follow() {
    std::size_t next = 0;
    while (!stop_ && next < pending_.size()) {
      const std::optional<int> step = testbed::read_progress_step(progress_);
      for (; step && next < pending_.size() && pending_[next].from_step <= *step; ++next) {
        const runtime::Straggler& s = pending_[next];
        try {
          bed_.set_host_rate(s.worker / gpus_, *s.nic_bandwidth_Bps);
        } catch (const std::exception& e) {
          failure_ = "straggler worker " + std::to_string(s.worker) + " from step " +
                     std::to_string(s.from_step) + ": " + e.what();
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  const testbed::Testbed& bed_;
  fs::path progress_;
  std::vector<runtime::Straggler> pending_;
  int gpus_ = 1;
  std::atomic<bool> stop_{false};
  std::string failure_;
  std::thread thread_;
};

// Stops the sources, then the sinks; the first source that had failed on its own, if any, as one
// line (a stopped source exits 0).
std::string stop_background(std::vector<TrafficPair>& pairs) {
  std::string failure;
  for (TrafficPair& p : pairs) {
    const testbed::CommandResult r = p.source->stop();
    if (!r.ok() && failure.empty()) {
      failure = p.name + ": " + testbed::describe_failure(p.source->argv(), r);
    }
  }
  for (TrafficPair& p : pairs)
    p.sink->stop();
  return failure;
}

// mpi: {live: library}: the ranks are one MPI job that Open MPI's mpirun starts, as Horovod 0.16.1
// was launched (one rank per GPU, rank r on server r / gpus); adaptsim-live finds its peers by the
// MPI rendezvous and keeps MPI for Horovod's calls (hw/live/mpi_library.h). Open MPI's traffic
// takes its TCP BTL only (no shared memory: the simulation's ranks talk over the network too),
// on the job's network: loopback for local ranks; on a testbed its subnet, mpirun running in
// server 0's namespace and reaching every other server's namespace through a launch agent that
// maps the server's address to `ip netns exec NS`, as ssh would reach a real host. No binding
// (the "hosts" share this machine's cores), and ranks yield when idle (they may outnumber the
// cores). The scenario's forced algorithm, segment size and eager limit become the same MCA
// parameters that force them in Open MPI (coll_tuned_*, btl_tcp_eager_limit).
std::vector<std::string> mpirun_command(const runtime::LiveTrainingTask& task,
                                        const fs::path& live_tool, const fs::path& config,
                                        const fs::path& result, const fs::path& dir,
                                        const testbed::Testbed* bed) {
  const std::optional<std::string> mpirun = testbed::find_program("mpirun");
  if (!mpirun) {
    throw RuntimeFailure(
        "mpi: {live: library} needs Open MPI's mpirun on PATH (Debian: openmpi-bin)");
  }
  const int gpus = task.nominal.server.gpus;
  const int ranks = task.nominal.servers * gpus;
  std::vector<std::string> argv;
  std::string network = "lo";
  if (bed) {
    argv = bed->exec_prefix(0);
    network = bed->plan().subnet;
    std::string agent =
        "#!/bin/sh\n"
        "# mpirun's launch agent (plm_rsh_agent), called as ssh is: [options] HOST "
        "CMD...\n"
        "while [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
        "host=\"$1\"; shift\n"
        "case \"$host\" in\n";
    std::string hostfile;
    for (const testbed::Host& h : bed->hosts()) {
      agent += "  " + h.ip + ") ns=" + h.ns + " ;;\n";
      hostfile += h.ip + " slots=" + std::to_string(gpus) + "\n";
    }
    // Every server's daemon keeps its session files (and hwloc's shared topology) in a folder of
    // its own: the servers share this machine's /tmp and host name, and daemons starting at once
    // in one session folder collide (mkdir "File exists", a crash writing the topology file).
    agent +=
        "  *) echo \"adaptsim mpirun agent: unknown host $host\" >&2; exit 255 ;;\n"
        "esac\n"
        "tmp=\"" +
        (dir / "ompi").string() +
        "/$ns\"\n"
        "mkdir -p \"$tmp\"\n"
        "exec ip netns exec \"$ns\" env OMPI_MCA_orte_tmpdir_base=\"$tmp\" /bin/sh -c \"$*\"\n";
    io::write_file_atomic(dir / "mpirun-agent", agent);
    fs::permissions(dir / "mpirun-agent", fs::perms::owner_all);
    io::write_file_atomic(dir / "hostfile", hostfile);
  }
  argv.insert(argv.end(), {*mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                           "-np", std::to_string(ranks), "--mca", "btl", "tcp,self", "--mca",
                           "btl_tcp_if_include", network, "--mca", "mpi_yield_when_idle", "1"});
  if (bed) {
    // plm rsh named: an environment's OMPI_MCA_plm (a container image's "isolated", seen on a
    // lent GPU machine) would otherwise start every rank in server 0's namespace.
    argv.insert(argv.end(), {"--hostfile", (dir / "hostfile").string(), "--mca", "plm", "rsh",
                             "--mca", "plm_rsh_agent", (dir / "mpirun-agent").string(), "--mca",
                             "plm_rsh_no_tree_spawn", "1", "--mca", "oob_tcp_if_include", network,
                             // The daemons stay the agent's children (no setsid): they die with
                             // the run, and their errors reach its output.
                             "--leave-session-attached"});
  }
  const coll::OmpiOptions& mpi = task.system.mpi;
  if (mpi.forced) {
    argv.insert(argv.end(),
                {"--mca", "coll_tuned_use_dynamic_rules", "1", "--mca",
                 "coll_tuned_allreduce_algorithm", std::to_string(static_cast<int>(*mpi.forced))});
    if (mpi.forced_segment_bytes > 0) {
      argv.insert(argv.end(), {"--mca", "coll_tuned_allreduce_algorithm_segmentsize",
                               std::to_string(mpi.forced_segment_bytes)});
    }
  }
  argv.insert(argv.end(), {"--mca", "btl_tcp_eager_limit", std::to_string(mpi.eager_limit_bytes)});
  argv.insert(argv.end(), {live_tool.string(), config.string(), "--ranks-per-host",
                           std::to_string(gpus), "-o", result.string(), "-q"});
  if (!bed) argv.insert(argv.end(), {"--bind", "127.0.0.1"});
  return argv;
}

}  // namespace

std::string failure_cause(const std::string& output) {
  // Every rank prints "adaptsim-live: rank R: ..." and the launcher, last, "adaptsim-live:
  // launcher: rank 2 (pid 123) was killed by signal 9 (Killed); rank 0 ...", root cause first.
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  // The ranks' lines are single writes in the order they failed: the first is the likeliest cause
  // ("cannot listen on 10.213.1.3:7100: bind: Address already in use"), the others follow from it.
  const std::string tool = "adaptsim-live: ";
  const std::string launcher = tool + "launcher: ";
  auto text_of = [&](const std::string& line) {
    return line.rfind(tool, 0) == 0 ? line.substr(tool.size()) : line;
  };
  std::string summary, first_error, first_line;
  std::string joined;
  for (const std::string& line : lines) {
    if (line.rfind(launcher, 0) == 0) {
      summary = line.substr(launcher.size());
    } else if (first_error.empty() && line.rfind(tool, 0) == 0) {
      first_error = text_of(line);  // the tool's error lines, not a rank's notes
    } else if (first_line.empty()) {
      first_line = line;
    }
    joined += (joined.empty() ? "" : "; ") + text_of(line);
  }
  if (first_error.empty()) first_error = first_line;
  if (summary.empty()) return joined.empty() ? "no output" : joined;
  return first_error.empty() ? summary : summary + "; first error: " + first_error;
}

ProcessLiveBackend::ProcessLiveBackend(std::filesystem::path live_tool)
    : live_tool_(std::move(live_tool)) {}

runtime::TrainingResult ProcessLiveBackend::run_training(const runtime::LiveTrainingTask& task) {
  ScratchDir dir;
  const fs::path config = dir.path / "config.yaml";
  const fs::path result = dir.path / "result.json";
  const bool nic_stragglers =
      std::any_of(task.stragglers.begin(), task.stragglers.end(),
                  [](const runtime::Straggler& s) { return s.nic_bandwidth_Bps.has_value(); });
  const fs::path progress =
      task.background.empty() && !nic_stragglers ? fs::path() : dir.path / "progress";
  const int gpus = task.nominal.server.gpus;
  const int ranks = task.nominal.servers * gpus;
  // The ranks' timelines (one file each, merged below). The scratch folder is on this machine:
  // local and testbed ranks share its file system.
  const fs::path timeline = task.record_timeline ? dir.path / "timeline" : fs::path();
  if (!timeline.empty()) {
    if (task.live.placement == "hosts") {
      throw InputError(
          "--timeline with live.placement: hosts: the ranks' timelines are written "
          "on this machine's file system, which only local and testbed ranks share");
    }
    fs::create_directories(timeline);
  }
  // With link statistics, every rank's messages per peer (the traffic matrix), and the testbed's
  // links sampled below.
  const fs::path messages = task.link_stats_bin_ns > 0 ? dir.path / "messages" : fs::path();
  if (!messages.empty()) {
    if (task.live.placement != "testbed") {
      throw InputError(
          "--link-stats with --live: the links measured are a testbed's (live.placement: testbed)");
    }
    if (task.elastic) throw InputError("--link-stats with --live: not for elastic runs");
    fs::create_directories(messages);
  }
  io::write_file_atomic(config, live_config_yaml(task, progress, timeline, messages));

  std::vector<std::string> argv = {live_tool_.string(),
                                   config.string(),
                                   "--procs",
                                   std::to_string(ranks),
                                   "--ranks-per-host",
                                   std::to_string(gpus),
                                   "-o",
                                   result.string(),
                                   "-q"};
  if (task.elastic && task.live.config_store == "etcd") {
    argv.insert(argv.end(), {"--etcd", task.live.etcd.empty() ? "start" : task.live.etcd});
  }
  if (task.live.fault_kill_rank >= 0) {
    argv.insert(argv.end(), {"--fault-kill-rank", std::to_string(task.live.fault_kill_rank),
                             "--fault-after-sends", std::to_string(task.live.fault_after_sends)});
  }
  std::optional<testbed::Testbed> bed;
  // Every rank's prefix (a namespace, or none), the address it listens on and the one it binds.
  nlohmann::json placements;
  if (task.live.placement == "testbed") {
    testbed::TestbedOptions options;
    options.prefix = task.live.prefix;
    // The MPI library opens its own sockets, which take the namespace's default congestion
    // control (this machine's: BBR) where hw/tcp sets `live.congestion_control` on each of its
    // own; the testbed makes it every server's default, so both kinds of rank run one (unless
    // live.host_sysctls sets the default itself).
    const std::string cc_key = "net.ipv4.tcp_congestion_control";
    if (task.system.mpi_library &&
        std::none_of(task.live.host_sysctls.begin(), task.live.host_sysctls.end(),
                     [&](auto& kv) { return kv.first == cc_key; })) {
      options.congestion_control = task.live.congestion_control;
    }
    options.namespace_sysctls = task.live.host_sysctls;
    // The buffers behind the caps come from the topology (nic.queue), as the simulation's do.
    bed.emplace(testbed::Testbed::create(task.nominal, options));
    // Rank r runs on server r / gpus, inside its namespace, listening on the server's address.
    for (int r = 0; r < ranks; ++r) {
      const int host = r / gpus;
      const auto& h = bed->hosts().at(host);
      placements["ranks"].push_back({{"prefix", bed->exec_prefix(host)},
                                     {"address", h.ip + ":" + std::to_string(7100 + r % gpus)},
                                     {"bind", h.ip}});
    }
  } else if (task.live.placement == "hosts") {
    // Rank r started here, listening on hosts[r] (the scenario checked one entry per rank).
    for (const std::string& address : task.live.hosts) {
      placements["ranks"].push_back({{"prefix", nlohmann::json::array()},
                                     {"address", address},
                                     {"bind", address.substr(0, address.rfind(':'))}});
    }
  }
  if (!placements.is_null()) {
    io::write_file_atomic(dir.path / "placement.json", placements.dump(2));
    argv.push_back("--rank-prefix-json");
    argv.push_back((dir.path / "placement.json").string());
  }
  if (task.system.mpi_library) {
    // (The scenario refused placement: hosts, and elastic runs are KungFu's.)
    if (task.live.fault_kill_rank >= 0) {
      throw InputError("mpi: {live: library}: the fault hooks are adaptsim-live's launcher's");
    }
    argv = mpirun_command(task, live_tool_, config, result, dir.path, bed ? &*bed : nullptr);
  }
  std::vector<TrafficPair> traffic;
  if (!task.background.empty()) {
    // The scenario refused background traffic without a testbed.
    if (!bed) throw RuntimeFailure("background traffic needs live.placement: testbed");
    traffic = start_background(task, *bed, dir.path, progress);
  }
  if (nic_stragglers && !bed) throw RuntimeFailure("a NIC straggler needs live.placement: testbed");
  std::optional<NicStragglers> stragglers;
  if (nic_stragglers) stragglers.emplace(*bed, task, progress);
  std::optional<LinkSampler> sampler;
  if (!messages.empty())
    sampler.emplace(host_link_counters(*bed, task.nominal), task.link_stats_bin_ns);
  testbed::CommandOptions options;
  // The tool's own timeouts end a stuck run; this one only guards against the tool itself.
  options.timeout_ns = task.live.timeout_ns * 2 + 30 * kNsPerSecond;
  const testbed::CommandResult run = testbed::run_command(argv, options);
  std::vector<runtime::MeasuredLink> links;
  std::string links_failure;
  if (sampler) {
    try {
      links = sampler->stop();
    } catch (const std::exception& e) {
      links_failure = e.what();
    }
  }
  const std::string straggler_failure = stragglers ? stragglers->stop() : std::string();
  const std::string traffic_failure = stop_background(traffic);
  if (bed) bed->teardown();
  if (!run.ok()) {
    throw RuntimeFailure("live run of " + task.model + " / " + task.system.label + " failed (" +
                         run.status() + "): " + failure_cause(run.err.empty() ? run.out : run.err));
  }
  if (!straggler_failure.empty()) {
    throw RuntimeFailure("live run of " + task.model + " / " + task.system.label + ": " +
                         straggler_failure);
  }
  if (!traffic_failure.empty()) {
    throw RuntimeFailure("live run of " + task.model + " / " + task.system.label +
                         ": its background traffic failed: " + traffic_failure);
  }
  if (!links_failure.empty()) {
    throw RuntimeFailure("live run of " + task.model + " / " + task.system.label + ": " +
                         links_failure);
  }
  runtime::TrainingResult out = parse_live_result(read_file(result), result.string());
  if (!messages.empty()) {
    out.measured_links = std::move(links);
    out.pair_traffic = read_pair_traffic(messages, ranks);
  }
  if (!timeline.empty()) {
    std::vector<std::string> ranks_json;
    if (task.elastic) {
      // Every process of the run left one (by worker and process id).
      std::vector<fs::path> files;
      for (const fs::directory_entry& e : fs::directory_iterator(timeline)) {
        const std::string name = e.path().filename().string();
        if (name.size() > 11 && name.ends_with(".trace.json") && name[0] != '.')
          files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files)
        ranks_json.push_back(read_file(f));
    } else {
      for (int r = 0; r < ranks; ++r)
        ranks_json.push_back(read_file(timeline / ("rank" + std::to_string(r) + ".trace.json")));
    }
    out.timeline_json = runtime::merge_chrome_json(ranks_json);
  }
  return out;
}

}  // namespace adaptsim::runner

namespace adaptsim::runtime {

std::unique_ptr<LiveBackend> make_live_backend() {
  // Ctrl-C / SIGTERM / SIGHUP during a live run: remove the testbed (if any), then die by the
  // signal; adaptsim-live dies with its parent (testbed/command.h), its ranks with it.
  testbed::install_signal_teardown();
  return std::make_unique<runner::ProcessLiveBackend>(runner::find_live_tool());
}

}  // namespace adaptsim::runtime
