#pragma once
// A calibration profile: what the `calibrate` tool measured on real hardware, in one YAML file
// that a scenario (`calibration: FILE`) or simctl (`--calibration FILE`) applies on top of a
// topology's nominal numbers.
//
// The file (written by write_calibration_profile_yaml, read by load_calibration_profile) holds:
//   - provenance: creation date, the exact command line, the host (hostname, CPU model, cores,
//     kernel) and the software versions (adaptsim version + commit, the compiler, the MPI
//     library when built with one; NCCL and the CUDA runtime when used; the CUDA driver when a
//     GPU is visible);
//   - the sweep settings (backend, ranks, hosts, sizes, iterations) and the CSV beside it;
//   - `fits`: one alpha-beta line t(m) = latency + m / bandwidth per (link class, algorithm,
//     collective, n_ranks), fitted by least squares weighted by 1/t^2 (FACTS 2.5), with the
//     per-step latency and asymptotic bus bandwidth derived from the algorithm's step count and
//     the collective's nccl-tests bus factor, and the fit's quality (RMS relative error, R^2,
//     number of points);
//   - `cpu`: reduction bandwidth and kernel cost lines; `gpu` (when measured): the GPU's kernel
//     costs, reduction bandwidth, launch costs, GEMM rate and memory bandwidth.
//
// Every quantity carries its unit as text ("38.2us", "11.8GB/s", "0.25ns", "512KiB",
// "312TFLOP/s", "2.1%"); only counts (ranks, cores, points, steps) and dimensionless ratios
// (bus_factor, r2) are bare numbers. Example:
//
//   profile: adaptsim-calibration/1
//   created: 2026-11-23T06:10:00Z
//   command: "calibrate --backend tcp --procs 4 -o traces/calibration"
//   host: {hostname: build1, cpu_model: "AMD EPYC 7B13", cores: 2, kernel: "Linux 6.1.0 x86_64"}
//   software: {adaptsim: 0.1.0, commit: 1a2b3c4d5e6f, compiler: "GCC 12.2.0",
//              mpi: "Open MPI v4.1.4"}
//   sweep: {backend: tcp, ranks: 4, hosts: 1, min_bytes: 8B, max_bytes: 4MiB, step_factor: 4,
//           iters: 5, warmup_iters: 2, csv: loopback-tcp-4procs.csv}
//   fits:
//     - {class: loopback, algorithm: p2p, collective: sendrecv, n_ranks: 2, points: 11,
//        min_bytes: 8B, max_bytes: 4MiB, latency: 38.2us, bandwidth: 1.18GB/s, steps: 1,
//        bus_factor: 1, alpha_per_step: 38.2us, busbw_inf: 1.18GB/s, m_half: 45076B,
//        residual_rms: 2.1%, r2: 0.9991}
//   cpu:
//     reduce_bandwidth: 4.3GB/s
//     kernels:
//       - {kernel: sum, overhead: 120ns, per_element: 0.93ns, bandwidth: 12.9GB/s, points: 4}
//     concurrent:   # optional: the kernels on `threads` threads at once
//       threads: 4
//       kernels:
//         - {kernel: sum, overhead: 150ns, per_element: 1.4ns, bandwidth: 8.6GB/s, points: 4}
//
// Link classes: `loopback` (processes on one host over 127.0.0.1), `tcp` (processes on
// different hosts), `nccl_intra` / `nccl_inter` (NCCL among the GPUs of one host / of several).
// Algorithms: `p2p` (ping-pong between two ranks: the link itself), a strategy name
// (STAR, CLASSIC_RING, ...: sim/coll/strategy.h), or `nccl` (whatever NCCL chose).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/topo/cluster_spec.h"

