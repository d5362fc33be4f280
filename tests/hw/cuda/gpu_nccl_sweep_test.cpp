// The NCCL sweep on the GPUs of this machine (all of them, up to 8): every collective, several
// element types and operators, must return exact results (wrong == 0) and consistent bandwidths.
#include <doctest/doctest.h>

#include <algorithm>

#include "hw/cuda/cuda_device.h"
#include "hw/nccl/sweep.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::hw;

namespace {

SweepOptions small_sweep() {
  SweepOptions o;
  o.gpus = std::min(cuda_device_count(), 8);
  o.min_bytes = 8;
  o.max_bytes = 1 << 20;
  o.iters = 3;
  o.warmup_iters = 1;
  o.check_iters = 2;
  o.collectives = {std::begin(kSweepCollectives), std::end(kSweepCollectives)};
  return o;
}

}  // namespace

TEST_CASE("every collective gives exact results and busbw = algbw x factor") {
  for (coll::DType dtype : {coll::DType::kF32, coll::DType::kBF16, coll::DType::kI32}) {
    SweepOptions o = small_sweep();
    o.dtype = dtype;
    const auto rows = run_nccl_sweep(o);
    REQUIRE_FALSE(rows.empty());
    for (const auto& r : rows) {
      CHECK(r.wrong == 0);
      CHECK(r.n_ranks == o.gpus);
      CHECK(r.time_us > 0);
      CHECK(r.algbw_GBps == doctest::Approx(r.size_bytes / (r.time_us * 1e3)));
      CHECK(r.busbw_GBps ==
            doctest::Approx(r.algbw_GBps * coll::bus_bandwidth_factor(r.collective, r.n_ranks)));
    }
  }
}

TEST_CASE("min and max all-reduce are exact too") {
  for (coll::ReduceOp op : {coll::ReduceOp::kMin, coll::ReduceOp::kMax}) {
    SweepOptions o = small_sweep();
    o.op = op;
    o.collectives = {coll::Collective::kAllReduce, coll::Collective::kReduceScatter};
    for (const auto& r : run_nccl_sweep(o))
      CHECK(r.wrong == 0);
  }
}

TEST_CASE("asking for more GPUs than visible is an input error") {
  SweepOptions o = small_sweep();
  o.gpus = cuda_device_count() + 1;
  CHECK_THROWS_AS(run_nccl_sweep(o), InputError);
}
