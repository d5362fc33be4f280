#include "hw/live/live_training.h"

#include <unistd.h>
#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "hw/live/gradient_buffers.h"
#include "hw/live/learner.h"
#include "hw/live/live_env.h"
#include "hw/tcp/event_loop.h"
#include "hw/tcp/tcp_transport.h"
#include "sim/core/atomic_file.h"
#include "sim/core/error.h"
#include "sim/io/output.h"
#include "sim/runtime/trainer.h"

namespace adaptsim::live {
namespace {

// The rank's index among the ranks of its host (0 when the runtime has no host map).
int local_rank(const tcp::Runtime& rt) {
  const std::vector<int>& host = rt.host_of_rank();
  if (host.size() != static_cast<std::size_t>(rt.size())) return 0;
  const int mine = host[static_cast<std::size_t>(rt.rank())];
  return static_cast<int>(std::count(host.begin(), host.begin() + rt.rank(), mine));
}

// The ranks on the rank's host (every rank when the runtime has no host map: local processes).
int host_ranks(const tcp::Runtime& rt) {
  const std::vector<int>& host = rt.host_of_rank();
  if (host.size() != static_cast<std::size_t>(rt.size())) return rt.size();
  return static_cast<int>(std::count(host.begin(), host.end(), host[rt.rank()]));
}

bool communicates(runtime::SystemKind kind) {
  return kind != runtime::SystemKind::kIdeal;
}

}  // namespace

void abort_cluster(tcp::Runtime& runtime, const std::string& reason) {
  if (runtime.failed()) return;
  try {
    runtime.run("abort", 5 * kNsPerSecond,
                [&runtime, reason](coll::Transport&, coll::Callback done) {
                  runtime.fail_from_loop(reason);
                  done();  // dropped when the transport failed; the caller sees the failure instead
                });
  } catch (...) {
    // Expected: the run reports the failure it just caused.
  }
}

void validate_live_config(const train::Model& model, const LiveConfig& c) {
  auto bad_time = [](double s) { return !std::isfinite(s) || s < 0; };
  if (c.batch_per_gpu < 1) throw InputError("batch_per_gpu must be at least 1");
  if (!c.compute) throw InputError("no compute split");
  const train::ComputeProfile p = c.compute(c.batch_per_gpu);
  if (p.backward_layer_s.size() != model.layers.size()) {
    throw InputError("the compute profile has " + std::to_string(p.backward_layer_s.size()) +
                     " backward layers for model '" + model.name + "' of " +
                     std::to_string(model.layers.size()));
  }
  if (bad_time(p.forward_s) || bad_time(p.optimizer_s) ||
      std::any_of(p.backward_layer_s.begin(), p.backward_layer_s.end(), bad_time)) {
    throw InputError("compute times must be finite and >= 0");
  }
  if (!std::isfinite(c.step_time_cv) || c.step_time_cv < 0) {
    throw InputError("step_time_cv must be finite and >= 0");
  }
  if (c.warmup_steps < 0) throw InputError("warmup_steps must be >= 0");
  if (c.measured_steps < 1) throw InputError("steps (measured) must be at least 1");
  if (c.gradient_element_bytes != 4) {
    throw InputError("gradient element bytes must be 4: live gradients are float32 buffers");
  }
  if (c.timeout_ns <= 0) throw InputError("timeout must be > 0");
  if (!runtime::runs_on_host_transport(c.system.kind)) {
    throw InputError(
        "system kind '" + std::string(runtime::system_kind_name(c.system.kind)) +
        "' needs GPUs and NCCL; live training over TCP runs ideal, kungfu and horovod");
  }
  if (const auto problem = runtime::seam_problem(c.seam, c.system)) {
    throw InputError(problem->message);
  }
  if (model.backward_order.empty()) throw InputError("model '" + model.name + "' has no tensors");
  if (c.elastic) {
    if (!communicates(c.system.kind)) {
      throw InputError("elastic: needs a system that communicates (kungfu, horovod), not ideal");
    }
    if (c.learn && c.elastic->optimizer_slots != (c.learn->momentum > 0 ? 1 : 0)) {
      throw InputError(
          "elastic.optimizer_slots: a live run that learns broadcasts its parameters " +
          std::string(c.learn->momentum > 0 ? "and their momentum: expected 1"
                                            : "(no momentum): expected 0"));
    }
    if (!c.failures.empty() && c.elastic->mechanism != runtime::ResizeMechanism::kKungFu) {
      throw InputError(
          "failures: need elastic mechanism kungfu (the survivors shrink the cluster)");
    }
    if (c.elastic_capacity < 1 || c.elastic_ranks_per_host < 1) {
      throw InputError("elastic: capacity and ranks_per_host must be at least 1");
    }
  }
  if (c.learn) {
    if (model.name != train::kLearnModel) {
      throw InputError("learn: trains the " + std::string(train::kLearnModel) +
                       " model for real; the model is '" + model.name + "'");
    }
    if (!communicates(c.system.kind)) {
      throw InputError(
          "learn: needs a system that all-reduces the gradients (kungfu, horovod), "
          "not ideal");
    }
    if (!c.learn_data) throw InputError("learn: the data set is not loaded");
  }
}

namespace {

// One rank of a run, fixed (elastic == nullptr: `rt` is connected to every rank) or one process of
// an elastic run (`rt` is its own one-rank runtime).
LiveResult run_rank(tcp::Runtime& rt, const train::Model& model, const LiveConfig& c,
                    const ElasticProcess* elastic) {
  validate_live_config(model, c);
  if (elastic != nullptr && !c.elastic) throw std::logic_error("run_rank: no elastic spec");
  const int rank = elastic ? elastic->worker : rt.rank();
  const int n = elastic ? static_cast<int>(elastic->host_of_worker.size()) : rt.size();
  const int total_steps = c.warmup_steps + c.measured_steps;
  // The cluster an elastic process starts in: the store's first, or the one it joins.
  runtime::ClusterConfig first;
  if (elastic) {
    first = elastic->join ? elastic->join->cluster
                          : runtime::cluster_of(
                                runtime::growth_order(elastic->host_of_worker),
                                c.elastic->initial_workers > 0 ? c.elastic->initial_workers : n, 0);
  }
  // Where this rank's compute runs: its index among its host's ranks, and their count.
  const std::vector<int> no_hosts;
  const std::vector<int>& hosts = elastic ? elastic->host_of_worker : no_hosts;
  const int local = elastic ? static_cast<int>(std::count(hosts.begin(), hosts.begin() + rank,
                                                          hosts[static_cast<std::size_t>(rank)]))
                            : local_rank(rt);
  const int on_host = elastic ? static_cast<int>(std::count(hosts.begin(), hosts.end(),
                                                            hosts[static_cast<std::size_t>(rank)]))
                              : host_ranks(rt);

  // Learn mode: the rank's model, its gradients in the model's own layout.
  std::optional<Learner> learner;
  std::optional<GradientBuffers> buffers;
  if (c.learn) {
    learner.emplace(model, *c.learn, c.learn_data, c.batch_per_gpu, rank, n, c.seed);
    buffers.emplace(model, rank, n, learner->tensor_offsets(), learner->parameter_count());
  } else if (communicates(c.system.kind)) {
    buffers.emplace(model, rank, n);
  }
  // Before the barrier: a GPU's set-up (context, module load) is not part of any step, and a rank
  // without its GPU fails every peer at once with the cause.
  std::unique_ptr<LiveEnv> env;
  try {
    std::string note;
    env = std::make_unique<LiveEnv>(rt, buffers ? &*buffers : nullptr, c.verify,
                                    ComputeEmulatorOptions{.device = c.compute_device,
                                                           .cpu_mode = c.compute_mode,
                                                           .local_rank = local,
                                                           .host_ranks = on_host},
                                    &note);
    if (!note.empty() && local == 0) std::fprintf(stderr, "rank %d: %s\n", rank, note.c_str());
  } catch (const std::exception& e) {
    const std::string reason = "rank " + std::to_string(rank) + ": " + e.what();
    if (!elastic) abort_cluster(rt, reason);
    throw RuntimeFailure(reason);
  }

  if (rank == 0) env->set_progress_file(c.progress_file);
  env->set_mpi_timeout(c.timeout_ns);
  if (learner) env->set_learner(&*learner, total_steps, c.learn->eval_every);
  if (elastic) {
    std::vector<std::uint64_t> elements;
    for (const train::Tensor& t : model.backward_order)
      elements.push_back(t.elements);
    tcp::TcpTransportOptions to;
    to.connect_timeout_ns = c.timeout_ns;
    to.congestion_control = c.congestion_control;
    ElasticProcess process = *elastic;
    process.peers_may_fail = !c.failures.empty();
    process.lease_ns = c.elastic->failure_timeout_ns;
    env->set_elastic(std::move(process), elements,
                     1 + static_cast<std::uint64_t>(c.elastic->optimizer_slots), first, to);
  }

  runtime::TrainerOptions t;
  t.batch_per_gpu = c.batch_per_gpu;
  t.warmup_steps = c.warmup_steps;
  t.measured_steps = c.measured_steps;
  t.seed = c.seed;
  t.step_time_cv = c.step_time_cv;
  t.gradient_element_bytes = c.gradient_element_bytes;
  t.compute = c.compute;
  t.stragglers = c.stragglers;
  if (elastic) {
    t.elastic = c.elastic;
    t.join = elastic->join;
    t.failures = c.failures;
  }
  runtime::Timeline timeline;
  if (!c.timeline_dir.empty()) t.timeline = &timeline;
  runtime::TrainingRun training(*env, model, c.system, c.seam, std::move(t));
  runtime::Trainer& trainer = training.trainer();
  if (elastic && elastic->probe_start) {
    // Set up as a new worker: the time from the runner's notice to here and the CPU time this
    // process used (all its threads), for --measure-start.
    timespec cpu{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    write_file_atomic(elastic->store_dir / ("probe-start-" + std::to_string(rank) + ".ns"),
                      std::to_string(tcp::EventLoop::now_ns() - elastic->join->notified_at) + " " +
                          std::to_string(cpu.tv_sec * kNsPerSecond + cpu.tv_nsec));
    return LiveResult{};
  }
  // The rank's timeline (an elastic run's processes: one file each, by worker and process).
  auto write_timeline = [&] {
    if (c.timeline_dir.empty()) return;
    const std::string name =
        elastic ? std::string("w") + std::to_string(rank) + "-" + std::to_string(::getpid())
                : std::string("rank") + std::to_string(rank);
    const std::string label = elastic ? "worker " + std::to_string(rank) + " (live, process " +
                                            std::to_string(::getpid()) + ")"
                                      : "rank " + std::to_string(rank) + " (live)";
    write_file_atomic(c.timeline_dir / (name + ".trace.json"),
                      timeline.chrome_json(rank, label, 0));
  };
  if (elastic) {
    // A killed worker's process leaves what it measured before it dies (the step loop's
    // bookkeeping, not part of the protocol).
    env->set_before_kill([&] {
      env->store()->write_record(elastic->worker, trainer.record());
      write_timeline();
    });
  }

  // Every rank starts its first step together, as the simulated workers start at time 0 (a new
  // process of an elastic run meets the others in its join path instead).
  if (!elastic) {
    rt.barrier(c.timeout_ns);
  } else if (!elastic->join) {
    env->connect_first(first, c.timeout_ns);
  }
  TimeNs first_start = 0, last_end = 0;
  try {
    // The step loop runs on the loop thread; the run times out only when no step ends (and no
    // gradient is reduced) for timeout_ns.
    rt.run_with_progress(
        "training " + model.name + " with " + c.system.label, c.timeout_ns,
        [&](coll::Transport& transport, coll::Callback done, coll::Callback progress) {
          env->set_transport(&transport);
          first_start = tcp::EventLoop::now_ns();
          // The trainer's progress hook is copyable (std::function); the callbacks are not.
          trainer.set_progress([progress = std::make_shared<coll::Callback>(std::move(progress)),
                                done = std::make_shared<coll::Callback>(std::move(done)), &trainer,
                                &last_end] {
            (*progress)();
            if (trainer.finished()) {
              last_end = tcp::EventLoop::now_ns();
              (*done)();
            }
          });
          trainer.start();
        },
        [&trainer] { return trainer.describe_pending(); });
  } catch (const std::exception& e) {
    env->stop();
    if (!elastic) abort_cluster(rt, e.what());
    throw;
  }

  LiveResult out;
  if (elastic) {
    // This process's share: the launcher adds up every process's record.
    env->close_connections(5 * kNsPerSecond);
    env->stop();
    const runtime::RunRecord record = trainer.record();
    env->store()->write_record(elastic->worker, record);
    out.n_ranks = n;
  } else {
    env->stop();
    // One all-reduce of every rank's sums; the STAR's root adds them and sends every rank the
    // same bytes, so every rank summarizes the same numbers.
    std::vector<double> mine = trainer.local_sums(), sum(mine.size(), 0.0);
    coll::Workspace w;
    w.name = "live:stats";
    w.count = mine.size();
    w.dtype = coll::DType::kF64;
    w.op = coll::ReduceOp::kSum;
    w.send = {reinterpret_cast<const std::byte*>(mine.data()), mine.size() * sizeof(double)};
    w.recv = {reinterpret_cast<std::byte*>(sum.data()), sum.size() * sizeof(double)};
    rt.run_allreduce(*coll::make_allreduce(coll::StrategyKind::kStar, rt.host_of_rank()), w,
                     c.timeout_ns);
    out.training = trainer.summarize(sum);
    out.n_ranks = n;
  }

  if (!elastic) {
    // Each message's transfer, as the simulated timeline shows them (the transport's record:
    // TcpTransportOptions::record_sends). An elastic process's transports are its versions'.
    const std::vector<tcp::SentMessage> sent = rt.sent_messages();
    for (const tcp::SentMessage& m : sent) {
      timeline.add_transfer(rank, m.dst, m.first_byte_ns, m.last_byte_ns,
                            static_cast<double>(m.bytes));
    }
    if (!c.messages_dir.empty()) {
      std::map<int, std::pair<std::uint64_t, std::uint64_t>> to;  // dst -> messages, bytes
      for (const tcp::SentMessage& m : sent) {
        ++to[m.dst].first;
        to[m.dst].second += m.bytes;
      }
      io::CsvTable csv({"dst_rank", "messages", "bytes"});
      for (const auto& [dst, v] : to)
        csv.add_row({std::to_string(dst), std::to_string(v.first), std::to_string(v.second)});
      write_file_atomic(c.messages_dir / ("rank" + std::to_string(rank) + ".messages.csv"),
                        csv.render());
    }
  }
  write_timeline();

  out.gradient_bytes = model.totals().bytes(c.gradient_element_bytes);
  out.verified_steps = env->verified_steps();
  out.wall_s = to_seconds(last_end - first_start);
  out.compute_device = env->compute_description();
  if (learner) {
    out.samples = static_cast<std::uint64_t>(total_steps) * learner->global_batch();
    out.evaluation = env->last_evaluation();
    if (!c.learn->params_dir.empty()) {
      std::filesystem::create_directories(c.learn->params_dir);
      const std::span<const float> p = learner->params();
      write_file_atomic(
          c.learn->params_dir / (std::string("rank") + std::to_string(rank) + ".params"),
          std::string(reinterpret_cast<const char*>(p.data()), p.size_bytes()));
    }
  }
  return out;
}

}  // namespace

LiveResult run_live_training(tcp::Runtime& rt, const train::Model& model, const LiveConfig& c) {
  return run_rank(rt, model, c, nullptr);
}

LiveResult run_live_elastic(tcp::Runtime& rt, const train::Model& model, const LiveConfig& c,
                            ElasticProcess process) {
  return run_rank(rt, model, c, &process);
}

}  // namespace adaptsim::live
