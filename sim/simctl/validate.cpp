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
            const std::string path = o->scenario_path();
            run::LoadOptions load = o->load_options();
            load.keep_points = false;  // counts only: memory stays flat however large the sweep
            load.progress = true;      // on a terminal, after a second
            const run::Scenario scenario = run::load_scenario(path, load);
            const std::size_t points = scenario.point_count, tasks = scenario.task_count;
            std::printf("%s: ok (%zu sweep point%s, %zu task%s)\n", path.c_str(), points,
                        points == 1 ? "" : "s", tasks, tasks == 1 ? "" : "s");
            return 0;
          }};
}

}  // namespace adaptsim::simctl
