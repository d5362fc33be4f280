// simctl validate: load and check every sweep point of a scenario without running it.

#include <cstdio>
#include <memory>

#include "sim/simctl/commands.h"

namespace adaptsim::simctl {

Command add_validate_command(CLI::App& app) {
  auto o = std::make_shared<ScenarioOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check a scenario without running it");
  add_scenario_options(*cmd, *o, false);
  return {cmd, [o] {
            const run::Scenario scenario = run::load_scenario(o->scenario, o->load_options());
            std::size_t tasks = 0;
            for (const auto& p : scenario.points)
              tasks += p.workload->tasks().size();
            std::printf("%s: ok (%zu sweep point%s, %zu task%s)\n", o->scenario.c_str(),
                        scenario.points.size(), scenario.points.size() == 1 ? "" : "s", tasks,
                        tasks == 1 ? "" : "s");
            return 0;
          }};
}

}  // namespace adaptsim::simctl
