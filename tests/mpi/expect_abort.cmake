# Runs COMMAND (a |-separated list) and passes only when it exits non-zero and its output
# matches EXPECT: ctest's PASS_REGULAR_EXPRESSION alone would ignore the exit status. With
# WITHIN (seconds), the job must also have ended by then.
#   cmake -DCOMMAND="mpirun|-np|2|prog|--dead-rank" -DEXPECT="regex" [-DWITHIN=15] -P expect_abort.cmake
string(REPLACE "|" ";" command "${COMMAND}")
set(limit)
if(WITHIN)
  set(limit TIMEOUT ${WITHIN})
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err ${limit})
message("${out}${err}")
if(NOT status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself within ${WITHIN} s: ${status}")
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "expected the job to fail, but it exited with status 0")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the job failed (status ${status}) without the expected message: ${EXPECT}")
endif()
message("the job failed as expected (status ${status})")
