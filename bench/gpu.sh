#!/usr/bin/env bash
# The GPU check and benchmark, in one go, within about 8 minutes on one H200 with no network.
# Run it as (README, "GPU check and benchmark"):
#
#   export OUT=${OUT:-$PWD/build-gpu/gpu-bench}; mkdir -p "$OUT"; set -o pipefail
#   bash bench/gpu.sh 2>&1 | tee "$OUT/gpu.log"
#
# In order, each step with a time limit and its full log in $OUT (the only folder that comes
# back from a lent machine):
#   1. the environment: duet's build dependencies from gpu-deps/ (bench/gpu_deps.sh), cuDNN,
#      NCCL and, if need be, cuBLAS's development files from PyTorch's packages (gpu_env.sh);
#   2. configure for sm_90, build the preflight (a few seconds) and run it: a GPU, a kernel of
#      this build, cuBLAS, cuDNN and NCCL loading (tests/preflight/cuda_preflight.cu);
#   3. build the CUDA tests and the benchmarks (ninja -k 0: every broken file in one log), run
#      `ctest -L cuda` and count what really ran (bench/ctest_summary.py: all Skipped is a failure);
#   4. training throughput of lenet, lenet-relu and resnet18 at batch 256 on cuda:0 (median img/s
#      of 5 timed windows after a warm-up): duet eager, duet with the step replayed as a CUDA
#      graph (again with convolutions through im2col if cuDNN's cannot be recorded), PyTorch
#      eager with the same convolution algorithms as duet (cuDNN's heuristics, deterministic
#      ones only), the host's cost per op, PyTorch under torch.compile, and PyTorch eager with
#      cudnn.benchmark and any algorithm, with what time is left; then one table of ratios.
# Steps 1 and 2, or a failed build, stop the script before any PyTorch run, saying why.
#
# Exit status: 0 when every step succeeded, 1 when a test or a benchmark failed or was skipped
# for time, 2 when it stopped early (environment, configure, build or preflight).
#
# Options (for a follow-up on a warm machine, which keeps build-gpu/):
#   --tests REGEX   only the CUDA tests whose names match (ctest -R), e.g. --tests conv2d
#   --no-tests      no CUDA tests
#   --models "M.."  benchmark only these models, e.g. --models resnet18
#   --no-bench      no benchmark;  --no-torch: duet's rows only
#   --dry-run       the CI's check of this script on a machine without a GPU (bench/gpu_dry_run.sh)
# Environment: OUT (default $BUILD_DIR/gpu-bench), BUILD_DIR (default build-gpu), DATA_DIR
# (default /usr/share/datasets/fashion-mnist: Fashion-MNIST if its files are there, else
# synthetic batches of its shape; the table says which), PYTHON (default python3), BUDGET_S
# (default 470: the seconds the whole script may take), JOBS (default: all cores),
# GPU_CMAKE_ARGS (more configure arguments, space-separated).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_TESTS=1 RUN_BENCH=1 RUN_TORCH=1 TESTS_REGEX=""
MODELS=(lenet lenet-relu resnet18)
while (($#)); do
  case $1 in
    --dry-run) exec bash "$ROOT/bench/gpu_dry_run.sh" ;;
    --tests) TESTS_REGEX=$2; shift ;;
    --no-tests) RUN_TESTS=0 ;;
    --models) read -ra MODELS <<<"$2"; shift ;;
    --no-bench) RUN_BENCH=0 ;;
    --no-torch) RUN_TORCH=0 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD_DIR/gpu-bench}
DATA_DIR=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-470}
JOBS=${JOBS:-$(nproc)}
read -ra EXTRA_CMAKE_ARGS <<<"${GPU_CMAKE_ARGS:-}"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
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
  local begin rc
  begin=$(date +%s)
  timeout --kill-after=5 "$cap" "$@" >"$log" 2>&1
  rc=$?
  if ((rc == 0)); then
    echo "   ok in $(($(date +%s) - begin))s"
    return 0
  fi
  ((rc == 124 || rc == 137)) && FAILURES+=("$name (timed out after ${cap}s)") || FAILURES+=("$name (exit $rc)")
  echo "   FAILED (exit $rc) after $(($(date +%s) - begin))s; last lines of $log:"
  tail -n 15 "$log" | sed 's/^/   | /'
  return 1
}