namespace adaptsim::io {

inline constexpr const char* kCalibrationProfileFormat = "adaptsim-calibration/1";

struct ProfileHost {
  std::string hostname;   // "unknown" when not known (imports)
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cores = 0;          // online CPUs; 0 = unknown
  std::string kernel;     // uname: "Linux 6.1.0-18-amd64 x86_64"
};

struct ProfileSoftware {
  std::string adaptsim_version;  // of the calibrate binary that wrote the profile
  std::string adaptsim_commit;
  std::string nccl_version;  // "2.28.9"; empty when NCCL was not used
  std::string cuda_version;  // "13.0"; empty when CUDA was not used
  std::string compiler;      // that built calibrate: "GCC 12.2.0"; empty = unknown (imports)
  std::string mpi_version;   // library calibrate links: "Open MPI v4.1.4"; empty = built without
  std::string cuda_driver_version;  // "13.0" (cudaDriverGetVersion); empty = no GPU visible
};

struct ProfileSweep {
  std::string backend;  // "tcp", "nccl" or "import"
  std::string source;   // import: the nccl-tests output file; empty otherwise
  int ranks = 0;        // largest rank count measured
  int hosts = 0;        // physical hosts taking part; 0 = unknown
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  std::uint64_t step_factor = 0;  // 0 = unknown (imports of additive sweeps)
  int iters = 0;                  // 0 = unknown
  int warmup_iters = 0;
  std::string csv;  // the measurements, relative to the profile's folder; empty = none
};

// t(m) = latency_us + m / bandwidth for one (link class, algorithm, collective, n_ranks).
struct LinkFit {
  std::string link_class;  // loopback, tcp, nccl_intra, nccl_inter
  std::string algorithm;   // p2p, a strategy name, nccl
  std::string collective;  // sendrecv, all_reduce, all_gather, reduce_scatter, broadcast, ...
  int n_ranks = 0;
  int points = 0;  // sizes that entered the fit
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  double latency_us = 0;     // a: the fitted time of an empty message
  double bandwidth_Bps = 0;  // 1 / b: message bytes over time at large sizes (algbw at infinity)
  int steps = 1;             // sequential communication steps of the algorithm (FACTS 2.4)
  double bus_factor = 1;     // nccl-tests busbw / algbw for the collective (FACTS 1.4)
  double alpha_per_step_us = 0;  // latency_us / steps
  double busbw_inf_Bps = 0;      // bus_factor * bandwidth_Bps
  double m_half_bytes = 0;       // latency * bandwidth: the size that reaches half the bandwidth
  double residual_rms = 0;       // RMS of (t - fit) / t over the points (fraction, 0.02 = 2%)
  double r2 = 0;                 // weighted coefficient of determination (same 1/t^2 weights)
};

// time(n) = overhead_ns + n * per_element_ns for one kernel (hw/cuda/kernel_cost.h).
struct KernelCostEntry {
  std::string kernel;  // sum, sq_norm, variance
  double overhead_ns = 0;
  double per_element_ns = 0;
  double bandwidth_Bps = 0;  // bytes the kernel moves per element / per_element
  int points = 0;
};

struct CpuCalibration {
  // Element-wise float32 a + b on one thread, bytes of output per second, at the largest size
  // measured (streaming from memory): what topo::ServerSpec::cpu_reduce_bandwidth_Bps means.
  double reduce_bandwidth_Bps = 0;
  std::vector<KernelCostEntry> kernels;
  // The same kernels on `concurrent_threads` threads at once (calibrate --backend tcp: one per
  // rank the sweep ran on this machine), each row the slowest thread's time: what a monitor's
  // kernels cost when all of a machine's ranks run them at the same step. 0 / empty: not measured.
  int concurrent_threads = 0;
  std::vector<KernelCostEntry> concurrent_kernels;
};

struct GemmRate {
  std::string precision;  // fp32, tf32, fp16, bf16
  int size = 0;           // m = n = k of the fastest GEMM
  double flops_per_s = 0;
};

struct GpuCalibration {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int count = 0;     // GPUs measured (NCCL ranks of this host)
  // float32 a + b on the GPU, bytes of output per second, at the largest size measured: what
  // topo::ServerSpec::gpu_reduce_bandwidth_Bps means. 0 = not measured.
  double reduce_bandwidth_Bps = 0;
  double launch_overhead_us = 0;  // empty kernels launched back to back
  double launch_latency_us = 0;   // one launch + synchronize round trip
  std::vector<KernelCostEntry> kernels;
  std::optional<GemmRate> gemm;
  double memory_bandwidth_Bps = 0;  // device copy (2 x size / time) at the largest size; 0 = not
};

struct CalibrationProfile {
  std::string created;  // ISO 8601 UTC
  std::string command;  // the exact command line
  ProfileHost host;
  ProfileSoftware software;
  ProfileSweep sweep;
  std::vector<LinkFit> fits;
  std::optional<CpuCalibration> cpu;
  std::optional<GpuCalibration> gpu;

