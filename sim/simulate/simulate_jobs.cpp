#include "sim/simulate/simulate_jobs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/runtime/trainer.h"

namespace adaptsim::simulate {
namespace {

class JobsRun {
 public:
  JobsRun(const topo::Topology& topology, const std::vector<io::TraceJob>& trace,
          const runtime::JobScheduler& scheduler, const JobsOptions& options)
      : topology_(topology),
        scheduler_(scheduler),
        options_(options),
        cluster_(topology, options.cluster),
        owner_(static_cast<std::size_t>(topology.rank_count()), -1) {
    for (const io::TraceJob& t : trace) {
      Job j;
      j.spec = &t;
      j.model = &options.model(t.model);
      jobs_.push_back(std::move(j));
    }
  }

  SimulatedJobs run() {
    EventEngine& engine = cluster_.engine;
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      engine.schedule_at(jobs_[j].spec->submit, [this, j] {
        jobs_[j].state = State::kQueued;
        queue_.push_back(static_cast<int>(j));
        reschedule();
      });
    }
    engine.run();
    SimulatedJobs out;
    out.events = engine.events_run();
    out.samples = std::move(samples_);
    for (Job& j : jobs_) {
      if (j.state != State::kDone) {
        throw RuntimeFailure("job " + j.spec->id + " (trace line " + std::to_string(j.spec->line) +
                             ") never finished under scheduler '" + std::string(scheduler_.name()) +
                             "'");
      }
      runtime::Trainer& trainer = j.run->trainer();
      const runtime::TrainingResult r = trainer.summarize(trainer.local_sums());
      JobOutcome o;
      o.id = j.spec->id;
      o.model = j.spec->model;
      o.requested = j.spec->gpus;
      o.submit = j.spec->submit;
      o.start = j.start;
      o.end = j.end;
      o.steps = static_cast<int>(r.steps.size());
      o.resizes = j.resizes;
      o.min_gpus = o.steps > 0 ? r.steps.front().workers : 0;
      double sum_s = 0;
      for (const runtime::StepRow& s : r.steps) {
        o.samples += static_cast<double>(s.workers) * s.batch_per_gpu;
        o.min_gpus = std::min(o.min_gpus, s.workers);
        o.max_gpus = std::max(o.max_gpus, s.workers);
        sum_s += s.time_s;
      }
      o.step_mean_s = o.steps > 0 ? sum_s / o.steps : 0;
      out.jobs.push_back(std::move(o));
    }
    return out;
  }

 private:
  enum class State { kPending, kQueued, kRunning, kDone };
  struct Job {
    const io::TraceJob* spec = nullptr;
    const train::Model* model = nullptr;
    State state = State::kPending;
    std::vector<int> gpus;  // its workers: the cluster it was last given, in rank order
    std::unique_ptr<SimEnv> env;
    std::unique_ptr<runtime::TrainingRun> run;
    TimeNs start = -1, end = -1;
    int resizes = 0;
  };

  int free_gpus() const { return static_cast<int>(std::count(owner_.begin(), owner_.end(), -1)); }

  void reschedule() {
    runtime::SchedulerView view;
    view.free_gpus = free_gpus();
    // GPUs still owned by a job that no longer counts them (its leaving workers have not
    // stopped yet): the owned ones less the running jobs' own.
    view.releasing_gpus = static_cast<int>(owner_.size()) - view.free_gpus;
    for (int j : running_)
      view.releasing_gpus -= static_cast<int>(jobs_[static_cast<std::size_t>(j)].gpus.size());
    for (int j : queue_)
      view.queued.push_back({j, jobs_[j].spec->gpus, 0});
    for (int j : running_)
      view.running.push_back({j, jobs_[j].spec->gpus, static_cast<int>(jobs_[j].gpus.size())});
    int free = view.free_gpus;
    std::vector<int> seen;
    for (const runtime::Allocation& a : scheduler_.schedule(view)) {
      if (a.job < 0 || a.job >= static_cast<int>(jobs_.size()) ||
          std::find(seen.begin(), seen.end(), a.job) != seen.end() || a.gpus < 1) {
        throw std::logic_error("scheduler '" + std::string(scheduler_.name()) +
                               "' gave an invalid allocation");
      }
      seen.push_back(a.job);
      Job& j = jobs_[static_cast<std::size_t>(a.job)];
      const int held = static_cast<int>(j.gpus.size());
      const int more = a.gpus - held;
      if (more > free || (j.state != State::kQueued && j.state != State::kRunning)) {
        throw std::logic_error("scheduler '" + std::string(scheduler_.name()) + "' gave job " +
                               j.spec->id + " " + std::to_string(a.gpus) + " GPUs with " +
                               std::to_string(free) + " free");
      }
      if (more > 0) free -= more;
      if (j.state == State::kQueued) {
        start(a.job, a.gpus);
      } else if (a.gpus != held) {
        resize(a.job, a.gpus);
      }
    }
    sample();
  }

