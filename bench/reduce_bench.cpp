// Host-side costs that topology files cite: element-wise float32 sum (KungFu's CPU reduction) and
// a process-to-process memory copy, per byte of output.

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "sim/coll/dtype.h"

using namespace adaptsim::coll;

static void BM_ReduceSumF32(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0)) / 4;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), out(n);
  for (auto _ : state) {
    reduce_elements(reinterpret_cast<std::byte*>(out.data()),
                    reinterpret_cast<const std::byte*>(a.data()),
                    reinterpret_cast<const std::byte*>(b.data()), n, DType::kF32, ReduceOp::kSum);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * 4));
}
BENCHMARK(BM_ReduceSumF32)->Arg(1 << 20)->Arg(64 << 20);

static void BM_MemcpyBytes(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  std::vector<char> a(n, 1), b(n);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(BM_MemcpyBytes)->Arg(1 << 20)->Arg(64 << 20);
