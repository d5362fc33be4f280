#include "calibrate/tcp_calibration.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "calibrate/pingpong.h"
#include "hw/cuda/cpu_kernel_timing.h"
#include "hw/tcp/launcher.h"
#include "sim/core/error.h"

namespace adaptsim::calibrate {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// A name for the machine of every rank (equal names = one machine).
std::vector<std::string> machines(const tcp::RendezvousOptions& o, tcp::RendezvousMode mode,
                                  const tcp::Runtime& rt) {
  std::vector<tcp::SocketAddress> addresses;
  if (mode == tcp::RendezvousMode::kLaunchedWorker) {
    if (const char* list = std::getenv(tcp::kEnvAddresses)) addresses = tcp::parse_host_list(list);
  } else if (mode == tcp::RendezvousMode::kHostList) {
    addresses = tcp::parse_host_list(o.hosts);
  }
  std::vector<std::string> out;
  if (static_cast<int>(addresses.size()) == rt.size()) {
    for (const auto& a : addresses)
      out.push_back(is_loopback(a.host) ? "127.0.0.1" : a.host);
    return out;
  }
  // mpirun: the runtime grouped the ranks by advertised address, unless --ranks-per-host
  // replaced that grouping (then it is the best there is).
  for (int h : rt.host_of_rank())
    out.push_back("host" + std::to_string(h));
  return out;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<coll::SweepRow> pingpong_rows(const std::vector<PingPongRow>& rows,
                                          const std::string& link_class, coll::DType dtype) {
  std::vector<coll::SweepRow> out;
  for (const PingPongRow& p : rows) {
    coll::SweepRow r;
    r.size_bytes = p.size_bytes;
    r.count = p.count;
    r.type = std::string(coll::dtype_name(dtype));
    r.redop = "none";
    r.collective = coll::Collective::kSendRecv;
    r.algorithm = "p2p";
    r.link_class = link_class;
    r.n_ranks = 2;
    r.time_us = p.time_us;
    r.algbw_GBps = p.time_us > 0 ? static_cast<double>(p.size_bytes) / (p.time_us * 1e3) : 0;
    r.busbw_GBps = r.algbw_GBps * coll::bus_bandwidth_factor(r.collective, r.n_ranks);
    r.wrong = p.wrong;
    out.push_back(r);
  }
  return out;
}

void print_pingpong(const std::function<void(const std::string&)>& print, const std::string& title,
                    const std::vector<coll::SweepRow>& rows) {
  if (!print) return;
  print("# ping-pong " + title + " (one-way time = median round trip / 2)");
  char buf[160];
  std::snprintf(buf, sizeof buf, "# %12s %12s %10s %10s %8s", "size (B)", "count", "time (us)",
                "bw (GB/s)", "#wrong");
  print(buf);
  for (const coll::SweepRow& r : rows) {
    std::snprintf(buf, sizeof buf, "  %12llu %12llu %10s %10s %8llu",
                  static_cast<unsigned long long>(r.size_bytes),
                  static_cast<unsigned long long>(r.count), fixed(r.time_us, 2).c_str(),
                  fixed(r.algbw_GBps, 4).c_str(), static_cast<unsigned long long>(r.wrong));
    print(buf);
  }
}

}  // namespace

bool same_machine(const std::string& a, const std::string& b) {
  return a == b || (is_loopback(a) && is_loopback(b));
}

TcpCalibrationResult run_tcp_calibration(const TcpCalibrationOptions& o, tcp::RendezvousMode mode) {
  tcp::validate_sweep_options(o.sweep);
  tcp::RuntimeOptions ro;
  ro.transport.connect_timeout_ns = o.sweep.timeout_ns;
  ro.transport.congestion_control = o.congestion_control;
  // A message may carry a whole tensor when the chunk is larger than the tensor (and a
  // ping-pong message is always whole).
  ro.transport.limits.max_payload_bytes =
      std::max<std::uint64_t>(ro.transport.limits.max_payload_bytes, o.sweep.max_bytes);

  TcpCalibrationResult result;
  std::unique_ptr<tcp::Runtime> rt = tcp::connect_runtime(o.rendezvous, mode, ro);
  result.leader = rt->rank() == 0;
  result.n_ranks = rt->size();
  result.host_of_rank = rt->host_of_rank();
  const std::vector<std::string> machine = machines(o.rendezvous, mode, *rt);
  result.hosts = static_cast<int>(std::set<std::string>(machine.begin(), machine.end()).size());
  const bool one_machine = result.hosts == 1;
  auto print = [&](const std::string& line) {
    if (result.leader && o.print) o.print(line);
  };

  PingPongOptions pp;
  pp.sizes = tcp::sweep_sizes(o.sweep);
  pp.iters = o.sweep.iters;
  pp.warmup_iters = o.sweep.warmup_iters;
  pp.check = o.sweep.check;
  pp.dtype = o.sweep.dtype;
  pp.timeout_ns = o.sweep.timeout_ns;
  const bool pair_local = rt->size() >= 2 && same_machine(machine[0], machine[1]);

  if (o.pingpong && rt->size() >= 2) {
    const auto rows = run_pingpong_sweep(*rt, pp);
    const auto measured = pingpong_rows(rows, pair_local ? "loopback" : "tcp", o.sweep.dtype);
    print_pingpong(print, std::string("rank 0 <-> rank 1, ") + (pair_local ? "loopback" : "tcp"),
                   measured);
    result.rows.insert(result.rows.end(), measured.begin(), measured.end());
  }

  std::string current;  // the strategy of the table being printed
  bool first = true;
  auto on_row = [&](const coll::SweepRow& row) {
    if (!result.leader) return;
    if (first || row.algorithm != current) {
      print("");
      print(tcp::sweep_table_header(row));
      current = row.algorithm;
      first = false;
    }
    print(tcp::sweep_table_row(row));
  };
  for (coll::SweepRow& r : tcp::run_allreduce_sweep(*rt, o.sweep, on_row)) {
    r.link_class = one_machine ? "loopback" : "tcp";
    result.rows.push_back(std::move(r));
  }
  rt->shutdown();
  rt.reset();
  if (!result.leader) return result;

  if (o.pingpong && !pair_local) {
    const auto rows = run_local_loopback_pingpong(pp, ro);
    const auto measured = pingpong_rows(rows, "loopback", o.sweep.dtype);
    print("");
    print_pingpong(print, "inside this process over 127.0.0.1, loopback", measured);
    result.rows.insert(result.rows.begin(), measured.begin(), measured.end());
  }
  if (o.time_kernels) {
    auto time_kernels = [&](int threads) {
      print("");
      print(threads == 1 ? std::string("# CPU kernels (one thread)")
                         : "# CPU kernels (" + std::to_string(threads) +
                               " threads at once, as this machine's ranks run them)");
      hw::KernelTimingOptions ko = o.kernels;
      ko.threads = threads;
      hw::KernelTimingReport report = hw::time_cpu_kernels(ko);
      for (const hw::KernelTimingRow& r : report.rows) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "  %-9s %11zu elements %12.1f ns %8.4f ns/element %8.2f GB/s",
                      std::string(hw::kernel_kind_name(r.kernel)).c_str(), r.n_elements, r.time_ns,
                      r.ns_per_element, r.bandwidth_GBps);
        print(buf);
      }
      return report;
    };
    result.cpu_kernels = time_kernels(1);
    const auto here = static_cast<int>(std::count(machine.begin(), machine.end(), machine[0]));
    if (here > 1) result.cpu_kernels_concurrent = time_kernels(here);
  }
  return result;
}

}  // namespace adaptsim::calibrate
