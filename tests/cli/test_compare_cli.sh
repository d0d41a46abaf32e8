#!/usr/bin/env bash
# `duet compare` from the outside: bad input exits 2 naming the problem, and a short run over
# 1 and 2 devices prints the table and the predictions and writes every file it promises.
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" compare

expect_bad "pipeline not in" --strategies single,pipeline
expect_bad "expected a positive integer, got '0'" --devices 1,0
expect_bad "add single to --strategies" --strategies dp,ddp --predict
expect_bad "--devices 65 from cpu:0 would run to cpu:64, but duet has 64 logical CPU devices" --devices 2,65
expect_bad "dataset-fashion-mnist" --data-dir "$work/nowhere"
# Output paths fail before the first strategy runs.
touch "$work/file"
expect_bad "--out $work/file/results: cannot create the folder" --out "$work/file/results"
expect_bad "--trace $work/nowhere/trace.json: folder $work/nowhere does not exist" --trace "$work/nowhere/trace.json" \
  --out "$work/results"
without_gnuplot expect_bad "the plots: gnuplot is not on the PATH; install Debian's gnuplot-nox package (make installs it), or pass --no-plots" --out "$work/results"
expect_bad "expected a number of seconds >= 0.001, got '-1'" --comm-timeout -1

if ! "$duet" compare --model mlp --devices 1,2 --steps 3 --warmup 1 --batch-size 64 --predict \
     --trace "$work/trace.json" --out "$work/results" > "$work/run" 2> "$work/progress"; then
  fail "short run: $(cat "$work/run" "$work/progress")"
fi
for strategy in single dp ddp ddp-unbucketed; do
  grep -qE "^$strategy +[12] +[0-9]+ " "$work/run" || fail "no $strategy row in: $(cat "$work/run")"
done
grep -q "cost model (alpha-beta)" "$work/run" || fail "no predictions printed"
grep -qE "^rounding floor: .* ends diff@1 [0-9.e+-]+, diff@end [0-9.e+-]+ from single" "$work/run" \
  || fail "no rounding floor line in: $(cat "$work/run")"
grep -qE "^ddp +8 +- +\|" "$work/run" || fail "no prediction for 8 devices"
for file in results/results.json results/results.csv results/phases.png results/throughput.png trace.json; do
  [ -s "$work/$file" ] || fail "$file was not written"
done
# 1 single run + 3 strategies x 2 device counts, and a header.
[ "$(wc -l < "$work/results/results.csv")" -eq 8 ] || fail "results.csv should have 8 lines"
grep -q '"traceEvents"' "$work/trace.json" || fail "trace.json is not a trace"
grep -q '"images_per_second"' "$work/results/results.json" || fail "results.json lacks images_per_second"
grep -q '"rounding_floor": {' "$work/results/results.json" || fail "results.json lacks the rounding floor"

echo "$failures failure(s)"
[ $failures -eq 0 ]
