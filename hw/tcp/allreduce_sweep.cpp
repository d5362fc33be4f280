#include "hw/tcp/allreduce_sweep.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "sim/core/error.h"

namespace adaptsim::tcp {
namespace {

using coll::DType;
using coll::ReduceOp;

// Largest integer up to which every integer is exactly representable (and sums stay exact).
std::uint64_t exact_integer_limit(DType t) {
  switch (t) {
    case DType::kBF16:
      return 256;  // 8 significant bits
    case DType::kF16:
      return 2048;  // 11 significant bits
    case DType::kF32:
      return 1u << 24;  // 24 significant bits
    case DType::kF64:
      return std::uint64_t{1} << 53;
    case DType::kI32:
      return 0x7fffffff;
    case DType::kI64:
      return std::uint64_t{1} << 62;
    case DType::kU8:
      return 255;
  }
  return 1;
}

// Inputs repeat with this period in the element index.
constexpr int kMinMaxPeriod = 11;

// Sum inputs are (rank + i) mod m with m small enough that n ranks cannot exceed the exact limit.
int sum_modulus(DType t, int n_ranks) {
  const std::uint64_t m = exact_integer_limit(t) / static_cast<std::uint64_t>(std::max(n_ranks, 1));
  return static_cast<int>(std::clamp<std::uint64_t>(m, 1, 8));
}

int period(DType t, ReduceOp op, int n_ranks) {
  return op == ReduceOp::kSum ? sum_modulus(t, n_ranks) : kMinMaxPeriod;
}

int input_value(ReduceOp op, int modulus, int rank, std::size_t i) {
  if (op == ReduceOp::kSum) return static_cast<int>((static_cast<std::size_t>(rank) + i) % modulus);
  return static_cast<int>((static_cast<std::size_t>(rank) * 7 + i * 3) % kMinMaxPeriod);
}

void encode(DType t, int v, std::byte* out) {
  switch (t) {
    case DType::kF32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      return;
    }
    case DType::kF64: {
      const double d = v;
      std::memcpy(out, &d, 8);
      return;
    }
    case DType::kF16: {
      const std::uint16_t h = coll::float_to_half(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      return;
    }
    case DType::kBF16: {
      const std::uint16_t b = coll::float_to_bfloat16(static_cast<float>(v));
      std::memcpy(out, &b, 2);
      return;
    }
    case DType::kI32: {
      const std::int32_t x = v;
      std::memcpy(out, &x, 4);
      return;
    }
    case DType::kI64: {
      const std::int64_t x = v;
      std::memcpy(out, &x, 8);
      return;
    }
    case DType::kU8:
      *out = static_cast<std::byte>(v);
      return;
  }
}

// Tiles `pattern` (whole elements) over `out`.
void tile(const std::vector<std::byte>& pattern, coll::Bytes out) {
  std::size_t done = 0;
  while (done < out.size) {
    const std::size_t n = std::min(pattern.size(), out.size - done);
    std::memcpy(out.data + done, pattern.data(), n);
    done += n;
  }
}

// A buffer of `size` bytes, 64-byte aligned and not zero-filled (filling is the caller's job).
struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t size)
      : data(static_cast<std::byte*>(
            std::aligned_alloc(64, (std::max<std::size_t>(size, 1) + 63) / 64 * 64))) {
    if (data == nullptr) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data;
};

}  // namespace

void validate_sweep_options(const SweepOptions& o) {
  if (o.strategies.empty()) throw InputError("no strategy to sweep");
  if (o.max_bytes < o.min_bytes) {
    throw InputError("--maxbytes (" + std::to_string(o.max_bytes) + " B) is below --minbytes (" +
                     std::to_string(o.min_bytes) + " B)");
  }
  if (o.step_factor < 2) throw InputError("--stepfactor must be at least 2");
  if (o.iters < 1) throw InputError("--iters must be at least 1");
  if (o.warmup_iters < 0) throw InputError("--warmup-iters must not be negative");
  if (o.timeout_ns <= 0) throw InputError("--timeout must be positive");
  if (o.allreduce.chunk_bytes == 0) throw InputError("the chunk size must be positive");
}

