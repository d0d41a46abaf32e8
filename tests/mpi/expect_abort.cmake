# Runs COMMAND (a |-separated list) and passes only when it exits non-zero and its output
# matches EXPECT: ctest's PASS_REGULAR_EXPRESSION alone would ignore the exit status.
#   cmake -DCOMMAND="mpirun|-np|2|prog|--dead-rank" -DEXPECT="regex" -P expect_abort.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(status EQUAL 0)
  message(FATAL_ERROR "expected the job to fail, but it exited with status 0")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the job failed (status ${status}) without the expected message: ${EXPECT}")
endif()
message("the job failed as expected (status ${status})")
