// adaptsim-live: live data-parallel training over the TCP runtime. Every rank emulates the model's
// compute per layer and all-reduces real gradient buffers with the configured system; rank 0
// writes the aggregated result (live_config.h describes both files).
//
//   adaptsim-live CONFIG.yaml --procs 4 [--ranks-per-host 1] -o result.json       local processes
//   adaptsim-live CONFIG.yaml --procs 4 --rank-prefix "ip netns exec ns{rank}"
//       --hosts 10.0.0.1:7000,10.0.0.2:7000,... -o result.json               one namespace per rank
//   adaptsim-live CONFIG.yaml --procs 4 --rank-prefix-json ranks.json -o result.json
//   adaptsim-live CONFIG.yaml --hosts a:p,b:q,... --rank R [--bind ADDR] -o result.json
//   mpirun -np 4 adaptsim-live CONFIG.yaml -o result.json
//   adaptsim-live CONFIG.yaml -o result.json         with an elastic: map: the job's launcher and
//       its runner (one local host): the config store in a folder (--elastic-store, else a
//       temporary one), a process per worker of the first cluster, one more for each worker a
//       new cluster adds; the result merged from every process's record
//   adaptsim-live CONFIG.yaml --elastic-store DIR --worker W [--join NOTICE]   one such process
//   adaptsim-live CONFIG.yaml --measure-start N [--concurrent K]   a new worker's process
//       start-up, N times (K processes at once)
//   adaptsim-live CONFIG.yaml --measure-checkpoint N   the checkpoint's write and read, N times
//
// Exit codes: 0 success; 1 a run-time failure (a peer died, a timeout, a wrong gradient); 2 bad
// input (one line on stderr).

#include <unistd.h>

#include <csignal>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "hw/live/elastic_store.h"
#include "hw/live/etcd_store.h"
#include "hw/live/live_config.h"
#include "hw/live/live_training.h"
#include "hw/live/rank_launcher.h"
#include "hw/tcp/event_loop.h"
#include "hw/tcp/launcher.h"
#include "hw/tcp/mpi_rendezvous.h"
#include "hw/tcp/rendezvous.h"
#include "hw/tcp/rendezvous_cli.h"
#include "sim/core/error.h"
#include "sim/io/output.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/trainer.h"