  // `n` free GPUs for job j (placement: header).
  std::vector<int> place(int j, int n) const {
    std::map<int, int> own, free;  // server -> the job's GPUs, free GPUs
    for (int g : jobs_[static_cast<std::size_t>(j)].gpus)
      ++own[topology_.rank_server(g)];
    for (int g = 0; g < topology_.rank_count(); ++g)
      if (owner_[static_cast<std::size_t>(g)] < 0) ++free[topology_.rank_server(g)];
    std::vector<int> servers;
    for (const auto& [s, count] : free)
      servers.push_back(s);
    std::stable_sort(servers.begin(), servers.end(), [&](int a, int b) {
      const int oa = own.count(a) ? own.at(a) : 0, ob = own.count(b) ? own.at(b) : 0;
      if ((oa > 0) != (ob > 0)) return oa > 0;
      return free.at(a) > free.at(b);
    });
    std::vector<int> out;
    for (int s : servers) {
      for (int g = 0; g < topology_.rank_count() && static_cast<int>(out.size()) < n; ++g) {
        if (topology_.rank_server(g) == s && owner_[static_cast<std::size_t>(g)] < 0)
          out.push_back(g);
      }
    }
    return out;
  }

  void start(int j, int n) {
    Job& job = jobs_[static_cast<std::size_t>(j)];
    job.gpus = place(j, n);
    for (int g : job.gpus)
      owner_[static_cast<std::size_t>(g)] = j;
    job.state = State::kRunning;
    job.start = cluster_.engine.now();
    std::erase(queue_, j);
    running_.push_back(j);
    SimEnvOptions env = options_.cluster;
    env.elastic = options_.elastic;
    env.elastic->initial_cluster = job.gpus;
    env.background = {};
    env.stragglers.clear();
    env.learning.reset();
    env.kernels = MonitorKernels{};
    job.env = std::make_unique<SimEnv>(cluster_, topology_, *job.model, env);
    job.env->on_worker_stopped([this, j](int w) { stopped(j, w); });
    runtime::TrainerOptions t;
    t.batch_per_gpu = options_.batch_per_gpu;
    t.warmup_steps = 0;
    // The most steps it may need: every one on a single GPU.
    t.measured_steps = static_cast<int>(std::ceil(job.spec->samples / t.batch_per_gpu));
    t.stop_after_samples = job.spec->samples;
    t.seed = options_.cluster.seed + static_cast<std::uint64_t>(j) * 7919;
    t.step_time_cv = options_.step_time_cv;
    t.gradient_element_bytes = options_.cluster.gradient_element_bytes;
    const train::Model* model = job.model;
    t.compute = [this, model](int batch) { return options_.compute(*model, batch); };
    t.elastic = env.elastic;
    job.run = std::make_unique<runtime::TrainingRun>(*job.env, *job.model, options_.system,
                                                     runtime::SeamSpec{}, std::move(t));
    job.run->trainer().set_progress([this, j] { progress(j); });
    // Its first processes start as a resize's new ones do (ElasticSpec: the process's start-up,
    // then the framework's), all at once, before step 0: the job holds its GPUs meanwhile.
    runtime::Trainer* trainer = &job.run->trainer();
    cluster_.engine.schedule_after(
        options_.elastic.process_start_ns + options_.elastic.framework_init_ns,
        [trainer] { trainer->start(); });
  }

  void resize(int j, int n) {
    Job& job = jobs_[static_cast<std::size_t>(j)];
    const int held = static_cast<int>(job.gpus.size());
    if (n > held) {
      for (int g : place(j, n - held)) {
        owner_[static_cast<std::size_t>(g)] = j;
        job.gpus.push_back(g);
      }
    } else {
      job.gpus.resize(static_cast<std::size_t>(n));  // KungFu keeps the first ranks (rank 0)
    }
    ++job.resizes;
    job.env->propose_cluster(job.gpus);
  }

  // A worker of job j left: its GPU is free once the job no longer counts it.
  void stopped(int j, int w) {
    const Job& job = jobs_[static_cast<std::size_t>(j)];
    if (owner_[static_cast<std::size_t>(w)] != j ||
        std::find(job.gpus.begin(), job.gpus.end(), w) != job.gpus.end())
      return;
    owner_[static_cast<std::size_t>(w)] = -1;
    cluster_.engine.schedule_after(0, [this] { reschedule(); });
  }

  void progress(int j) {
    Job& job = jobs_[static_cast<std::size_t>(j)];
    if (job.state != State::kRunning || !job.run->trainer().finished()) return;
    job.state = State::kDone;
    job.end = cluster_.engine.now();
    std::erase(running_, j);
    for (int& o : owner_)
      if (o == j) o = -1;
    // After the callback that finished it: the next job starts in a clean event.
    cluster_.engine.schedule_after(0, [this] { reschedule(); });
  }

  void sample() {
    ClusterSample s;
    s.at = cluster_.engine.now();
    s.allocated_gpus = static_cast<int>(owner_.size()) - free_gpus();
    s.running = static_cast<int>(running_.size());
    s.queued = static_cast<int>(queue_.size());
    if (!samples_.empty() && samples_.back().at == s.at) {
      samples_.back() = s;
    } else if (samples_.empty() || samples_.back().allocated_gpus != s.allocated_gpus ||
               samples_.back().running != s.running || samples_.back().queued != s.queued) {
      samples_.push_back(s);
    }
  }

  const topo::Topology& topology_;
  const runtime::JobScheduler& scheduler_;
  const JobsOptions& options_;
  SimCluster cluster_;
  std::vector<Job> jobs_;
  std::vector<int> owner_;  // per GPU (rank): the job holding it, -1 free
  std::vector<int> queue_, running_;
  std::vector<ClusterSample> samples_;
};

}  // namespace

SimulatedJobs simulate_jobs(const topo::Topology& topology, const std::vector<io::TraceJob>& trace,
                            const runtime::JobScheduler& scheduler, const JobsOptions& options) {
  JobsRun run(topology, trace, scheduler, options);
  return run.run();
}

}  // namespace adaptsim::simulate
