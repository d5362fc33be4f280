// calibrate: measures a machine (or imports nccl-tests output) and writes a calibration profile
// (sim/io/calibration_profile.h) with the measurements beside it as CSV.
//
//   calibrate --backend tcp --procs 4 [sweep options] [-o DIR]     TCP, local processes
//   calibrate --backend tcp --hosts a:p,b:q --rank R ...            TCP, one process per host
//   mpirun -np 4 calibrate --backend tcp ...                        TCP under mpirun
//   calibrate --gpus N [sweep options] [-o DIR]                     NCCL + CUDA (CUDA builds)
//   calibrate import FILE [-o DIR]                                  nccl-tests text or -J JSON
//
// Exit codes: 0 success; 1 a run-time failure (a peer died, a timeout, wrong results); 2 bad
// input, including asking for more GPUs than the machine has (one line on stderr).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "calibrate/calibration_output.h"
#include "calibrate/nccl_tests_import.h"
#include "calibrate/profile_builder.h"
#include "calibrate/tcp_calibration.h"
#include "hw/cuda/cpu_kernel_timing.h"
#include "hw/tcp/launcher.h"
#include "hw/tcp/rendezvous_cli.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

#if ADAPTSIM_CALIBRATE_HAVE_CUDA
#include "calibrate/gpu_calibration.h"
#endif

