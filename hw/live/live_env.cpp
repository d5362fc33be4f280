#include "hw/live/live_env.h"

#include <sys/prctl.h>

#include <csignal>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "hw/cuda/reference_kernels.h"
#include "hw/live/mpi_library.h"
#include "hw/tcp/barrier.h"
#include "hw/tcp/event_loop.h"
#include "sim/coll/subset_transport.h"
#include "sim/core/atomic_file.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace {

// The compute thread's waits end at absolute deadlines; a smaller timer slack than Linux's 50 us
// default keeps sleep overshoot near the wake-up latency.
void tighten_timer_slack() {
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

// How long a version's graceful close waits for its peers' goodbyes.
constexpr TimeNs kCloseTimeoutNs = 5 * kNsPerSecond;

// The model state's known pattern (elastic runs): what every worker of the first cluster holds.
float state_value(std::size_t tensor, std::size_t i) {
  return 0.5f + static_cast<float>((11 * tensor + i) % 17);
}

// Version `version`'s key: HMAC(job secret, label || version), two tags for 32 bytes. A connection
// of another version (or job) fails its handshake.
tcp::JobSecret version_secret(const tcp::JobSecret& job, int version) {
  const std::uint32_t v = static_cast<std::uint32_t>(version);
  const std::byte* vb = reinterpret_cast<const std::byte*>(&v);
  const tcp::ByteView part(vb, sizeof v);
  const tcp::Tag a = tcp::handshake_tag(job, "adaptsim cluster version key a", {part});
  const tcp::Tag b = tcp::handshake_tag(job, "adaptsim cluster version key b", {part});
  tcp::SecretKey key{};
  std::copy(a.begin(), a.end(), key.begin());
  std::copy(b.begin(), b.end(), key.begin() + static_cast<std::ptrdiff_t>(a.size()));
  return tcp::JobSecret(key);
}

}  // namespace

// transport(worker) of an elastic run: worker ids to the current version's ranks. A version's
// transport serves reductions, copies and scratch at once, but its sends and receives wait until
// its mesh is up (as KungFu's connections open on first use): the resize's next collective, not
// the connection reset, waits for the new processes.
class LiveEnv::WorkerTransport final : public coll::Transport {
 public:
  WorkerTransport(int worker, const std::vector<int>& host_of_worker)
      : worker_(worker), host_of_worker_(host_of_worker) {}
  // The next version: `t` (not started yet) and its members in rank order.
  void begin_switch(tcp::TcpTransport* t, const std::vector<int>& members) {
    t_ = t;
    ready_ = false;
    // What still waits for the previous version's mesh belongs to that version's collectives,
    // which the step loop has abandoned (a failure's recovery switches while they wait for new
    // processes that never connected): run on this version's transport, with ranks of the old
    // one, they would reach the wrong peers. They are dropped; their callbacks never run.
    waiting_.clear();
    rank_of_.assign(host_of_worker_.size(), -1);
    for (std::size_t r = 0; r < members.size(); ++r)
      rank_of_.at(static_cast<std::size_t>(members[r])) = static_cast<int>(r);
  }
  // Its mesh is up: the waiting sends and receives go out, in the order they were asked for.
  void ready() {
    ready_ = true;
    std::vector<coll::Callback> waiting = std::move(waiting_);
    waiting_.clear();
    for (coll::Callback& op : waiting)
      op();
  }
  void clear() {
    t_ = nullptr;
    waiting_.clear();
  }
  tcp::TcpTransport* current() const { return t_; }

  int rank() const override { return worker_; }
  int size() const override { return static_cast<int>(host_of_worker_.size()); }
  int host_of(int w) const override { return host_of_worker_.at(static_cast<std::size_t>(w)); }
  void send(int peer, const std::string& name, coll::ConstBytes data,
            coll::Callback done) override {
    const int r = rank_in_version(peer);
    when_ready([this, r, name, data, done = std::move(done)]() mutable {
      live().send(r, name, data, std::move(done));
    });
  }
  bool arrived(int peer, const std::string& name) const override {
    return ready_ && live().arrived(rank_in_version(peer), name);
  }
  void recv(int peer, const std::string& name, coll::Bytes into, coll::Callback done) override {
    const int r = rank_in_version(peer);
    when_ready([this, r, name, into, done = std::move(done)]() mutable {
      live().recv(r, name, into, std::move(done));
    });
  }
  void reduce(coll::Bytes out, coll::ConstBytes a, coll::ConstBytes b, coll::DType dtype,
              coll::ReduceOp op, coll::Callback done) override {
    live().reduce(out, a, b, dtype, op, std::move(done));
  }
  void copy(coll::Bytes dst, coll::ConstBytes src, coll::Callback done) override {
    live().copy(dst, src, std::move(done));
  }
  coll::Bytes acquire_scratch(std::size_t size) override { return live().acquire_scratch(size); }
  void release_scratch(coll::Bytes buffer) override { live().release_scratch(buffer); }