std::vector<std::uint64_t> sweep_sizes(const SweepOptions& o) {
  validate_sweep_options(o);
  std::vector<std::uint64_t> sizes;
  std::uint64_t s = o.min_bytes;
  if (s == 0) {
    sizes.push_back(0);
    s = coll::dtype_size(o.dtype);
  }
  while (s <= o.max_bytes) {
    sizes.push_back(s);
    if (s > o.max_bytes / o.step_factor) break;
    s *= o.step_factor;
  }
  return sizes;
}

void fill_check_input(DType dtype, ReduceOp op, int rank, int n_ranks, coll::Bytes out) {
  const std::size_t es = coll::dtype_size(dtype);
  const int p = period(dtype, op, n_ranks);
  const int m = sum_modulus(dtype, n_ranks);
  std::vector<std::byte> pattern(static_cast<std::size_t>(p) * es);
  for (int i = 0; i < p; ++i) {
    encode(dtype, input_value(op, m, rank, static_cast<std::size_t>(i)), pattern.data() + i * es);
  }
  tile(pattern, out);
}

std::uint64_t count_wrong(DType dtype, ReduceOp op, int n_ranks, coll::ConstBytes result) {
  const std::size_t es = coll::dtype_size(dtype);
  const int p = period(dtype, op, n_ranks);
  const int m = sum_modulus(dtype, n_ranks);
  std::vector<std::byte> expect(static_cast<std::size_t>(p) * es);
  for (int i = 0; i < p; ++i) {
    int acc = input_value(op, m, 0, static_cast<std::size_t>(i));
    for (int r = 1; r < n_ranks; ++r) {
      const int v = input_value(op, m, r, static_cast<std::size_t>(i));
      acc = op == ReduceOp::kSum   ? acc + v
            : op == ReduceOp::kMin ? std::min(acc, v)
                                   : std::max(acc, v);
    }
    encode(dtype, acc, expect.data() + i * es);
  }
  const std::size_t count = result.size / es;
  std::uint64_t wrong = 0;
  const std::size_t block = static_cast<std::size_t>(p);
  for (std::size_t b = 0; b < count; b += block) {
    const std::size_t len = std::min(block, count - b);
    const std::byte* got = result.data + b * es;
    if (std::memcmp(got, expect.data(), len * es) == 0) continue;
    for (std::size_t j = 0; j < len; ++j) {
      if (std::memcmp(got + j * es, expect.data() + j * es, es) != 0) ++wrong;
    }
  }
  return wrong;
}

