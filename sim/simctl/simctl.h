#pragma once
// simctl: run, validate, compare and list adaptsim scenarios. Live runs (run --live, compare) use
// runtime::make_live_backend, which the live side defines (hw/runner links into simctl), so that
// nothing under sim/ includes hw/.

namespace adaptsim::simctl {

// The whole tool; returns the exit code: 0 success, 1 run-time failure, 2 bad input.
int simctl_main(int argc, char** argv);

}  // namespace adaptsim::simctl
