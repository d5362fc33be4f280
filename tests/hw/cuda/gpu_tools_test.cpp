// The GPU tools end to end, on a real GPU (gpu_test_main.cpp skips the whole executable without
// one): the NCCL runner bootstrapped over MPI under `mpirun -np 1 ... --mpi`, and
// `calibrate --gpus 1` writing a profile whose gpu section holds the device's measurements.
// CMake registers each case as its own CTest entry (-tc filter), the mpirun one only where MPI
// was found.

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "calibrate/measurement.h"
#include "hw/cuda/cuda_device.h"
#include "sim/io/calibration_profile.h"
#include "tests/support/run_command.h"

namespace fs = std::filesystem;
using namespace adaptsim;

namespace {

// A shell command line with stderr joined to stdout.
struct Result {
  int code = -1;
  std::string out;
};
Result run(const std::string& command) {
  const adaptsim::testing::CommandResult r = adaptsim::testing::run_command(command);
  return {r.code, r.output};
}

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpu_tools_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

#ifdef ADAPTSIM_MPIEXEC
TEST_CASE("mpirun -np 1 adaptsim-nccl --mpi: one rank bootstrapped over MPI, exact all-reduces") {
  // One process driving one GPU, its NCCL id exchanged through MPI (a broadcast among one rank):
  // sizes 8 B x 16^k up to 1 MiB = 8 B, 128 B, 2 KiB, 32 KiB, 512 KiB; every result checked.
  const fs::path dir = scratch("nccl_mpi");
  const Result r = run(std::string(ADAPTSIM_MPIEXEC) +
                       " --allow-run-as-root --oversubscribe -np 1 " + ADAPTSIM_NCCL_TOOL +
                       " --mpi --gpus 1 --minbytes 8B --maxbytes 1MiB --stepfactor 16 --iters 5 "
                       "--warmup-iters 2 -o " +
                       dir.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("ranks 1 (1 process)") != std::string::npos);
  CHECK(r.out.find("Out of bounds values : 0 OK") != std::string::npos);
  const fs::path csv = dir / "nccl_all_reduce_float32_sum_1r.csv";
  REQUIRE(fs::exists(csv));
  std::ifstream in(csv);
  std::string line;
  int rows = -1;  // the header is not a row
  while (std::getline(in, line)) {
    if (!line.empty()) ++rows;
  }
  CHECK(rows >= 5);  // 5 sizes (out-of-place; in-place rows may follow)
  fs::remove_all(dir);
}
#endif

TEST_CASE("calibrate --gpus 1: the profile's gpu section holds the device's measurements") {
  const fs::path dir = scratch("calibrate");
  const Result r = run(std::string(CALIBRATE_PATH) +
                       " --gpus 1 --minbytes 8B --maxbytes 1MiB --stepfactor 16 --iters 5 "
                       "--warmup-iters 2 --kernel-max-elements 100000000 --kernel-iters 3 -q -o " +
                       dir.string() + " --name gpu");
  INFO(r.out);
  REQUIRE(r.code == 0);
  const io::CalibrationProfile p = io::load_calibration_profile(dir / "gpu.yaml");
  CHECK(p.sweep.backend == "nccl");
  CHECK(p.sweep.ranks == 1);
  // Versions: NCCL and the CUDA runtime from the GPU mode, the driver because a GPU is visible.
  CHECK_FALSE(p.software.nccl_version.empty());
  CHECK_FALSE(p.software.cuda_version.empty());
  CHECK(p.software.cuda_driver_version == hw::cuda_driver_version());
  CHECK_FALSE(p.software.compiler.empty());

  REQUIRE(p.gpu);
  const io::GpuCalibration& g = *p.gpu;
  CHECK(g.name == hw::cuda_device_info(0).name);
  CHECK(g.count == 1);
  // Launch costs are microseconds on every GPU since Kepler: (0, 1 ms) is a sanity range.
  CHECK(g.launch_overhead_us > 0);
  CHECK(g.launch_overhead_us < 1000);
  CHECK(g.launch_latency_us > 0);
  CHECK(g.launch_latency_us < 1000);
  // One cost line per kernel (sum, sq_norm, variance), each with a positive per-element cost.
  // The kernels ran up to 1e8 elements (400 MB per vector, beyond any L2), and the line's
  // per-element cost is the large sizes' (kernel_cost_entries), so no kernel streams faster than
  // the DRAM peak (2 x memory clock x bus width). An H200's sq_norm line once came out at 5.8 TB/s,
  // above its 4.8 TB/s, when one line was fitted across cache-resident and streamed sizes.
  const double peak = hw::cuda_device_info(0).peak_memory_bandwidth_Bps;
  MESSAGE("DRAM peak " << peak / 1e12 << " TB/s");
  CHECK(g.kernels.size() == 3);
  for (const io::KernelCostEntry& k : g.kernels) {
    INFO(k.kernel << ": " << k.bandwidth_Bps / 1e12 << " TB/s, overhead " << k.overhead_ns
                  << " ns");
    CHECK(k.per_element_ns > 0);
    CHECK(k.bandwidth_Bps > 0);
    CHECK(k.bandwidth_Bps <= 1.05 * peak);
  }
  // The sum kernel's bandwidth at its largest size and the copy probe: positive and below
  // 10 x the DRAM peak (a probe whose operands stay in a large L2 can beat DRAM, not tenfold).
  CHECK(g.reduce_bandwidth_Bps > 0);
  CHECK(g.reduce_bandwidth_Bps < 10 * peak);
  CHECK(g.memory_bandwidth_Bps > 0);
  CHECK(g.memory_bandwidth_Bps < 10 * peak);
  REQUIRE(g.gemm);
  CHECK(g.gemm->precision == "bf16");
  CHECK(g.gemm->flops_per_s > 1e12);  // any tensor-core GPU does > 1 TFLOP/s in bf16

  // The NCCL rows beside it: all exact.
  const auto rows = coll::read_sweep_csv(dir / "gpu.csv", calibrate::kMeasurementCsv);
  CHECK(rows.size() >= 5);
  for (const auto& row : rows)
    CHECK(row.wrong == 0);
  fs::remove_all(dir);
}