 private:
  void when_ready(coll::Callback op) {
    if (ready_) {
      op();
    } else {
      waiting_.push_back(std::move(op));
    }
  }
  tcp::TcpTransport& live() const {
    if (t_ == nullptr) throw std::logic_error("worker transport used before its first cluster");
    return *t_;
  }
  int rank_in_version(int w) const {
    const int r = w >= 0 && static_cast<std::size_t>(w) < rank_of_.size()
                      ? rank_of_[static_cast<std::size_t>(w)]
                      : -1;
    if (r < 0) {
      throw std::logic_error("worker " + std::to_string(w) +
                             " is not in the current cluster version");
    }
    return r;
  }
  int worker_;
  const std::vector<int>& host_of_worker_;
  tcp::TcpTransport* t_ = nullptr;
  bool ready_ = false;
  std::vector<coll::Callback> waiting_;
  std::vector<int> rank_of_;
};

LiveEnv::LiveEnv(tcp::Runtime& runtime, GradientBuffers* buffers, bool verify,
                 const ComputeEmulatorOptions& compute, std::string* compute_note)
    : runtime_(runtime), buffers_(buffers), verify_(verify), local_{runtime.rank()} {
  thread_ = std::thread([this, compute] { compute_loop(compute); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_; });
  if (!start_error_.empty()) {
    lock.unlock();
    stop();
    throw RuntimeFailure(start_error_);
  }
  if (compute_note) *compute_note = compute_note_;
}

LiveEnv::~LiveEnv() {
  stop();
}

void LiveEnv::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (detached_) return;
  detached_ = true;
  // The loop runs posted tasks in order: once this one ran, no earlier post is pending, and the
  // cleared flag silences the timers and later posts.
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool cleared = false;
  };
  auto signal = std::make_shared<Signal>();
  runtime_.loop().post([this, alive = alive_, signal] {
    *alive = false;
    // Elastic runs: the versions' transports belong to the loop thread.
    if (worker_transport_) worker_transport_->clear();
    transports_.clear();
    {
      std::lock_guard<std::mutex> lock(signal->mu);
      signal->cleared = true;
    }
    signal->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(signal->mu);
  // A loop that does not answer (it stopped) runs nothing more either.
  signal->cv.wait_for(lock, std::chrono::seconds(5), [&] { return signal->cleared; });
}

void LiveEnv::compute_loop(ComputeEmulatorOptions options) {
  tighten_timer_slack();
  std::unique_ptr<ComputeEmulator> emulator;
  try {
    emulator = make_compute_emulator(options, &compute_note_);
    compute_description_ = emulator->description();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    start_error_ = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
  }
  cv_.notify_all();
  if (!emulator) return;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job(*emulator);
    } catch (const std::exception& e) {
      const std::string reason = "rank " + std::to_string(runtime_.rank()) + ": " + e.what();
      post([this, reason] { runtime_.fail_from_loop(reason); });
      return;
    }
  }
}

void LiveEnv::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void LiveEnv::post(runtime::Callback task) {
  runtime_.loop().post([alive = alive_, task = std::move(task)] {
    if (*alive) task();
  });
}

TimeNs LiveEnv::now() const {
  return tcp::EventLoop::now_ns();
}

void LiveEnv::at(TimeNs when, runtime::Callback task) {
  runtime_.loop().add_timer(std::max<TimeNs>(0, when - now()),
                            [alive = alive_, task = std::move(task)] {
                              if (*alive) task();
                            });
}

void LiveEnv::set_learner(Learner* learner, int total_steps, int eval_every) {
  if (learner != nullptr && (buffers_ == nullptr || buffers_->synthetic())) {
    throw std::logic_error("LiveEnv: a learner needs real gradient buffers in its layout");
  }
  learner_ = learner;
  total_steps_ = total_steps;
  eval_every_ = eval_every;
  learn_rank_ = runtime_.rank();
  if (learner_) check_ = coll::make_allreduce(coll::StrategyKind::kStar, runtime_.host_of_rank());
}

bool LiveEnv::evaluation_point(int step) const {
  return step + 1 == total_steps_ || (eval_every_ > 0 && (step + 1) % eval_every_ == 0);
}

