// simctl list: what this build knows (strategies, shipped topologies, workload kinds, models,
// policies and monitors).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "sim/coll/strategy.h"
#include "sim/core/install_paths.h"
#include "sim/io/topology_loader.h"
#include "sim/runtime/policy.h"
#include "sim/simctl/commands.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::simctl {
namespace fs = std::filesystem;

namespace {

// Where shipped topologies and scenarios live: $ADAPTSIM_DATA, else the installed share/adaptsim,
// else the source tree (sim/core/install_paths.h).
fs::path data_dir() {
  return primary_data_dir();
}

void list_strategies() {
  for (coll::StrategyKind k : coll::all_strategies()) {
    std::printf("%-24s %s\n", std::string(coll::strategy_name(k)).c_str(),
                std::string(coll::strategy_summary(k)).c_str());
  }
}

void list_topologies() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(data_dir() / "topologies")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const io::LoadedTopology t = io::load_topology(f);
    std::string params;
    for (const auto& [k, v] : t.params)
      params += (params.empty() ? "" : ", ") + k + "=" + v;
    std::printf("%-28s %s\n%-28s params: %s\n", f.filename().string().c_str(),
                t.spec.description.c_str(), "", params.c_str());
  }
}

void list_models() {
  for (const std::string& name : train::model_names()) {
    const train::Model& m = train::model(name);
    const train::ModelTotals t = m.totals();
    // %g: fashion-mlp's 0.00047 GFLOP would print as 0.000 with fixed decimals.
    std::printf("%-12s %11llu params %4zu tensors %9.4g GFLOP/%s fwd  %s\n", name.c_str(),
                static_cast<unsigned long long>(t.parameters), t.tensors, t.forward_flops / 1e9,
                m.sample_unit.c_str(), m.description.c_str());
  }
}

void list_workloads() {
  for (const auto& k : run::workload_kinds())
    std::printf("%-16s %s\n", k.name.c_str(), k.summary.c_str());
}

void list_policies() {
  for (const auto& k : runtime::policy_kinds())
    std::printf("policy   %-22s %s\n", k.name.c_str(), k.summary.c_str());
  for (const auto& k : runtime::monitor_kinds())
    std::printf("monitor  %-22s %s\n", k.name.c_str(), k.summary.c_str());
}

}  // namespace

Command add_list_command(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("list", "List strategies, topologies, workloads, models or policies");
  cmd->add_option("what", *what, "strategies | topologies | workloads | models | policies")
      ->required()
      ->check(CLI::IsMember({"strategies", "topologies", "workloads", "models", "policies"}));
  return {cmd, [what] {
            if (*what == "strategies") list_strategies();
            if (*what == "topologies") list_topologies();
            if (*what == "workloads") list_workloads();
            if (*what == "models") list_models();
            if (*what == "policies") list_policies();
            return 0;
          }};
}

}  // namespace adaptsim::simctl
