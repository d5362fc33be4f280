#pragma once
// Data for the NCCL sweep's correctness check, filled and verified on the GPU (a 1 GiB buffer is
// never copied to the host). Values are small integers, exact in every element type, so the
// expected result of a reduction is exact and "wrong" means different, not "too far":
//   value(q, j, round) = (j + q + round) % 3          for sums, gathers and broadcasts,
//                        (j + 2q + round) % 5         for min and max,
// for rank q and global element index j. A sum over n ranks is <= 2n, exact in bfloat16 (8-bit
// mantissa) up to n = 128 ranks and in uint8 up to n = 127.
// Compiled by nvcc as C++17 (fill_verify.cu): raw pointers, status codes returned.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "sim/coll/dtype.h"

namespace adaptsim::hw::nccl_data {

enum class Expect {
  kReduced,   // element i = op over ranks q of value(q, index_offset + i)
  kGathered,  // element i = value(i / piece_count, i % piece_count)    (all-gather output)
  kFromRank,  // element i = value(source_rank, i)                       (broadcast output)
};

struct VerifySpec {
  Expect expect = Expect::kReduced;
  coll::ReduceOp op = coll::ReduceOp::kSum;  // kReduced only; also picks the value pattern
  int n_ranks = 1;
  int source_rank = 0;             // kFromRank
  std::uint64_t index_offset = 0;  // kReduced: first global index (reduce-scatter: rank x piece)
  std::uint64_t piece_count = 1;   // kGathered
  int round = 0;
};

// buf[i] = value(rank, i, round) in `dtype`, with the pattern of `op`.
cudaError_t fill(void* buf, std::size_t count, coll::DType dtype, coll::ReduceOp op, int rank,
                 int round, cudaStream_t stream);

// Adds the number of elements of buf that differ from the expectation to *d_wrong (device memory,
// unsigned long long). NaN (the poison the sweep writes before the op) never matches.
cudaError_t count_wrong(const void* buf, std::size_t count, coll::DType dtype,
                        const VerifySpec& spec, unsigned long long* d_wrong, cudaStream_t stream);

}  // namespace adaptsim::hw::nccl_data
