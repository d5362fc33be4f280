// The calibration profile (sim/io/calibration_profile.h): it reads back what it writes, rejects
// bad files with file:line:key errors, and apply_calibration changes exactly the documented
// fields of a topology.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "sim/core/error.h"
#include "sim/io/calibration_profile.h"
#include "sim/io/topology_loader.h"

using namespace adaptsim;
using namespace adaptsim::io;

namespace {

const std::filesystem::path kRoot = ADAPTSIM_SOURCE_DIR;

LinkFit make_fit(std::string link_class, std::string algorithm, std::string collective, int n_ranks,
                 double latency_us, double bandwidth_Bps) {
  LinkFit f;
  f.link_class = std::move(link_class);
  f.algorithm = std::move(algorithm);
  f.collective = std::move(collective);
  f.n_ranks = n_ranks;
  f.points = 12;
  f.min_bytes = 8;
  f.max_bytes = 64 << 20;
  f.latency_us = latency_us;
  f.bandwidth_Bps = bandwidth_Bps;
  f.steps = 1;
  f.bus_factor = 1;
  f.alpha_per_step_us = latency_us;
  f.busbw_inf_Bps = bandwidth_Bps;
  f.m_half_bytes = latency_us * 1e-6 * bandwidth_Bps;
  f.residual_rms = 0.0213;
  f.r2 = 0.9987;
  return f;
}

CalibrationProfile full_profile() {
  CalibrationProfile p;
  p.created = "2026-11-23T06:10:00Z";
  p.command = "calibrate --backend tcp --procs 4 --strategy 'STAR,RING' -o \"out dir\"";
  p.host = {"build1", "AMD EPYC 7B13 64-Core Processor", 2, "Linux 6.1.0-18-amd64 x86_64"};
  p.software = {"0.1.0", "1a2b3c4d5e6f", "2.28.9", "13.0", "GCC 12.2.0", "Open MPI v4.1.4", "13.1"};
  p.sweep.backend = "tcp";
  p.sweep.ranks = 4;
  p.sweep.hosts = 2;
  p.sweep.min_bytes = 8;
  p.sweep.max_bytes = 64 << 20;
  p.sweep.step_factor = 4;
  p.sweep.iters = 20;
  p.sweep.warmup_iters = 5;
  p.sweep.csv = "calibration.csv";
  p.fits.push_back(make_fit("loopback", "p2p", "sendrecv", 2, 26.2047, 2.39979e9));
  p.fits.push_back(make_fit("tcp", "p2p", "sendrecv", 2, 61.5, 1.1e9));
  LinkFit ring = make_fit("tcp", "CLASSIC_RING", "all_reduce", 4, 480.25, 0.55e9);
  ring.steps = 6;
  ring.bus_factor = 1.5;
  ring.alpha_per_step_us = 480.25 / 6;
  ring.busbw_inf_Bps = 0.825e9;
  p.fits.push_back(ring);
  p.cpu = CpuCalibration{
      .reduce_bandwidth_Bps = 4.26e9,
      .kernels = {{"sum", 29.05, 0.372194, 32.2412e9, 4}, {"sq_norm", 0, 0.938, 4.26e9, 4}},
      .concurrent_threads = 4,
      .concurrent_kernels = {{"sum", 31, 0.61, 19.7e9, 4}}};
  GpuCalibration gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.count = 8;
  gpu.reduce_bandwidth_Bps = 1.05e12;
  gpu.launch_overhead_us = 2.1;
  gpu.launch_latency_us = 8.4;
  gpu.kernels = {{"sum", 2100, 0.0038, 3.1e12, 4}};
  gpu.gemm = GemmRate{"bf16", 8192, 655.3e12};
  gpu.memory_bandwidth_Bps = 2.91e12;
  p.gpu = gpu;
  return p;
}

void check_close(double got, double want) {
  CHECK(got == doctest::Approx(want).epsilon(1e-5));
}

std::string valid_text() {
  return write_calibration_profile_yaml(full_profile());
}

// The text with the first occurrence of `from` replaced by `to`.
std::string edited(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The 1-based line of the first occurrence of `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

std::string error_of(const std::string& text) {
  try {
    parse_calibration_profile(text, "p.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("profile: write then read gives the same profile") {
  const CalibrationProfile p = full_profile();
  const std::string text = write_calibration_profile_yaml(p);
  const CalibrationProfile q = parse_calibration_profile(text, "p.yaml");
  CHECK(q.created == p.created);
  CHECK(q.command == p.command);
  CHECK(q.host.hostname == p.host.hostname);
  CHECK(q.host.cpu_model == p.host.cpu_model);
  CHECK(q.host.cores == 2);
  CHECK(q.host.kernel == p.host.kernel);
  CHECK(q.software.adaptsim_version == "0.1.0");
  CHECK(q.software.adaptsim_commit == "1a2b3c4d5e6f");
  CHECK(q.software.nccl_version == "2.28.9");
  CHECK(q.software.cuda_version == "13.0");
  CHECK(q.software.compiler == "GCC 12.2.0");
  CHECK(q.software.mpi_version == "Open MPI v4.1.4");
  CHECK(q.software.cuda_driver_version == "13.1");
  CHECK(q.sweep.backend == "tcp");
  CHECK(q.sweep.ranks == 4);
  CHECK(q.sweep.hosts == 2);
  CHECK(q.sweep.min_bytes == 8);
  CHECK(q.sweep.max_bytes == (64 << 20));
  CHECK(q.sweep.step_factor == 4);
  CHECK(q.sweep.iters == 20);
  CHECK(q.sweep.warmup_iters == 5);
  CHECK(q.sweep.csv == "calibration.csv");
  REQUIRE(q.fits.size() == p.fits.size());
  for (std::size_t i = 0; i < p.fits.size(); ++i) {
    const LinkFit& a = p.fits[i];
    const LinkFit& b = q.fits[i];
    CHECK(b.link_class == a.link_class);
    CHECK(b.algorithm == a.algorithm);
    CHECK(b.collective == a.collective);
    CHECK(b.n_ranks == a.n_ranks);
    CHECK(b.points == a.points);
    CHECK(b.min_bytes == a.min_bytes);
    CHECK(b.max_bytes == a.max_bytes);
    check_close(b.latency_us, a.latency_us);
    check_close(b.bandwidth_Bps, a.bandwidth_Bps);
    CHECK(b.steps == a.steps);
    check_close(b.bus_factor, a.bus_factor);
    check_close(b.alpha_per_step_us, a.alpha_per_step_us);
    check_close(b.busbw_inf_Bps, a.busbw_inf_Bps);
    CHECK(b.m_half_bytes == doctest::Approx(a.m_half_bytes).epsilon(1e-3));  // whole bytes
    check_close(b.residual_rms, a.residual_rms);
    check_close(b.r2, a.r2);
  }
  REQUIRE(q.cpu);
  check_close(q.cpu->reduce_bandwidth_Bps, 4.26e9);
  REQUIRE(q.cpu->kernels.size() == 2);
  CHECK(q.cpu->kernels[0].kernel == "sum");
  check_close(q.cpu->kernels[0].overhead_ns, 29.05);
  check_close(q.cpu->kernels[0].per_element_ns, 0.372194);  // sub-nanosecond precision kept
  check_close(q.cpu->kernels[0].bandwidth_Bps, 32.2412e9);
  CHECK(q.cpu->kernels[0].points == 4);
  CHECK(q.cpu->concurrent_threads == 4);
  REQUIRE(q.cpu->concurrent_kernels.size() == 1);
  check_close(q.cpu->concurrent_kernels[0].per_element_ns, 0.61);
  REQUIRE(q.gpu);
  CHECK(q.gpu->name == "NVIDIA H100 80GB HBM3");
  CHECK(q.gpu->count == 8);
  check_close(q.gpu->reduce_bandwidth_Bps, 1.05e12);
  check_close(q.gpu->launch_overhead_us, 2.1);
  check_close(q.gpu->launch_latency_us, 8.4);
  check_close(q.gpu->kernels[0].per_element_ns, 0.0038);
  REQUIRE(q.gpu->gemm);
  CHECK(q.gpu->gemm->precision == "bf16");
  CHECK(q.gpu->gemm->size == 8192);
  check_close(q.gpu->gemm->flops_per_s, 655.3e12);
  check_close(q.gpu->memory_bandwidth_Bps, 2.91e12);
  // Writing what was read gives the same text.
  CHECK(write_calibration_profile_yaml(q) == text);
}

TEST_CASE("profile: every quantity is written with its unit") {
  const std::string text = valid_text();
  CHECK(text.find("latency: 26.2047us") != std::string::npos);
  CHECK(text.find("bandwidth: 2.39979GB/s") != std::string::npos);
  CHECK(text.find("residual_rms: 2.13%") != std::string::npos);
  CHECK(text.find("per_element: 0.372194ns") != std::string::npos);
  CHECK(text.find("rate: 655.3TFLOP/s") != std::string::npos);
  CHECK(text.find("memory_bandwidth: 2.91TB/s") != std::string::npos);
}

TEST_CASE("profile: bad files give file:line:key errors") {
  const std::string text = valid_text();
  SUBCASE("a bare number where a duration is expected") {
    const std::string bad = edited(text, "latency: 26.2047us", "latency: 26.2047");
    const int line = line_of(bad, "latency: 26.2047\n");
    const std::string e = error_of(bad);
    CHECK(e.find("p.yaml:" + std::to_string(line) + ": key 'fits[0].latency'") == 0);
    CHECK(e.find("with a unit") != std::string::npos);
  }
  SUBCASE("a misspelt key") {
    const std::string bad = edited(text, "    busbw_inf:", "    busbw_inff:");
    const std::string e = error_of(bad);
    // At the misspelt key's line, where the fix is.
    CHECK(e.find("p.yaml:" + std::to_string(line_of(bad, "busbw_inff:")) +
                 ": key 'fits[0].busbw_inf': missing required key (did you mean 'busbw_inf' "
                 "instead of 'busbw_inff'?)") == 0);
  }
  SUBCASE("an unknown key") {
    const std::string bad = edited(text, "    r2: 0.9987\n", "    r2: 0.9987\n    comment: x\n");
    const std::string e = error_of(bad);
    CHECK(e.find("p.yaml:" + std::to_string(line_of(bad, "comment: x")) +
                 ": unknown key 'fits[0].comment'") == 0);
  }
  SUBCASE("a missing key") {
    const std::string bad = edited(text, "    bandwidth: 2.39979GB/s\n", "");
    CHECK(error_of(bad).find("key 'fits[0].bandwidth': missing required key") != std::string::npos);
  }
  SUBCASE("an unknown link class") {
    const std::string bad = edited(text, "class: loopback", "class: loopbak");
    const std::string e = error_of(bad);
    CHECK(e.find("p.yaml:" + std::to_string(line_of(bad, "loopbak")) + ": key 'fits[0].class'") ==
          0);
    CHECK(e.find("did you mean 'loopback'") != std::string::npos);
  }
  SUBCASE("a wrong unit") {
    const std::string bad = edited(text, "bandwidth: 2.39979GB/s", "bandwidth: 2.39979GB");
    CHECK(error_of(bad).find("key 'fits[0].bandwidth': unknown unit \"GB\"") != std::string::npos);
  }
  SUBCASE("an R^2 above 1 and a negative percentage") {
    CHECK(error_of(edited(text, "r2: 0.9987", "r2: 1.5")).find("key 'fits[0].r2'") !=
          std::string::npos);
    CHECK(error_of(edited(text, "residual_rms: 2.13%", "residual_rms: -2%"))
              .find("key 'fits[0].residual_rms'") != std::string::npos);
  }
  SUBCASE("two fits of the same link, algorithm and rank count") {
    const std::string bad = edited(text, "class: tcp\n    algorithm: \"p2p\"",
                                   "class: loopback\n    algorithm: \"p2p\"");
    CHECK(error_of(bad).find("a second fit of class loopback, algorithm p2p") != std::string::npos);
  }
  SUBCASE("concurrent kernels measured on no thread") {
    const std::string bad = edited(text, "    threads: 4\n", "    threads: 0\n");
    const std::string e = error_of(bad);
    CHECK(e.find("p.yaml:" + std::to_string(line_of(bad, "threads: 0")) +
                 ": key 'cpu.concurrent.threads'") == 0);
  }
  SUBCASE("not a profile") {
    const std::string e = error_of(edited(text, "profile: adaptsim-calibration/1", "profile: x/9"));
    CHECK(e.find("p.yaml:3: key 'profile'") == 0);
  }
  SUBCASE("a file that does not exist") {
    CHECK_THROWS_AS(load_calibration_profile("/nonexistent/profile.yaml"), InputError);
  }
}

TEST_CASE("profile: precise duration parsing keeps sub-nanosecond values") {
  CHECK(parse_duration_ns_precise("0.2512ns") == doctest::Approx(0.2512));
  CHECK(parse_duration_ns_precise("38.2134us") == doctest::Approx(38213.4));
  CHECK(parse_duration_ns_precise("1.5ms") == doctest::Approx(1.5e6));
  CHECK_THROWS_AS(parse_duration_ns_precise("12"), InputError);
  CHECK_THROWS_AS(parse_duration_ns_precise("12 parsecs"), InputError);
}

namespace {

// Every field of a ClusterSpec that apply_calibration could touch or must leave alone.
void check_same_spec(const topo::ClusterSpec& a, const topo::ClusterSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.servers == b.servers);
  const topo::ServerSpec &x = a.server, &y = b.server;
  CHECK(x.gpus == y.gpus);
  CHECK(x.gpu_model == y.gpu_model);
  CHECK(x.gpu_reduce_bandwidth_Bps == y.gpu_reduce_bandwidth_Bps);
  CHECK(x.cpus == y.cpus);
  CHECK(x.cpu_reduce_bandwidth_Bps == y.cpu_reduce_bandwidth_Bps);
  CHECK(x.cpu_loopback_bandwidth_Bps == y.cpu_loopback_bandwidth_Bps);
  CHECK(x.cpu_memory_bandwidth_Bps == y.cpu_memory_bandwidth_Bps);
  CHECK(x.smp.bandwidth_Bps == y.smp.bandwidth_Bps);
  CHECK(x.smp.latency_ns == y.smp.latency_ns);
  CHECK(x.pcie.bandwidth_Bps == y.pcie.bandwidth_Bps);
  CHECK(x.pcie.latency_ns == y.pcie.latency_ns);
  CHECK(x.pcie_switches.size() == y.pcie_switches.size());
  CHECK(x.nvlink.bandwidth_Bps == y.nvlink.bandwidth_Bps);
  CHECK(x.nvlink.latency_ns == y.nvlink.latency_ns);
  CHECK(x.nvlinks.size() == y.nvlinks.size());
  CHECK(x.nvswitch.has_value() == y.nvswitch.has_value());
  if (x.nvswitch && y.nvswitch) {
    CHECK(x.nvswitch->bandwidth_Bps == y.nvswitch->bandwidth_Bps);
    CHECK(x.nvswitch->latency_ns == y.nvswitch->latency_ns);
  }
  CHECK(x.nics == y.nics);
  CHECK(x.nic_kind == y.nic_kind);
  CHECK(x.nic.bandwidth_Bps == y.nic.bandwidth_Bps);
  CHECK(x.nic.latency_ns == y.nic.latency_ns);
  CHECK(x.nic_egress_bandwidth_Bps == y.nic_egress_bandwidth_Bps);
  CHECK(a.fabric.kind == b.fabric.kind);
  CHECK(a.fabric.uplink.bandwidth_Bps == b.fabric.uplink.bandwidth_Bps);
  CHECK(a.fabric.wan_links.size() == b.fabric.wan_links.size());
}

topo::ClusterSpec cloud_vms(const Params& params = {}) {
  return load_topology(kRoot / "topologies/cloud-vms.yaml", params).spec;
}

}  // namespace

TEST_CASE("apply_calibration: overrides exactly the documented fields") {
  const topo::ClusterSpec original = cloud_vms();
  topo::ClusterSpec spec = original;
  const CalibrationProfile p = full_profile();
  const auto report = apply_calibration_with_report(spec, p);

  // Expected: the nominal spec with the documented fields set from the profile.
  topo::ClusterSpec expected = original;
  expected.server.cpu_loopback_bandwidth_Bps = 2.39979e9;  // loopback/p2p bandwidth
  expected.server.nic.bandwidth_Bps = 1.1e9;               // tcp/p2p bandwidth
  expected.server.nic.latency_ns = 30750;                  // 61.5 us host to host / 2 hops
  expected.server.cpu_reduce_bandwidth_Bps = 4.26e9;
  expected.server.gpu_reduce_bandwidth_Bps = 1.05e12;
  check_same_spec(spec, expected);
  CHECK(report.size() == 5);
  CHECK(report[1].field == "server.nic.bandwidth");
  CHECK(report[1].previous == "10 Gbit/s");
  CHECK(report[1].source.find("tcp/p2p") != std::string::npos);

  // apply_calibration is the same without the report.
  topo::ClusterSpec again = original;
  apply_calibration(again, p);
  check_same_spec(again, expected);
}

TEST_CASE("apply_calibration: an empty profile changes nothing, one link fit one field") {
  const topo::ClusterSpec original = cloud_vms();
  topo::ClusterSpec spec = original;
  CalibrationProfile empty;
  CHECK(apply_calibration_with_report(spec, empty).empty());
  check_same_spec(spec, original);

  CalibrationProfile loopback_only;
  loopback_only.fits.push_back(make_fit("loopback", "p2p", "sendrecv", 2, 20, 3e9));
  // Strategy fits are measurements of algorithms, not of links: they override nothing.
  loopback_only.fits.push_back(make_fit("loopback", "STAR", "all_reduce", 4, 200, 0.3e9));
  apply_calibration(spec, loopback_only);
  topo::ClusterSpec expected = original;
  expected.server.cpu_loopback_bandwidth_Bps = 3e9;
  check_same_spec(spec, expected);
}

TEST_CASE("apply_calibration: an egress cap above the measured rate is lowered, one below kept") {
  CalibrationProfile p;
  p.fits.push_back(make_fit("tcp", "p2p", "sendrecv", 2, 40, 1.1e9));
  Params high, low;
  high["nic_egress_bandwidth"] = Param{YAML::Node("100Gbps"), "test"};
  low["nic_egress_bandwidth"] = Param{YAML::Node("1Gbps"), "test"};
  topo::ClusterSpec capped_high = cloud_vms(high);
  apply_calibration(capped_high, p);
  REQUIRE(capped_high.server.nic_egress_bandwidth_Bps);
  CHECK(*capped_high.server.nic_egress_bandwidth_Bps == 1.1e9);
  topo::ClusterSpec capped_low = cloud_vms(low);
  apply_calibration(capped_low, p);
  CHECK(*capped_low.server.nic_egress_bandwidth_Bps == doctest::Approx(0.125e9));
  CHECK(capped_low.server.nic.latency_ns == 20000);
}

TEST_CASE("apply_calibration: an intra-node NCCL all-reduce sets the NVSwitch port rate") {
  const topo::ClusterSpec original = load_topology(kRoot / "topologies/hgx-h100.yaml").spec;
  REQUIRE(original.server.nvswitch);
  CalibrationProfile p;
  LinkFit nccl = make_fit("nccl_intra", "nccl", "all_reduce", original.server.gpus, 25, 228e9);
  nccl.bus_factor = 1.75;
  nccl.busbw_inf_Bps = 399e9;
  p.fits.push_back(nccl);
  // A fit on another rank count is not the whole server's: ignored.
  LinkFit four = make_fit("nccl_intra", "nccl", "all_reduce", 4, 20, 200e9);
  p.fits.push_back(four);
  topo::ClusterSpec spec = original;
  apply_calibration(spec, p);
  topo::ClusterSpec expected = original;
  expected.server.nvswitch->bandwidth_Bps = 399e9;
  check_same_spec(spec, expected);
}

TEST_CASE(
    "every shipped profile loads, and the measured GPU's kernel lines stream below its copy rate") {
  int profiles = 0, gpus = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kRoot / "traces/calibration")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    const CalibrationProfile p = load_calibration_profile(entry.path());
    ++profiles;
    if (!p.gpu) continue;
    ++gpus;
    // The copy probe moves 2 x size per copy at the largest size; a kernel line's per-element
    // cost comes from the memory-bound sizes (calibrate/profile_builder.h), so it cannot beat
    // the same memory by more than the noise of two probes.
    REQUIRE(p.gpu->memory_bandwidth_Bps > 0);
    for (const KernelCostEntry& k : p.gpu->kernels) {
      INFO(k.kernel);
      CHECK(k.bandwidth_Bps < 1.15 * p.gpu->memory_bandwidth_Bps);
    }
  }
  CHECK(profiles >= 5);
  CHECK(gpus >= 1);  // traces/calibration/h200-1gpu.yaml: calibrate --gpus 1 on an H200
}
