#!/usr/bin/env bash
# `duet train --resume` continues a run bit for bit: one epoch, saved, then resumed for a
# second, ends with the same parameters and optimizer state as two epochs straight through,
# with gradient accumulation and SyncBatchNorm too.
# In one process for single, dp, ddp and zero1; given a launcher (mpirun -np N ...), for ddp and
# zero1 across processes, where rank 0 writes and every rank loads the same file.
#   test_resume_cli.sh DUET [LAUNCHER...]
set -uo pipefail
source "$(dirname "$0")/expect.sh" "$1" train
shift
launcher=("$@")

# A checkpoint's tensors as bytes: everything after its JSON header, whose metadata (epoch
# times, say) differs from run to run.
tensor_bytes() {
  local header
  header=$(od -An -tu8 -N8 "$1" | tr -d ' ')
  tail -c +$((9 + header)) "$1"
}

run() {  # run LOG ARGS...: duet train under the launcher; a failure is reported with its log
  local log=$1; shift
  if ! "${launcher[@]}" "$duet" train "$@" > "$work/$log" 2>&1; then
    fail "duet train $* failed: $(tail -n 5 "$work/$log")"
    return 1
  fi
}

# check_resume NAME FLAGS...: the flags of the run (model, optimizer, placement).
check_resume() {
  local name=$1; shift
  run "$name-straight.log" "$@" --epochs 2 --save "$work/$name-straight" || return
  run "$name-half.log" "$@" --epochs 1 --save "$work/$name-half" || return
  # Only --epochs is given: the checkpoint supplies the model, the optimizer and its lr,
  # momentum and state, the seed, the batch size, the strategy and the devices.
  run "$name-resumed.log" --resume "$work/$name-half" --epochs 2 --save "$work/$name-resumed" || return
  if cmp -s <(tensor_bytes "$work/$name-straight") <(tensor_bytes "$work/$name-resumed"); then
    echo "ok: $name: resumed after epoch 1, bit for bit the run that did not stop"
  else
    fail "$name: the resumed run's checkpoint differs from the straight run's; $(cat "$work/$name-resumed.log")"
  fi
  # No flags at all: the finished run's --epochs comes from its checkpoint, so nothing is left.
  run "$name-again.log" --resume "$work/$name-straight" || return
  grep -q "^nothing to do: the checkpoint already has 2 of 2 epochs$" "$work/$name-again.log" \
    || fail "$name: resuming the finished run: $(cat "$work/$name-again.log")"
}

# --accumulate and --sync-bn change every step: the resumed run must take them from the
# checkpoint (it once trained on with 1 micro-batch and without SyncBatchNorm), which the bytes
# show for --accumulate and the resumed checkpoint's metadata for --sync-bn (mlp has no
# BatchNorm; tests/cpu/test_checkpoint.cpp resumes a BatchNorm model under SyncBatchNorm).
if [ ${#launcher[@]} -eq 0 ]; then
  check_resume single --model mlp --momentum 0.9
  check_resume single-accumulate --model mlp --momentum 0.9 --accumulate 2
  check_resume dp --model mlp --optimizer adam --amsgrad --strategy dp --devices 2 --accumulate 2
  check_resume ddp --model mlp --momentum 0.9 --strategy ddp --devices 2 --accumulate 2 --sync-bn
  grep -q '"sync_bn":"true"' "$work/ddp-resumed" || fail "ddp: the resumed run dropped --sync-bn"
  # zero1's checkpoint holds the whole optimizer state, gathered from the devices' shards.
  check_resume zero1 --model mlp --optimizer adam --strategy zero1 --devices 2
else
  # 240: a global batch that 2, 3, 4 and 5 ranks divide.
  check_resume mpi-ddp --model mlp --momentum 0.9 --strategy ddp --comm mpi --batch-size 240 --accumulate 2
  # Every rank joins rank 0's gathering of zero1's sharded optimizer state.
  check_resume mpi-zero1 --model mlp --optimizer adam --strategy zero1 --comm mpi --batch-size 240
fi

echo "$failures failure(s)"
[ $failures -eq 0 ]
