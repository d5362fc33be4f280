#include "sim/io/calibration_profile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/core/units.h"
#include "sim/io/yaml_reader.h"

namespace adaptsim::io {
namespace {

// The leading number of "38.2us" and the rest ("us"); nullopt when there is no number.
std::optional<std::pair<double, std::string_view>> leading_number(std::string_view text) {
  text = trim(text);
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == '-' || text[i] == '+' ||
                             ((text[i] == 'e' || text[i] == 'E') && i > 0 && i + 1 < text.size() &&
                              (std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
                               text[i + 1] == '-' || text[i + 1] == '+')))) {
    ++i;
  }
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, value);
  if (i == 0 || ec != std::errc() || ptr != text.data() + i || !std::isfinite(value)) {
    return std::nullopt;
  }
  return std::pair{value, trim(text.substr(i))};
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A YAML double-quoted scalar: safe for any hostname, CPU model or command line.
std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string size_text(double bytes) {
  return std::to_string(static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0)))) + "B";
}

std::string percent_text(double fraction) {
  return number_text(fraction * 100) + "%";
}

std::string rate_text(double per_s, std::string_view unit) {
  const std::pair<const char*, double> prefixes[] = {
      {"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}};
  for (auto [prefix, factor] : prefixes) {
    if (per_s >= factor) return number_text(per_s / factor) + prefix + std::string(unit) + "/s";
  }
  return number_text(per_s) + std::string(unit) + "/s";
}

// --- reading -------------------------------------------------------------------------------

double duration_ns_at(MapReader& m, std::string_view key) {
  return m.quantity(key, parse_duration_ns_precise);
}

double optional_duration_ns_at(MapReader& m, std::string_view key) {
  if (!m.has(key)) {
    m.accept(key);
    return 0;
  }
  return duration_ns_at(m, key);
}

double rate_at(MapReader& m, std::string_view key, std::string_view unit) {
  return m.quantity(key, [unit](const std::string& t) { return parse_rate_per_s(t, unit); });
}

int count_at(MapReader& m, std::string_view key, int min) {
  return static_cast<int>(m.integer(key, min, 1 << 30));
}

double positive_number_at(MapReader& m, std::string_view key) {
  const double v = m.number(key);
  if (!(v > 0) || !std::isfinite(v)) {
    m.fail(key, "expected a positive number, got " + number_text(v));
  }
  return v;
}

KernelCostEntry read_kernel(MapReader& k) {
  KernelCostEntry e;
  e.kernel = k.choice("kernel", {"sum", "sq_norm", "variance"});
  e.overhead_ns = duration_ns_at(k, "overhead");
  e.per_element_ns = duration_ns_at(k, "per_element");
  if (!(e.per_element_ns > 0)) k.fail("per_element", "expected a positive time per element");
  e.bandwidth_Bps = k.bandwidth_Bps("bandwidth");
  e.points = count_at(k, "points", 1);
  k.finish();
  return e;
}

std::vector<KernelCostEntry> read_kernels(MapReader& parent) {
  std::vector<KernelCostEntry> out;
  if (!parent.has("kernels")) {
    parent.accept("kernels");
    return out;
  }
  const auto items = parent.list("kernels");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    MapReader k = MapReader::item_map(parent, "kernels", i, items[i]);
    KernelCostEntry e = read_kernel(k);
    if (!seen.insert(e.kernel).second) k.fail("kernel", "kernel '" + e.kernel + "' listed twice");
    out.push_back(std::move(e));
  }
  return out;
}

LinkFit read_fit(MapReader& f) {
  LinkFit fit;
  fit.link_class = f.choice("class", {"loopback", "tcp", "nccl_intra", "nccl_inter"});
  fit.algorithm = f.string("algorithm");
  if (fit.algorithm.empty()) f.fail("algorithm", "expected a non-empty algorithm name");
  fit.collective = f.string("collective");
  if (fit.collective.empty()) f.fail("collective", "expected a non-empty collective name");
  fit.n_ranks = count_at(f, "n_ranks", 1);
  fit.points = count_at(f, "points", 2);
  fit.min_bytes = f.size_bytes("min_bytes");
  fit.max_bytes = f.size_bytes("max_bytes");
  if (fit.max_bytes < fit.min_bytes) f.fail("max_bytes", "is below min_bytes");
  fit.latency_us = duration_ns_at(f, "latency") / 1e3;
  fit.bandwidth_Bps = f.bandwidth_Bps("bandwidth");
  fit.steps = count_at(f, "steps", 1);
  fit.bus_factor = positive_number_at(f, "bus_factor");
  fit.alpha_per_step_us = duration_ns_at(f, "alpha_per_step") / 1e3;
  fit.busbw_inf_Bps = f.bandwidth_Bps("busbw_inf");
  fit.m_half_bytes = static_cast<double>(f.size_bytes("m_half"));
  fit.residual_rms = f.percent("residual_rms");
  fit.r2 = f.number("r2");
  if (!(fit.r2 <= 1)) f.fail("r2", "expected a number <= 1, got " + number_text(fit.r2));
  f.finish();
  return fit;
}

CalibrationProfile read_profile(const Document& doc) {
  MapReader top(doc, doc.root(), "");
  CalibrationProfile p;
  const std::string format = top.string("profile");
  if (format != kCalibrationProfileFormat) {
    top.fail("profile", "expected " + std::string(kCalibrationProfileFormat) + ", got \"" + format +
                            "\" (is this a calibration profile?)");
  }
  p.created = top.string("created");
  p.command = top.string("command");

  MapReader h = top.map("host");
  p.host.hostname = h.string("hostname");
  p.host.cpu_model = h.string_or("cpu_model", "");
  p.host.cores = static_cast<int>(h.integer_or("cores", 0, 0, 1 << 20));
  p.host.kernel = h.string_or("kernel", "");
  h.finish();

  MapReader s = top.map("software");
  p.software.adaptsim_version = s.string("adaptsim");
  p.software.adaptsim_commit = s.string("commit");
  p.software.nccl_version = s.string_or("nccl", "");
  p.software.cuda_version = s.string_or("cuda", "");
  p.software.compiler = s.string_or("compiler", "");
  p.software.mpi_version = s.string_or("mpi", "");
  p.software.cuda_driver_version = s.string_or("cuda_driver", "");
  s.finish();

  MapReader w = top.map("sweep");
  p.sweep.backend = w.choice("backend", {"tcp", "nccl", "import"});
  p.sweep.source = w.string_or("source", "");
  p.sweep.ranks = static_cast<int>(w.integer("ranks", 1, 1 << 20));
  p.sweep.hosts = static_cast<int>(w.integer_or("hosts", 0, 0, 1 << 20));
  p.sweep.min_bytes = w.size_bytes("min_bytes");
  p.sweep.max_bytes = w.size_bytes("max_bytes");
  if (p.sweep.max_bytes < p.sweep.min_bytes) w.fail("max_bytes", "is below min_bytes");
  p.sweep.step_factor = static_cast<std::uint64_t>(w.integer_or("step_factor", 0, 0, 1 << 20));
  p.sweep.iters = static_cast<int>(w.integer_or("iters", 0, 0, 1 << 30));
  p.sweep.warmup_iters = static_cast<int>(w.integer_or("warmup_iters", 0, 0, 1 << 30));
  p.sweep.csv = w.string_or("csv", "");
  w.finish();

  const auto fits = top.list("fits");
  std::set<std::tuple<std::string, std::string, std::string, int>> seen;
  for (std::size_t i = 0; i < fits.size(); ++i) {
    MapReader f = MapReader::item_map(top, "fits", i, fits[i]);
    LinkFit fit = read_fit(f);
    if (!seen.emplace(fit.link_class, fit.algorithm, fit.collective, fit.n_ranks).second) {
      f.fail_here("a second fit of class " + fit.link_class + ", algorithm " + fit.algorithm +
                  ", collective " + fit.collective + " on " + std::to_string(fit.n_ranks) +
                  " ranks");
    }
    p.fits.push_back(std::move(fit));
  }

  if (auto c = top.optional_map("cpu")) {
    CpuCalibration cpu;
    cpu.reduce_bandwidth_Bps = c->bandwidth_Bps("reduce_bandwidth");
    cpu.kernels = read_kernels(*c);
    if (auto cc = c->optional_map("concurrent")) {
      cpu.concurrent_threads = count_at(*cc, "threads", 1);
      cpu.concurrent_kernels = read_kernels(*cc);
      cc->finish();
    }
    c->finish();
    p.cpu = std::move(cpu);
  }
  if (auto g = top.optional_map("gpu")) {
    GpuCalibration gpu;
    gpu.name = g->string("name");
    gpu.count = static_cast<int>(g->integer("count", 1, 1 << 16));
    gpu.reduce_bandwidth_Bps = g->bandwidth_Bps_or("reduce_bandwidth", 0);
    gpu.launch_overhead_us = optional_duration_ns_at(*g, "launch_overhead") / 1e3;
    gpu.launch_latency_us = optional_duration_ns_at(*g, "launch_latency") / 1e3;
    gpu.kernels = read_kernels(*g);
    if (auto m = g->optional_map("gemm")) {
      GemmRate rate;
      rate.precision = m->choice("precision", {"fp32", "tf32", "fp16", "bf16"});
      rate.size = count_at(*m, "size", 1);
      rate.flops_per_s = rate_at(*m, "rate", "FLOP");
      m->finish();
      gpu.gemm = rate;
    }
    gpu.memory_bandwidth_Bps = g->bandwidth_Bps_or("memory_bandwidth", 0);
    g->finish();
    p.gpu = std::move(gpu);
  }
  top.finish();
  return p;
}

// --- writing -------------------------------------------------------------------------------

// A fitted intercept can come out slightly negative when the fixed cost is below the timing
// noise; durations in the profile are never negative, so it is recorded as 0.
double non_negative(double v) {
  return v > 0 ? v : 0;
}

void write_kernels(std::string& out, const std::vector<KernelCostEntry>& kernels,
                   const std::string& indent) {
  if (kernels.empty()) return;
  out += indent +
         "kernels:  # time(n) = overhead + n x per_element (overhead: small sizes; per_element: "
         "large)\n";
  for (const KernelCostEntry& k : kernels) {
    out += indent + "  - {kernel: " + k.kernel +
           ", overhead: " + profile_duration_text(non_negative(k.overhead_ns)) +
           ", per_element: " + profile_duration_text(k.per_element_ns) +
           ", bandwidth: " + profile_bandwidth_text(k.bandwidth_Bps) +
           ", points: " + std::to_string(k.points) + "}\n";
  }
}

}  // namespace

