// The all-reduce sweep: its sizes, its exact check pattern, its rows (busbw = algbw 2(n-1)/n),
// and its CSV, written whole or not at all.

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "hw/tcp/allreduce_sweep.h"
#include "sim/core/error.h"
#include "tests/hw/tcp/tcp_test_support.h"

using namespace adaptsim;
using namespace adaptsim::tcp;
using namespace adaptsim::tcp::testing;
using coll::DType;
using coll::ReduceOp;

TEST_CASE("sweep sizes go from min to max by the step factor") {
  SweepOptions o;
  o.min_bytes = 8;
  o.max_bytes = 64;
  CHECK(sweep_sizes(o) == std::vector<std::uint64_t>{8, 16, 32, 64});
  o.step_factor = 4;
  o.max_bytes = 100;
  CHECK(sweep_sizes(o) == std::vector<std::uint64_t>{8, 32});
  // 0 B, then one float32 element, then doubling.
  o.min_bytes = 0;
  o.max_bytes = 8;
  o.step_factor = 2;
  CHECK(sweep_sizes(o) == std::vector<std::uint64_t>{0, 4, 8});
}

TEST_CASE("inconsistent sweep options are input errors naming the option") {
  SweepOptions o;
  o.min_bytes = 100;
  o.max_bytes = 10;
  CHECK_THROWS_WITH_AS(validate_sweep_options(o), doctest::Contains("--maxbytes"), InputError);
  o = SweepOptions{};
  o.step_factor = 1;
  CHECK_THROWS_WITH_AS(validate_sweep_options(o), doctest::Contains("--stepfactor"), InputError);
  o = SweepOptions{};
  o.iters = 0;
  CHECK_THROWS_WITH_AS(validate_sweep_options(o), doctest::Contains("--iters"), InputError);
}

TEST_CASE(
    "the check pattern reduces exactly in every dtype and op, and counts each wrong element") {
  const std::size_t count = 1000;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
      for (int n : {1, 2, 5, 8, 33}) {
        const std::size_t es = coll::dtype_size(dtype);
        std::vector<std::byte> acc(count * es), in(count * es);
        fill_check_input(dtype, op, 0, n, {acc.data(), acc.size()});
        for (int r = 1; r < n; ++r) {
          fill_check_input(dtype, op, r, n, {in.data(), in.size()});
          coll::reduce_elements(acc.data(), acc.data(), in.data(), count, dtype, op);
        }
        INFO(coll::dtype_name(dtype) << " " << coll::reduce_op_name(op) << " n=" << n);
        CHECK(count_wrong(dtype, op, n, {acc.data(), acc.size()}) == 0);
        // Flip one element's low byte and another's high byte: exactly two wrong.
        acc[17 * es] ^= std::byte{1};
        acc[901 * es + es - 1] ^= std::byte{0x40};
        CHECK(count_wrong(dtype, op, n, {acc.data(), acc.size()}) == 2);
      }
    }
  }
}

TEST_CASE("a sweep over three live ranks yields one exact row per strategy and size") {
  ThreadCluster cluster(3);
  SweepOptions o;
  o.strategies = {coll::StrategyKind::kClassicRing, coll::StrategyKind::kStar};
  o.min_bytes = 8;
  o.max_bytes = 1024;
  o.iters = 2;
  o.warmup_iters = 1;
  o.timeout_ns = 10 * kNsPerSecond;
  std::vector<std::vector<coll::SweepRow>> rows(3);
  const auto errors = cluster.run_all(
      [&](int r, Runtime& rt) { rows[static_cast<std::size_t>(r)] = run_allreduce_sweep(rt, o); });
  for (const auto& e : errors)
    CHECK(e.empty());
  REQUIRE(rows[0].size() == 2 * 8);  // 8, 16, ..., 1024
  // Strategies in the order asked, each named as sim/coll names it.
  CHECK(rows[0].front().algorithm == "CLASSIC_RING");
  CHECK(rows[0].back().algorithm == "STAR");
  for (const coll::SweepRow& row : rows[0]) {
    CHECK(row.wrong == 0);
    CHECK(row.n_ranks == 3);
    CHECK(row.count * 4 == row.size_bytes);
    CHECK(row.time_us > 0);
    // algbw = S / t; busbw = algbw * 2 (n - 1) / n = algbw * 4 / 3
    CHECK(row.algbw_GBps == doctest::Approx(row.size_bytes / (row.time_us * 1e-6) / 1e9));
    CHECK(row.busbw_GBps == doctest::Approx(row.algbw_GBps * 4.0 / 3.0));
  }
  // Every rank reports the same (slowest-rank) time.
  for (std::size_t i = 0; i < rows[0].size(); ++i) {
    CHECK(rows[1][i].time_us == rows[0][i].time_us);
    CHECK(rows[2][i].time_us == rows[0][i].time_us);
  }
}

