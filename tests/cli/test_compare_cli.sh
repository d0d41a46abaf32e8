#!/usr/bin/env bash
# `duet compare` from the outside: bad input exits 2 naming the problem, and a short run over
# 1 and 2 devices prints the table and the predictions and writes every file it promises.
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" compare

expect_bad "unknown strategy 'pipeline': expected one of single, dp" --strategies single,pipeline
expect_bad "expected a positive integer from 1 to 9223372036854775807, got '0'" --devices 1,0
expect_bad "add single to --strategies" --strategies dp,ddp --predict
expect_bad "--devices 65 from cpu:0 would run to cpu:64, but duet has 64 logical CPU devices" --devices 2,65
expect_bad "dataset-fashion-mnist" --data-dir "$work/nowhere"
# Output paths fail before the first strategy runs.
touch "$work/file"
expect_bad "--out $work/file/results: cannot create the folder" --out "$work/file/results"
expect_bad "--trace $work/nowhere/trace.json: folder $work/nowhere does not exist" --trace "$work/nowhere/trace.json" \
  --out "$work/results"
without_gnuplot expect_bad "the plots: gnuplot is not on the PATH; install Debian's gnuplot-nox package (make installs it), or pass --no-plots" --out "$work/results"
expect_bad "expected a number of seconds from 0.001 to 1000000, got '-1'" --comm-timeout -1
expect_bad "expected a size in MiB from 1e-06 to 1048576, got '0'" --bucket-mb 0
expect_bad "no device count fits the cores of this machine" --devices 2 --cores-per-device 100000
expect_bad "this process was not started by mpirun" --comm mpi --strategies single,ddp
expect_bad "--comm mpi runs the ddp variants across processes" --comm mpi --strategies single,dp
expect_bad "drop ddp-d2l from --strategies" --comm mpi --strategies single,ddp-d2l
expect_bad "link 'infiniband': expected none, nvlink, pcie, pcie-no-p2p, 10gbe, 1gbe or ALPHA_US,BETA_GBPS" --link infiniband
expect_bad "--link emulates links between the devices of one process" --comm mpi --strategies single,ddp --link pcie
expect_bad "--predict needs the measured single-device compute: add single to --strategies" --predict --strategies dp,ddp
expect_bad "--grad-compression: unknown gradient compression 'fp8': expected none, fp16 or bf16" --grad-compression fp8
expect_bad "drop ddp-d2l from --strategies" --strategies single,ddp-d2l --grad-compression fp16

# One device more than this machine has cores, a core each: skipped, with a message (a machine
# of 63 cores or more cannot show it: duet has 64 logical CPU devices).
cores=$(nproc)
skip=$(( cores + 1 ))
[ $skip -le 63 ] || skip=2
if ! "$duet" compare --model mlp --devices 1,2,$skip --cores-per-device 1 --steps 3 --warmup 1 --batch-size 64 \
     --predict --bucket-mb 0.05 --trace "$work/trace.json" --out "$work/results" > "$work/run" 2> "$work/progress"; then
  fail "short run: $(cat "$work/run" "$work/progress")"
fi
for strategy in single dp ddp ddp-unbucketed; do
  grep -qE "^$strategy +[12] +[0-9]+ " "$work/run" || fail "no $strategy row in: $(cat "$work/run")"
done
grep -q "predicted on GPUs" "$work/run" || fail "no GPU predictions printed"
if [ $skip -gt 2 ]; then
  grep -q "skipping $skip devices: $skip x 1 core(s) need $skip cores, and this process may use $cores" "$work/progress" \
    || fail "no message for the device count skipped: $(cat "$work/progress")"
fi
grep -qE "^note: 1 core\(s\) per device, pinned: cpu:0 on core [0-9]+, cpu:1 on core [0-9]+" "$work/run" \
  || fail "the devices were not pinned: $(cat "$work/run")"
grep -qE "^ +local-ring all-reduce, 2 ranks +alpha +[0-9.]+ us +beta +[0-9.]+ GB/s" "$work/run" \
  || fail "no calibrated all-reduce in: $(cat "$work/run")"
grep -qE "^ +replica threads, 2 devices +[0-9.]+ us per step" "$work/run" \
  || fail "no calibrated thread start in: $(cat "$work/run")"
# Every measured run, its prediction beside it.
for strategy in single dp ddp ddp-unbucketed; do
  grep -qE "^$strategy +[12] +64 \| +[0-9.]+ +[0-9.]+ +[-+][0-9.]+%" "$work/run" \
    || fail "no predicted step beside $strategy's in: $(cat "$work/run")"
  # The run's own forward per row over single's, then the compute slowdown measured just before
  # the run, last (single's are 1 by definition).
  grep -qE "^$strategy +[12] +64 \|.*\| +[0-9]+\.[0-9]{2}x \| +[0-9]+\.[0-9]{2}x$" "$work/run" \
    || fail "no in-run forward and compute slowdown at the end of $strategy's row in: $(cat "$work/run")"