void LiveEnv::compute(int, const runtime::ComputeSchedule& schedule,
                      std::function<void(std::size_t)> phase_done) {
  auto done = std::make_shared<std::function<void(std::size_t)>>(std::move(phase_done));
  if (learner_ != nullptr) {
    // Real compute: the deadlines are not used; each reported phase (backward layer b is phase
    // b + 1) goes to the loop as soon as the layer's gradient is written.
    submit([this, reported = schedule.reported, batch = schedule.batch_per_gpu, done,
            step = step_](ComputeEmulator&) {
      if (batch > 0) learner_->set_batch(batch);  // a policy may have changed it
      std::size_t next = 0;
      auto report_through = [&](std::size_t phase) {
        for (; next < reported.size() && reported[next] <= phase; ++next)
          post([done, i = reported[next]] { (*done)(i); });
      };
      learner_->compute_gradient(step, buffers_->flat_send(),
                                 [&](std::size_t zoo_layer) { report_through(zoo_layer + 1); });
      report_through(reported.empty() ? 0 : reported.back());
    });
    return;
  }
  submit([this, schedule, done](ComputeEmulator& c) {
    c.begin_step(schedule.start_ns, schedule.phase_end_ns);
    for (std::size_t i : schedule.reported) {
      c.wait_phase(i);
      post([done, i] { (*done)(i); });
    }
  });
}

void LiveEnv::compute_until(int, TimeNs end_ns, runtime::Callback done) {
  if (learner_ != nullptr) {
    submit([this, step = step_, done = std::move(done)](ComputeEmulator&) {
      learner_->apply(step, buffers_->flat_recv());
      post(done);
    });
    return;
  }
  submit([this, end_ns, done = std::move(done)](ComputeEmulator& c) {
    c.run_until(end_ns);
    post(done);
  });
}

// The gradients are in host memory already (KungFu's and Horovod's CPU paths read them there).
void LiveEnv::copy_to_host(int, std::uint64_t, runtime::Callback done) {
  runtime_.loop().defer([alive = alive_, done = std::move(done)] {
    if (*alive) done();
  });
}

void LiveEnv::copy_to_device(int w, std::uint64_t bytes, runtime::Callback done) {
  copy_to_host(w, bytes, std::move(done));
}

coll::Transport& LiveEnv::transport(int) {
  if (worker_transport_) return *worker_transport_;
  return *transport_;
}

coll::Workspace LiveEnv::gradient(int, std::size_t tensor) {
  return buffers_->workspace(tensor);
}

coll::Workspace LiveEnv::fuse(int, const std::vector<std::size_t>& tensors,
                              const std::string& name) {
  GradientBuffers& b = *buffers_;
  coll::Workspace w;
  if (tensors.size() == 1) {  // a lone tensor is reduced in its own buffers
    w = b.workspace(tensors.front());
    w.name = name;
    return w;
  }
  std::size_t count = 0;
  for (std::size_t t : tensors)
    count += b.elements(t);
  if (fusion_.size() < count) fusion_.resize(count);
  std::size_t at = 0;
  for (std::size_t t : tensors) {
    std::memcpy(fusion_.data() + at, b.send(t), b.elements(t) * sizeof(float));
    at += b.elements(t);
  }
  w.name = name;
  w.count = count;
  w.dtype = coll::DType::kF32;
  w.op = coll::ReduceOp::kSum;
  w.recv = {reinterpret_cast<std::byte*>(fusion_.data()), count * sizeof(float)};
  w.send = w.recv;
  return w;
}

void LiveEnv::unfuse(int, const std::vector<std::size_t>& tensors) {
  if (tensors.size() == 1) return;
  GradientBuffers& b = *buffers_;
  std::size_t at = 0;
  for (std::size_t t : tensors) {
    std::memcpy(b.recv(t), fusion_.data() + at, b.elements(t) * sizeof(float));
    at += b.elements(t);
  }
}

std::unique_ptr<runtime::GpuCollectives> LiveEnv::gpu_collectives(const std::vector<int>&,
                                                                  const train::NcclNet&) {
  throw InputError(
      "this system needs GPUs and NCCL; live training over TCP runs ideal, kungfu "
      "and horovod");
}

std::unique_ptr<runtime::MpiCollectives> LiveEnv::mpi_collectives(const coll::OmpiOptions& options,
                                                                  bool library) {
  if (!library) return TrainingEnv::mpi_collectives(options, library);
  if (elastic_) {
    throw InputError("mpi: {live: library} is not for elastic runs (an MPI job's ranks are fixed)");
  }
  // (MpiLibrary refuses a process without MPI initialised, or a build without MPI.)
  return std::make_unique<MpiLibrary>([this](runtime::Callback task) { post(std::move(task)); },
                                      [this](const std::string& reason) {
                                        post([this, reason] { runtime_.fail_from_loop(reason); });
                                      },
                                      mpi_timeout_ns_);
}

void LiveEnv::gradient_norms(int, std::function<void(double, double)> done) {
  if (buffers_ == nullptr) {  // ideal: no gradient buffers
    post([done = std::move(done)] {
      done(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN());
    });
    return;
  }
  submit([this, done = std::move(done)](ComputeEmulator&) {
    GradientBuffers& b = *buffers_;
    double local = 0, reduced = 0;
    for (std::size_t t = 0; t < b.tensors(); ++t) {
      local += hw::squared_l2_norm({b.send(t), b.elements(t)});
      reduced += hw::squared_l2_norm({b.recv(t), b.elements(t)});
    }
    post([done, local, reduced] { done(local, reduced); });
  });
}

