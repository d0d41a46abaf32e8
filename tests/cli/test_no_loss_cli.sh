#!/usr/bin/env bash
# `duet train` never loses a file: outputs that are each other or an input (by any spelling),
# names derived from them that cannot be written, numbers that cannot be represented, crafted
# or damaged checkpoints, and a second run saving to the same checkpoint all exit 2 before any
# work, and every file involved is byte for byte what it was (compared by hash). A failed save
# leaves each epoch in --metrics once.
#   test_no_loss_cli.sh DUET
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$(realpath "$1")" train

f=$work/files  # everything whose bytes must not change
mkdir -p "$f/data"
cp /usr/share/datasets/fashion-mnist/*-ubyte.gz "$f/data/"

# Every file and link under $f, with its type, size and hash: a new, removed or changed file
# shows.
snapshot() {
  (cd "$f" && find . -printf '%p %y %s %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

# expect_untouched "message fragment" ARGS...: exit 2 with the message, and no file changed.
expect_untouched() {
  local before
  before=$(snapshot)
  expect_bad "$@"
  [ "$(snapshot)" == "$before" ] || fail "duet $subcommand ${*:2} changed the files: $(diff <(echo "$before") <(snapshot))"
}

# A real checkpoint (and its .best), a metrics file and a plot, and links to the checkpoint.
if ! "$duet" train --model mlp --epochs 1 --save "$f/ckpt" --metrics "$f/m.jsonl" > "$work/first" 2>&1; then
  fail "first run: $(cat "$work/first")"
fi
printf 'not a png' > "$f/plot.png"
ln -s ckpt "$f/link"
ln "$f/ckpt" "$f/hard"

# --- Outputs against outputs and inputs, by any spelling ---------------------------------
expect_untouched "--resume $f/ckpt and --metrics $f/ckpt are the same file" --resume "$f/ckpt" --metrics "$f/ckpt"
expect_untouched "--save $f/ckpt and --plot $f/ckpt are the same file" --save "$f/ckpt" --plot "$f/ckpt"
expect_untouched "--save $f/ckpt and --metrics $f/ckpt are the same file" --save "$f/ckpt" --metrics "$f/ckpt"
expect_untouched "--metrics $f/m.jsonl and --plot $f/../files/m.jsonl are the same file ($f/m.jsonl)" \
  --metrics "$f/m.jsonl" --plot "$f/../files/m.jsonl"
cd "$f" && expect_untouched "--save ckpt and --metrics ./ckpt are the same file" --save ckpt --metrics ./ckpt
expect_untouched "--save $f/ckpt and --metrics $f/link are the same file ($f/ckpt)" --save "$f/ckpt" --metrics "$f/link"
expect_untouched "--save $f/ckpt and --metrics $f/hard are the same file" --save "$f/ckpt" --metrics "$f/hard"
expect_untouched "--resume $f/link and --plot $f/hard are the same file" --resume "$f/link" --plot "$f/hard"
# The checkpoint being resumed may be --save (the run replaces it), but not its .best copy.
expect_untouched "--resume $f/ckpt.best and --save's .best copy $f/ckpt.best are the same file" \
  --resume "$f/ckpt.best" --save "$f/ckpt"
# The dataset's own files, existing or not (.gz or not).
expect_untouched "--data-dir's file $f/data/train-images-idx3-ubyte.gz and --save $f/data/train-images-idx3-ubyte.gz" \
  --data-dir "$f/data" --save "$f/data/train-images-idx3-ubyte.gz"
expect_untouched "--data-dir's file $f/data/t10k-labels-idx1-ubyte and --metrics" \
  --data-dir "$f/data" --metrics "$f/data/t10k-labels-idx1-ubyte"
cd "$f/data" && expect_untouched "--data-dir's file ./t10k-images-idx3-ubyte.gz and --plot" \
  --data-dir . --plot ../data/t10k-images-idx3-ubyte.gz
cd "$work" || exit 1

# --- Empty paths and the names duet derives from --save ----------------------------------
expect_untouched "--save: the path is empty" --save ""
expect_untouched "--metrics: the path is empty" --metrics ""
expect_untouched "--plot: the path is empty" --plot ""
long250=$(printf 'a%.0s' {1..250})
long256=$(printf 'a%.0s' {1..256})
expect_untouched "--save's partial file $f/$long250.duet-partial-" --save "$f/$long250"
expect_untouched "--save $f/$long256: the file name is 256 bytes long" --save "$f/$long256"
mkdir "$f/taken.best"
expect_untouched "--save's .best copy $f/taken.best: is a folder, not a file" --save "$f/taken"
mkdir "$f/locked.lock"
expect_untouched "--save's lock file $f/locked.lock: is a folder, not a file" --save "$f/locked"

# --- Numbers that cannot be represented ------------------------------------------------------
expect_untouched "expected a number of seconds from 0.001 to 1000000, got 'inf'" --comm-timeout inf
expect_untouched "expected a number of seconds from 0.001 to 1000000, got '1e16'" --comm-timeout 1e16
expect_untouched "expected a number >= 0, got 'inf'" --lr inf
expect_untouched "expected a number >= 0, got 'nan'" --weight-decay nan
expect_untouched "expected a positive integer from 1 to 9223372036854775807, got '99999999999999999999'" \
  --epochs 99999999999999999999
expect_untouched "expected a seed from 0 to 18446744073709551615, got '-1'" --seed -1
subcommand=compare
expect_untouched "expected a size in MiB from 1e-06 to 1048576, got '1e13'" --bucket-mb 1e13 --out "$work/compare"
expect_untouched "expected a number of seconds from 0.001 to 1000000, got '1e16'" --comm-timeout 1e16 --out "$work/compare"
expect_untouched "--out: the path is empty" --out ""
cp "$f/m.jsonl" "$f/results.json"
expect_untouched "--out's results.json $f/results.json and --trace $f/data/../results.json are the same file" \
  --out "$f" --trace "$f/data/../results.json"
rm "$f/results.json"
# 64 devices leave no logical CPU device for the per-step check's step (it had ended the process).
expect_untouched "--devices 64 from cpu:0: the per-step check needs one more logical CPU device after them, cpu:64" \
  --devices 64 --threads 2 --out "$work/compare"
subcommand=train

# --- Crafted and damaged checkpoints ----------------------------------------------------------
# craft IN OUT KEY VALUE...: IN with its metadata KEY set to VALUE ("-": removed); the tensors,
# and so their checksum, stay as they are.
craft() {
  python3 - "$@" <<'EOF'
import json, struct, sys
source, target, *pairs = sys.argv[1:]
data = open(source, "rb").read()
length = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + length])
for key, value in zip(pairs[::2], pairs[1::2]):
    if value == "-":
        header["__metadata__"].pop(key, None)
    else:
        header["__metadata__"][key] = value
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
open(target, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + length:])
EOF
}
crafted() {  # crafted KEY VALUE "expected ...": a checkpoint with that metadata is refused, naming it
  craft "$f/ckpt" "$f/crafted" "$1" "$2"
  expect_untouched "$f/crafted: checkpoint metadata '$1' is '$2', expected $3" --resume "$f/crafted" --epochs 2
  rm "$f/crafted"
}
crafted momentum 7 "a number from 0 to 1"
crafted lr -0.5 "a finite number >= 0"
crafted lr nan "a finite number >= 0"
crafted weight_decay inf "a finite number >= 0"
crafted optimizer rmsprop "one of sgd, adam"
crafted model vgg "one of "
crafted strategy fsdp "a value of --strategy (unknown strategy 'fsdp': expected one of single, dp"
crafted batch_size 0 "a whole number >= 1"
crafted accumulate -1 "a whole number >= 1"
crafted sync_bn maybe "a value of --sync-bn"
crafted grad_compression fp4 "a value of --grad-compression (unknown gradient compression 'fp4': expected none, fp16 or bf16)"
crafted devices 65 "a whole number from 1 to 64"
crafted device tpu "cpu, cpu:N, cuda or cuda:N"
# A flipped bit in a tensor: the checksum says so.
cp "$f/ckpt" "$f/flipped"
python3 -c "
import sys
data = bytearray(open(sys.argv[1], 'rb').read()); data[-5] ^= 0x04
open(sys.argv[1], 'wb').write(data)" "$f/flipped"
expect_untouched "$f/flipped: the tensors do not match the checkpoint's tensor_checksum" --resume "$f/flipped" --epochs 2
# A checkpoint from before the checksum loads, saying so.
craft "$f/ckpt" "$work/unchecked" tensor_checksum -
if ! "$duet" train --resume "$work/unchecked" > "$work/unchecked.log" 2>&1 \
   || ! grep -q "^note: $work/unchecked has no checksum of its tensors (an older duet wrote it): loaded unverified$" \
        "$work/unchecked.log"; then
  fail "checkpoint without a checksum: $(cat "$work/unchecked.log")"
else
  echo "ok: checkpoint without a checksum: $(grep checksum "$work/unchecked.log")"
fi

# A flag that differs from the checkpoint's setting is printed as such, --accumulate too (the
# checkpoint's run had 1 micro-batch).
if ! "$duet" train --resume "$f/ckpt" --accumulate 2 > "$work/differs.log" 2>&1 \
   || ! grep -q "^note: --accumulate 2 instead of the checkpoint's 1$" "$work/differs.log"; then
  fail "a flag that differs from the checkpoint: $(cat "$work/differs.log")"
else
  echo "ok: $(grep accumulate "$work/differs.log")"
fi

# --- One writer per checkpoint ----------------------------------------------------------------
mkdir "$work/lock"
"$duet" train --model mlp --epochs 1 --save "$work/lock/ckpt" > "$work/lock/first" 2>&1 &
first=$!
for _ in $(seq 200); do [ -s "$work/lock/ckpt.lock" ] && break; sleep 0.05; done
expect_bad "--save $work/lock/ckpt: another run is saving there: process $first (" \
  --model mlp --epochs 1 --save "$work/lock/ckpt"
wait $first
status=$?
if [ $status -ne 0 ] || ! grep -q "^test acc" "$work/lock/first" || [ -e "$work/lock/ckpt.lock" ]; then
  fail "the first of two runs on one --save -> exit $status: $(cat "$work/lock/first"); $(ls "$work/lock")"
else
  echo "ok: the first of two runs on one --save finished normally and removed its lock"
fi

# --- Each epoch once in --metrics, also after a failed save ----------------------------------
# Epoch 1 is saved; epoch 2's save fails (a folder where its partial file goes), so the run
# exits 1 with epoch 1 alone in --metrics, and the resumed run adds epoch 2 once.
mkdir "$work/m"
"$duet" train --model mlp --epochs 2 --save "$work/m/ckpt" --metrics "$work/m/m.jsonl" > "$work/m/failed" 2>&1 &
run=$!
for _ in $(seq 600); do [ -e "$work/m/ckpt" ] && break; sleep 0.05; done
mkdir "$work/m/ckpt.duet-partial-$run"
wait $run
status=$?
rmdir "$work/m/ckpt.duet-partial-$run"
epochs() { grep -o '"epoch":[0-9]*' "$work/m/m.jsonl" | tr '\n' ' '; }
if [ $status -ne 1 ] || [ "$(epochs)" != '"epoch":1 ' ]; then
  fail "failed save -> exit $status, metrics: $(epochs); $(tail -n 2 "$work/m/failed")"
elif ! "$duet" train --resume "$work/m/ckpt" --metrics "$work/m/m.jsonl" > "$work/m/resumed" 2>&1 \
     || [ "$(epochs)" != '"epoch":1 "epoch":2 ' ]; then
  fail "resumed after a failed save, metrics: $(epochs); $(cat "$work/m/resumed")"
else
  echo "ok: a failed save, then resumed: each epoch once in --metrics"
fi
# A line of an epoch the checkpoint lacks (a run killed between the two writes) is replaced.
sed 's/"epoch":2,/"epoch":3,/' "$work/m/m.jsonl" | tail -n 1 >> "$work/m/m.jsonl"
if ! "$duet" train --resume "$work/m/ckpt" --epochs 3 --metrics "$work/m/m.jsonl" > "$work/m/third" 2>&1 \
   || [ "$(epochs)" != '"epoch":1 "epoch":2 "epoch":3 ' ]; then
  fail "resumed over an unsaved epoch's line, metrics: $(epochs); $(cat "$work/m/third")"
else
  echo "ok: an unsaved epoch's line is replaced, not repeated"
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