done
grep -q "^per-step check: every strategy's every checked step within 8 ulps" "$work/run" \
  || fail "no passing per-step check in: $(cat "$work/run")"
grep -q "^per-step check: on each run's first 4 steps; its timed steps come after them, unchecked" "$work/run" \
  || fail "the check line does not say which steps it checked: $(cat "$work/run")"
grep -qE "^ddp on 2: [0-9]+% of the all-reduced bytes done before backward's last gradient \(predicted [0-9]+%\); all-reduce [0-9.]+ ms per step and rank, [0-9.]+ ms of it exposed after backward" \
  "$work/run" || fail "no ddp overlap line in: $(cat "$work/run")"
grep -qE "^ddp on 1:" "$work/run" && fail "an overlap figure for 1 device: $(cat "$work/run")"
grep -q "^per-step check: every ddp replica equal to rank 0's after every checked step (bit for bit)" "$work/run" \
  || fail "no replica check in: $(cat "$work/run")"
grep -q "^duet compare: mlp, .*, link none (no emulation" "$work/run" || fail "the header does not name the link"
grep -qE "^ddp +8 +- +\|" "$work/run" || fail "no prediction for 8 devices"
for file in results/results.json results/results.csv results/phases.png results/throughput.png results/speedup.png \
            trace.json; do
  [ -s "$work/$file" ] || fail "$file was not written"
done
# 1 single run + 3 strategies x 2 device counts, and a header.
[ "$(wc -l < "$work/results/results.csv")" -eq 8 ] || fail "results.csv should have 8 lines"
grep -q '"traceEvents"' "$work/trace.json" || fail "trace.json is not a trace"
grep -q '"images_per_second"' "$work/results/results.json" || fail "results.json lacks images_per_second"
grep -q '"max_check_ulps": [0-9]' "$work/results/results.json" || fail "results.json lacks the per-step check"
grep -q '"allreduce_hidden_share": [0-9]' "$work/results/results.json" || fail "results.json lacks the overlap"
grep -q '"replicas_equal": true' "$work/results/results.json" || fail "results.json lacks the replica check"
grep -q '"link": {' "$work/results/results.json" || fail "results.json does not name the link"
grep -q '"predicted_ms": [0-9]' "$work/results/results.json" || fail "results.json lacks the predicted step"
grep -q '"alpha_us"' "$work/results/results.json" || fail "results.json lacks the calibration"
grep -q '"compute_slowdown": [0-9]' "$work/results/results.json" || fail "results.json lacks the compute slowdown"
grep -q '"forward_slowdown": [0-9]' "$work/results/results.json" || fail "results.json lacks the in-run forward slowdown"
grep -q '"replica_threads_ms"' "$work/results/results.json" || fail "results.json lacks the thread start"
grep -q '"cpu:1 comm"' "$work/trace.json" || fail "trace.json has no communication track"
grep -q '"bucket 1"' "$work/trace.json" || fail "trace.json shows no second bucket (--bucket-mb 0.05)"

# --no-check: the check column says "off".
if ! "$duet" compare --model mlp --devices 2 --steps 1 --warmup 0 --batch-size 32 --strategies single,ddp --no-check \
     --no-plots --out "$work/nocheck" > "$work/run2" 2>&1; then
  fail "--no-check run: $(cat "$work/run2")"
fi
grep -qE "^ddp +2 .* off +" "$work/run2" || fail "--no-check still checked: $(cat "$work/run2")"

# An emulated link: the header and results.json name it, and the calibration runs over it.
if ! "$duet" compare --model mlp --devices 2 --cores-per-device 1 --steps 2 --warmup 1 --batch-size 64 \
     --strategies single,dp,ddp --link 1gbe --no-plots --out "$work/link" > "$work/run5" 2>&1; then
  fail "--link 1gbe run: $(cat "$work/run5")"
fi
grep -q "^duet compare: mlp, .*, link 1gbe (emulated: 50 us + bytes / 0.117 GB/s per message)" "$work/run5" \
  || fail "the header does not name the emulated link: $(cat "$work/run5")"
grep -qE "^ +local-ring all-reduce, 2 ranks over 1gbe +alpha" "$work/run5" \
  || fail "no all-reduce calibrated over the link in: $(cat "$work/run5")"
grep -q '"name": "1gbe"' "$work/link/results.json" || fail "results.json does not name the emulated link"

# ddp-d2l beside the others over an emulated PCIe link: its check passes, and the trace shows
# one collective per parameter tensor (mlp has 4) in each of its 6 steps (3 checked, then 3
# timed). Two repeats of the sweep: both run, the output says each row is a median and how far
# its repeats were apart, and the trace is one repeat's.
if ! "$duet" compare --model mlp --devices 2 --cores-per-device 1 --steps 2 --warmup 1 --batch-size 64 \
     --strategies single,dp,ddp,ddp-d2l --link pcie --repeats 2 --no-plots --out "$work/d2l" \
     --trace "$work/d2l.json" > "$work/run6" 2>&1; then
  fail "ddp-d2l run: $(cat "$work/run6")"