void LiveEnv::square_gradients(int, runtime::Callback done) {
  if (buffers_ == nullptr) {  // ideal: no gradient buffers
    post(std::move(done));
    return;
  }
  submit([this, done = std::move(done)](ComputeEmulator&) {
    buffers_->square();
    post(done);
  });
}

coll::Workspace LiveEnv::squared_gradient(int, std::size_t tensor) {
  if (buffers_ == nullptr) {
    throw std::logic_error("LiveEnv: the ideal system has no gradients to square");
  }
  return buffers_->squared_workspace(tensor);
}

void LiveEnv::gradient_variance(int, std::function<void(double)> done) {
  if (buffers_ == nullptr) {
    post([done = std::move(done)] { done(std::numeric_limits<double>::quiet_NaN()); });
    return;
  }
  submit([this, done = std::move(done)](ComputeEmulator&) {
    const double v = buffers_->variance_norm_sum();
    post([done, v] { done(v); });
  });
}

void LiveEnv::step_started(int worker, int step) {
  step_ = step;
  if (first_start_ < 0) first_start_ = now();
  if (worker != 0 || progress_file_.empty()) return;
  // A temporary file renamed over the last: a reader sees one whole step number or the previous.
  write_file_atomic(progress_file_, std::to_string(step) + "\n");
}

void LiveEnv::between_steps(int, int step, runtime::Callback done) {
  if (learner_ != nullptr) {
    wall_s_[step] = to_seconds(now() - first_start_ - eval_ns_);
    // Every rank checks at the evaluation points (the check is a collective, so the decision is
    // the same on all; it also holds the others while rank 0 evaluates), and after every step with
    // `verify`. Rank 0 evaluates.
    const bool point = evaluation_point(step);
    const bool eval = point && learn_rank_ == 0;
    if (!point && !verify_) {
      done();
      return;
    }
    submit([this, step, eval, done = std::move(done)](ComputeEmulator&) {
      std::optional<learn::Evaluation> e;
      TimeNs eval_ns = 0;
      if (eval) {
        const TimeNs begin = tcp::EventLoop::now_ns();
        e = learner_->evaluate();
        eval_ns = tcp::EventLoop::now_ns() - begin;
      }
      const std::uint64_t hash = learner_->params_hash();
      post([this, step, e, eval_ns, hash, done] {
        if (e) {
          evals_[step] = *e;
          last_eval_ = e;
          eval_ns_ += eval_ns;
        }
        check_parameters(step, hash, done);
      });
    });
    return;
  }
  const bool state = check_state_;
  check_state_ = false;
  if (!state && (buffers_ == nullptr || !verify_)) {
    done();
    return;
  }
  submit([this, step, state, done = std::move(done)](ComputeEmulator&) {
    if (state) {
      // Every element of the model state is the pattern the first cluster's workers hold.
      for (std::size_t t = 0; t < state_.size(); ++t) {
        const std::vector<float>& v = state_[t];
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (v[i] != state_value(t, i)) {
            throw RuntimeFailure("worker " + std::to_string(elastic_->worker) +
                                 ": after the state broadcast, model state tensor " +
                                 std::to_string(t) + " element " + std::to_string(i) + " is " +
                                 std::to_string(v[i]) + ", expected " +
                                 std::to_string(state_value(t, i)) + " (the root's)");
          }
        }
      }
    }
    if (buffers_ != nullptr && verify_) {
      buffers_->verify_and_poison(step);
      ++verified_steps_;
    }
    post(done);
  });
}

void LiveEnv::check_parameters(int step, std::uint64_t hash, runtime::Callback done) {
  // The hash's two 32-bit halves are exact in a double; MAX of x and of -x gives max and min.
  const double hi = static_cast<double>(hash >> 32), lo = static_cast<double>(hash & 0xffffffffu);
  check_in_ = {hi, lo, -hi, -lo};
  check_out_.assign(check_in_.size(), 0.0);
  coll::Workspace w;
  w.name = "learn:params:" + std::to_string(step);
  w.count = check_in_.size();
  w.dtype = coll::DType::kF64;
  w.op = coll::ReduceOp::kMax;
  w.send = {reinterpret_cast<const std::byte*>(check_in_.data()), w.count * sizeof(double)};
  w.recv = {reinterpret_cast<std::byte*>(check_out_.data()), w.count * sizeof(double)};
  coll::Transport& over = check_transport_ ? *check_transport_ : *transport_;
  check_->run(over, w, [this, step, hi, lo, alive = alive_, done = std::move(done)] {
    if (!*alive) return;
    const std::vector<double>& m = check_out_;
    if (m[0] != hi || m[1] != lo || -m[2] != hi || -m[3] != lo) {
      runtime_.fail_from_loop("rank " + std::to_string(learn_rank_) + ": step " +
                              std::to_string(step) +
                              ": the ranks' parameters differ after the update (their hashes "
                              "are not all equal)");
      return;
    }
    ++verified_steps_;
    done();
  });
}

