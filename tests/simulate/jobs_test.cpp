// Many jobs on one cluster (simulate_jobs.h): the schedulers' decisions on hand-made views, and
// whole traces whose outcomes follow from the policies (a FIFO job starts the instant the one
// holding its GPUs ends; an elastic one starts small and grows through KungFu's resize), the
// samples stop, determinism, and two jobs' traffic contending on one NIC.

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/runtime/job_scheduler.h"
#include "sim/simulate/simulate_jobs.h"
#include "tests/support/toy_cluster.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using runtime::Allocation;

namespace {

std::vector<Allocation> decide(const std::string& policy, const runtime::SchedulerView& view) {
  return runtime::make_job_scheduler(policy)->schedule(view);
}

// One float32 tensor of 1 M elements (4 MB): forward 10 ms, backward 20 ms at batch 32.
const train::Model& toy() {
  static const train::Model m = train::testing::toy_model({1'000'000});
  return m;
}

simulate::JobsOptions options() {
  simulate::JobsOptions o;
  o.system.kind = runtime::SystemKind::kKungFu;
  o.system.strategy = coll::StrategyKind::kBinaryTreeStar;
  o.system.chunk_bytes = 1ull << 30;
  o.batch_per_gpu = 32;
  o.model = [](const std::string&) -> const train::Model& { return toy(); };
  o.compute = [](const train::Model&, int batch) {
    return train::scale_compute(train::testing::toy_compute(0.010, {0.020}), 32, batch);
  };
  return o;
}

io::TraceJob job(const std::string& id, int gpus, double submit_s, double samples) {
  io::TraceJob j;
  j.id = id;
  j.gpus = gpus;
  j.submit = seconds_to_ns_ceil(submit_s);
  j.model = "toy";
  j.samples = samples;
  j.line = 2;
  return j;
}

simulate::SimulatedJobs run(const topo::Topology& t, const std::vector<io::TraceJob>& trace,
                            const std::string& policy) {
  return simulate::simulate_jobs(t, trace, *runtime::make_job_scheduler(policy), options());
}

}  // namespace

TEST_CASE("fifo: jobs start in arrival order and the head holds the rest back") {
  runtime::SchedulerView v;
  v.free_gpus = 6;
  v.queued = {{0, 4, 0}, {1, 4, 0}, {2, 1, 0}};
  CHECK(decide("fifo", v) == std::vector<Allocation>{{0, 4}});
  v.free_gpus = 9;
  CHECK(decide("fifo", v) == std::vector<Allocation>{{0, 4}, {1, 4}, {2, 1}});
  v.free_gpus = 3;
  CHECK(decide("fifo", v).empty());
}

TEST_CASE("elastic: queued jobs start with what is free, then running jobs grow oldest first") {
  runtime::SchedulerView v;
  v.free_gpus = 6;
  v.queued = {{0, 4, 0}, {1, 4, 0}, {2, 1, 0}};
  v.running = {{3, 4, 2}};
  CHECK(decide("elastic", v) == std::vector<Allocation>{{0, 4}, {1, 2}});
  v.queued.clear();
  v.free_gpus = 3;
  v.running = {{3, 4, 2}, {4, 1, 1}, {5, 8, 1}};
  CHECK(decide("elastic", v) == std::vector<Allocation>{{3, 4}, {5, 2}});
  CHECK_THROWS_AS(runtime::make_job_scheduler("sjf"), std::invalid_argument);
}

TEST_CASE("a job runs until the agreed samples reach its trace's, at whatever size") {
  const topo::Topology t = topo::testing::one_gpu_servers(2, 1e9);
  // 2 workers x 32 = 64 samples a step: 200 samples end after step 4 (256).
  const simulate::SimulatedJobs r = run(t, {job("a", 2, 0, 200)}, "fifo");
  REQUIRE(r.jobs.size() == 1);
  CHECK(r.jobs[0].steps == 4);
  CHECK(r.jobs[0].samples == 256);
  CHECK(r.jobs[0].min_gpus == 2);
  CHECK(r.jobs[0].max_gpus == 2);
  CHECK(r.jobs[0].start == 0);
  // Its processes started first (ElasticSpec's process start-up, 23 ms by default).
  CHECK(r.jobs[0].end > options().elastic.process_start_ns + 4 * 30 * kNsPerMs);
}

