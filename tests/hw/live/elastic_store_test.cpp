// The config store of live elastic runs (hw/live/elastic_store.h): the cluster document and its
// validation, the runners' notices (the first one of a version wins), the address rendezvous and
// the processes' records, whose merge is the run's result (sim/runtime/trainer.h, RunRecord).

#include <doctest/doctest.h>

#include <array>

#include <filesystem>
#include <fstream>

#include "hw/live/elastic_store.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::live;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("adaptsim-store-test-" + name);
  fs::remove_all(d);
  return d;
}

runtime::RunRecord record(int workers, int steps) {
  runtime::RunRecord r;
  r.warmup_steps = 1;
  r.total_steps = steps;
  r.workers = workers;
  r.elastic = true;
  r.step_sum_s.assign(static_cast<std::size_t>(steps), 0.0);
  r.step_batch.assign(static_cast<std::size_t>(steps), 0);
  r.step_strategy.assign(static_cast<std::size_t>(steps), "");
  r.step_decision.assign(static_cast<std::size_t>(steps), "");
  r.step_bytes.assign(static_cast<std::size_t>(steps), 0.0);
  r.step_readings.resize(static_cast<std::size_t>(steps));
  r.step_workers.assign(static_cast<std::size_t>(steps), 0);
  r.worker_step_mean_s.assign(static_cast<std::size_t>(workers), 0.0);
  return r;
}

}  // namespace