void LiveEnv::readings(int, int step, std::map<std::string, double>& out) {
  if (learner_ == nullptr) return;
  out["learn.samples"] = static_cast<double>(learner_->samples_trained());
  out["learn.wall_s"] = wall_s_.at(step);
  out["learn.lr"] = learner_->learning_rate(step);
  if (auto it = evals_.find(step); it != evals_.end()) {
    out["learn.test_loss"] = it->second.mean_loss;
    out["learn.test_accuracy"] = it->second.accuracy;
  }
}

// Elastic runs.

void LiveEnv::set_elastic(ElasticProcess process, const std::vector<std::uint64_t>& model_elements,
                          std::uint64_t copies, const runtime::ClusterConfig& first,
                          const tcp::TcpTransportOptions& transport_options) {
  elastic_ = std::move(process);
  const int capacity = static_cast<int>(elastic_->host_of_worker.size());
  if (elastic_->etcd) {
    store_ = std::make_unique<EtcdStore>(
        elastic_->store_dir, capacity, EtcdEndpoint{*elastic_->etcd, ""},
        elastic_->store_dir.filename().string(), elastic_->lease_ns);
  } else {
    store_ = std::make_unique<FileStore>(elastic_->store_dir, capacity);
  }
  transport_options_ = transport_options;
  local_ = {elastic_->worker};
  worker_transport_ = std::make_unique<WorkerTransport>(elastic_->worker, elastic_->host_of_worker);
  last_read_ = first;
  state_copies_ = static_cast<int>(copies);
  // The state a worker of the first cluster holds, or a new process's NaN until the broadcast.
  const bool holds = !elastic_->join;
  state_.resize(model_elements.size());
  for (std::size_t t = 0; t < model_elements.size(); ++t) {
    std::vector<float>& v = state_[t];
    v.resize(model_elements[t] * copies);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = holds ? state_value(t, i) : std::numeric_limits<float>::quiet_NaN();
  }
  set_members(first);
  start_version_ = first.version;
  // The lease, from now on while the process runs.
  runtime_.loop().post([this, alive = alive_] {
    if (*alive) renew_lease();
  });
}

void LiveEnv::say_once(const std::string& line) {
  if (said_) return;
  said_ = true;
  std::fprintf(stderr, "adaptsim-live: worker %d: %s\n", elastic_->worker, line.c_str());
}

void LiveEnv::store_get(int, std::function<void(const runtime::ClusterConfig&)> done) {
  // A proposal the store could not take is written first, once it answers again.
  if (pending_put_) {
    try {
      store_->put(*pending_put_);
      pending_put_.reset();
    } catch (const std::exception&) {
      // Still unavailable: the read below says so.
    }
  }
  std::string error;
  std::optional<runtime::ClusterConfig> c = store_->get(&error);
  if (c) {
    last_read_ = c;
    if (said_) {
      std::fprintf(stderr, "adaptsim-live: worker %d: the config store answers again\n",
                   elastic_->worker);
      said_ = false;
    }
  } else {
    say_once(error + "; the job keeps its cluster (version " + std::to_string(last_read_->version) +
             ") until the store answers");
  }
  post([done = std::move(done), c = *last_read_] { done(c); });
}

void LiveEnv::store_put(int, const runtime::ClusterConfig& cluster, runtime::Callback done) {
  try {
    store_->put(cluster);
  } catch (const std::exception& e) {
    pending_put_ = cluster;
    say_once(std::string(e.what()) + "; the job keeps its cluster and proposes version " +
             std::to_string(cluster.version) + " again when the store answers");
  }
  post(std::move(done));
}

void LiveEnv::notify_runners(int, const runtime::RunnerNotice& notice, runtime::Callback done) {
  // The first worker's notice wins; the runner acts on it. Retried until the store takes it.
  try {
    store_->post_notice(notice);
  } catch (const std::exception& e) {
    say_once(std::string(e.what()) + "; the runners' notice of version " +
             std::to_string(notice.cluster.version) + " waits for the store");
    at(now() + 50 * kNsPerMs, [this, notice, done = std::move(done)]() mutable {
      notify_runners(elastic_->worker, notice, std::move(done));
    });
    return;
  }
  post(std::move(done));
}