namespace {

using namespace adaptsim;

struct ToolOptions {
  std::string config;
  tcp::RendezvousOptions rendezvous;
  std::string rank_prefix;       // template with {rank}
  std::string rank_prefix_json;  // per-rank prefixes (and addresses, binds)
  std::string output;
  bool quiet = false;
  // Elastic runs: the store folder, this process's worker id (-1: the launcher) and the runners'
  // notice it joins by.
  std::string elastic_store;
  int worker = -1;
  std::string join;
  // Elastic runs: the config store in etcd ("host:port"), or "start" (the launcher starts a
  // private one on loopback for the run); empty: the folder.
  std::string etcd;
  // Elastic runs: time this many start-ups of a new worker's process (--measure-start), or be
  // one (--probe-start).
  int measure_start = 0;
  // --measure-start's processes started at once each time (--concurrent).
  int concurrent = 1;
  // Elastic runs: time this many checkpoint writes and reads of the model state
  // (--measure-checkpoint).
  int measure_checkpoint = 0;
  bool probe_start = false;
  // Test hooks: this rank kills itself (SIGKILL) after this many sent messages.
  int fault_rank = -1;
  std::uint64_t fault_after_sends = 0;
};

// One line on stderr in a single write(2): the ranks of a local launch share the stream, and
// their lines must not interleave.
void print_error_line(const std::string& text) {
  const std::string line = "adaptsim-live: " + text + "\n";
  std::size_t at = 0;
  while (at < line.size()) {
    const ssize_t n = ::write(2, line.data() + at, line.size() - at);
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string absolute(const std::string& path) {
  return path.empty() ? path : std::filesystem::absolute(path).string();
}

void print_summary(const live::LiveRunSpec& spec, const live::LiveResult& r) {
  const runtime::TrainingResult& t = r.training;
  std::printf(
      "# live %s on %d ranks, %s (%s), batch %d: step %.2f +- %.2f ms (compute %.2f, exposed link "
      "%.2f, wait %.2f ms), %.1f +- %.1f %s/s per GPU, %.1f total; %d steps verified\n",
      spec.model.name.c_str(), r.n_ranks, spec.live.system.label.c_str(),
      std::string(runtime::system_kind_name(spec.live.system.kind)).c_str(),
      spec.live.batch_per_gpu, t.step_mean_s * 1e3, t.step_std_s * 1e3, t.compute_s * 1e3,
      t.exposed_link_s * 1e3, t.exposed_wait_s * 1e3, t.samples_per_s_per_gpu,
      t.samples_per_s_per_gpu_std, spec.model.sample_unit.c_str(), t.samples_per_s_total,
      r.verified_steps);
  if (r.evaluation) {
    std::printf("# learned: %llu samples, test loss %.4f, test accuracy %.4f\n",
                static_cast<unsigned long long>(r.samples), r.evaluation->mean_loss,
                r.evaluation->accuracy);
  }
  std::fflush(stdout);
}

// mpi: {live: library}: the library must be the Open MPI release the scenario names, so that the
// simulation's model of its decision (sim/coll/ompi_allreduce.h) predicts what runs live.
void check_mpi_release(const std::string& version) {
  const std::string library = tcp::mpi_library_version();  // "Open MPI v4.1.4"
  const std::string prefix = "Open MPI v";
  if (library.rfind(prefix, 0) != 0) {
    throw InputError("mpi: {live: library}: the MPI library is \"" +
                     (library.empty() ? std::string("none (built without MPI)") : library) +
                     "\", not Open MPI, whose algorithms the model predicts");
  }
  const std::string release = library.substr(prefix.size());
  const bool same = release.rfind(version, 0) == 0 &&
                    (release.size() == version.size() || release[version.size()] == '.');
  if (!same) {
    throw InputError("mpi: {live: library}: the system's mpi.version is " + version +
                     " but the MPI library is " + library +
                     "; set mpi.version to the library's release (its decision rules differ)");
  }
}

int run_worker(const ToolOptions& o, const live::LiveRunSpec& spec, tcp::RendezvousMode mode,
               double start_s) {
  tcp::RuntimeOptions ro;
  ro.transport.connect_timeout_ns = spec.live.timeout_ns;
  ro.transport.congestion_control = spec.live.congestion_control;
  // The timeline shows each message's transfer, the traffic matrix their sums (run_live_training).
  ro.transport.record_sends = !spec.live.timeline_dir.empty() || !spec.live.messages_dir.empty();
  const int my_rank = tcp::rank_before_connect(o.rendezvous, mode);
  if (o.fault_rank >= 0 && o.fault_rank == my_rank) {
    ro.transport.fault = {tcp::FaultAction::kKillProcess, o.fault_after_sends};
  }
  std::unique_ptr<tcp::Runtime> rt = tcp::connect_runtime(o.rendezvous, mode, ro);
  const live::LiveResult result = live::run_live_training(*rt, spec.model, spec.live);
  rt->check_fault_fired();
  if (rt->rank() == 0) {
    if (!o.output.empty()) {
      const std::filesystem::path out(o.output);
      if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
      io::write_file_atomic(out, live::result_json(spec, result, now_s() - start_s));
    }
    if (!o.quiet) print_summary(spec, result);
  }
  rt->shutdown();
  tcp::mpi_finalize();  // where the library was kept for Horovod's MPI calls
  return 0;
}

// --procs N with a per-rank prefix: every rank binds its own address (host-list rendezvous).
int launch_with_prefixes(const ToolOptions& o, const live::LiveRunSpec& spec) {
  std::vector<live::RankPlacement> ranks;
  if (!o.rank_prefix_json.empty()) {
    ranks = live::load_rank_placements(o.rank_prefix_json);
    if (static_cast<int>(ranks.size()) != o.rendezvous.procs) {
      throw InputError(o.rank_prefix_json + " lists " + std::to_string(ranks.size()) +
                       " ranks for --procs " + std::to_string(o.rendezvous.procs));
    }
  } else {
    for (int r = 0; r < o.rendezvous.procs; ++r) {
      ranks.push_back({live::expand_prefix_template(o.rank_prefix, r), "", ""});
    }
  }
  live::assign_addresses(ranks, o.rendezvous.hosts);
  const std::string hosts = live::host_list_of(ranks);
  // One secret for the job, handed to every rank through its environment (ip netns exec keeps
  // it), never its command line.
  const std::optional<tcp::JobSecret> configured = tcp::configured_secret(o.rendezvous);
  const tcp::JobSecret secret = configured ? *configured : tcp::JobSecret::random();
  const std::string program = live::self_executable();
  live::CommandLaunchOptions lo;
  lo.env.push_back(std::string(tcp::kEnvSecret) + "=" + secret.hex());
  lo.grace_ns = spec.live.timeout_ns + 2 * kNsPerSecond;
  for (int r = 0; r < o.rendezvous.procs; ++r) {
    const live::RankPlacement& p = ranks[static_cast<std::size_t>(r)];
    std::vector<std::string> cmd = p.prefix;
    cmd.insert(cmd.end(),
               {program, absolute(o.config), "--hosts", hosts, "--rank", std::to_string(r)});
    const std::string bind = p.bind.empty() ? o.rendezvous.bind_host : p.bind;
    if (!bind.empty()) cmd.insert(cmd.end(), {"--bind", bind});
    if (o.rendezvous.ranks_per_host > 0) {
      cmd.insert(cmd.end(), {"--ranks-per-host", std::to_string(o.rendezvous.ranks_per_host)});
    }
    if (!o.output.empty()) cmd.insert(cmd.end(), {"-o", absolute(o.output)});
    if (o.quiet) cmd.push_back("-q");
    if (o.fault_rank >= 0) {
      cmd.insert(cmd.end(), {"--fault-kill-rank", std::to_string(o.fault_rank),
                             "--fault-after-sends", std::to_string(o.fault_after_sends)});
    }
    lo.commands.push_back(std::move(cmd));
  }
  const tcp::LaunchResult result = live::launch_commands(lo);
  if (result.ok()) return 0;
  print_error_line("launcher: " + result.summary());
  return 1;
}

// Elastic runs: the worker ids' hosts (ranks_per_host GPUs each).
std::vector<int> elastic_hosts(const live::LiveConfig& c) {
  return tcp::hosts_by_block(c.elastic_capacity, c.elastic_ranks_per_host);
}

// One process of an elastic run: its own one-rank runtime for the loop, timeouts and failures.
int run_elastic_worker(const ToolOptions& o, const live::LiveRunSpec& spec) {
  const char* hex = std::getenv(tcp::kEnvSecret);
  if (hex == nullptr) {
    throw InputError(std::string("an elastic run's process needs the job's secret in ") +
                     tcp::kEnvSecret + " (its launcher sets it)");
  }
  live::ElasticProcess p;
  p.store_dir = o.elastic_store;
  p.worker = o.worker;
  p.host_of_worker = elastic_hosts(spec.live);
  if (o.worker >= static_cast<int>(p.host_of_worker.size())) {
    throw InputError("--worker " + std::to_string(o.worker) + " is outside the topology's " +
                     std::to_string(p.host_of_worker.size()) + " workers");
  }
  p.secret = tcp::JobSecret::from_hex(hex, tcp::kEnvSecret);
  if (!o.etcd.empty()) p.etcd = tcp::parse_host_list(o.etcd).front();
  p.probe_start = o.probe_start;
  // Where its connections listen: the host's address in a testbed's namespace, else loopback.
  if (!o.rendezvous.bind_host.empty()) p.bind_host = o.rendezvous.bind_host;
  if (!o.join.empty()) {
    std::ifstream in(o.join, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw InputError(o.join + ": cannot read the runners' notice");
    p.join = live::notice_from_json(text.str(), o.join);
  }
  tcp::RuntimeOptions ro;
  ro.transport.connect_timeout_ns = spec.live.timeout_ns;
  tcp::Runtime rt(tcp::SocketAddress{p.bind_host, 0}, ro);
  tcp::ClusterSpec self;
  self.addresses = {rt.listen_address()};
  self.secret = tcp::JobSecret::random();
  rt.connect(self);
  live::run_live_elastic(rt, spec.model, spec.live, std::move(p));
  rt.shutdown();
  return 0;
}

// A new folder under the temporary directory ("<stem>-XXXXXX"), removed with what it holds.
struct ScratchFolder {
  std::filesystem::path path;
  explicit ScratchFolder(const std::string& stem) {
    std::string templ = (std::filesystem::temp_directory_path() / (stem + "-XXXXXX")).string();
    if (!::mkdtemp(templ.data())) throw RuntimeFailure("cannot create a temporary folder");
    path = templ;
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
};

// "median M ms, min A, max B" of `ms`, which it sorts.
std::string spread_ms(std::vector<double>& ms) {
  std::sort(ms.begin(), ms.end());
  char text[96];
  std::snprintf(text, sizeof text, "median %.1f ms, min %.1f, max %.1f", ms[ms.size() / 2],
                ms.front(), ms.back());
  return text;
}

// --measure-start N: the start-up of a new worker's process, as the runner starts one for a
// resize (fork, exec, configuration, model, gradient buffers and state filled, the step loop
// built), until it would connect; N times one after another, each time K processes at once
// (--concurrent K: the K workers a resize from 1 to K + 1 adds, started together as the runner
// starts them); from the runner's notice (just before the forks) to each probe's set-up done, on
// the monotonic clock the processes share, and the CPU time each probe used until then.
int measure_start(const ToolOptions& o, const live::LiveRunSpec& spec) {
  const std::vector<int> hosts = elastic_hosts(spec.live);
  const int k = o.concurrent;
  if (static_cast<int>(hosts.size()) < k + 1)
    throw InputError("--measure-start --concurrent " + std::to_string(k) +
                     " needs an elastic capacity of " + std::to_string(k + 1) + " or more");
  const ScratchFolder scratch("adaptsim-start");
  const std::filesystem::path& dir = scratch.path;
  const live::FileStore store(dir, static_cast<int>(hosts.size()));
  store.create({0, {0}});
  const std::string program = live::self_executable();
  std::vector<std::string> env = tcp::environment_without_launch_variables();
  env.push_back(std::string(tcp::kEnvSecret) + "=" + tcp::JobSecret::random().hex());
  std::vector<double> wall_ms, cpu_ms, exit_ms;
  for (int i = 0; i < o.measure_start; ++i) {
    runtime::RunnerNotice n;
    n.cluster.version = 1;
    for (int w = 0; w <= k; ++w)
      n.cluster.workers.push_back(w);
    n.step = 0;
    const std::filesystem::path notice = dir / "notice.json";
    std::vector<tcp::WorkerCommand> probes;
    for (int w = 1; w <= k; ++w) {
      tcp::WorkerCommand c;
      c.program = program;
      c.argv = {
          program,           absolute(o.config), "--elastic-store", dir.string(),    "--worker",
          std::to_string(w), "--join",           notice.string(),   "--probe-start", "-q"};
      c.env = env;
      probes.push_back(std::move(c));
    }
    n.notified_at = tcp::EventLoop::now_ns();
    io::write_file_atomic(notice, live::notice_json(n));
    tcp::SuperviseOptions so;
    so.name = "adaptsim-live --measure-start";
    const tcp::LaunchResult r = tcp::spawn_and_supervise(std::move(probes), so);
    const TimeNs reaped = tcp::EventLoop::now_ns();
    if (!r.ok()) throw RuntimeFailure("a probe process failed: " + r.summary());
    long long last_ready = 0;
    for (int w = 1; w <= k; ++w) {
      // The probe's own readings: from the notice to its set-up done (the exit not included).
      std::ifstream in(dir / ("probe-start-" + std::to_string(w) + ".ns"));
      long long wall = -1, cpu = -1;
      if (!(in >> wall >> cpu) || wall < 0 || cpu < 0)
        throw RuntimeFailure("probe process " + std::to_string(w) + " left no start-up time");
      wall_ms.push_back(static_cast<double>(wall) / 1e6);
      cpu_ms.push_back(static_cast<double>(cpu) / 1e6);
      last_ready = std::max(last_ready, wall);
    }
    // The exit: from the last probe's set-up done to every probe reaped (their model state and
    // buffers freed, the processes gone), as a launcher waits for old processes before a restart.
    exit_ms.push_back(static_cast<double>(reaped - n.notified_at - last_ready) / 1e6);
  }
  std::printf(
      "# %s: a new worker's process start (notice to set-up done: %s), %d runs of %d at once: "
      "%s; CPU time per process: %s; exit (the last set-up done to all reaped): %s\n",
      spec.model.name.c_str(), "exec, configuration, model, buffers and state, step loop",
      o.measure_start, k, spread_ms(wall_ms).c_str(), spread_ms(cpu_ms).c_str(),
      spread_ms(exit_ms).c_str());
  return 0;
}

// --measure-checkpoint N: the restart baseline's checkpoint of this model's state (parameters x
// (1 + optimizer slots), float32), written and read back N times through the store's folder as a
// worker does (hw/live/elastic_store.h: the tensors written whole to a temporary file renamed over
// the checkpoint, then read into the tensors' memory); each read follows its write, so the file is
// in the page cache, as a restart's readers on the writer's machine find it.
int measure_checkpoint(const ToolOptions& o, const live::LiveRunSpec& spec) {
  const ScratchFolder scratch("adaptsim-checkpoint");
  const live::FileStore store(scratch.path, 1);
  const std::uint64_t copies = 1 + static_cast<std::uint64_t>(spec.live.elastic->optimizer_slots);
  std::vector<std::vector<float>> state, back;
  std::uint64_t bytes = 0;
  for (const train::Tensor& t : spec.model.backward_order) {
    state.emplace_back(t.elements * copies, 1.0f);
    back.emplace_back(t.elements * copies, 0.0f);
    bytes += t.elements * copies * sizeof(float);
  }
  std::vector<double> write_ms, read_ms;
  for (int i = 0; i < o.measure_checkpoint; ++i) {
    const TimeNs t0 = tcp::EventLoop::now_ns();
    store.write_checkpoint(state);
    const TimeNs t1 = tcp::EventLoop::now_ns();
    store.read_checkpoint(back);
    const TimeNs t2 = tcp::EventLoop::now_ns();
    if (back != state) throw RuntimeFailure("the checkpoint read back differs from the state");
    write_ms.push_back(static_cast<double>(t1 - t0) / 1e6);
    read_ms.push_back(static_cast<double>(t2 - t1) / 1e6);
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  const std::string write = spread_ms(write_ms), read = spread_ms(read_ms);
  std::printf(
      "# %s: the checkpoint of %.1f MB, %d times: write %s (%.0f MB/s), read back %s "
      "(%.0f MB/s)\n",
      spec.model.name.c_str(), mb, o.measure_checkpoint, write.c_str(),
      mb / write_ms[write_ms.size() / 2] * 1e3, read.c_str(),
      mb / read_ms[read_ms.size() / 2] * 1e3);
  return 0;
}

// The launcher and runner of an elastic run on this machine (see the top).
int launch_elastic(const ToolOptions& o, const live::LiveRunSpec& spec, double start_s) {
  const live::LiveConfig& c = spec.live;
  const std::vector<int> hosts = elastic_hosts(c);
  std::filesystem::path dir = o.elastic_store;
  std::optional<ScratchFolder> scratch;  // the store's folder unless one was given
  if (dir.empty()) dir = scratch.emplace("adaptsim-store").path;
  // Each worker's command prefix and listening address (a testbed: its server's namespace).
  std::vector<live::RankPlacement> placements;
  if (!o.rank_prefix_json.empty()) {
    placements = live::load_rank_placements(o.rank_prefix_json);
    if (placements.size() != hosts.size()) {
      throw InputError(o.rank_prefix_json + " lists " + std::to_string(placements.size()) +
                       " ranks for the elastic run's " + std::to_string(hosts.size()) + " workers");
    }
  }
  // The config store: the folder, or etcd (an endpoint given, or a private one for this run: on
  // loopback, or with the workers in a testbed's namespaces, in the first server's namespace on
  // its address, where every namespace reaches it).
  std::unique_ptr<live::EtcdServer> etcd_server;
  std::optional<live::EtcdEndpoint> etcd;
  if (o.etcd == "start") {
    if (placements.empty()) {
      etcd_server = std::make_unique<live::EtcdServer>(dir);
    } else {
      const live::RankPlacement& first = placements.front();
      const std::string netns = live::netns_of(first.prefix);
      if (netns.empty() || first.bind.empty()) {
        throw InputError(
            "--etcd start with --rank-prefix-json: worker 0's prefix must be `ip "
            "netns exec NAME` with a bind address (the testbed's), to start etcd "
            "where every worker reaches it");
      }
      etcd_server = std::make_unique<live::EtcdServer>(dir, netns, first.bind);
    }
    etcd = etcd_server->endpoint();
  } else if (!o.etcd.empty()) {
    etcd = live::EtcdEndpoint{tcp::parse_host_list(o.etcd).front(), ""};
  }
  std::unique_ptr<live::FileStore> store_ptr;
  if (!etcd) {
    store_ptr = std::make_unique<live::FileStore>(dir, static_cast<int>(hosts.size()));
  } else {
    store_ptr =
        std::make_unique<live::EtcdStore>(dir, static_cast<int>(hosts.size()), *etcd,
                                          dir.filename().string(), c.elastic->failure_timeout_ns);
  }
  const live::FileStore& store = *store_ptr;
  // A given etcd keeps nothing of the run once it is over (a private one is removed whole).
  struct ForgetJob {
    const live::EtcdStore* etcd;
    ~ForgetJob() {
      if (etcd == nullptr) return;
      try {
        etcd->remove_job();
      } catch (const std::exception& e) {
        print_error_line(std::string("launcher: ") + e.what() + " (the job's keys are left)");
      }
    }
  } forget{etcd_server ? nullptr : dynamic_cast<const live::EtcdStore*>(store_ptr.get())};
  const int initial =
      c.elastic->initial_workers > 0 ? c.elastic->initial_workers : static_cast<int>(hosts.size());
  const runtime::ClusterConfig first =
      runtime::cluster_of(runtime::growth_order(hosts), initial, 0);
  store.create(first);

  const std::string program = live::self_executable();
  const std::string config = absolute(o.config);
  std::vector<std::string> env = tcp::environment_without_launch_variables();
  env.push_back(std::string(tcp::kEnvSecret) + "=" + tcp::JobSecret::random().hex());
  std::vector<int> worker_of;  // by process index, in the order started
  // The processes still starting, whose leases the runner holds until each renews its own
  // (FileStore::mark_started): the failure detector must not drop a worker whose process is
  // slower to start than a lease's lifetime (a loaded machine), only one that died or hangs.
  struct Starting {
    std::size_t process = 0;  // its index in worker_of
    int worker = 0;
    int version = 0;  // the cluster version it starts in
    TimeNs renewed = 0;
  };
  std::vector<Starting> starting;
  const TimeNs hold_every = std::max<TimeNs>(kNsPerMs, c.elastic->failure_timeout_ns / 4);
  auto hold_leases = [&](const std::vector<bool>& alive) {
    const TimeNs now = tcp::EventLoop::now_ns();
    std::erase_if(starting, [&](Starting& s) {
      // A process not spawned yet (queued by this poll) counts as alive.
      const bool running = s.process >= alive.size() || alive[s.process];
      if (!running || store.started(s.worker, s.version)) return true;
      if (s.renewed == 0 || now - s.renewed >= hold_every) {
        store.renew_lease(s.worker);
        s.renewed = now;
      }
      return false;
    });
  };
  auto command = [&](int worker, const std::string& join, int version) {
    starting.push_back({worker_of.size(), worker, version, 0});
    worker_of.push_back(worker);
    tcp::WorkerCommand w;
    const live::RankPlacement* at =
        placements.empty() ? nullptr : &placements.at(static_cast<std::size_t>(worker));
    if (at != nullptr) w.argv = at->prefix;
    w.argv.insert(w.argv.end(), {program, config, "--elastic-store", dir.string(), "--worker",
                                 std::to_string(worker), "-q"});
    if (at != nullptr && !at->bind.empty()) w.argv.insert(w.argv.end(), {"--bind", at->bind});
    if (!join.empty()) w.argv.insert(w.argv.end(), {"--join", join});
    if (etcd) w.argv.insert(w.argv.end(), {"--etcd", etcd->address.str()});
    w.program = live::resolve_program(w.argv.front());
    w.env = env;
    return w;
  };
  std::vector<tcp::WorkerCommand> workers;
  for (int w : first.workers)
    workers.push_back(command(w, "", first.version));
  hold_leases({});
  // The runner: each new version's notice starts a process for every worker it adds to the
  // cluster the runner knew (a worker it drops stops on its own); a restart's, one for every worker
  // of the cluster once the old processes have all exited.
  std::vector<int> known = first.workers;
  int handled = first.version;
  tcp::SuperviseOptions so;
  so.grace_ns = c.timeout_ns + 2 * kNsPerSecond;
  so.own_process_group = true;
  so.name = "adaptsim-live runner";
  so.others_carry_on = !c.failures.empty();
  bool runner_said = false;  // the store's unavailability was reported
  // The notice a new process joins by, as the runner read it, in a file of the run's folder.
  auto join_file = [&](int v, const runtime::RunnerNotice& n) {
    const std::filesystem::path f =
        dir / "joins" / (std::string("v") + std::to_string(v) + ".json");
    std::filesystem::create_directories(f.parent_path());
    if (!std::filesystem::exists(f)) io::write_file_atomic(f, live::notice_json(n));
    return f.string();
  };
  so.more = [&](const std::vector<bool>& alive) {
    std::vector<tcp::WorkerCommand> out;
    // Workers with a process running (a failed one's was not replaced: the survivors' cluster,
    // swapped in without a notice, left it out).
    std::vector<int> running;
    for (std::size_t i = 0; i < alive.size(); ++i)
      if (alive[i]) running.push_back(worker_of.at(i));
    try {
      for (int v : store.notice_versions()) {
        if (v <= handled) continue;
        const runtime::RunnerNotice n = store.read_notice(v);
        if (n.restart && !running.empty()) break;  // asked again at the next poll
        // One runner for this machine's workers; a process that stays is one that runs for a
        // worker of the cluster it last knew (a leaver's may still be exiting).
        const auto stays = [&](int w) {
          return std::find(known.begin(), known.end(), w) != known.end() &&
                 std::find(running.begin(), running.end(), w) != running.end();
        };
        for (int w : runtime::workers_to_start(
                 n, [](int) { return true; }, stays))
          out.push_back(command(w, join_file(v, n), v));
        known = n.cluster.workers;
        handled = v;
      }
      hold_leases(alive);
      runner_said = false;
    } catch (const RuntimeFailure& e) {
      // The store is unavailable: the runner asks again at the next poll.
      if (!runner_said) print_error_line("runner: " + std::string(e.what()) + "; waiting for it");
      runner_said = true;
    }
    return out;
  };
  const tcp::LaunchResult result = tcp::spawn_and_supervise(std::move(workers), so);
  // A worker the configuration kills dies by SIGKILL at its step; any other failure fails the run.
  bool ok = !result.interrupted;
  for (const tcp::WorkerExit& e : result.workers) {
    const int w = worker_of.at(static_cast<std::size_t>(e.rank));
    const bool scheduled =
        std::any_of(c.failures.begin(), c.failures.end(),
                    [w](const runtime::WorkerFailure& f) { return f.worker == w; });
    if (!e.ok() && !(scheduled && e.signal == SIGKILL && !e.killed_by_launcher)) ok = false;
  }
  if (!ok) {
    print_error_line("launcher: " + result.summary());
    return 1;
  }
  // The run's result: every process's record added up.
  std::vector<runtime::RunRecord> records = store.read_records();
  if (records.empty()) throw RuntimeFailure("no process of the elastic run left a record");
  runtime::RunRecord all = records.front();
  for (std::size_t i = 1; i < records.size(); ++i)
    runtime::merge_records(all, records[i]);
  live::LiveResult r;
  r.training = runtime::summarize_record(all);
  r.n_ranks = static_cast<int>(hosts.size());
  r.gradient_bytes = spec.model.totals().bytes(c.gradient_element_bytes);
  r.compute_device = "sleep";
  if (c.learn && !r.training.steps.empty()) {
    // A run that learns: the samples trained and the last evaluation (after the last step, an
    // evaluation point) as the workers' step readings have them.
    const std::map<std::string, double>& last = r.training.steps.back().readings;
    if (auto it = last.find("learn.samples"); it != last.end())
      r.samples = static_cast<std::uint64_t>(it->second);
    const auto loss = last.find("learn.test_loss"), accuracy = last.find("learn.test_accuracy");
    if (loss != last.end() && accuracy != last.end())
      r.evaluation = learn::Evaluation{.mean_loss = loss->second, .accuracy = accuracy->second};
  }
  if (!o.output.empty()) {
    const std::filesystem::path out(o.output);
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    io::write_file_atomic(out, live::result_json(spec, r, now_s() - start_s));
  }
  if (!o.quiet) print_summary(spec, r);
  return 0;
}

int run_tool(int argc, char** argv) {
  const double start_s = now_s();
  ToolOptions o;
  CLI::App app{
      "Live data-parallel training over the TCP runtime (emulated compute, real gradients)"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(
      R"(simctl run --live starts it; live_config.h describes the configuration and result files.
Examples:
  adaptsim-live CONFIG.yaml --procs 4 -o result.json              # local processes
  adaptsim-live CONFIG.yaml --procs 4 --rank-prefix "ip netns exec ns{rank}" --hosts ADDRS -o result.json
  adaptsim-live CONFIG.yaml --hosts a:p,b:q --rank R --secret-file KEY -o result.json
  mpirun -np 4 adaptsim-live CONFIG.yaml -o result.json
Exit codes: 0 success, 1 run-time failure (a peer died, a timeout, a wrong gradient), 2 bad input.)");
  app.add_option("config", o.config, "Configuration file (YAML; JSON is YAML too)")->required();
  tcp::add_rendezvous_options(app, o.rendezvous);
  app.get_option("--hosts")->description(
      "Host list host:port,... in rank order (with --rank; or the addresses of --procs ranks "
      "started with a prefix)");
  app.add_option("--rank-prefix", o.rank_prefix,
                 "With --procs: command prefix of every rank, {rank} replaced "
                 "(\"ip netns exec ns{rank}\")");
  app.add_option("--rank-prefix-json", o.rank_prefix_json,
                 "With --procs: JSON file with each rank's prefix (and address, bind)");
  app.add_option("-o,--output", o.output, "Result file (JSON), written by rank 0");
  app.add_flag("-q,--quiet", o.quiet, "No summary on stdout");
  app.add_option("--elastic-store", o.elastic_store,
                 "Elastic runs: the config store's folder (default: a temporary one)");
  app.add_option("--worker", o.worker, "Elastic runs: run as this worker's process")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--join", o.join,
                 "Elastic runs: the runners' notice this new worker's process joins by");
  app.add_option("--measure-start", o.measure_start,
                 "Elastic runs: time N start-ups of a new worker's process and print them")
      ->check(CLI::PositiveNumber);
  app.add_option("--concurrent", o.concurrent,
                 "With --measure-start: start K new workers' processes at once each time")
      ->check(CLI::PositiveNumber);
  app.add_option("--measure-checkpoint", o.measure_checkpoint,
                 "Elastic runs: time N checkpoint writes and reads of the model state and print "
                 "them")
      ->check(CLI::PositiveNumber);
  app.add_flag("--probe-start", o.probe_start,
               "Elastic runs, with --worker and --join: set up as a new worker, then end");
  app.add_option("--etcd", o.etcd,
                 "Elastic runs: the config store in etcd at HOST:PORT, or 'start' (a private "
                 "etcd for the run: on loopback, or with --rank-prefix-json in worker 0's "
                 "namespace on its address); default: the store folder");
  tcp::add_fault_hook_options(app, o.fault_rank, o.fault_after_sends);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }

  const live::LiveRunSpec spec = live::load_live_run_spec(o.config);
  if (spec.live.elastic) {
    if (o.worker >= 0) {
      if (o.elastic_store.empty()) throw InputError("--worker needs --elastic-store");
      return run_elastic_worker(o, spec);
    }
    if (!o.join.empty()) throw InputError("--join needs --worker");
    if (o.measure_start > 0) return measure_start(o, spec);
    if (o.measure_checkpoint > 0) return measure_checkpoint(o, spec);
    return launch_elastic(o, spec, start_s);
  }
  if (o.worker >= 0 || !o.join.empty() || !o.elastic_store.empty() || !o.etcd.empty()) {
    throw InputError(
        "--worker, --join, --elastic-store and --etcd need a configuration with elastic:");
  }
  const bool prefixed = !o.rank_prefix.empty() || !o.rank_prefix_json.empty();
  if (prefixed) {
    if (o.rendezvous.procs < 1) throw InputError("--rank-prefix/--rank-prefix-json need --procs N");
    if (!o.rank_prefix.empty() && !o.rank_prefix_json.empty()) {
      throw InputError("--rank-prefix and --rank-prefix-json exclude each other");
    }
    if (std::getenv(tcp::kEnvRank) == nullptr) return launch_with_prefixes(o, spec);
  }
  const tcp::RendezvousMode mode = tcp::choose_rendezvous(o.rendezvous);
  if (spec.live.system.mpi_library) {
    if (mode != tcp::RendezvousMode::kMpi) {
      throw InputError(
          "mpi: {live: library}: Horovod reduces through the MPI library, so adaptsim-live must "
          "run under mpirun (mpirun -np N adaptsim-live CONFIG; simctl run --live starts it so)");
    }
    check_mpi_release(spec.live.system.mpi.version);
    ToolOptions kept = o;
    kept.rendezvous.keep_mpi = true;
    return run_worker(kept, spec, mode, start_s);
  }
  if (mode == tcp::RendezvousMode::kLauncher) {
    const tcp::LaunchResult result =
        tcp::launch_self(o.rendezvous.procs, argc, argv, spec.live.timeout_ns + 2 * kNsPerSecond);
    if (result.ok()) return 0;
    print_error_line("launcher: " + result.summary());
    return 1;
  }
  return run_worker(o, spec, mode, start_s);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_tool(argc, argv);
  } catch (const adaptsim::InputError& e) {
    print_error_line(e.what());
    return 2;
  } catch (const std::exception& e) {
    print_error_line(e.what());
    return 1;
  }
}
