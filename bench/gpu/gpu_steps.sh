# shellcheck shell=bash
# bench/gpu/gpu.sh's steps and their accounting, sourced by gpu.sh and by its CPU test
# (tests/bench/test_gpu_steps.sh). Needs START (the run's start, in epoch seconds) and BUDGET_S.
#
# Every step runs under a time limit: its own cap, or what is left of the budget less a reserve
# for the table, whichever is smaller. What went wrong is kept in three lists, printed by
# print_accounting:
#   FAILURES  steps that failed, timed out or were skipped for time (the exit status is 1);
#   RETRIED   rows that failed once and passed on their retry: they count as passed, and each
#             retry has a log of its own beside the first try's (NAME.retry.log);
#   NOTES     what was left out on purpose, once, with the reason (e.g. no PyTorch with CUDA).
FAILURES=()
RETRIED=()
NOTES=()
STEP_RC=0 STEP_CAP=0

remaining() { echo $((BUDGET_S - ($(date +%s) - START))); }

# The reason the last run_step failed, in words.
step_failure() {
  if ((STEP_RC == -1)); then
    echo "skipped: no time left"
  elif ((STEP_RC == 124 || STEP_RC == 137)); then
    echo "timed out after ${STEP_CAP}s"
  else
    echo "exit $STEP_RC"
  fi
}

# run_step NAME CAP LOG COMMAND...: runs COMMAND with its output in LOG, under the time limit;
# prints how it went and sets STEP_RC and STEP_CAP. Records nothing.
run_step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$(($(remaining) - 10))
  ((left < cap)) && cap=$left
  STEP_CAP=$cap
  if ((cap < 5)); then
    echo "== $name: skipped, the time budget is spent"
    STEP_RC=-1
    return 1
  fi
  echo "== $name (at most ${cap}s; log: $log)"
  local begin
  begin=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" >"$log" 2>&1
  STEP_RC=$?
  if ((STEP_RC == 0)); then
    echo "   ok in $(($(date +%s) - begin))s"
    return 0
  fi
  echo "   FAILED ($(step_failure)) after $(($(date +%s) - begin))s; last lines of $log:"
  tail -n 15 "$log" | sed 's/^/   | /'
  return 1
}

# step NAME CAP LOG COMMAND...: run_step, recording a failure.
step() {
  local name=$1
  run_step "$@" && return 0
  FAILURES+=("$name ($(step_failure))")
  return 1
}

# The log of a step's retry: NAME.log -> NAME.retry.log.
retry_log() { echo "${1%.log}.retry.log"; }

# retried_step NAME CAP LOG COMMAND...: a step with one retry when it fails. The retry writes
# $(retry_log LOG), so the first try's log survives. RETRY_ENV, if set, names a function that
# reads the first try's log and prints VAR=value words to run the retry under (gpu.sh: the
# capture-safe paths a failed graph recording names). A pass on the retry counts as passed and
# is listed in RETRIED; two failures are one failure. Sets STEP_LOG to the log of the try that
# counts.
retried_step() {
  local name=$1 cap=$2 log=$3
  shift 3
  STEP_LOG=$log
  run_step "$name" "$cap" "$log" "$@" && return 0
  ((STEP_RC == -1)) && { FAILURES+=("$name ($(step_failure))"); return 1; }
  local first again env_words=() retry=$name
  first=$(step_failure)
  again=$(retry_log "$log")
  if [[ -n ${RETRY_ENV:-} ]]; then
    read -ra env_words <<<"$("$RETRY_ENV" "$log")"
    ((${#env_words[@]})) && retry="$name with ${env_words[*]}"
  fi
  STEP_LOG=$again
  if run_step "$retry (retry)" "$cap" "$again" env "${env_words[@]}" "$@"; then
    RETRIED+=("$retry: passed on its retry after its first try failed ($first; logs: $log, $again)")
    return 0
  fi
  FAILURES+=("$name ($first, and $(step_failure) on its retry; logs: $log, $again)")
  return 1
}

# note TEXT: something left out on purpose, said once.
note() {
  NOTES+=("$1")
  echo "   note: $1"
}

# The summary at the end: failures, rows that passed on their retry, notes.
print_accounting() {
  if ((${#FAILURES[@]})); then
    echo "Failed or skipped steps:"
    printf '  - %s\n' "${FAILURES[@]}"
  else
    echo "Every step succeeded."
  fi
  if ((${#RETRIED[@]})); then
    echo "Passed on their retry (counted as passed):"
    printf '  - %s\n' "${RETRIED[@]}"
  fi
  if ((${#NOTES[@]})); then
    echo "Notes:"
    printf '  - %s\n' "${NOTES[@]}"
  fi
}