void LiveEnv::store_notice(int, int version,
                           std::function<void(const std::optional<runtime::RunnerNotice>&)> done) {
  std::optional<runtime::RunnerNotice> notice;
  try {
    const std::vector<int> versions = store_->notice_versions();
    if (std::binary_search(versions.begin(), versions.end(), version))
      notice = store_->read_notice(version);
  } catch (const std::exception& e) {
    say_once(std::string(e.what()) + "; the notice of cluster version " + std::to_string(version) +
             " is read again when the store answers");
  }
  post([done = std::move(done), notice = std::move(notice)] { done(notice); });
}

void LiveEnv::renew_lease() {
  if (hung_) return;  // a hung worker's lease lapses
  if (last_renewal_ >= 0 && now() - last_renewal_ > elastic_->lease_ns) lapse_seen_ = true;
  last_renewal_ = now();
  try {
    store_->renew_lease(elastic_->worker);
    // From now on the lease is this process's: its runner stops holding it.
    if (!lease_taken_) store_->mark_started(elastic_->worker, start_version_);
    lease_taken_ = true;
  } catch (const std::exception& e) {
    say_once(std::string(e.what()) + "; the worker's lease is renewed when the store answers");
  }
  at(now() + std::max<TimeNs>(kNsPerMs, elastic_->lease_ns / 4), [this] { renew_lease(); });
}

void LiveEnv::worker_failed(int, bool silent) {
  if (!silent) {
    if (before_kill_) before_kill_();
    ::raise(SIGKILL);
  }
  // Hung: no more steps and no more lease, but the process and its connections stay (the others
  // see no close; only the lapsed lease tells them).
  hung_ = true;
  end_when_dropped();
}

void LiveEnv::pause_worker(int, TimeNs duration, runtime::Callback resumed) {
  std::this_thread::sleep_for(std::chrono::nanoseconds(duration));
  post(std::move(resumed));
}

bool LiveEnv::lease_lapsed(int) {
  if (!elastic_ || last_renewal_ < 0) return false;
  const bool lapsed = lapse_seen_ || now() - last_renewal_ > elastic_->lease_ns;
  lapse_seen_ = false;
  return lapsed;
}

void LiveEnv::note(int, const std::string& line) {
  std::fprintf(stderr, "adaptsim-live: %s\n", line.c_str());
}

// A hung process would outlive the job: the harness ends it (its record, then a quiet exit) once
// the others have swapped in a cluster without it.
void LiveEnv::end_when_dropped() {
  std::string error;
  const std::optional<runtime::ClusterConfig> c = store_->get(&error);
  if (c && std::find(c->workers.begin(), c->workers.end(), elastic_->worker) == c->workers.end()) {
    if (before_kill_) before_kill_();
    std::fflush(nullptr);
    ::_exit(0);
  }
  at(now() + 100 * kNsPerMs, [this] { end_when_dropped(); });
}

void LiveEnv::store_leases(int, std::function<void(const std::vector<int>&)> done) {
  std::vector<int> live;
  try {
    live = store_->live_leases(elastic_->lease_ns);
  } catch (const std::exception& e) {
    // Nobody can be found dead without the store: every worker counts as alive (the step loop
    // asks again after its retry).
    say_once(std::string(e.what()) + "; failures are found when the store answers");
    for (int w = 0; w < workers(); ++w)
      live.push_back(w);
  }
  post([done = std::move(done), live = std::move(live)] { done(live); });
}

void LiveEnv::store_swap(int, int expected_version, const runtime::ClusterConfig& cluster,
                         std::function<void(bool)> done) {
  bool swapped = false;
  try {
    swapped = store_->swap(expected_version, cluster);
  } catch (const std::exception& e) {
    say_once(std::string(e.what()) + "; the swap waits for the store");
  }
  post([done = std::move(done), swapped] { done(swapped); });
}

void LiveEnv::stop_worker(int) {
  // This process leaves: the run ends once the step loop has nothing left (Trainer::finished),
  // and then its connections close gracefully (close_connections).
}

void LiveEnv::reset_connections(int, const runtime::ClusterConfig& cluster,
                                runtime::Callback done) {
  tcp::UniqueFd listener = tcp::listen_tcp({elastic_->bind_host, 0});
  tcp::set_nonblocking(listener.get());
  // The previous version's connections close gracefully (its last collective, the propose
  // consensus, has completed here); a peer that has left already is no failure any more.
  if (tcp::TcpTransport* old = worker_transport_->current(); old != nullptr && !old->failed()) {
    old->set_failure_handler([](const std::string&) {});
    old->shutdown(kCloseTimeoutNs, [] {});
  }
  auto t = std::make_unique<tcp::TcpTransport>(runtime_.loop(), transport_options_);
  tcp::TcpTransport* raw = t.get();
  raw->set_failure_handler([this, version = cluster.version](const std::string& reason) {
    const std::string what = "worker " + std::to_string(elastic_->worker) + ": cluster version " +
                             std::to_string(version) + ": " + reason;
    if (elastic_->peers_may_fail) {
      // The step in flight is abandoned; the failure detector (the leases) finds who is gone.
      std::fprintf(stderr, "adaptsim-live: %s; the failure detector takes over\n", what.c_str());
      return;
    }
    runtime_.fail_from_loop(what);
  });
  transports_.push_back(std::move(t));
  worker_transport_->begin_switch(raw, cluster.workers);
  set_members(cluster);
  // The mesh comes up in the background; the version's first collective waits for it.
  await_addresses(cluster, raw, std::move(listener), now() + transport_options_.connect_timeout_ns,
                  false);
  post(std::move(done));
}

