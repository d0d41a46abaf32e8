# Compiles SOURCE (syntax only) with COMPILER and the include folder INCLUDE, and passes only
# when the compilation fails with MESSAGE once for each line of SOURCE marked "// bad:", and with
# no other error: a wrong forward must cost the user one sentence, not pages of templates.
#   cmake -DCOMPILER=... -DINCLUDE=... -DSOURCE=... -DMESSAGE=... -P expect_compile_error.cmake
execute_process(COMMAND ${COMPILER} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but every module marked 'bad:' should have stopped it")
endif()
file(STRINGS ${SOURCE} bad_lines REGEX "// bad:")
list(LENGTH bad_lines expected)
string(REGEX MATCHALL "error: [^\n]*" errors "${output}")
list(LENGTH errors error_count)
set(wanted_count 0)
foreach(error IN LISTS errors)
  string(FIND "${error}" "${MESSAGE}" at)
  if(at GREATER -1)
    math(EXPR wanted_count "${wanted_count} + 1")
  endif()
endforeach()
if(NOT wanted_count EQUAL expected OR NOT error_count EQUAL expected)
  message(FATAL_ERROR "expected ${expected} errors, each saying \"${MESSAGE}\"; the compiler gave ${error_count} "
                      "errors, ${wanted_count} of them so:\n${output}")
endif()
message(STATUS "${expected} wrong forwards, ${expected} errors, each: ${MESSAGE}")
