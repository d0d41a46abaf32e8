#!/usr/bin/env bash
# bench/gpu/gpu_steps.sh's accounting, without a GPU: a row that fails and then passes on its retry
# counts as passed and keeps both logs; one that fails twice is one failure naming both logs; a
# graph row's retry runs under the environment RETRY_ENV derives from the first log; a step
# past the budget is skipped and counted; a row that passes at once leaves no retry log.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
START=$(date +%s) BUDGET_S=600
source "$ROOT/bench/gpu/gpu_steps.sh"

problems=0
expect() {  # expect DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if ! "$@"; then
    echo "FAILED: $what"
    problems=$((problems + 1))
  fi
}

# Fails on its first call, passes on the next (a counter file), printing a JSON line when it passes.
flaky() {
  local counter=$work/$1.count
  if [[ ! -e $counter ]]; then
    touch "$counter"
    echo "first try: a transient failure"
    return 1
  fi
  echo '{"ok": true}'
}

retried_step "flaky row" 30 "$work/flaky.log" bash -c "$(declare -f flaky); work=$work; flaky flaky" >/dev/null
expect "a row that passes on its retry succeeds" test $? -eq 0
expect "it is not a failure" test ${#FAILURES[@]} -eq 0
expect "it is listed as passed on its retry" test ${#RETRIED[@]} -eq 1
expect "its first log keeps the first try" grep -q "transient failure" "$work/flaky.log"
expect "its retry has a log of its own" grep -q '"ok": true' "$work/flaky.retry.log"
expect "STEP_LOG names the retry's log" test "$STEP_LOG" = "$work/flaky.retry.log"

retried_step "steady row" 30 "$work/steady.log" echo fine >/dev/null
expect "a row that passes at once succeeds" test $? -eq 0
expect "it leaves no retry log" test ! -e "$work/steady.retry.log"
expect "it is not listed as retried" test ${#RETRIED[@]} -eq 1

retried_step "broken row" 30 "$work/broken.log" false >/dev/null
expect "a row that fails twice fails" test $? -ne 0
expect "it is one failure" test ${#FAILURES[@]} -eq 1
expect "the failure names both logs" bash -c "[[ '${FAILURES[0]}' == *broken.log*broken.retry.log* ]]"

safe_env() { grep -q "recording a CUDA graph" "$1" && echo "DUET_CONV_IM2COL=1"; }
graph_row() { echo "recording a CUDA graph failed"; [[ ${DUET_CONV_IM2COL:-} == 1 ]]; }
RETRY_ENV=safe_env retried_step "graph row" 30 "$work/graph.log" bash -c "$(declare -f graph_row); graph_row" \
  >"$work/graph.out"
expect "a graph row passes on its retry with the capture-safe environment" test $? -eq 0
expect "the retry is named with that environment" grep -q "graph row with DUET_CONV_IM2COL=1 (retry)" "$work/graph.out"
expect "the retried rows are two" test ${#RETRIED[@]} -eq 2

BUDGET_S=$(($(date +%s) - START + 12))  # 2 s left after the table's reserve
retried_step "late row" 30 "$work/late.log" echo never >/dev/null
expect "a row past the budget fails" test $? -ne 0
expect "it is skipped, not run" test ! -e "$work/late.log"
expect "without a retry" test ! -e "$work/late.retry.log"
expect "and counted once as skipped" bash -c "[[ '${FAILURES[1]}' == 'late row (skipped: no time left)' ]]"

note "left out on purpose" >/dev/null
print_accounting >"$work/summary.txt"
expect "the summary lists the failures" grep -q "^  - broken row (exit 1" "$work/summary.txt"
expect "the summary lists the rows passed on their retry" grep -q "^Passed on their retry" "$work/summary.txt"
expect "the summary lists the notes" grep -q "^  - left out on purpose" "$work/summary.txt"

((problems == 0)) && echo "gpu_steps: all checks passed"
exit $((problems ? 1 : 0))