void LiveEnv::await_addresses(const runtime::ClusterConfig& cluster, tcp::TcpTransport* t,
                              tcp::UniqueFd listener, TimeNs deadline, bool published) {
  // This worker's address first (retried while the store does not answer), then the others'.
  if (!published) {
    try {
      store_->publish_address(cluster.version, elastic_->worker,
                              tcp::local_address(listener.get()).str());
      published = true;
    } catch (const std::exception& e) {
      say_once(std::string(e.what()) + "; the worker's address waits for the store");
    }
  }
  tcp::ClusterSpec spec;
  std::vector<int> missing;
  for (std::size_t r = 0; r < cluster.workers.size(); ++r) {
    const int w = cluster.workers[r];
    if (w == elastic_->worker) spec.rank = static_cast<int>(r);
    std::optional<std::string> a;
    try {
      a = store_->address(cluster.version, w);
    } catch (const std::exception& e) {
      say_once(std::string(e.what()) + "; the connections wait for the store");
    }
    if (!a || !published) {
      missing.push_back(w);
      continue;
    }
    spec.addresses.push_back(tcp::parse_host_list(*a).front());
    spec.host_of_rank.push_back(elastic_->host_of_worker.at(static_cast<std::size_t>(w)));
  }
  if (!missing.empty()) {
    if (now() >= deadline) {
      std::string names;
      for (int w : missing)
        names += (names.empty() ? "" : ", ") + std::to_string(w);
      runtime_.fail_from_loop("worker " + std::to_string(elastic_->worker) + ": cluster version " +
                              std::to_string(cluster.version) + ": worker(s) " + names +
                              " published no address within the connect timeout");
      return;
    }
    // The others publish as they reach this point; a millisecond's poll of the folder.
    auto fd = std::make_shared<tcp::UniqueFd>(std::move(listener));
    at(now() + kNsPerMs, [this, cluster, t, fd, deadline, published] {
      await_addresses(cluster, t, std::move(*fd), deadline, published);
    });
    return;
  }
  spec.secret = version_secret(elastic_->secret, cluster.version);
  t->start(spec, std::move(listener), [this, t, alive = alive_] {
    if (!*alive || worker_transport_->current() != t) return;
    worker_transport_->ready();
  });
}

void LiveEnv::connect_first(const runtime::ClusterConfig& first, TimeNs timeout_ns) {
  runtime_.run("connecting to cluster version " + std::to_string(first.version), timeout_ns,
               [this, first](coll::Transport&, coll::Callback done) {
                 reset_connections(
                     elastic_->worker, first,
                     [this, first, done = std::make_shared<coll::Callback>(std::move(done))] {
                       // Every worker of the first cluster starts its first step together.
                       auto members = std::make_shared<coll::SubsetTransport>(
                           *worker_transport_, first.workers, "first:");
                       tcp::run_barrier(*members, "adaptsim:first", [members, done] { (*done)(); });
                     });
               });
}

void LiveEnv::close_connections(TimeNs timeout_ns) {
  if (!worker_transport_) return;
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool closed = false;
  };
  auto signal = std::make_shared<Signal>();
  runtime_.loop().post([this, timeout_ns, signal] {
    auto closed = [signal] {
      {
        std::lock_guard<std::mutex> lock(signal->mu);
        signal->closed = true;
      }
      signal->cv.notify_all();
    };
    tcp::TcpTransport* t = worker_transport_->current();
    if (t == nullptr || t->failed()) {
      closed();
      return;
    }
    t->set_failure_handler([](const std::string&) {});
    t->shutdown(timeout_ns, closed);
  });
  std::unique_lock<std::mutex> lock(signal->mu);
  signal->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns) + std::chrono::seconds(1),
                      [&] { return signal->closed; });
}