TEST_CASE("fifo waits for the GPUs, elastic starts with fewer and grows through a resize") {
  const topo::Topology t = topo::testing::one_gpu_servers(4, 1e9);
  // a holds 2 of the 4 GPUs for 20 steps; b asks for 4 just after a started.
  const std::vector<io::TraceJob> trace = {job("a", 2, 0, 20 * 64), job("b", 4, 0.001, 30 * 128)};
  const simulate::SimulatedJobs fifo = run(t, trace, "fifo");
  const simulate::SimulatedJobs elastic = run(t, trace, "elastic");
  REQUIRE(fifo.jobs.size() == 2);
  REQUIRE(elastic.jobs.size() == 2);
  const simulate::JobOutcome &fa = fifo.jobs[0], &fb = fifo.jobs[1];
  CHECK(fb.start == fa.end);  // the instant a's GPUs are free
  CHECK(fb.min_gpus == 4);
  CHECK(fb.max_gpus == 4);
  CHECK(fb.resizes == 0);
  CHECK(fb.samples == 30 * 128);
  const simulate::JobOutcome &ea = elastic.jobs[0], &eb = elastic.jobs[1];
  CHECK(eb.start == eb.submit);  // two GPUs were free
  CHECK(eb.min_gpus == 2);
  CHECK(eb.max_gpus == 4);  // grown once a ended
  CHECK(eb.resizes == 1);
  CHECK(eb.samples >= 30 * 128);
  CHECK(eb.samples < 30 * 128 + 128);  // the stop is the first step past the samples
  CHECK(ea.end == fa.end);             // a's GPUs and NICs are its own either way
  CHECK(eb.end < fb.end);              // b started earlier and its growth paid off
  // The cluster's record: at most the cluster's GPUs, all free at the end.
  for (const simulate::ClusterSample& s : elastic.samples)
    CHECK(s.allocated_gpus <= 4);
  CHECK(elastic.samples.back().allocated_gpus == 0);
}

TEST_CASE("a jobs run is deterministic") {
  const topo::Topology t = topo::testing::one_gpu_servers(4, 1e9);
  const std::vector<io::TraceJob> trace = {job("a", 2, 0, 640), job("b", 4, 0.01, 2048),
                                           job("c", 1, 0.02, 320), job("d", 3, 0.05, 960)};
  const simulate::SimulatedJobs x = run(t, trace, "elastic"), y = run(t, trace, "elastic");
  REQUIRE(x.jobs.size() == y.jobs.size());
  for (std::size_t i = 0; i < x.jobs.size(); ++i) {
    CHECK(x.jobs[i].start == y.jobs[i].start);
    CHECK(x.jobs[i].end == y.jobs[i].end);
    CHECK(x.jobs[i].samples == y.jobs[i].samples);
  }
  CHECK(x.events == y.events);
}

