// workload.kind = allreduce: an nccl-tests-style sweep of message sizes for each strategy.
//
//   workload:
//     kind: allreduce
//     strategies: [STAR, CLASSIC_RING]   # or "all"
//     min_bytes: 8B
//     max_bytes: 1GiB
//     step_factor: 4
//     dtype: float32
//     endpoint: host            # host: staged through host memory and NICs; gpu: direct
//     chunk_size: 1MiB          # KungFu's chunk size
//     connection: serialized    # one message at a time per rank pair (TCP), or parallel
//     per_message_overhead: 0us
//     socket_buffer: 0B         # serialized only: the sender's kernel socket buffer
//     sharing: max-min          # or bottleneck (cheaper, for very large clusters)
//     fold_servers: true        # a symmetric algorithm (CLASSIC_RING, HALVING_DOUBLING, Open
//                               #   MPI's rings, recursive doubling, Rabenseifner) on
//                               #   interchangeable servers simulated on one server, exactly
//                               #   (SimFabric::fold_servers); false: every rank
//     mpi:                      # Open MPI's MPI_Allreduce too, one series per entry (optional;
//       - {version: 4.1.4}      #   then strategies may be left out): release, algorithm, ...
//       - {version: 4.0.0, algorithm: ring, rendezvous: false}   # as a horovod system's mpi:
//     nccl: false               # true: NCCL's all-reduce too, by NCCL's own cost model over the
//                               #   topology's GPUs (sim/train/nccl_model.h), series "NCCL"
//     nccl_net: {transport: ib} # how that NCCL crosses servers (a system's nccl_net); sockets:
//                               #   series "NCCL-socket"
//     nccl_nvls: true           # false: without NVLS, as NCCL_NVLS_ENABLE=0 (series "...-noNVLS")

#include <algorithm>
#include <memory>
#include <optional>

#include "sim/coll/collective.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/output.h"
#include "sim/run/allreduce_sim.h"
#include "sim/run/link_stats_files.h"
#include "sim/run/workload.h"
#include "sim/runtime/system_config.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::run {
namespace {

// One series of rows: a KungFu/classic strategy, Open MPI's all-reduce, or NCCL's (its model).
struct Series {
  std::string name;  // the rows' strategy column
  std::optional<coll::StrategyKind> strategy;
  coll::OmpiOptions mpi;
  bool nccl = false;
  train::NcclCommParams nccl_params;  // nccl: NCCL's topology search over every GPU, done once
};

// "OMPI-4.1.4-fixed", "OMPI-4.0.0-ring-eager".
std::string mpi_series_name(const coll::OmpiOptions& o) {
  std::string name = "OMPI-" + o.version + "-" +
                     (o.forced ? std::string(coll::ompi_allreduce_name(static_cast<int>(*o.forced)))
                               : std::string("fixed"));
  if (o.forced_segment_bytes > 0) name += "-" + std::to_string(o.forced_segment_bytes) + "B";
  if (!o.rendezvous) name += "-eager";
  if (o.rendezvous && !o.match_in_receive) name += "-matchlate";
  if (o.rendezvous && o.eager_limit_bytes != coll::OmpiOptions{}.eager_limit_bytes) {
    name += "-eager" + std::to_string(o.eager_limit_bytes) + "B";
  }
  return name;
}

class AllReduceWorkload final : public Workload {
 public:
  AllReduceWorkload(const io::LoadedTopology& topology, std::vector<Series> series,
                    std::vector<std::uint64_t> sizes, AllReduceSimOptions options)
      : spec_(topology.spec),
        series_(std::move(series)),
        sizes_(std::move(sizes)),
        options_(options) {
    // Validate the topology once here, so bad input (a disconnected topology, located at the
    // topology file's key that leaves the gap) fails before any task runs.
    ranks_ = io::check_connected(topology);
  }

  std::vector<std::string> columns() const override {
    return {"mode",  "topology", "n_ranks", "strategy",   "size_bytes",
            "count", "dtype",    "time_us", "algbw_GBps", "busbw_GBps"};
  }

  std::vector<Task> tasks() const override {
    std::vector<Task> out;
    for (const Series& s : series_) {
      for (std::uint64_t size : sizes_) {
        out.push_back({[this, &s, size](const TaskContext& context) {
          return TaskRows{{run_one(s, size, context)}, {}};
        }});
      }
    }
    return out;
  }
  bool has_link_stats() const override { return true; }