std::string profile_duration_text(double ns) {
  const double a = std::fabs(ns);
  if (a >= 1e9) return number_text(ns / 1e9) + "s";
  if (a >= 1e6) return number_text(ns / 1e6) + "ms";
  if (a >= 1e3) return number_text(ns / 1e3) + "us";
  return number_text(ns) + "ns";
}

std::string profile_bandwidth_text(double bytes_per_s) {
  const std::pair<const char*, double> units[] = {
      {"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"KB/s", 1e3}};
  for (auto [unit, factor] : units) {
    if (bytes_per_s >= factor) return number_text(bytes_per_s / factor) + unit;
  }
  return number_text(bytes_per_s) + "B/s";
}

double parse_duration_ns_precise(std::string_view text) {
  // parse_duration_ns checks the form and the unit and gives the project's messages; it rounds
  // to whole nanoseconds, so the value itself is recomputed from the number and the unit.
  (void)parse_duration_ns(text);
  const auto n = leading_number(text);
  if (!n) throw InputError("expected a duration such as 5us, got \"" + std::string(text) + "\"");
  const TimeNs unit_ns = parse_duration_ns("1" + std::string(n->second));
  return n->first * static_cast<double>(unit_ns);
}

const LinkFit* CalibrationProfile::find_fit(std::string_view link_class, std::string_view algorithm,
                                            int n_ranks) const {
  for (const LinkFit& f : fits) {
    if (f.link_class == link_class && f.algorithm == algorithm &&
        (n_ranks <= 0 || f.n_ranks == n_ranks)) {
      return &f;
    }
  }
  return nullptr;
}

CalibrationProfile load_calibration_profile(const std::filesystem::path& path) {
  return read_profile(Document::load_file(path));
}

CalibrationProfile parse_calibration_profile(const std::string& text, const std::string& label) {
  return read_profile(Document::parse_string(text, label));
}

std::string write_calibration_profile_yaml(const CalibrationProfile& p) {
  std::string out;
  out += "# adaptsim calibration profile, written by calibrate. Every quantity carries its unit;\n";
  out +=
      "# counts and ratios (bus_factor, r2) are bare numbers. Schema: "
      "sim/io/calibration_profile.h\n";
  out += "profile: " + std::string(kCalibrationProfileFormat) + "\n";
  out += "created: " + yaml_quoted(p.created) + "\n";
  out += "command: " + yaml_quoted(p.command) + "\n";
  out += "host:\n";
  out += "  hostname: " + yaml_quoted(p.host.hostname) + "\n";
  out += "  cpu_model: " + yaml_quoted(p.host.cpu_model) + "\n";
  out += "  cores: " + std::to_string(p.host.cores) + "\n";
  out += "  kernel: " + yaml_quoted(p.host.kernel) + "\n";
  out += "software:\n";
  out += "  adaptsim: " + yaml_quoted(p.software.adaptsim_version) + "\n";
  out += "  commit: " + yaml_quoted(p.software.adaptsim_commit) + "\n";
  if (!p.software.nccl_version.empty())
    out += "  nccl: " + yaml_quoted(p.software.nccl_version) + "\n";
  if (!p.software.cuda_version.empty())
    out += "  cuda: " + yaml_quoted(p.software.cuda_version) + "\n";
  if (!p.software.cuda_driver_version.empty())
    out += "  cuda_driver: " + yaml_quoted(p.software.cuda_driver_version) + "\n";
  if (!p.software.compiler.empty()) out += "  compiler: " + yaml_quoted(p.software.compiler) + "\n";
  if (!p.software.mpi_version.empty())
    out += "  mpi: " + yaml_quoted(p.software.mpi_version) + "\n";
  out += "sweep:\n";
  out += "  backend: " + p.sweep.backend + "\n";
  if (!p.sweep.source.empty()) out += "  source: " + yaml_quoted(p.sweep.source) + "\n";
  out += "  ranks: " + std::to_string(p.sweep.ranks) + "\n";
  out += "  hosts: " + std::to_string(p.sweep.hosts) + "\n";
  out += "  min_bytes: " + std::to_string(p.sweep.min_bytes) + "B\n";
  out += "  max_bytes: " + std::to_string(p.sweep.max_bytes) + "B\n";
  out += "  step_factor: " + std::to_string(p.sweep.step_factor) + "\n";
  out += "  iters: " + std::to_string(p.sweep.iters) + "\n";
  out += "  warmup_iters: " + std::to_string(p.sweep.warmup_iters) + "\n";
  if (!p.sweep.csv.empty()) out += "  csv: " + yaml_quoted(p.sweep.csv) + "\n";
  out +=
      "# t(m) = latency + m / bandwidth per (class, algorithm, collective, n_ranks).\n"
      "# Least squares in two regimes, split where the total relative error is least\n"
      "# (calibrate/alpha_beta_fit.h): latency from the small sizes (weights 1/t^2,\n"
      "# FACTS 2.5), bandwidth from the large ones (unweighted); one line when it is\n"
      "# within 1% RMS or there are fewer than 6 sizes. alpha_per_step = latency / steps;\n"
      "# busbw_inf = bus_factor x bandwidth; m_half = latency x bandwidth; residual_rms =\n"
      "# RMS relative error of the (piecewise) model over all points.\n";
  if (p.fits.empty()) {
    out += "fits: []\n";
  } else {
    out += "fits:\n";
  }
  for (const LinkFit& f : p.fits) {
    out += "  - class: " + f.link_class + "\n";
    out += "    algorithm: " + yaml_quoted(f.algorithm) + "\n";
    out += "    collective: " + yaml_quoted(f.collective) + "\n";
    out += "    n_ranks: " + std::to_string(f.n_ranks) + "\n";
    out += "    points: " + std::to_string(f.points) + "\n";
    out += "    min_bytes: " + std::to_string(f.min_bytes) + "B\n";
    out += "    max_bytes: " + std::to_string(f.max_bytes) + "B\n";
    out += "    latency: " + profile_duration_text(non_negative(f.latency_us) * 1e3) + "\n";
    out += "    bandwidth: " + profile_bandwidth_text(f.bandwidth_Bps) + "\n";
    out += "    steps: " + std::to_string(f.steps) + "\n";
    out += "    bus_factor: " + number_text(f.bus_factor) + "\n";
    out += "    alpha_per_step: " + profile_duration_text(non_negative(f.alpha_per_step_us) * 1e3) +
           "\n";
    out += "    busbw_inf: " + profile_bandwidth_text(f.busbw_inf_Bps) + "\n";
    out += "    m_half: " + size_text(f.m_half_bytes) + "\n";
    out += "    residual_rms: " + percent_text(f.residual_rms) + "\n";
    out += "    r2: " + number_text(f.r2) + "\n";
  }
  if (p.cpu) {
    out += "cpu:\n";
    out += "  # float32 a + b on one thread, bytes of output per second, largest size measured\n";
    out += "  reduce_bandwidth: " + profile_bandwidth_text(p.cpu->reduce_bandwidth_Bps) + "\n";
    write_kernels(out, p.cpu->kernels, "  ");
    if (p.cpu->concurrent_threads > 0) {
      out += "  concurrent:  # the same kernels on `threads` threads at once, the slowest's time\n";
      out += "    threads: " + std::to_string(p.cpu->concurrent_threads) + "\n";
      write_kernels(out, p.cpu->concurrent_kernels, "    ");
    }
  }
  if (p.gpu) {
    const GpuCalibration& g = *p.gpu;
    out += "gpu:\n";
    out += "  name: " + yaml_quoted(g.name) + "\n";
    out += "  count: " + std::to_string(g.count) + "\n";
    if (g.reduce_bandwidth_Bps > 0) {
      out += "  reduce_bandwidth: " + profile_bandwidth_text(g.reduce_bandwidth_Bps) + "\n";
    }
    out += "  launch_overhead: " + profile_duration_text(non_negative(g.launch_overhead_us) * 1e3) +
           "\n";
    out += "  launch_latency: " + profile_duration_text(non_negative(g.launch_latency_us) * 1e3) +
           "\n";
    write_kernels(out, g.kernels, "  ");
    if (g.gemm) {
      out += "  gemm: {precision: " + g.gemm->precision +
             ", size: " + std::to_string(g.gemm->size) +
             ", rate: " + rate_text(g.gemm->flops_per_s, "FLOP") + "}\n";
    }
    if (g.memory_bandwidth_Bps > 0) {
      out += "  memory_bandwidth: " + profile_bandwidth_text(g.memory_bandwidth_Bps) + "\n";
    }
  }
  return out;
}

std::vector<AppliedCalibration> apply_calibration_with_report(topo::ClusterSpec& spec,
                                                              const CalibrationProfile& profile) {
  std::vector<AppliedCalibration> applied;
  topo::ServerSpec& sv = spec.server;
  auto fit_source = [](const LinkFit& f) {
    return "calibration fit " + f.link_class + "/" + f.algorithm + " (" +
           std::to_string(f.n_ranks) + " ranks, " + std::to_string(f.points) +
           " points, residual " + percent_text(f.residual_rms) + ")";
  };
  auto set_bandwidth = [&](const std::string& field, double& target, double value,
                           const std::string& source) {
    applied.push_back({field, format_bandwidth(target), format_bandwidth(value), source});
    target = value;
  };

  if (const LinkFit* f = profile.find_fit("loopback", "p2p")) {
    set_bandwidth("server.cpu.loopback_bandwidth", sv.cpu_loopback_bandwidth_Bps, f->bandwidth_Bps,
                  fit_source(*f));
  }
  if (const LinkFit* f = profile.find_fit("tcp", "p2p")) {
    set_bandwidth("server.nic.bandwidth", sv.nic.bandwidth_Bps, f->bandwidth_Bps, fit_source(*f));
    const TimeNs per_hop =
        static_cast<TimeNs>(std::llround(std::max(f->latency_us, 0.0) * 1e3 / 2));
    applied.push_back({"server.nic.latency", format_duration(sv.nic.latency_ns),
                       format_duration(per_hop), fit_source(*f) + ", half the host-to-host alpha"});
    sv.nic.latency_ns = per_hop;
    if (sv.nic_egress_bandwidth_Bps && *sv.nic_egress_bandwidth_Bps > f->bandwidth_Bps) {
      set_bandwidth("server.nic.egress_bandwidth", *sv.nic_egress_bandwidth_Bps, f->bandwidth_Bps,
                    fit_source(*f) + ", a cap above the measured rate");
    }
  }
  if (profile.cpu && profile.cpu->reduce_bandwidth_Bps > 0) {
    set_bandwidth("server.cpu.reduce_bandwidth", sv.cpu_reduce_bandwidth_Bps,
                  profile.cpu->reduce_bandwidth_Bps, "calibration cpu.reduce_bandwidth");
  }
  if (profile.gpu && profile.gpu->reduce_bandwidth_Bps > 0) {
    set_bandwidth("server.gpu.reduce_bandwidth", sv.gpu_reduce_bandwidth_Bps,
                  profile.gpu->reduce_bandwidth_Bps, "calibration gpu.reduce_bandwidth");
  }
  if (sv.nvswitch) {
    for (const LinkFit& f : profile.fits) {
      if (f.link_class == "nccl_intra" && f.algorithm == "nccl" && f.collective == "all_reduce" &&
          f.n_ranks == sv.gpus) {
        set_bandwidth("server.nvswitch.bandwidth", sv.nvswitch->bandwidth_Bps, f.busbw_inf_Bps,
                      fit_source(f) + ", busbw_inf");
        break;
      }
    }
  }
  return applied;
}

void apply_calibration(topo::ClusterSpec& spec, const CalibrationProfile& profile) {
  (void)apply_calibration_with_report(spec, profile);
}

}  // namespace adaptsim::io