fi
grep -q "^\[8/8\] ddp-d2l on 2 device(s)" "$work/run6" || fail "--repeats 2 did not run the sweep twice: $(cat "$work/run6")"
grep -q "^repeats: the sweep ran 2 times" "$work/run6" || fail "no repeats line in: $(cat "$work/run6")"
grep -q '"repeats": 2' "$work/d2l/results.json" || fail "results.json does not hold the repeats"
grep -qE "^ddp +2 +64 \| +[0-9.]+ +[0-9.]+ +[-+][0-9.]+% +[0-9]+% \|" "$work/run6" \
  || fail "no spread of the repeats beside ddp's prediction in: $(cat "$work/run6")"
python3 -c 'import json, sys
assert all(len(r["repeat_ms_per_step"]) == 2 for r in json.load(open(sys.argv[1]))["results"])' "$work/d2l/results.json" \
  || fail "results.json does not hold both repeats' step times for every run"
grep -qE "^ddp-d2l +2 +[0-9]+ " "$work/run6" || fail "no ddp-d2l row in: $(cat "$work/run6")"
grep -q "^per-step check: every strategy's every checked step within 8 ulps" "$work/run6" \
  || fail "ddp-d2l failed the per-step check: $(cat "$work/run6")"
d2l_collectives=$(python3 -c '
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
pid = next(e["pid"] for e in events if e["name"] == "process_name" and e["args"]["name"].startswith("ddp-d2l "))
names = collections.Counter(e["name"] for e in events if e["pid"] == pid and e["ph"] == "X" and e["name"].startswith("parameter "))
print(" ".join(f"{n}={c}" for n, c in sorted(names.items())))' "$work/d2l.json")
[ "$d2l_collectives" = "parameter 0=6 parameter 1=6 parameter 2=6 parameter 3=6" ] \
  || fail "ddp-d2l's trace should show one collective per parameter tensor and step, not: $d2l_collectives"

# bf16 gradient compression halves ddp's bytes per step against the short run above (the same
# model, batch and buckets), and ddp still takes the per-step check's compressed step.
if ! "$duet" compare --model mlp --devices 2 --strategies single,ddp --steps 2 --warmup 1 --batch-size 64 \
     --bucket-mb 0.05 --grad-compression bf16 > "$work/bf16" 2>&1; then
  fail "--grad-compression bf16 run: $(cat "$work/bf16")"
fi
# The measured table's ddp row (the cost model's table below it has one too).
mb_per_step() { awk -F'|' '/^ddp +2 /{split($3, f, " "); print f[1]; exit}' "$1"; }
python3 -c 'import sys; f32, bf16 = map(float, sys.argv[1:]); sys.exit(abs(bf16 / f32 - 0.5) > 0.01)' \
  "$(mb_per_step "$work/run")" "$(mb_per_step "$work/bf16")" \
  || fail "bf16 did not halve ddp's MB/step: $(mb_per_step "$work/run") then $(mb_per_step "$work/bf16")"
grep -q "^per-step check: every strategy's every checked step within 8 ulps" "$work/bf16" \
  || fail "ddp with bf16 compression failed the per-step check: $(cat "$work/bf16")"
grep -q "^gradient compression: ddp all-reduces its gradients as bf16, half the bytes" "$work/bf16" \
  || fail "no gradient compression line in: $(cat "$work/bf16")"

# A BatchNorm model fails the check under dp, rightly, and the output says why.
if ! "$duet" compare --model resnet18 --devices 2 --steps 1 --warmup 0 --batch-size 8 --strategies single,dp \
     --no-plots --out "$work/batchnorm" > "$work/run3" 2>&1; then
  fail "resnet18 run: $(cat "$work/run3")"
fi
grep -q "^per-step check: NOT single-device training's step" "$work/run3" \
  || fail "dp with BatchNorm passed the per-step check: $(cat "$work/run3")"
grep -q "expected: resnet18 has BatchNorm" "$work/run3" || fail "no BatchNorm explanation in: $(cat "$work/run3")"

# ddp with SyncBatchNorm takes single-device training's step (BatchNorm2d's arithmetic on the
# global batch), and the output names what separates the two.
if ! "$duet" compare --model resnet18 --devices 2 --steps 1 --warmup 1 --batch-size 8 --strategies single,ddp \
     --sync-bn --no-plots --out "$work/syncbn" > "$work/run4" 2>&1; then
  fail "resnet18 --sync-bn run: $(cat "$work/run4")"
fi
grep -qE "^ddp +2 +[0-9]+ +[0-9.]+ \|" "$work/run4" || fail "no ddp row in the --sync-bn run: $(cat "$work/run4")"
grep -q "^per-step check: every strategy's every checked step within" "$work/run4" \
  || fail "ddp with SyncBatchNorm failed the per-step check: $(cat "$work/run4")"
grep -q "resnet18 has BatchNorm: with --sync-bn ddp computes the global batch's statistics" "$work/run4" \
  || fail "no --sync-bn explanation in: $(cat "$work/run4")"

echo "$failures failure(s)"
[ $failures -eq 0 ]