coll::SweepRow measure_allreduce_point(Runtime& rt, const coll::AllReduce& algo,
                                       const SweepOptions& o, std::uint64_t size_bytes,
                                       coll::ConstBytes send, coll::Bytes recv) {
  const std::size_t es = coll::dtype_size(o.dtype);
  const int n = rt.size();
  coll::SweepRow row;
  row.count = size_bytes / es;
  row.size_bytes = row.count * es;
  row.type = std::string(coll::dtype_name(o.dtype));
  row.redop = std::string(coll::reduce_op_name(o.op));
  row.collective = coll::Collective::kAllReduce;
  row.algorithm = std::string(coll::strategy_name(algo.kind()));
  row.n_ranks = n;
  const auto bytes = static_cast<std::size_t>(row.size_bytes);
  if (send.size < bytes || recv.size < bytes) {
    throw std::invalid_argument("measure_allreduce_point: buffers smaller than the size");
  }
  coll::Workspace w;
  w.name = "allreduce";
  w.send = {send.data, bytes};
  w.recv = {recv.data, bytes};
  w.count = static_cast<std::size_t>(row.count);
  w.dtype = o.dtype;
  w.op = o.op;
  if (o.warmup_iters > 0) rt.time_allreduce(algo, w, o.warmup_iters, o.timeout_ns);
  // Poisoned after the warm-up, so the result checked below is one the timed iterations wrote
  // (a warm-up's correct result must not hide timed iterations that never write), and before
  // the barrier, so the memset is outside the timed region. 0xff bytes are NaN in every float
  // type and -1/255 in the integer ones: never a result of the check pattern.
  if (o.check && bytes > 0) std::memset(recv.data, 0xff, bytes);
  rt.barrier(o.timeout_ns);
  const TimeNs elapsed = rt.time_allreduce(algo, w, o.iters, o.timeout_ns);
  const std::uint64_t wrong = o.check ? count_wrong(o.dtype, o.op, n, w.recv) : 0;

  // The per-point statistics travel over the runtime itself, as a tiny STAR all-reduce.
  const auto star = coll::make_allreduce(coll::StrategyKind::kStar, rt.host_of_rank());
  double time_us = static_cast<double>(elapsed) / 1e3 / o.iters;
  double time_max = 0;
  rt.run_allreduce(*star,
                   {"sweep/time",
                    {reinterpret_cast<const std::byte*>(&time_us), 8},
                    {reinterpret_cast<std::byte*>(&time_max), 8},
                    1,
                    DType::kF64,
                    ReduceOp::kMax},
                   o.timeout_ns);
  auto wrong_local = static_cast<std::int64_t>(wrong);
  std::int64_t wrong_total = 0;
  rt.run_allreduce(*star,
                   {"sweep/wrong",
                    {reinterpret_cast<const std::byte*>(&wrong_local), 8},
                    {reinterpret_cast<std::byte*>(&wrong_total), 8},
                    1,
                    DType::kI64,
                    ReduceOp::kSum},
                   o.timeout_ns);
  row.time_us = time_max;
  row.algbw_GBps = time_max > 0 ? static_cast<double>(row.size_bytes) / (time_max * 1e-6) / 1e9 : 0;
  row.busbw_GBps = row.algbw_GBps * coll::bus_bandwidth_factor(coll::Collective::kAllReduce, n);
  row.wrong = static_cast<std::uint64_t>(wrong_total);
  return row;
}

std::vector<coll::SweepRow> run_allreduce_sweep(
    Runtime& rt, const SweepOptions& o, const std::function<void(const coll::SweepRow&)>& on_row) {
  const std::vector<std::uint64_t> sizes = sweep_sizes(o);
  const std::size_t es = coll::dtype_size(o.dtype);
  const std::size_t max_bytes = static_cast<std::size_t>(o.max_bytes / es * es);
  AlignedBuffer send(max_bytes), recv(max_bytes);
  // The input pattern depends on the element index only through i mod period, so one fill of
  // the largest buffer serves every size.
  fill_check_input(o.dtype, o.op, rt.rank(), rt.size(), {send.data, max_bytes});

  std::vector<coll::SweepRow> rows;
  for (coll::StrategyKind kind : o.strategies) {
    const auto algo = coll::make_allreduce(kind, rt.host_of_rank(), o.allreduce);
    for (std::uint64_t size : sizes) {
      const coll::SweepRow row = measure_allreduce_point(rt, *algo, o, size, {send.data, max_bytes},
                                                         {recv.data, max_bytes});
      if (on_row) on_row(row);
      rows.push_back(row);
    }
  }
  return rows;
}

std::string sweep_table_header(const coll::SweepRow& row) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "# all-reduce %s, %d ranks, %s %s\n"
                "#%13s %12s %9s %6s %11s %9s %9s %8s\n"
                "#%13s %12s %9s %6s %11s %9s %9s %8s",
                row.algorithm.c_str(), row.n_ranks, row.type.c_str(), row.redop.c_str(), "size",
                "count", "type", "redop", "time", "algbw", "busbw", "#wrong", "(B)", "(elements)",
                "", "", "(us)", "(GB/s)", "(GB/s)", "");
  return buf;
}

std::string sweep_table_row(const coll::SweepRow& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, " %13llu %12llu %9s %6s %11.2f %9.3f %9.3f %8llu",
                static_cast<unsigned long long>(r.size_bytes),
                static_cast<unsigned long long>(r.count), r.type.c_str(), r.redop.c_str(),
                r.time_us, r.algbw_GBps, r.busbw_GBps, static_cast<unsigned long long>(r.wrong));
  return buf;
}

}  // namespace adaptsim::tcp
