# `cmake --install build [--prefix DIR]` (default prefix ~/.local, set in the top-level
# CMakeLists.txt): the tools into bin/, the shipped data into share/adaptsim/ in the repository's
# layout (scenario files name ../topologies/... and ../traces/...), simctl's bash completion into
# share/bash-completion/completions/. The tools find the data and each other from their own path
# (sim/core/install_paths.h), so the installed tree works from any folder. Tested by
# tests/install (an install into a temporary prefix, run from elsewhere).

# The tools, and the helpers they start: simctl runs adaptsim-live (and adaptsim-traffic for a
# live scenario's background traffic) from beside itself.
set(_adaptsim_tools simctl calibrate adaptsim-tcp adaptsim-live adaptsim-testbed adaptsim-traffic)
if(TARGET adaptsim-nccl)  # CUDA and NCCL builds
  list(APPEND _adaptsim_tools adaptsim-nccl)
endif()
if(TARGET adaptsim-mpi)  # builds that found MPI
  list(APPEND _adaptsim_tools adaptsim-mpi)
endif()
install(TARGETS ${_adaptsim_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The data the tools and scenarios read: scenarios, topologies, device profiles and calibration
# profiles (traces/), the plot scripts (simctl compare draws with plots/compare.py) and their data.
install(DIRECTORY scenarios topologies traces plots
        DESTINATION ${ADAPTSIM_INSTALL_DATADIR}
        PATTERN "__pycache__" EXCLUDE
        PATTERN "*.pyc" EXCLUDE)

install(FILES scripts/completion/simctl.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME simctl)