namespace {

using namespace adaptsim;
using namespace adaptsim::calibrate;

constexpr int kExitRuntime = 1;
constexpr int kExitInput = 2;

struct CliOptions {
  std::string backend;  // tcp, nccl; empty: from --gpus / --procs / --hosts
  int gpus = 0;
  tcp::RendezvousOptions rendezvous;
  std::string congestion_control;
  std::string strategy = "all";
  std::string collective = "all_reduce";
  std::string min_bytes = "8B";
  std::string max_bytes;  // empty: 64MiB (tcp), 1GiB (nccl)
  std::uint64_t step_factor = 2;
  int iters = 20;
  int warmup_iters = 5;
  int check = 1;
  std::string dtype = "float32";
  std::string timeout = "30s";
  std::string chunk = "1MiB";
  std::uint64_t kernel_max_elements = 0;  // 0: 1e7 (CPU, tcp), 1e8 (GPU)
  int kernel_iters = 10;
  bool no_kernels = false;
  std::string gemm_precision = "bf16";
  std::string output_dir = "out/calibrate";
  std::string name = "calibration";
  bool quiet = false;
  // import
  std::string import_file;
  std::string import_collective;
  std::string import_link_class;
  int import_ranks = 0;
};

std::uint64_t size_option(const char* option, const std::string& text) {
  try {
    return parse_size_bytes(text);
  } catch (const InputError& e) {
    throw InputError(std::string(option) + ": " + e.what());
  }
}

coll::DType dtype_option(const std::string& text) {
  const auto d = coll::parse_dtype(text);
  if (!d) {
    throw InputError("--dtype: expected float32, float16, bfloat16 or float64, got \"" + text +
                     "\"");
  }
  return *d;
}

// Decimal sizes from 1e4 (CPU) or 1e5 (GPU) up to max_elements.
std::vector<std::size_t> kernel_sizes(std::size_t first, std::size_t max_elements) {
  // Doubling from `first`, and `max_elements` itself: enough sizes on both sides of the cache
  // and launch knees for the two-regime fit (kernel_cost_entries).
  std::vector<std::size_t> sizes;
  for (std::size_t n = first; n < max_elements; n *= 2)
    sizes.push_back(n);
  sizes.push_back(max_elements);
  return sizes;
}

void print_line(const CliOptions& o, const std::string& line) {
  if (!o.quiet) std::cout << line << std::endl;
}

void report_profile(const CliOptions& o, const io::CalibrationProfile& profile,
                    const std::vector<std::string>& notes, const WrittenFiles& files) {
  print_line(o, "");
  for (const auto& n : notes)
    print_line(o, "# note: " + n);
  for (const auto& f : profile.fits)
    print_line(o, "# fit " + describe_fit(f));
  std::cout << "# wrote " << files.csv.string() << "\n# wrote " << files.profile.string()
            << std::endl;
}

std::uint64_t wrong_total(const std::vector<coll::SweepRow>& rows) {
  std::uint64_t wrong = 0;
  for (const auto& r : rows)
    wrong += r.wrong;
  return wrong;
}

// --- TCP -----------------------------------------------------------------------------------

TcpCalibrationOptions tcp_options(const CliOptions& o) {
  TcpCalibrationOptions t;
  t.rendezvous = o.rendezvous;
  t.congestion_control = o.congestion_control;
  t.sweep.strategies = coll::parse_strategy_list(o.strategy, "--strategy");
  t.sweep.min_bytes = size_option("--minbytes", o.min_bytes);
  t.sweep.max_bytes = size_option("--maxbytes", o.max_bytes.empty() ? "64MiB" : o.max_bytes);
  t.sweep.step_factor = o.step_factor;
  t.sweep.iters = o.iters;
  t.sweep.warmup_iters = o.warmup_iters;
  t.sweep.check = o.check != 0;
  t.sweep.dtype = dtype_option(o.dtype);
  t.sweep.timeout_ns = parse_duration_ns(o.timeout);
  t.sweep.allreduce.chunk_bytes = size_option("--chunk", o.chunk);
  tcp::validate_sweep_options(t.sweep);
  t.time_kernels = !o.no_kernels;
  t.kernels.sizes_elements =
      kernel_sizes(10'000, o.kernel_max_elements > 0 ? o.kernel_max_elements : 10'000'000);
  t.kernels.iters = o.kernel_iters;
  if (o.kernel_iters < 1) throw InputError("--kernel-iters must be at least 1");
  if (!o.quiet) t.print = [](const std::string& line) { std::cout << line << std::endl; };
  return t;
}

int run_tcp(const CliOptions& o, int argc, char** argv) {
  const TcpCalibrationOptions t = tcp_options(o);
  tcp::check_congestion_control(t.congestion_control);
  const tcp::RendezvousMode mode = tcp::choose_rendezvous(o.rendezvous);
  if (mode == tcp::RendezvousMode::kLauncher) {
    const tcp::LaunchResult result =
        tcp::launch_self(o.rendezvous.procs, argc, argv, t.sweep.timeout_ns + 2 * kNsPerSecond);
    if (result.ok()) return 0;
    adaptsim::print_error_line("calibrate", "launcher: " + result.summary());
    return kExitRuntime;
  }
  TcpCalibrationResult r = run_tcp_calibration(t, mode);
  if (!r.leader) return 0;

  io::CalibrationProfile profile = new_profile(argc, argv, "tcp");
  profile.sweep.ranks = r.n_ranks;
  profile.sweep.hosts = r.hosts;
  profile.sweep.min_bytes = t.sweep.min_bytes;
  profile.sweep.max_bytes = t.sweep.max_bytes;
  profile.sweep.step_factor = t.sweep.step_factor;
  profile.sweep.iters = t.sweep.iters;
  profile.sweep.warmup_iters = t.sweep.warmup_iters;
  describe_sweep_from_rows(profile, r.rows);
  std::vector<std::string> notes;
  profile.fits = fit_link_groups(r.rows, r.host_of_rank, notes);
  if (r.cpu_kernels) {
    io::CpuCalibration cpu;
    cpu.reduce_bandwidth_Bps = sum_reduce_bandwidth_Bps(*r.cpu_kernels);
    cpu.kernels = kernel_cost_entries(*r.cpu_kernels);
    if (r.cpu_kernels_concurrent) {
      cpu.concurrent_threads = r.cpu_kernels_concurrent->threads;
      cpu.concurrent_kernels = kernel_cost_entries(*r.cpu_kernels_concurrent);
    }
    if (cpu.reduce_bandwidth_Bps > 0) profile.cpu = cpu;
  }
  const std::uint64_t wrong = wrong_total(r.rows);
  if (wrong > 0) {
    // The measurements are kept for inspection; a profile from wrong results is not written.
    std::filesystem::create_directories(o.output_dir);
    const auto csv = std::filesystem::path(o.output_dir) / (o.name + ".csv");
    coll::write_sweep_csv(csv, r.rows, kMeasurementCsv);
    throw RuntimeFailure(std::to_string(wrong) + " wrong result elements (see " + csv.string() +
                         "); no profile written");
  }
  const WrittenFiles files = write_calibration_outputs(o.output_dir, o.name, r.rows, profile);
  report_profile(o, profile, notes, files);
  return 0;
}

// --- NCCL / CUDA ---------------------------------------------------------------------------

int run_gpu(const CliOptions& o, int argc, char** argv) {
#if ADAPTSIM_CALIBRATE_HAVE_CUDA
  GpuCalibrationOptions g;
  g.nccl.gpus = o.gpus;
  g.nccl.min_bytes = size_option("--minbytes", o.min_bytes);
  g.nccl.max_bytes = size_option("--maxbytes", o.max_bytes.empty() ? "1GiB" : o.max_bytes);
  g.nccl.step_factor = o.step_factor;
  g.nccl.iters = o.iters;
  g.nccl.warmup_iters = o.warmup_iters;
  g.nccl.check_iters = o.check;
  g.nccl.dtype = dtype_option(o.dtype);
  g.nccl.collectives = hw::parse_sweep_collectives(o.collective, "--collective");
  hw::validate_sweep_options(g.nccl);
  g.kernels.sizes_elements =
      kernel_sizes(100'000, o.kernel_max_elements > 0 ? o.kernel_max_elements : 100'000'000);
  g.kernels.iters = o.kernel_iters;
  const auto precision = hw::parse_gemm_precision(o.gemm_precision);
  if (!precision) {
    throw InputError("--gemm-precision: expected fp32, tf32, fp16 or bf16, got \"" +
                     o.gemm_precision + "\"");
  }
  g.gemm.precision = *precision;
  if (!o.quiet) g.print = [](const std::string& line) { std::cout << line << std::endl; };
  require_gpus(o.gpus);

  GpuCalibrationResult r = run_gpu_calibration(g);
  io::CalibrationProfile profile = new_profile(argc, argv, "nccl");
  profile.software.nccl_version = r.nccl_version;
  profile.software.cuda_version = r.cuda_version;
  profile.sweep.ranks = r.n_ranks;
  profile.sweep.hosts = 1;
  profile.sweep.min_bytes = g.nccl.min_bytes;
  profile.sweep.max_bytes = g.nccl.max_bytes;
  profile.sweep.step_factor = g.nccl.step_factor;
  profile.sweep.iters = g.nccl.iters;
  profile.sweep.warmup_iters = g.nccl.warmup_iters;
  describe_sweep_from_rows(profile, r.rows);
  std::vector<std::string> notes;
  profile.fits = fit_link_groups(r.rows, {}, notes);
  profile.gpu = r.gpu;
  if (!o.no_kernels) {
    // The host CPU stages KungFu's and Horovod's host collectives: measure it as well.
    hw::KernelTimingOptions cpu_options;
    cpu_options.sizes_elements = kernel_sizes(10'000, 10'000'000);
    hw::KernelTimingReport cpu = hw::time_cpu_kernels(cpu_options);
    io::CpuCalibration c;
    c.reduce_bandwidth_Bps = sum_reduce_bandwidth_Bps(cpu);
    c.kernels = kernel_cost_entries(cpu);
    profile.cpu = std::move(c);
  }
  const std::uint64_t wrong = wrong_total(r.rows);
  if (wrong > 0) {
    throw RuntimeFailure(std::to_string(wrong) + " wrong result elements in the NCCL sweep");
  }
  const WrittenFiles files = write_calibration_outputs(o.output_dir, o.name, r.rows, profile);
  report_profile(o, profile, notes, files);
  return 0;
#else
  (void)o;
  (void)argc;
  (void)argv;
  throw InputError(
      "--gpus: this calibrate was built without CUDA and NCCL (ADAPTSIM_HAVE_CUDA is off); "
      "rebuild where nvcc and NCCL are installed, or use --backend tcp");
#endif
}

// --- import --------------------------------------------------------------------------------

int run_import(const CliOptions& o, int argc, char** argv) {
  NcclTestsImportOptions io_options;
  io_options.collective = o.import_collective;
  io_options.link_class = o.import_link_class;
  io_options.n_ranks = o.import_ranks;
  if (!io_options.link_class.empty() && io_options.link_class != "nccl_intra" &&
      io_options.link_class != "nccl_inter" && io_options.link_class != "tcp" &&
      io_options.link_class != "loopback") {
    throw InputError("--link-class: expected nccl_intra, nccl_inter, tcp or loopback, got \"" +
                     io_options.link_class + "\"");
  }
  const NcclTestsImport imp = import_nccl_tests(o.import_file, io_options);

  io::CalibrationProfile profile = new_profile(argc, argv, "import");
  // The host section describes where the numbers were measured, which is not this machine.
  profile.host = io::ProfileHost{imp.first_hostname.empty() ? "unknown" : imp.first_hostname,
                                 "unknown", 0, "unknown"};
  profile.software.nccl_version = imp.nccl_version;
  profile.sweep.source = o.import_file;
  profile.sweep.ranks = imp.n_ranks;
  profile.sweep.hosts = imp.hosts;
  profile.sweep.step_factor = imp.step_factor;
  profile.sweep.iters = imp.iters;
  profile.sweep.warmup_iters = imp.warmup_iters;
  describe_sweep_from_rows(profile, imp.rows);
  std::vector<std::string> notes = imp.notes;
  profile.fits = fit_link_groups(imp.rows, {}, notes);
  if (profile.fits.empty()) {
    throw InputError(o.import_file + ": no fit could be made (" +
                     (notes.empty() ? std::string("no usable rows") : notes.back()) + ")");
  }
  const std::string name =
      o.name.empty() ? std::filesystem::path(o.import_file).stem().string() : o.name;
  const WrittenFiles files = write_calibration_outputs(o.output_dir, name, imp.rows, profile);
  print_line(o, "# " + std::to_string(imp.rows.size()) + " rows of " + imp.collective + " on " +
                    std::to_string(imp.n_ranks) + " ranks from " + o.import_file);
  report_profile(o, profile, notes, files);
  return 0;
}

int run(int argc, char** argv) {
  CliOptions o;
  CLI::App app{
      "calibrate: measure this machine's links and kernels (or import nccl-tests "
      "output) into a calibration profile"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(R"(Sizes take a unit: 8B, 64KiB, 1MiB (KiB/MiB/GiB powers of 1024, KB/MB/GB of 1000).
Examples:
  calibrate --backend tcp --procs 4 --minbytes 8B --maxbytes 16MiB --stepfactor 4 -o out/cal
  calibrate --backend tcp --hosts 10.0.0.1:7000,10.0.0.2:7000 --rank 0 -o out/cal
  mpirun -np 8 calibrate --backend tcp -o out/cal
  calibrate --gpus 8 --minbytes 8B --maxbytes 1GiB -o out/cal         (CUDA builds)
  calibrate import all_reduce_perf.txt -o out/cal                      (text or -J JSON)
Writes DIR/NAME.csv (every point) and DIR/NAME.yaml (the profile). Exit codes: 0 success,
1 run-time failure or wrong results, 2 bad input.
)");
  app.add_option("--backend", o.backend, "tcp or nccl (default: nccl with --gpus, else tcp)")
      ->check(CLI::IsMember({"tcp", "nccl"}));
  app.add_option("--gpus", o.gpus, "NCCL + CUDA calibration on N GPUs of this host");
  tcp::add_rendezvous_options(app, o.rendezvous, "TCP rendezvous");
  tcp::add_congestion_control_option(app, o.congestion_control, "TCP rendezvous");
  app.add_option("--strategy", o.strategy, "TCP: strategy name, comma list, or all")
      ->capture_default_str();
  app.add_option("--collective", o.collective,
                 "NCCL: all_reduce, all_gather, reduce_scatter, broadcast, a list, or all")
      ->capture_default_str();
  app.add_option("-b,--minbytes", o.min_bytes, "Smallest size")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "Largest size (default 64MiB tcp, 1GiB nccl)");
  app.add_option("-f,--stepfactor", o.step_factor, "Size multiplier between points")
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed iterations per point")->capture_default_str();
  app.add_option("-w,--warmup-iters", o.warmup_iters, "Untimed iterations first")
      ->capture_default_str();
  app.add_option("-c,--check", o.check, "Verify results (iterations; 0 disables)")
      ->capture_default_str();
  app.add_option("-d,--dtype", o.dtype, "float32|float16|bfloat16|float64")->capture_default_str();
  app.add_option("--timeout", o.timeout, "TCP: limit of every blocking step")
      ->capture_default_str();
  app.add_option("--chunk", o.chunk, "TCP: KungFu chunk size of graph strategies")
      ->capture_default_str();
  app.add_option("--kernel-max-elements", o.kernel_max_elements,
                 "Largest kernel size (default 1e7 CPU, 1e8 GPU); sizes double up to it from 1e4 "
                 "CPU, 1e5 GPU");
  app.add_option("--kernel-iters", o.kernel_iters, "Timed calls per kernel size")
      ->capture_default_str();
  app.add_flag("--no-kernels", o.no_kernels, "Skip the CPU kernel timing");
  app.add_option("--gemm-precision", o.gemm_precision, "GPU: fp32, tf32, fp16 or bf16")
      ->capture_default_str();
  app.add_option("-o,--output", o.output_dir, "Output folder")->capture_default_str();
  app.add_option("--name", o.name, "Output file names: NAME.csv and NAME.yaml")
      ->capture_default_str();
  app.add_flag("-q,--quiet", o.quiet, "Only the names of the files written on stdout");

  CLI::App* import = app.add_subcommand("import", "Import nccl-tests output (text or -J JSON)");
  import->add_option("FILE", o.import_file, "nccl-tests output file")->required();
  import->add_option("-o,--output", o.output_dir, "Output folder")->capture_default_str();
  import->add_option("--name", o.name, "Output file names (default: FILE's stem)");
  import->add_option("--collective", o.import_collective,
                     "Override the collective (default: from the file)");
  import->add_option("--link-class", o.import_link_class,
                     "Override the link class (default: nccl_intra, or nccl_inter across hosts)");
  import->add_option("--ranks", o.import_ranks, "Override the rank count (default: from the file)");
  import->add_flag("-q,--quiet", o.quiet, "Only the names of the files written on stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }

  if (import->parsed()) {
    if (import->count("--name") == 0) o.name.clear();
    return run_import(o, argc, argv);
  }
  const bool gpu = app.count("--gpus") > 0 || o.backend == "nccl";
  if (gpu) {
    if (app.count("--gpus") > 0 && o.gpus < 1) throw InputError("--gpus must be at least 1");
    if (o.backend == "tcp") throw InputError("--gpus is for --backend nccl, not tcp");
    if (o.rendezvous.procs != 0 || !o.rendezvous.hosts.empty() || o.rendezvous.rank >= 0) {
      throw InputError("--procs, --hosts and --rank are for --backend tcp");
    }
    return run_gpu(o, argc, argv);
  }
  const bool tcp_named = o.backend == "tcp" || o.rendezvous.procs > 0 ||
                         !o.rendezvous.hosts.empty() || std::getenv(tcp::kEnvRank) != nullptr;
  if (!tcp_named) {
    throw InputError(
        "nothing to measure: use --backend tcp with --procs N, --hosts LIST --rank R or under "
        "mpirun; --gpus N on a GPU machine; or calibrate import FILE");
  }
  return run_tcp(o, argc, argv);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const adaptsim::InputError& e) {
    // print_error_line keeps it one line, whatever the message holds.
    adaptsim::print_error_line("calibrate", std::string("error: ") + e.what());
    return kExitInput;
  } catch (const std::exception& e) {
    adaptsim::print_error_line("calibrate", std::string("failed: ") + e.what());
    return kExitRuntime;
  }
}
