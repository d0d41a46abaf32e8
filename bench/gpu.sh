#!/usr/bin/env bash
# The GPU check and benchmark, in one go, within about 8 minutes on one H200 with no network:
# builds duet for sm_90, runs `ctest -L cuda`, then measures training throughput (median
# images/s of 5 timed windows after a warm-up) of lenet, lenet-relu and resnet18 at batch 256
# on cuda:0, for duet (eager, and with the step replayed as a CUDA graph) and for the same models
# in the machine's PyTorch (eager, then torch.compile with what time is left), and prints one
# table of ratios.
#
# A step that fails or runs out of time is reported and the script goes on to the table.
# Fashion-MNIST comes from DATA_DIR (default /usr/share/datasets/fashion-mnist) when its
# files are there, else synthetic batches of its shape; the table says which.
#
# On the GPU machine duet's build dependencies come from gpu-deps/: run bench/gpu_deps.sh here
# first, then carry that folder (see README, "GPU check and benchmark").
#
# Environment: BUILD_DIR (default build-gpu), DATA_DIR, PYTHON (default python3), BUDGET_S
# (default 470: the seconds the whole script may take), JOBS (default: all cores).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
DATA_DIR=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-470}
JOBS=${JOBS:-$(nproc)}
RESULTS=$BUILD_DIR/gpu-bench
MODELS=(lenet lenet-relu resnet18)
START=$(date +%s)
FAILURES=()

remaining() { echo $((BUDGET_S - ($(date +%s) - START))); }

# step NAME CAP_SECONDS LOG COMMAND...: runs COMMAND under a timeout of CAP_SECONDS or what is
# left of the budget (less a reserve for the table), logs it, and records a failure.
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$(($(remaining) - 10))
  ((left < cap)) && cap=$left
  if ((cap < 5)); then
    echo "== $name: skipped, the time budget is spent"
    FAILURES+=("$name (skipped: no time left)")
    return 1
  fi
  echo "== $name (at most ${cap}s; log: $log)"
  local begin
  begin=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" >"$log" 2>&1
  local rc=$?
  if ((rc == 0)); then
    echo "   ok in $(($(date +%s) - begin))s"
    return 0
  fi
  ((rc == 124 || rc == 137)) && FAILURES+=("$name (timed out after ${cap}s)") || FAILURES+=("$name (exit $rc)")
  echo "   FAILED (exit $rc); last lines of $log:"
  tail -n 15 "$log" | sed 's/^/   | /'
  return 1
}

mkdir -p "$RESULTS"
rm -f "$RESULTS"/*.json
# The GPU machine has no OpenBLAS, Catch2, CLI11 or nlohmann-json, and no network: they come in
# gpu-deps/ (bench/gpu_deps.sh, run beforehand where apt works), cuDNN and NCCL from PyTorch.
source "$ROOT/bench/gpu_env.sh"

if [[ -f $DATA_DIR/train-images-idx3-ubyte.gz || -f $DATA_DIR/train-images-idx3-ubyte ]]; then
  DATA_ARGS=(--data-dir "$DATA_DIR")
  echo "Data: Fashion-MNIST from $DATA_DIR"
else
  DATA_ARGS=(--synthetic)
  echo "Data: synthetic batches of Fashion-MNIST's shape ($DATA_DIR has no Fashion-MNIST files)"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

step configure 90 "$RESULTS/configure.log" \
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 "${CMAKE_ARGS[@]}"
step build 270 "$RESULTS/build.log" cmake --build "$BUILD_DIR" -j "$JOBS" --target duet_cuda_tests gpu_duet_bench overhead_bench
# Four test processes at a time: each spends most of its second or two creating a CUDA context
# and library handles, and one H200 holds them all.
step "ctest -L cuda" 150 "$RESULTS/ctest.log" \
  ctest --test-dir "$BUILD_DIR" -L cuda -j 4 --output-on-failure --timeout 60
grep -E "tests passed|tests failed|Skipped|Failed" "$RESULTS/ctest.log" 2>/dev/null | tail -n 12 | sed 's/^/   /'

BENCH_ARGS=(--device cuda:0 --batch-size 256 --warmup 10 --windows 5 --window-batches 20 "${DATA_ARGS[@]}")
for model in "${MODELS[@]}"; do
  step "duet $model" 60 "$RESULTS/duet-$model.log" "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" "${BENCH_ARGS[@]}" &&
    grep '^{' "$RESULTS/duet-$model.log" >"$RESULTS/duet-$model.json"
  step "duet CUDA graph $model" 60 "$RESULTS/duet-graph-$model.log" "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" \
    --cuda-graph "${BENCH_ARGS[@]}" && grep '^{' "$RESULTS/duet-graph-$model.log" >"$RESULTS/duet-graph-$model.json"
done
for model in "${MODELS[@]}"; do
  step "PyTorch eager $model" 60 "$RESULTS/eager-$model.log" \
    "$PYTHON" "$ROOT/bench/gpu_torch_bench.py" --model "$model" --mode eager "${BENCH_ARGS[@]}" &&
    grep '^{' "$RESULTS/eager-$model.log" >"$RESULTS/eager-$model.json"
done
# The host's cost per op on the GPU (dispatch, autograd, launch): what paces the small models.
step "host overhead per op" 60 "$RESULTS/overhead.log" \
  "$PYTHON" "$ROOT/bench/overhead.py" --build-dir "$BUILD_DIR" --device cuda:0 --python "$PYTHON"
# Last, with what time is left: compiling costs tens of seconds per model.
for model in "${MODELS[@]}"; do
  step "PyTorch torch.compile $model" 120 "$RESULTS/compile-$model.log" \
    "$PYTHON" "$ROOT/bench/gpu_torch_bench.py" --model "$model" --mode compile "${BENCH_ARGS[@]}" &&
    grep '^{' "$RESULTS/compile-$model.log" >"$RESULTS/compile-$model.json"
done

echo
"$PYTHON" "$ROOT/bench/gpu_table.py" "$RESULTS" || echo "(the table script failed)"
echo
grep '^|' "$RESULTS/overhead.log" 2>/dev/null
echo
if ((${#FAILURES[@]})); then
  echo "Failed or skipped steps (logs in $RESULTS):"
  printf '  - %s\n' "${FAILURES[@]}"
else
  echo "Every step succeeded (logs in $RESULTS)."
fi
echo "Total: $(($(date +%s) - START))s"
