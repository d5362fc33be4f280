# cmake -DEXE=<program> -DARGS="<arguments>" -DEXPECTED=<exit code> -DPATTERN=<regex> -P this
# Runs the program and fails unless it exits with EXPECTED and its stderr matches PATTERN: CTest
# alone can only tell zero from non-zero, and "exit code 2 with one clear line" is the contract.
separate_arguments(_args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND "${EXE}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                ERROR_VARIABLE _err)
if(NOT _rc STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "expected exit code ${EXPECTED}, got ${_rc}\nstdout: ${_out}\nstderr: ${_err}")
endif()
if(NOT _err MATCHES "${PATTERN}")
  message(FATAL_ERROR "stderr does not match \"${PATTERN}\": ${_err}")
endif()
string(REGEX MATCHALL "\n" _newlines "${_err}")
list(LENGTH _newlines _lines)
if(NOT _lines EQUAL 1)
  message(FATAL_ERROR "expected one line on stderr, got ${_lines}: ${_err}")
endif()