TEST_CASE("two jobs' traffic contends on the NIC they share") {
  // 2-GPU servers: a takes server 0 and one GPU of server 1, b server 2 and the other GPU of
  // server 1, so both jobs' all-reduces cross server 1's NIC.
  const topo::Topology t = topo::testing::one_gpu_servers(3, 1e8, 10'000, 2);
  const simulate::SimulatedJobs alone = run(t, {job("a", 3, 0, 10 * 96)}, "fifo");
  const simulate::SimulatedJobs both =
      run(t, {job("a", 3, 0, 10 * 96), job("b", 3, 0, 10 * 96)}, "fifo");
  REQUIRE(both.jobs.size() == 2);
  CHECK(both.jobs[0].start == both.jobs[1].start);
  // 4 MB through a 100 MB/s NIC: tens of ms a step, which the other job's traffic slows.
  CHECK(both.jobs[0].step_mean_s > 1.2 * alone.jobs[0].step_mean_s);
}

namespace {

// A scheduler that makes room: a queued job gets half of the largest running job once its GPUs
// are free (the driver frees a shrinking job's GPUs when its workers stop).
class HalvingScheduler final : public runtime::JobScheduler {
 public:
  std::string_view name() const override { return "halving"; }
  std::vector<Allocation> schedule(const runtime::SchedulerView& v) const override {
    if (v.queued.empty()) return {};
    if (v.free_gpus >= 1) return {{v.queued.front().job, v.free_gpus}};
    for (const runtime::SchedJob& r : v.running)
      if (r.allocated >= 2) return {{r.job, r.allocated / 2}};
    return {};
  }
};

}  // namespace

TEST_CASE("a job shrunk to admit another leaves its GPUs once its workers stopped") {
  const topo::Topology t = topo::testing::one_gpu_servers(4, 1e9);
  const std::vector<io::TraceJob> trace = {job("a", 4, 0, 30 * 128), job("b", 4, 0.05, 10 * 64)};
  const HalvingScheduler halving;
  const simulate::SimulatedJobs r = simulate::simulate_jobs(t, trace, halving, options());
  REQUIRE(r.jobs.size() == 2);
  const simulate::JobOutcome &a = r.jobs[0], &b = r.jobs[1];
  CHECK(a.max_gpus == 4);
  CHECK(a.min_gpus == 2);  // KungFu's resize to its first two workers
  CHECK(a.resizes == 1);
  CHECK(a.samples >= 30 * 128);
  // b waited for a's two leaving workers, then ran on their GPUs.
  CHECK(b.start > b.submit);
  CHECK(b.min_gpus == 2);
  CHECK(b.max_gpus == 2);
  CHECK(b.samples >= 10 * 64);
  for (const simulate::ClusterSample& s : r.samples)
    CHECK(s.allocated_gpus <= 4);
  CHECK(r.samples.back().allocated_gpus == 0);
}

TEST_CASE("elastic-fair: max-min fair shares, running jobs shrink to admit queued ones") {
  runtime::SchedulerView v;
  // 8 GPUs: job 0 holds all of them; job 1 (asks 8) and job 2 (asks 1) arrive. Shares: 1 for
  // job 2, then 8 - 1 = 7 split 4 / 3, the earlier job first: job 0 shrinks to 4.
  v.free_gpus = 0;
  v.running = {{0, 8, 8}};
  v.queued = {{1, 8, 0}, {2, 1, 0}};
  CHECK(decide("elastic-fair", v) == std::vector<Allocation>{{0, 4}});
  // Its 4 GPUs given back and not yet free: the queued jobs wait for them (no start then grow).
  v.running = {{0, 8, 4}};
  v.releasing_gpus = 4;
  CHECK(decide("elastic-fair", v).empty());
  // Two of them free already: still too few for job 1's share of 3, and no running job below
  // its share may take them meanwhile.
  v.running = {{0, 8, 4}, {3, 2, 1}};
  v.free_gpus = 2;
  v.releasing_gpus = 2;
  CHECK(decide("elastic-fair", v) == std::vector<Allocation>{{0, 3}});
  v.running = {{0, 8, 4}};
  v.free_gpus = 0;
  // Free now: job 1 starts with its 3, job 2 with its 1.
  v.releasing_gpus = 0;
  v.free_gpus = 4;
  CHECK(decide("elastic-fair", v) == std::vector<Allocation>{{1, 3}, {2, 1}});
  // No queue: a job below its request grows into free GPUs, oldest first, up to its request.
  v.queued.clear();
  v.running = {{0, 8, 4}, {2, 1, 1}};
  v.free_gpus = 4;
  CHECK(decide("elastic-fair", v) == std::vector<Allocation>{{0, 8}});
  // More queued jobs than GPUs: one GPU each for the earliest, the rest wait.
  v.running = {};
  v.free_gpus = 2;
  v.queued = {{5, 4, 0}, {6, 4, 0}, {7, 4, 0}};
  CHECK(decide("elastic-fair", v) == std::vector<Allocation>{{5, 1}, {6, 1}});
}

TEST_CASE(
    "elastic-fair shrinks a running job to start a newcomer at once, where elastic makes it wait") {
  const topo::Topology t = topo::testing::one_gpu_servers(4, 1e9);
  // a takes all 4 GPUs for a long run; b asks for 2 soon after.
  const std::vector<io::TraceJob> trace = {job("a", 4, 0, 60 * 128), job("b", 2, 0.05, 10 * 64)};
  const simulate::SimulatedJobs elastic = run(t, trace, "elastic");
  const simulate::SimulatedJobs fair = run(t, trace, "elastic-fair");
  REQUIRE(fair.jobs.size() == 2);
  const simulate::JobOutcome &ea = elastic.jobs[0], &eb = elastic.jobs[1];
  const simulate::JobOutcome &fa = fair.jobs[0], &fb = fair.jobs[1];
  CHECK(eb.start == ea.end);  // elastic never shrinks a: b waits for all of it
  CHECK(fa.min_gpus == 2);    // a's share with b beside it
  CHECK(fa.max_gpus == 4);    // and back to its request once b ended
  CHECK(fa.resizes == 2);
  CHECK(fb.start > fb.submit);  // a's two leaving workers stopped first
  CHECK(fb.start < fa.end);
  CHECK(fb.min_gpus == 2);
  CHECK(fb.resizes == 0);  // it waited for its whole share
  CHECK(fb.end < eb.end);
  CHECK(fa.samples >= 60 * 128);
  CHECK(fb.samples >= 10 * 64);
  for (const simulate::ClusterSample& s : fair.samples)
    CHECK(s.allocated_gpus <= 4);
  CHECK(fair.samples.back().allocated_gpus == 0);
}
