// simctl's main: the tool is sim/simctl's commands (simctl.h).

#include "sim/simctl/simctl.h"

int main(int argc, char** argv) {
  return adaptsim::simctl::simctl_main(argc, argv);
}
