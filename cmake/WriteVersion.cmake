# Writes <adaptsim/version.h> with the commit the sources are at now, and "-dirty" when tracked
# files differ from it. Run at configure time and again at every build (the adaptsim_version
# target): a commit made after configuring must not leave an older one in run manifests and
# calibration profiles. configure_file rewrites the header only when its text changes, so an
# unchanged commit recompiles nothing.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DPROJECT_VERSION=... -P cmake/WriteVersion.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE ADAPTSIM_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ADAPTSIM_GIT_COMMIT)
  set(ADAPTSIM_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
    WORKING_DIRECTORY ${SOURCE_DIR}
    OUTPUT_VARIABLE _changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_changes)
    string(APPEND ADAPTSIM_GIT_COMMIT "-dirty")
  endif()
endif()
set(ADAPTSIM_ROOT "${SOURCE_DIR}")
configure_file(${SOURCE_DIR}/cmake/version.h.in ${OUTPUT} @ONLY)