finish() {
  echo
  if ((${#FAILURES[@]})); then
    echo "Failed or skipped steps (full logs in $OUT):"
    printf '  - %s\n' "${FAILURES[@]}"
  else
    echo "Every step succeeded (full logs in $OUT)."
  fi
  echo "Total: $(($(date +%s) - START))s"
  exit "$1"
}

# stop WHY: ends the run before the benchmarks, with exit status 2.
stop() {
  echo
  echo "STOPPED before the benchmarks: $1"
  finish 2
}

# ctest_step NAME LOG_PREFIX WHAT CTEST_ARGS...: ctest with a JUnit file and its LastTest.log in
# $OUT, then what really ran (ctest_summary.py): fails when a test failed or none ran.
ctest_step() {
  local name=$1 prefix=$2 what=$3
  shift 3
  step "$name" 240 "$OUT/$prefix.log" ctest --test-dir "$BUILD_DIR" --no-tests=error --output-on-failure \
    --output-junit "$OUT/$prefix.xml" "$@"
  local ran=$?
  cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$OUT/LastTest-$prefix.log" 2>/dev/null
  "$PYTHON" "$ROOT/bench/ctest_summary.py" "$OUT/$prefix.xml" --what "$what" | tee "$OUT/$prefix-summary.txt" |
    sed 's/^/   /'
  local counted=${PIPESTATUS[0]}
  if ((ran == 0 && counted != 0)); then FAILURES+=("$name (nothing ran: every test skipped)"); fi
  ((ran == 0 && counted == 0))
}

rm -f "$OUT"/*.json "$OUT"/*.xml "$OUT"/*-summary.txt "$OUT"/table.md
echo "gpu.sh: build in $BUILD_DIR, logs in $OUT"
{
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v nvcc >/dev/null && nvcc --version
  "$PYTHON" -c "import torch; print('PyTorch', torch.__version__, 'CUDA', torch.version.cuda)" 2>&1
} >"$OUT/machine.log" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# 1. The environment. The GPU machine has no OpenBLAS, Catch2, CLI11 or nlohmann-json, and no
# network: they come in gpu-deps/, cuDNN and NCCL from PyTorch's packages.
source "$ROOT/bench/gpu_env.sh" >"$OUT/env.log" 2>&1
cat "$OUT/env.log"
{
  echo "CMAKE_ARGS: ${CMAKE_ARGS[*]} ${EXTRA_CMAKE_ARGS[*]}"
  echo "CPATH=${CPATH:-}"
  echo "LIBRARY_PATH=${LIBRARY_PATH:-}"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
} >>"$OUT/env.log"
if ((${#GPU_ENV_PROBLEMS[@]})); then
  printf 'gpu.sh: %s\n' "${GPU_ENV_PROBLEMS[@]}"
  FAILURES+=("environment")
  stop "the build's dependencies are missing (above)"
fi

# 2. Configure, then the preflight: seconds to learn whether anything can run here.
step configure 120 "$OUT/configure.log" \
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 "${CMAKE_ARGS[@]}" "${EXTRA_CMAKE_ARGS[@]}"
configured=$?
cp "$BUILD_DIR/CMakeCache.txt" "$OUT/" 2>/dev/null
((configured == 0)) || stop "the configure failed (full log: $OUT/configure.log)"
grep -E "duet: (CUDA|NCCL|MPI)" "$OUT/configure.log" | sed 's/^-- /   /'
step "build the preflight" 120 "$OUT/build-preflight.log" cmake --build "$BUILD_DIR" -j "$JOBS" --target cuda_preflight ||
  stop "the preflight did not build (full log: $OUT/build-preflight.log)"
ctest_step preflight ctest-preflight "preflight" -R '^cuda-preflight$'
preflight=$?
grep -E "^(CUDA runtime|GPU [0-9]|cuBLAS|cuDNN|NCCL|FAILED|preflight|skipped)" "$OUT/LastTest-ctest-preflight.log" \
  2>/dev/null | sed 's/^/   | /'
((preflight == 0)) || stop "the preflight failed: no CUDA test or benchmark can run on this machine (its log: \
$OUT/ctest-preflight.log)"

# 3. Everything else; -k 0 so that one broken file does not hide the others.
if ! step build 300 "$OUT/build.log" cmake --build "$BUILD_DIR" -j "$JOBS" \
  --target duet_cuda_tests gpu_duet_bench overhead_bench -- -k 0; then
  grep -E "error|FAILED:" "$OUT/build.log" | head -n 40 | sed 's/^/   ! /'
  stop "the build failed (every error is in $OUT/build.log)"
fi
if ((RUN_TESTS)); then
  # Four test processes at a time: each spends most of its second or two creating a CUDA
  # context and library handles, and one H200 holds them all. The preflight, which ran above,
  # is left out, so that its pass cannot count as a CUDA test run when duet's own tests all skip.
  if [[ -n $TESTS_REGEX ]]; then
    ctest_step "ctest -L cuda -R '$TESTS_REGEX'" ctest-cuda "CUDA tests" -L cuda -E '^cuda-preflight$' \
      -R "$TESTS_REGEX" -j 4 --timeout 90
  else
    ctest_step "ctest -L cuda" ctest-cuda "CUDA tests" -L cuda -E '^cuda-preflight$' -j 4 --timeout 90
  fi
fi
((RUN_BENCH)) || finish $((${#FAILURES[@]} ? 1 : 0))

# 4. The benchmarks.
if [[ -f $DATA_DIR/train-images-idx3-ubyte.gz || -f $DATA_DIR/train-images-idx3-ubyte ]]; then
  DATA_ARGS=(--data-dir "$DATA_DIR")
  echo "Data: Fashion-MNIST from $DATA_DIR"
else
  DATA_ARGS=(--synthetic)
  echo "Data: synthetic batches of Fashion-MNIST's shape ($DATA_DIR has no Fashion-MNIST files)"
fi
BENCH_ARGS=(--device cuda:0 --batch-size 256 --warmup 10 --windows 5 --window-batches 20 "${DATA_ARGS[@]}")

# bench_row NAME FILE CAP COMMAND...: one benchmark run; its JSON line goes to $OUT/FILE.json.
bench_row() {
  local name=$1 file=$2 cap=$3
  shift 3
  step "$name" "$cap" "$OUT/$file.log" "$@" && grep '^{' "$OUT/$file.log" >"$OUT/$file.json"
}

# The capture-safe paths a failed recording's message names (both when it names none).
capture_safe_env() {
  local log=$1 vars=()
  grep -q "DUET_CONV_IM2COL=1" "$log" && vars+=(DUET_CONV_IM2COL=1)
  grep -q "DUET_BATCH_NORM_KERNELS=duet" "$log" && vars+=(DUET_BATCH_NORM_KERNELS=duet)
  ((${#vars[@]})) || vars=(DUET_CONV_IM2COL=1 DUET_BATCH_NORM_KERNELS=duet)
  echo "${vars[@]}"
}

for model in "${MODELS[@]}"; do
  bench_row "duet $model" "duet-$model" 60 "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" "${BENCH_ARGS[@]}"
  if ! bench_row "duet CUDA graph $model" "duet-graph-$model" 60 "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" \
    --cuda-graph "${BENCH_ARGS[@]}" && grep -q "recording a CUDA graph" "$OUT/duet-graph-$model.log"; then
    read -ra safe <<<"$(capture_safe_env "$OUT/duet-graph-$model.log")"
    echo "   the recording failed; again with ${safe[*]}"
    bench_row "duet CUDA graph $model (${safe[*]})" "duet-graph-$model" 60 env "${safe[@]}" \
      "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" --cuda-graph "${BENCH_ARGS[@]}"
  fi
done
if ((RUN_TORCH)); then
  for model in "${MODELS[@]}"; do
    bench_row "PyTorch eager $model" "eager-$model" 60 \
      "$PYTHON" "$ROOT/bench/gpu_torch_bench.py" --model "$model" --mode eager "${BENCH_ARGS[@]}"
  done
  # The host's cost per op on the GPU (dispatch, autograd, launch): what paces the small models.
  step "host overhead per op" 60 "$OUT/overhead.log" \
    "$PYTHON" "$ROOT/bench/overhead.py" --build-dir "$BUILD_DIR" --device cuda:0 --python "$PYTHON"
  # Last, with what time is left: compiling costs tens of seconds per model, and the rows with
  # cudnn.benchmark show what duet's deterministic algorithms leave on the table.
  for model in "${MODELS[@]}"; do
    bench_row "PyTorch torch.compile $model" "compile-$model" 120 \
      "$PYTHON" "$ROOT/bench/gpu_torch_bench.py" --model "$model" --mode compile "${BENCH_ARGS[@]}"
  done
  for model in "${MODELS[@]}"; do
    bench_row "PyTorch eager, cudnn.benchmark $model" "eager-benchmark-$model" 60 "$PYTHON" \
      "$ROOT/bench/gpu_torch_bench.py" --model "$model" --mode eager --cudnn benchmark "${BENCH_ARGS[@]}"
  done
fi

echo
"$PYTHON" "$ROOT/bench/gpu_table.py" "$OUT" | tee "$OUT/table.md" || echo "(the table script failed)"
echo
grep '^|' "$OUT/overhead.log" 2>/dev/null
finish $((${#FAILURES[@]} ? 1 : 0))
