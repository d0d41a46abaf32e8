#!/usr/bin/env bash
# `duet train` from the outside: bad input exits 2 with a message that names the problem,
# and a short real run writes its checkpoint, metrics and plot, and resumes from them.
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" train

expect_bad "vgg not in" --model vgg
expect_bad "expected a positive integer from 1 to 9223372036854775807, got '0'" --batch-size 0
expect_bad "expected a number >= 0, got '-1'" --lr -1
expect_bad "dataset-fashion-mnist" --data-dir "$work/nowhere"
expect_bad "not expected" --no-such-flag
expect_bad "--amsgrad is an Adam option: give --optimizer adam" --amsgrad
expect_bad "--grad-compression: unknown gradient compression 'half': expected none, fp16 or bf16" --grad-compression half
expect_bad "--grad-compression compresses ddp's gradient all-reduce: it needs --strategy ddp" --grad-compression bf16
expect_bad "--comm mpi needs --strategy ddp" --comm mpi
expect_bad "--grad-compression runs on the local communicators only, not under --comm mpi" --strategy ddp --comm mpi --grad-compression bf16
expect_bad "start more processes with mpirun" --strategy ddp --comm mpi --devices 2
expect_bad "--device-ids lists a device twice" --strategy dp --device-ids 1,1
expect_bad "give --devices or --device-ids, not both" --strategy dp --devices 2 --device-ids 0,1
expect_bad "--cuda-graph needs --device cuda" --cuda-graph
expect_bad "it needs --strategy single" --cuda-graph --device cuda --strategy dp --devices 2
expect_bad "Adam's step cannot be replayed" --cuda-graph --device cuda --optimizer adam
expect_bad "use one or the other" --cuda-graph --device cuda --profile
expect_bad "not started by mpirun, so it would train alone" --strategy ddp --comm mpi
# The device limits agree with --device's, and the messages name them.
expect_bad "--devices 65 from cpu:0 would run to cpu:64, but duet has 64 logical CPU devices, cpu:0 to cpu:63" \
  --strategy dp --devices 65
expect_bad "--device-ids: cpu:99 does not exist: duet has 64 logical CPU devices, cpu:0 to cpu:63" \
  --strategy dp --device-ids 0,99
expect_bad "invalid device index in 'cpu:64': expected 0..63" --device cpu:64
expect_bad "expected a number of seconds from 0.001 to 1000000, got '0'" --comm-timeout 0

# Every output path is checked before any work starts: the data is never loaded, and the
# message names the flag, the path and the reason.
expect_no_work() {
  expect_bad "$@"
  [ ! -s "$work/out" ] || fail "duet train ${*:2} started work before failing: $(cat "$work/out")"
}
expect_no_work "--save $work/nowhere/ckpt: folder $work/nowhere does not exist" --save "$work/nowhere/ckpt"
expect_no_work "--metrics $work: is a folder, not a file" --metrics "$work"
expect_no_work "--plot $work/nowhere/c.png: folder $work/nowhere does not exist" --plot "$work/nowhere/c.png"
without_gnuplot expect_no_work "--plot: gnuplot is not on the PATH; install Debian's gnuplot-nox" --plot "$work/c.png"
expect_bad "--sync-bn synchronises BatchNorm across ddp's ranks" --sync-bn --strategy dp --devices 2
expect_bad "expected a positive integer from 1 to 9223372036854775807, got '0'" --accumulate 0

mkdir -p "$work/corrupt"
printf 'junk' > "$work/corrupt/train-images-idx3-ubyte"
for f in /usr/share/datasets/fashion-mnist/{train-labels,t10k-images,t10k-labels}*; do cp "$f" "$work/corrupt/"; done
expect_bad "bad magic number" --data-dir "$work/corrupt"

# A real run: 1 epoch of mlp, then resume to epoch 2.
if ! "$duet" train --model mlp --lr 0.2 --epochs 1 --save "$work/ckpt.safetensors" \
     --metrics "$work/m.jsonl" --plot "$work/curves.png" > "$work/run1" 2>&1; then
  fail "first run: $(cat "$work/run1")"
fi
cp "$work/ckpt.safetensors" "$work/epoch1.safetensors"
# A deliberate change goes through with a note; the rest comes from the checkpoint.
if ! "$duet" train --lr 0.1 --epochs 2 --resume "$work/ckpt.safetensors" \
     --metrics "$work/m.jsonl" > "$work/run2" 2>&1 || ! grep -q "resumed from" "$work/run2" \
     || ! grep -q "^note: --lr 0.1 instead of the checkpoint's 0.2$" "$work/run2" \
     || ! grep -q "^training mlp .* sgd lr 0.1, epochs 2..2$" "$work/run2" \
     || ! grep -qE "^test acc 0\.[0-9]+, [0-9.]+ sec/epoch on \[cpu:0\]$" "$work/run2"; then
  fail "resumed run: $(cat "$work/run2")"
fi
# Another model or optimizer is refused, naming both; the model check comes before any tensor's.
expect_bad "epoch1.safetensors: checkpoint of model 'mlp', but --model is 'lenet'; leave --model out" \
  --model lenet --resume "$work/epoch1.safetensors"
expect_bad "epoch1.safetensors: checkpoint of optimizer 'sgd', but --optimizer is 'adam'" \
  --optimizer adam --resume "$work/epoch1.safetensors"
# A checkpoint from before duet recorded its run's settings (here, two of them renamed away)
# still loads, saying what it assumes.
sed 's/"lr":"/"xr":"/; s/"optimizer":"/"xptimizer":"/; s/"history":"/"xistory":"/' "$work/epoch1.safetensors" \
  > "$work/old.safetensors"