 private:
  Row run_one(const Series& series, std::uint64_t size, const TaskContext& context) const {
    const std::size_t esize = coll::dtype_size(options_.dtype);
    const std::uint64_t count = size / esize;
    AllReduceSimOptions options = options_;
    const bool link_stats = !context.link_stats_dir.empty() && context.files != nullptr;
    if (link_stats) options.link_stats_bin_ns = context.link_stats_bin_ns;
    AllReduceSimResult r;
    if (series.nccl) {
      // NCCL is not flow-simulated: its own cost model's time (no link statistics).
      r.time_ns = seconds_to_ns_ceil(
          train::nccl_predict(train::NcclColl::kAllReduce, count * esize, series.nccl_params)
              .time_us *
          1e-6);
    } else {
      const topo::Topology topology = topo::build_cluster(spec_);
      r = series.strategy ? simulate_allreduce(topology, *series.strategy, count * esize, options)
                          : simulate_allreduce(topology, series.mpi, count * esize, options);
    }
    if (link_stats && !series.nccl) {
      for (io::OutputFile& f :
           link_stats_files(context.link_stats_dir / (context.trace_name + "-" + series.name + "-" +
                                                      std::to_string(count * esize)),
                            r.links, options.link_stats_bin_ns, r.transmissions)) {
        context.files->push_back(std::move(f));
      }
    }
    const double seconds = to_seconds(r.time_ns);
    const double algbw = seconds > 0 ? static_cast<double>(count * esize) / seconds / 1e9 : 0.0;
    const double bus_factor = coll::bus_bandwidth_factor(coll::Collective::kAllReduce, ranks_);
    return {"sim",
            spec_.name,
            std::to_string(ranks_),
            series.name,
            std::to_string(count * esize),
            std::to_string(count),
            std::string(coll::dtype_name(options_.dtype)),
            io::fmt_fixed(to_us(r.time_ns), 3),
            io::fmt_fixed(algbw, 6),
            io::fmt_fixed(algbw * bus_factor, 6)};
  }

  topo::ClusterSpec spec_;
  std::vector<Series> series_;
  std::vector<std::uint64_t> sizes_;
  AllReduceSimOptions options_;
  int ranks_ = 0;
};

std::vector<coll::StrategyKind> read_strategies(io::MapReader& w) {
  std::vector<std::string> names;
  if (!w.has("strategies") && (w.has("mpi") || w.has("nccl"))) {
    w.accept("strategies");  // absent, or null (--set workload.strategies=null): none
    return {};
  }
  const YAML::Node node = w.node()["strategies"];
  if (node.IsScalar() && node.Scalar() == "all") {
    w.accept("strategies");
    for (coll::StrategyKind k : coll::all_strategies())
      names.emplace_back(coll::strategy_name(k));
  } else {
    names = w.string_list("strategies");
  }
  if (names.empty()) w.fail("strategies", "expected at least one strategy");
  std::vector<std::string> known;
  for (coll::StrategyKind k : coll::all_strategies())
    known.emplace_back(coll::strategy_name(k));
  std::vector<coll::StrategyKind> out;
  for (const auto& name : names) {
    auto k = coll::parse_strategy(name);
    if (!k) {
      const std::string guess = io::closest(name, known);
      w.fail("strategies", "unknown strategy \"" + name + "\"" +
                               (guess.empty() ? "" : " (did you mean " + guess + "?)") +
                               "; `simctl list strategies` shows all");
    }
    // Rows are told apart by strategy and size: a strategy listed twice gives twin rows.
    if (std::find(out.begin(), out.end(), *k) != out.end()) {
      w.fail("strategies", "strategy " + name + " is listed twice; expected each strategy once");
    }
    out.push_back(*k);
  }
  return out;
}

}  // namespace

