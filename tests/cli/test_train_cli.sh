#!/usr/bin/env bash
# `duet train` from the outside: bad input exits 2 with a message that names the problem,
# and a short real run writes its checkpoint, metrics and plot, and resumes from them.
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" train

expect_bad "vgg not in" --model vgg
expect_bad "expected a positive integer, got '0'" --batch-size 0
expect_bad "expected a number >= 0, got '-1'" --lr -1
expect_bad "dataset-fashion-mnist" --data-dir "$work/nowhere"
expect_bad "not expected" --no-such-flag
expect_bad "--comm mpi needs --strategy ddp" --comm mpi
expect_bad "start more processes with mpirun" --strategy ddp --comm mpi --devices 2
expect_bad "--device-ids lists a device twice" --strategy dp --device-ids 1,1
expect_bad "give --devices or --device-ids, not both" --strategy dp --devices 2 --device-ids 0,1
expect_bad "--cuda-graph needs --device cuda" --cuda-graph
expect_bad "it needs --strategy single" --cuda-graph --device cuda --strategy dp --devices 2
expect_bad "Adam's step cannot be replayed" --cuda-graph --device cuda --optimizer adam
expect_bad "use one or the other" --cuda-graph --device cuda --profile
expect_bad "--sync-bn synchronises BatchNorm across ddp's ranks" --sync-bn --strategy dp --devices 2
expect_bad "expected a positive integer, got '0'" --accumulate 0

mkdir -p "$work/corrupt"
printf 'junk' > "$work/corrupt/train-images-idx3-ubyte"
for f in /usr/share/datasets/fashion-mnist/{train-labels,t10k-images,t10k-labels}*; do cp "$f" "$work/corrupt/"; done
expect_bad "bad magic number" --data-dir "$work/corrupt"

# A real run: 1 epoch of mlp, then resume to epoch 2.
if ! "$duet" train --model mlp --lr 0.2 --epochs 1 --save "$work/ckpt.safetensors" \
     --metrics "$work/m.jsonl" --plot "$work/curves.png" > "$work/run1" 2>&1; then
  fail "first run: $(cat "$work/run1")"
fi
if ! "$duet" train --model mlp --lr 0.2 --epochs 2 --resume "$work/ckpt.safetensors" \
     --metrics "$work/m.jsonl" > "$work/run2" 2>&1 || ! grep -q "resumed from" "$work/run2" \
     || ! grep -qE "^test acc 0\.[0-9]+, [0-9.]+ sec/epoch on \[cpu:0\]$" "$work/run2"; then
  fail "resumed run: $(cat "$work/run2")"
fi
[ "$(wc -l < "$work/m.jsonl")" -eq 2 ] || fail "metrics should have 2 lines"
# --profile: the phase and kernel tables come before the d2l-style last line.
if ! "$duet" train --model mlp --epochs 1 --profile > "$work/profile" 2>&1 \
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
expect_bad "expects tensor '0.weight'" --model lenet --resume "$work/ckpt.safetensors"

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