if ! "$duet" train --resume "$work/old.safetensors" > "$work/old" 2>&1 \
   || ! grep -q "^note: .*old.safetensors does not record --optimizer, --lr (it predates duet recording them): assuming --optimizer sgd, --lr 0.2$" "$work/old" \
   || ! grep -q "^nothing to do: the checkpoint already has 1 of 1 epochs$" "$work/old" \
   || ! cp "$work/m.jsonl" "$work/old.jsonl" \
   || ! "$duet" train --resume "$work/old.safetensors" --epochs 2 --metrics "$work/old.jsonl" --plot "$work/old.png" \
        > "$work/old2" 2>&1 \
   || ! grep -q "^wrote $work/old.png (the whole run, with the epochs before --resume)$" "$work/old2"; then
  fail "old checkpoint: $(cat "$work/old" "$work/old2")"
else
  echo "ok: old checkpoint: $(head -n 1 "$work/old")"
fi
[ "$(wc -l < "$work/m.jsonl")" -eq 2 ] || fail "metrics should have 2 lines"
# Each metrics line says which run it belongs to.
grep -q '"epoch":2,.*"lr":0.1,"model":"mlp","optimizer":"sgd",.*"seed":0,"strategy":"single"' "$work/m.jsonl" \
  && grep -q '"devices":"\[cpu:0\]"' "$work/m.jsonl" || fail "metrics lines lack the run's settings: $(cat "$work/m.jsonl")"

# A run that diverges without a NaN (mlp at lr 3 ends at 10% accuracy) overwrites NAME, but
# NAME.best keeps the best epoch; --plot draws the whole run, the epochs before --resume too.
cp "$work/epoch1.safetensors" "$work/d.safetensors"
cp "$work/ckpt.safetensors.best" "$work/d.safetensors.best"
if ! "$duet" train --resume "$work/d.safetensors" --lr 3 --epochs 2 --save "$work/d.safetensors" \
     --plot "$work/whole.png" > "$work/diverging" 2>&1 \
   || ! grep -q '"epochs_done":"2"' "$work/d.safetensors" \
   || ! grep -q '"epochs_done":"1"' "$work/d.safetensors.best" \
   || ! grep -qE "^best test acc 0\.[5-9][0-9]+ at epoch 1: .*d.safetensors.best$" "$work/diverging" \
   || ! grep -q "^wrote $work/whole.png (the whole run, with the epochs before --resume)$" "$work/diverging"; then
  fail "diverging run with --save: $(cat "$work/diverging")"
else
  echo "ok: a diverging run keeps its best epoch in .best: $(grep "^best" "$work/diverging")"
fi
# --profile: the phase and kernel tables come before the d2l-style last line.
if ! "$duet" train --model mlp --epochs 1 --profile > "$work/profile" 2>&1 \
     || ! grep -q "^training mlp .* sgd lr 0.2, epochs 1..1$" "$work/profile" \
     || ! grep -qE "^profile: 235 training steps, [0-9.]+ ms per step" "$work/profile" \
     || ! grep -qE "^matmul +5\.0 +[0-9.]+ +[0-9.]+$" "$work/profile" \
     || ! grep -qE "^\(outside the kernels\)" "$work/profile" \
     || ! tail -n 1 "$work/profile" | grep -qE "^test acc 0\.[0-9]+, [0-9.]+ sec/epoch on \[cpu:0\]$"; then
  fail "--profile run: $(cat "$work/profile")"
fi
# --accumulate 2: 235 batches make 118 optimizer steps, ddp all-reducing on every second one.
if ! "$duet" train --model mlp --lr 0.2 --epochs 1 --strategy ddp --devices 2 --accumulate 2 --profile \
     > "$work/accumulate" 2>&1 \
     || ! grep -q "batch 256 x 2 micro-batches" "$work/accumulate" \
     || ! grep -qE "^profile: 118 training steps" "$work/accumulate" \
     || ! tail -n 1 "$work/accumulate" | grep -qE "^test acc 0\.[5-9][0-9]*, [0-9.]+ sec/epoch on \[cpu:0, cpu:1\]$"; then
  fail "--accumulate run: $(cat "$work/accumulate")"
fi
[ -s "$work/curves.png" ] || fail "no plot written"

# A batch larger than the training set, and more threads than the machine has, are clamped with
# a note, and the header prints what is used.
if ! "$duet" train --model mlp --epochs 1 --batch-size 10000000 --threads 1000 > "$work/clamped" 2>&1 \
   || ! grep -q "^note: --batch-size 10000000 is more than the 60000 training images; using 60000$" "$work/clamped" \
   || ! grep -qE "^note: --threads 1000 is more than this machine's [0-9]+ hardware threads; using [0-9]+$" "$work/clamped" \
   || ! grep -q "^training mlp .*: 60000 images, batch 60000, sgd lr 0.2, epochs 1..1$" "$work/clamped"; then
  fail "clamped run: $(cat "$work/clamped")"
else
  echo "ok: clamped run: $(grep -c '^note' "$work/clamped") notes"
fi

# A diverging run stops with exit 1 and names the epoch and step.
"$duet" train --model mlp --lr 1e30 --epochs 1 > "$work/out" 2> "$work/err"
status=$?
if [ $status -ne 1 ] || ! grep -qE "loss is (nan|inf|-inf) at epoch 1, step [0-9]+" "$work/err"; then
  fail "diverging run -> exit $status, stderr: $(tail -n 1 "$work/err")"
else
  echo "ok: diverging run -> exit 1: $(tail -n 1 "$work/err")"
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