TEST_CASE("file store: the cluster document round-trips and a bad one is refused in one line") {
  const fs::path dir = fresh_dir("cluster");
  const FileStore store(dir, 4);
  store.create({0, {0}});
  std::string error;
  CHECK(store.get(&error) == runtime::ClusterConfig{0, {0}});
  store.put({1, {0, 2, 1}});
  CHECK(store.get(&error) == runtime::ClusterConfig{1, {0, 2, 1}});
  struct Case {
    std::string text, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"{\"version\": 2, \"workers\": [0, 4]}", "'workers' holds 4, expected worker ids 0..3"},
           {"{\"version\": 2, \"workers\": [1, 1]}", "'workers' holds worker 1 twice"},
           {"{\"version\": -1, \"workers\": [0]}", "'version' must be an integer >= 0"},
           {"{\"version\": 2, \"workers\": []}", "'workers' must be a non-empty list"},
           {"{\"version\": 2}", "expected {\"version\": V, \"workers\": [...]}"},
           {"{\"version\": 2, \"wor", "the cluster document is not JSON"},
       }) {
    std::ofstream(dir / "cluster.json") << c.text;
    error.clear();
    CAPTURE(c.text);
    CHECK_FALSE(store.get(&error).has_value());
    CHECK(error.find(c.expected) != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
  // The store unavailable: its folder gone.
  fs::remove_all(dir);
  error.clear();
  CHECK_FALSE(store.get(&error).has_value());
  CHECK(error.find("the config store is unavailable") != std::string::npos);
}

TEST_CASE("file store: a version's first notice wins, and addresses and records round-trip") {
  const fs::path dir = fresh_dir("notices");
  const FileStore store(dir, 8);
  store.create({0, {0}});
  runtime::RunnerNotice n;
  n.cluster = {3, {0, 1, 2}};
  n.step = 11;
  n.notified_at = 123456789;
  n.agreed_state = "{\"history\": []}";
  CHECK(store.post_notice(n));
  runtime::RunnerNotice other = n;
  other.step = 12;
  CHECK_FALSE(store.post_notice(other));  // every worker notifies; the runner acts on the first
  CHECK(store.notice_versions() == std::vector<int>{3});
  const runtime::RunnerNotice read = store.read_notice(3);
  CHECK(read.cluster == n.cluster);
  CHECK(read.step == 11);
  CHECK(read.notified_at == n.notified_at);
  CHECK(read.agreed_state == n.agreed_state);
  CHECK_THROWS_WITH_AS(notice_from_json("{\"cluster\": 1}", "v9.json"),
                       doctest::Contains("v9.json: unreadable runners' notice"), RuntimeFailure);

  CHECK_FALSE(store.address(3, 1).has_value());
  store.publish_address(3, 1, "127.0.0.1:4000");
  CHECK(store.address(3, 1) == "127.0.0.1:4000");

  runtime::RunRecord a = record(4, 3), b = record(4, 3);
  a.step_sum_s = {0.1, 0.2, 0.3};
  a.step_workers = {1, 1, 2};
  a.step_batch = {32, 32, 32};
  a.step_readings[1]["resize.barrier_s"] = 0.004;
  a.measured = 2;
  a.worker_step_mean_s[0] = 0.25;
  b.step_sum_s = {0, 0, 0.35};
  b.step_workers = {0, 0, 2};
  b.step_batch = {0, 0, 32};
  b.step_readings[1]["resize.barrier_s"] = 0.009;  // the new worker's, the slower one
  b.step_readings[1]["resize.join.process_start_s"] = 0.05;
  b.measured = 1;
  b.worker_step_mean_s[3] = 0.35;
  store.write_record(0, a);
  const std::vector<runtime::RunRecord> back = store.read_records();
  REQUIRE(back.size() == 1);
  CHECK(back[0].step_sum_s == a.step_sum_s);
  CHECK(back[0].step_readings == a.step_readings);
  runtime::RunRecord all = back[0];
  runtime::merge_records(all, b);
  CHECK(all.step_sum_s == std::vector<double>{0.1, 0.2, 0.3 + 0.35});
  CHECK(all.step_workers == std::vector<int>{1, 1, 2});
  CHECK(all.step_readings[1].at("resize.barrier_s") == 0.009);
  CHECK(all.step_readings[1].at("resize.join.process_start_s") == 0.05);
  CHECK(all.measured == 3);
  CHECK(all.worker_step_mean_s == std::vector<double>{0.25, 0, 0, 0.35});
  const runtime::TrainingResult r = runtime::summarize_record(all);
  REQUIRE(r.steps.size() == 3);
  CHECK(r.steps[2].time_s == doctest::Approx(0.325));  // (0.3 + 0.35) / 2 workers
  CHECK_THROWS_AS(runtime::merge_records(all, record(4, 5)), std::invalid_argument);
  fs::remove_all(dir);
}

TEST_CASE("file store: the checkpoint round-trips tensor by tensor, and a wrong size is refused") {
  const fs::path dir = fresh_dir("checkpoint");
  fs::create_directories(dir);
  const FileStore store(dir, 2);
  const std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {4.0f, 5.0f};
  store.write_checkpoint({a, b});
  CHECK(fs::file_size(dir / "checkpoint.bin") == 5 * sizeof(float));
  std::vector<std::vector<float>> back = {std::vector<float>(3), std::vector<float>(2)};
  store.read_checkpoint(back);
  CHECK(back[0] == a);
  CHECK(back[1] == b);
  // A checkpoint of another model's size: one line naming the file and both sizes.
  std::vector<std::vector<float>> c = {std::vector<float>(4)};
  try {
    store.read_checkpoint(c);
    FAIL("a checkpoint of 20 bytes was read as 16");
  } catch (const RuntimeFailure& e) {
    CHECK(std::string(e.what()) ==
          (dir / "checkpoint.bin").string() +
              ": the checkpoint holds 20 bytes, expected 16 of model state");
  }
  // A learner's data position after the tensors: 5 floats and 2 words, 36 bytes.
  const std::array<std::uint64_t, 2> position = {123456789012345ull, 7ull};
  store.write_checkpoint({a, b}, position);
  CHECK(fs::file_size(dir / "checkpoint.bin") == 5 * sizeof(float) + 2 * sizeof(std::uint64_t));
  std::array<std::uint64_t, 2> words{};
  store.read_checkpoint(back, words);
  CHECK(back[0] == a);
  CHECK(back[1] == b);
  CHECK(words == position);
  // Read without the words (a run that does not learn): the sizes differ, refused.
  CHECK_THROWS_WITH_AS(store.read_checkpoint(back),
                       doctest::Contains("the checkpoint holds 36 bytes, expected 20"),
                       RuntimeFailure);
  fs::remove(dir / "checkpoint.bin");
  CHECK_THROWS_WITH_AS(store.read_checkpoint(c),
                       doctest::Contains("checkpoint.bin: cannot read the checkpoint"),
                       RuntimeFailure);
  fs::remove_all(dir);
}