  // The first fit of (class, algorithm), with n_ranks when > 0; nullptr if none.
  const LinkFit* find_fit(std::string_view link_class, std::string_view algorithm,
                          int n_ranks = 0) const;
};

// Reads and validates a profile. Throws InputError "file:line: key 'fits[2].bandwidth': ..." for
// a missing, mistyped, unit-less, out-of-range or unknown key, and for duplicate fits.
CalibrationProfile load_calibration_profile(const std::filesystem::path& path);
// The same from text (`label` names it in errors); for tests and tools.
CalibrationProfile parse_calibration_profile(const std::string& text, const std::string& label);

// The YAML text of a profile (the format above); load_calibration_profile reads it back with the
// numbers equal to 6 significant digits.
std::string write_calibration_profile_yaml(const CalibrationProfile& profile);

// Overrides a topology's nominal numbers with measured ones. Exactly these fields change, each
// only when the profile holds the measurement (otherwise the field is left as it is):
//
//   fit (class loopback, algorithm p2p)  -> server.cpu_loopback_bandwidth_Bps = its bandwidth.
//       The one-stream rate of a ping-pong between two processes on one host, as the simulator
//       charges one process-to-process stream. Its latency is not applied: the simulator's
//       loopback has no latency term.
//   fit (class tcp, algorithm p2p)       -> server.nic.bandwidth_Bps = its bandwidth and
//       server.nic.latency_ns = latency / 2. A host-to-host message crosses two NIC links (NIC to
//       switch, switch to NIC), so each hop gets half of the fitted host-to-host alpha, and
//       nothing is subtracted for the PCIe hops between CPU and NIC (the simulated path latency
//       becomes alpha + 2 x pcie.latency). An egress cap (nic_egress_bandwidth_Bps) above the
//       measured rate is lowered to it (a cap never makes a direction faster than measured); a
//       cap below it is kept.
//   cpu.reduce_bandwidth                 -> server.cpu_reduce_bandwidth_Bps.
//   gpu.reduce_bandwidth                 -> server.gpu_reduce_bandwidth_Bps.
//   fit (class nccl_intra, algorithm nccl, collective all_reduce, n_ranks = server.gpus), on a
//       server with an NVSwitch          -> server.nvswitch->bandwidth_Bps = its busbw_inf (the
//       bus bandwidth is the per-GPU bottleneck link rate: nccl-tests doc/PERFORMANCE.md).
//
// Left alone: every latency but the NIC's; PCIe, SMP, NVLink (point-to-point wiring), memory
// bandwidths, fabric uplinks and WAN links; the GPU count and model; the strategy fits (they
// are measurements of algorithms to compare simulated runs with, not link parameters); the
// kernel cost lines other than the sum's bandwidth; the GEMM rate and device memory bandwidth
// (inputs for device profiles, traces/devices/, not for the cluster).
void apply_calibration(topo::ClusterSpec& spec, const CalibrationProfile& profile);

// What apply_calibration changed, for manifests: one entry per field that changed.
struct AppliedCalibration {
  std::string field;     // "server.nic.bandwidth"
  std::string previous;  // "10 Gbit/s" (format_bandwidth / format_duration)
  std::string value;
  std::string source;  // "calibration fit tcp/p2p (2 ranks, 12 points, residual 1.8%)"
};
std::vector<AppliedCalibration> apply_calibration_with_report(topo::ClusterSpec& spec,
                                                              const CalibrationProfile& profile);

// Text of a quantity as the profile writes it (6 significant digits, no space): "38.2134us",
// "11.8GB/s", "0.2512ns"; durations choose ns, us, ms or s, bandwidths B/s, KB/s, MB/s, GB/s or
// TB/s so that the number is between 1 and 1000 where possible.
std::string profile_duration_text(double ns);
std::string profile_bandwidth_text(double bytes_per_s);
// Parses a duration with a unit keeping sub-nanosecond precision ("0.2512ns" -> 0.2512);
// parse_duration_ns's checks and messages, but no rounding. Throws InputError.
double parse_duration_ns_precise(std::string_view text);

}  // namespace adaptsim::io