std::unique_ptr<Workload> parse_allreduce_workload(io::MapReader& w, const PointContext& ctx) {
  if (ctx.mode == Mode::kLive) {
    w.fail_here(
        "workload 'allreduce' has no live mode in this build; use adaptsim-tcp for live "
        "all-reduce sweeps");
  }
  auto strategies = read_strategies(w);
  std::vector<Series> series;
  for (coll::StrategyKind k : strategies)
    series.push_back({std::string(coll::strategy_name(k)), k, {}, false, {}});
  if (w.has("mpi")) {
    const std::vector<YAML::Node> items = w.list("mpi");
    if (items.empty()) w.fail("mpi", "expected at least one entry ({version: 4.1.4})");
    for (std::size_t i = 0; i < items.size(); ++i) {
      io::MapReader m = io::MapReader::item_map(w, "mpi", i, items[i]);
      const coll::OmpiOptions o = runtime::read_mpi(m);
      const std::string name = mpi_series_name(o);
      for (const Series& other : series) {
        if (other.name == name) {
          m.fail_here("Open MPI series " + name + " is listed twice; expected each once");
        }
      }
      series.push_back({name, std::nullopt, o, false, {}});
    }
  }
  const bool with_nccl = w.boolean_or("nccl", false);
  train::NcclNet nccl_net;
  if (auto m = w.optional_map("nccl_net")) {
    if (!with_nccl) w.fail("nccl_net", "applies with nccl: true only");
    nccl_net = runtime::read_nccl_net(*m);
  }
  const bool nvls = w.boolean_or("nccl_nvls", true);
  if (w.has("nccl_nvls") && !with_nccl) w.fail("nccl_nvls", "applies with nccl: true only");
  if (with_nccl) {
    if (ctx.topology.spec.server.gpus < 1) w.fail("nccl", "needs a topology with GPUs");
    // NCCL's topology search over every GPU, once here: a topology it cannot join (servers
    // without a NIC) is bad input at this key, not a failed task.
    const bool sockets = nccl_net.transport == train::NcclNetTransport::kSocket;
    Series nccl{std::string(sockets ? "NCCL-socket" : "NCCL") + (nvls ? "" : "-noNVLS"),
                std::nullopt,
                {},
                true,
                {}};
    try {
      const topo::Topology t = topo::build_cluster(ctx.topology.spec);
      std::vector<int> ranks(static_cast<std::size_t>(t.rank_count()));
      for (int r = 0; r < t.rank_count(); ++r)
        ranks[static_cast<std::size_t>(r)] = r;
      nccl.nccl_params = train::nccl_params_from_topology(
          t, ranks, train::gpu_arch_of(ctx.topology.spec.server.gpu_model), nccl_net);
      if (!nvls) nccl.nccl_params.nvls_channels = 0;
    } catch (const InputError& e) {
      w.fail("nccl", e.what());
    }
    series.push_back(std::move(nccl));
  }
  if (series.empty()) w.fail("strategies", "expected at least one strategy");
  const std::uint64_t min_bytes = w.size_bytes("min_bytes");
  const std::uint64_t max_bytes = w.size_bytes("max_bytes");
  const std::int64_t factor = w.integer_or("step_factor", 2, 2, 1024);
  if (max_bytes < min_bytes) w.fail("max_bytes", "must be >= min_bytes");
  AllReduceSimOptions options;
  const std::string dtype = w.choice_or(
      "dtype", {"float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"}, "float32");
  options.dtype = *coll::parse_dtype(dtype);
  const std::string endpoint = w.choice_or("endpoint", {"host", "gpu"}, "host");
  options.transport.endpoint =
      endpoint == "host" ? fabric::Endpoint::kHost : fabric::Endpoint::kGpu;
  options.algorithm.chunk_bytes = w.size_bytes_or("chunk_size", 1 << 20);
  if (options.algorithm.chunk_bytes == 0) w.fail("chunk_size", "must be > 0");
  // KungFu's graph strategies run every chunk as its own collective, with state on every rank:
  // memory grows as chunks x ranks (about 2 kB each; 64 MiB in 4 KiB chunks on 4 ranks took
  // 125 MB; 65,536 on 8 ranks 936 MB). 16,384 chunks is a 16 GiB buffer at KungFu's 1 MiB chunks.
  constexpr std::uint64_t kMaxChunks = 1 << 14;
  const std::uint64_t chunks =
      max_bytes / options.algorithm.chunk_bytes + (max_bytes % options.algorithm.chunk_bytes != 0);
  if (chunks > kMaxChunks &&
      std::any_of(strategies.begin(), strategies.end(), coll::is_graph_strategy)) {
    w.fail("chunk_size", "a chunk size of " + format_size(options.algorithm.chunk_bytes) +
                             " splits max_bytes (" + format_size(max_bytes) + ") into " +
                             std::to_string(chunks) +
                             " chunks; expected at most 16384 for the graph strategies (memory "
                             "grows with chunks x ranks): a larger chunk_size");
  }
  read_connection(w, ctx, options.transport);
  options.transport.tail_loss.seed = ctx.seed;
  if (options.transport.one_transport_thread &&
      options.transport.endpoint != fabric::Endpoint::kHost) {
    w.fail("transport_threads",
           "one applies to host endpoints (a TCP transport thread per "
           "rank); expected endpoint: host or transport_threads: unlimited");
  }
  options.sharing = read_sharing(w);
  options.fold_servers = w.boolean_or("fold_servers", true);
  check_message_time(w, "max_bytes", max_bytes, ctx.topology.spec);
  if (const std::string host = io::shared_host_without_loopback(ctx.topology.spec);
      !host.empty() && options.transport.endpoint == fabric::Endpoint::kHost) {
    w.fail("endpoint", "ranks share host " + host + " of topology " +
                           ctx.topology.path.filename().string() +
                           ", which has no server.cpu.loopback_bandwidth for their host messages; "
                           "expected a loopback bandwidth, or endpoint: gpu");
  }
  w.finish();

  // Whole elements, as nccl-tests: a size below one element, or two sizes that round down to
  // the same count, gave rows of size 0 or twin rows no one could tell apart.
  const std::uint64_t element_bytes = coll::dtype_size(options.dtype);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = std::max<std::uint64_t>(min_bytes, 1); s <= max_bytes;
       s *= static_cast<std::uint64_t>(factor)) {
    const std::uint64_t whole = s / element_bytes * element_bytes;
    if (whole > 0 && (sizes.empty() || sizes.back() != whole)) sizes.push_back(whole);
    if (s > max_bytes / static_cast<std::uint64_t>(factor)) break;
  }
  if (sizes.empty()) {
    w.fail("max_bytes", "no size from min_bytes to max_bytes holds a whole " + dtype +
                            " element (" + std::to_string(element_bytes) + " B)");
  }
  return std::make_unique<AllReduceWorkload>(ctx.topology, std::move(series), std::move(sizes),
                                             options);
}

}  // namespace adaptsim::run