// The cluster's members from now on: the gradient buffers' check, and a learner's slice, rank
// (rank 0 evaluates) and the parameters' check among the members (a STAR over the version's
// connections). On the loop thread between steps, while the compute thread has nothing to run.
void LiveEnv::set_members(const runtime::ClusterConfig& cluster) {
  const std::vector<int>& workers = cluster.workers;
  if (buffers_ != nullptr) buffers_->set_members(workers);
  const auto at = std::find(workers.begin(), workers.end(), elastic_->worker);
  if (learner_ == nullptr || at == workers.end()) return;
  learn_rank_ = static_cast<int>(at - workers.begin());
  learner_->set_members(learn_rank_, static_cast<int>(workers.size()));
  std::vector<int> hosts;
  for (int w : workers)
    hosts.push_back(elastic_->host_of_worker.at(static_cast<std::size_t>(w)));
  check_transport_ = std::make_unique<coll::SubsetTransport>(
      *worker_transport_, workers, "v" + std::to_string(cluster.version) + ":");
  check_ = coll::make_allreduce(coll::StrategyKind::kStar, hosts);
}

std::vector<double> LiveEnv::data_position(int) const {
  if (learner_ == nullptr) return {};
  const auto [cursor, samples] = learner_->data_position();
  return {static_cast<double>(cursor), static_cast<double>(samples)};
}

void LiveEnv::set_data_position(int, const std::vector<double>& position) {
  if (learner_ == nullptr || position.size() != 2)
    throw std::logic_error("LiveEnv: a data position is a learner's cursor and samples");
  learner_->set_data_position(static_cast<std::uint64_t>(position[0]),
                              static_cast<std::uint64_t>(position[1]));
}

coll::Workspace LiveEnv::model_state(int worker, std::size_t tensor, std::uint64_t elements,
                                     const std::string& name) {
  if (!elastic_) return TrainingEnv::model_state(worker, tensor, elements, name);
  std::vector<float>& v = state_.at(tensor);
  if (v.size() != elements) {
    throw std::logic_error("LiveEnv: model state tensor " + std::to_string(tensor) + " has " +
                           std::to_string(v.size()) + " elements, asked for " +
                           std::to_string(elements));
  }
  // Learning: the state is the learner's parameters and momentum (the root's go out, the others'
  // are overwritten and taken in by state_received).
  if (learner_ != nullptr) learner_->read_state(tensor, state_copies_, v);
  coll::Workspace ws;
  ws.name = name;
  ws.count = elements;
  ws.dtype = coll::DType::kF32;
  ws.recv = {reinterpret_cast<std::byte*>(v.data()), v.size() * sizeof(float)};
  ws.send = ws.recv;
  return ws;
}

void LiveEnv::state_received(int, int) {
  if (learner_ == nullptr) {
    check_state_ = true;  // the pattern, checked before the next step
    return;
  }
  // The parameters every worker now holds are compared by hash at the evaluation points.
  state_into_learner();
}

void LiveEnv::state_into_learner() {
  for (std::size_t t = 0; t < state_.size(); ++t)
    learner_->write_state(t, state_copies_, state_[t]);
}

// The model state's bytes must be what the step loop counts (an invariant of set_elastic).
void LiveEnv::check_state_bytes(std::uint64_t bytes) const {
  std::uint64_t total = 0;
  for (const std::vector<float>& v : state_)
    total += v.size() * sizeof(float);
  if (total != bytes) {
    throw std::logic_error("LiveEnv: the model state holds " + std::to_string(total) +
                           " bytes, the step loop expects " + std::to_string(bytes));
  }
}

// A run that learns checkpoints the learner's parameters and momentum (the state a KungFu resize
// broadcasts) and where its data stands (cursor, samples trained: what a resize agrees on), so
// the restarted processes go on from exactly there.
void LiveEnv::write_checkpoint(int, std::uint64_t bytes, runtime::Callback done) {
  submit([this, bytes, done = std::move(done)](ComputeEmulator&) {
    check_state_bytes(bytes);
    std::array<std::uint64_t, 2> position{};
    std::span<const std::uint64_t> words;
    if (learner_ != nullptr) {
      for (std::size_t t = 0; t < state_.size(); ++t)
        learner_->read_state(t, state_copies_, state_[t]);
      const auto [cursor, samples] = learner_->data_position();
      position = {cursor, samples};
      words = position;
    }
    store_->write_checkpoint(state_, words);
    post(done);
  });
}

void LiveEnv::read_checkpoint(int, std::uint64_t bytes, runtime::Callback done) {
  submit([this, bytes, done = std::move(done)](ComputeEmulator&) {
    check_state_bytes(bytes);
    std::array<std::uint64_t, 2> position{};
    try {
      store_->read_checkpoint(state_, learner_ != nullptr ? std::span<std::uint64_t>(position)
                                                          : std::span<std::uint64_t>());
    } catch (const RuntimeFailure& e) {
      throw RuntimeFailure("worker " + std::to_string(elastic_->worker) + ": " + e.what());
    }
    if (learner_ != nullptr) {
      state_into_learner();
      learner_->set_data_position(position[0], position[1]);
    }
    post([this, done] {
      check_state_ = learner_ == nullptr;  // the pattern; a learner's state is checked by hash
      done();
    });
  });
}

}  // namespace adaptsim::live