namespace {

// A broken all-reduce: the first `good_runs` calls (the warm-up) reduce correctly, every later
// call reports done at once without touching the receive buffer.
class WritesOnlyFirstRuns final : public coll::AllReduce {
 public:
  WritesOnlyFirstRuns(std::unique_ptr<coll::AllReduce> inner, int good_runs)
      : inner_(std::move(inner)), good_runs_(good_runs) {}
  void run(coll::Transport& t, const coll::Workspace& w, coll::Callback done) const override {
    if (runs_++ < good_runs_) {
      inner_->run(t, w, std::move(done));
    } else {
      done();
    }
  }
  coll::StrategyKind kind() const override { return inner_->kind(); }

 private:
  std::unique_ptr<coll::AllReduce> inner_;
  int good_runs_;
  mutable int runs_ = 0;  // run() is const in the interface; one rank's loop thread calls it
};

}  // namespace

TEST_CASE("the check counts what the timed iterations wrote, not a warm-up's result") {
  // 2 ranks, 1 KiB of float32 (256 elements), 1 warm-up then 3 timed iterations. The warm-up
  // writes the exact sum; the timed ones write nothing. The receive buffer is poisoned between
  // the warm-up and the timed iterations, so every element of both ranks is wrong:
  // wrong = 2 ranks x 256 elements = 512. A correct algorithm, same options: wrong = 0.
  ThreadCluster cluster(2);
  SweepOptions o;
  o.iters = 3;
  o.warmup_iters = 1;
  o.timeout_ns = 10 * kNsPerSecond;
  const std::uint64_t size = 1024;
  std::vector<coll::SweepRow> broken(2), good(2);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    std::vector<std::byte> send(size), recv(size);
    fill_check_input(o.dtype, o.op, rt.rank(), rt.size(), {send.data(), send.size()});
    const auto ring = [&] {
      return coll::make_allreduce(coll::StrategyKind::kClassicRing, rt.host_of_rank());
    };
    const WritesOnlyFirstRuns bad(ring(), o.warmup_iters);
    broken[static_cast<std::size_t>(r)] = measure_allreduce_point(
        rt, bad, o, size, {send.data(), send.size()}, {recv.data(), recv.size()});
    good[static_cast<std::size_t>(r)] = measure_allreduce_point(
        rt, *ring(), o, size, {send.data(), send.size()}, {recv.data(), recv.size()});
  });
  for (const auto& e : errors)
    CHECK(e.empty());
  for (int r = 0; r < 2; ++r) {
    CHECK(broken[static_cast<std::size_t>(r)].count == 256);
    CHECK(broken[static_cast<std::size_t>(r)].wrong == 2 * 256);
    CHECK(good[static_cast<std::size_t>(r)].wrong == 0);
  }
}

TEST_CASE("the CSV has the nccl-tests columns and appears whole, through a rename") {
  const std::string dir = make_temp_dir();
  coll::SweepRow row;
  row.size_bytes = 1024;
  row.count = 256;
  row.algorithm = "CLASSIC_RING";
  row.n_ranks = 4;
  row.time_us = 12.5;
  row.algbw_GBps = 0.08192;
  row.busbw_GBps = 0.12288;
  const std::filesystem::path path = std::filesystem::path(dir) / "sweep.csv";
  coll::write_sweep_csv(path, {row}, kAllReduceSweepCsv);
  const auto csv = read_csv(path.string());
  REQUIRE(csv.size() == 2);
  CHECK(csv[0] == std::vector<std::string>{"size_bytes", "count", "type", "redop", "strategy",
                                           "n_ranks", "time_us", "algbw_GBps", "busbw_GBps",
                                           "wrong"});
  CHECK(csv[1] == std::vector<std::string>{"1024", "256", "float32", "sum", "CLASSIC_RING", "4",
                                           "12.500", "0.081920", "0.122880", "0"});
  // Nothing else in the directory: the temporary file was renamed, not copied.
  CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 1);
  CHECK_THROWS_AS(coll::write_sweep_csv(std::filesystem::path(dir) / "no" / "such" / "x.csv", {row},
                                        kAllReduceSweepCsv),
                  RuntimeFailure);
  std::filesystem::remove_all(dir);
}
