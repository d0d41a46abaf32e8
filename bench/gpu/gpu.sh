#!/usr/bin/env bash
# The first GPU run: every CUDA test duet has, then the benchmarks, within 8 minutes on one H100
# or H200 with 16 cores and no network (docs/first-gpu-run.md says what each step checks, how
# long it should take and what a failure would mean). Run it as (docs/first-gpu-run.md, "How to run it"):
#
#   export OUT=${OUT:-$PWD/build-gpu/gpu-bench}; mkdir -p "$OUT"; set -o pipefail
#   bash bench/gpu/gpu.sh 2>&1 | tee "$OUT/gpu.log"
#
# In order, each step with a time limit and its full log in $OUT (the only folder that comes
# back from a lent machine); the time plan is printed first:
#   1. the environment: duet's build dependencies from gpu-deps/ (bench/gpu/gpu_deps.sh), cuDNN,
#      NCCL and, if need be, cuBLAS's development files from PyTorch's packages (gpu_env.sh);
#      meanwhile, once, whether PyTorch imports and sees CUDA;
#   2. configure for sm_90, build the preflight (a few seconds) and run it: a GPU, a kernel of
#      this build, cuBLAS, a one-rank NCCL all-reduce and a small cuDNN convolution
#      (tests/preflight/cuda_preflight.cu);
#   3. build duet_cuda_tests alone (ninja -k 0: every broken file in one log), run
#      `ctest -L cuda` and count what really ran (bench/gpu/ctest_summary.py: all Skipped is a failure);
#   4. only then build the benchmarks (a benchmark that does not compile stops no test: they ran)
#      and measure training throughput of lenet, lenet-relu and resnet18 at batch 256 on cuda:0
#      (median img/s of 5 timed windows after a warm-up): duet eager, duet with the step replayed
#      as a CUDA graph (retried with convolutions through im2col if cuDNN's cannot be recorded),
#      PyTorch eager with the same convolution algorithms as duet (cuDNN's heuristics,
#      deterministic ones only) and the host's cost per op; then one table of ratios.
#      With --full, also PyTorch under torch.compile and PyTorch eager with cudnn.benchmark: the
#      slow rows, left out of the first pass.
# Each benchmark row that fails is run once more, with a log of its own (NAME.retry.log); a row
# that passes on its retry counts as passed, and the summary lists it. Without PyTorch, or with
# a PyTorch that sees no GPU, the PyTorch rows are left out with one note.
# Steps 1 and 2 stop the script before anything else, saying why.
#
# Exit status: 0 when every step succeeded, 1 when a test or a benchmark failed or was skipped
# for time, 2 when it stopped early (environment, configure or preflight).
#
# Options (for a follow-up on a warm machine, which keeps build-gpu/):
#   --tests REGEX   only the CUDA tests whose names match (ctest -R), e.g. --tests conv2d
#   --no-tests      no CUDA tests
#   --models "M.."  benchmark only these models, e.g. --models resnet18
#   --no-bench      no benchmark;  --no-torch: duet's rows only
#   --full          the slow PyTorch rows too (torch.compile, cudnn.benchmark); budget 780 s
#   --plan          print the time plan and exit
#   --dry-run       the CI's check of this script on a machine without a GPU (bench/gpu/gpu_dry_run.sh)
# Environment: OUT (default $BUILD_DIR/gpu-bench), BUILD_DIR (default build-gpu), DATA_DIR
# (default /usr/share/datasets/fashion-mnist: Fashion-MNIST if its files are there, else
# synthetic batches of its shape; the table says which), PYTHON (default python3), BUDGET_S
# (default 470, 780 with --full: the seconds the whole script may take), JOBS (default: all
# cores), GPU_CMAKE_ARGS (more configure arguments, space-separated). For the dry run only:
# GPU_TEST_TARGETS and GPU_BENCH_TARGETS (the targets of steps 3 and 4) and
# GPU_PAST_FAILED_PREFLIGHT=1 (go on after a failed preflight, to check the order of the rest).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN_TESTS=1 RUN_BENCH=1 RUN_TORCH=1 FULL=0 PLAN_ONLY=0 TESTS_REGEX=""
MODELS=(lenet lenet-relu resnet18)
while (($#)); do
  case $1 in
    --dry-run) exec bash "$ROOT/bench/gpu/gpu_dry_run.sh" ;;
    --tests) TESTS_REGEX=$2; shift ;;
    --no-tests) RUN_TESTS=0 ;;
    --models) read -ra MODELS <<<"$2"; shift ;;
    --no-bench) RUN_BENCH=0 ;;
    --no-torch) RUN_TORCH=0 ;;
    --full) FULL=1 ;;
    --plan) PLAN_ONLY=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD_DIR/gpu-bench}
DATA_DIR=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-$((FULL ? 780 : 470))}
JOBS=${JOBS:-$(nproc)}
read -ra EXTRA_CMAKE_ARGS <<<"${GPU_CMAKE_ARGS:-}"
read -ra TEST_TARGETS <<<"${GPU_TEST_TARGETS:-duet_cuda_tests}"
read -ra BENCH_TARGETS <<<"${GPU_BENCH_TARGETS:-gpu_duet_bench overhead_bench}"
START=$(date +%s)
source "$ROOT/bench/gpu/gpu_steps.sh"

# Each step's cap (seconds), and what it should take on 16 cores and one H100/H200 (an estimate
# until a GPU run measures it; docs/first-gpu-run.md says what it rests on).
CAP_CONFIGURE=90 EST_CONFIGURE=20
CAP_PREFLIGHT_BUILD=90 EST_PREFLIGHT_BUILD=15
CAP_PREFLIGHT=60 EST_PREFLIGHT=10
CAP_TEST_BUILD=300 EST_TEST_BUILD=150
CAP_TESTS=200 EST_TESTS=90
CAP_BENCH_BUILD=90 EST_BENCH_BUILD=15
CAP_ROW=60 EST_ROW=10 EST_GRAPH_ROW=15 EST_TORCH_ROW=15
CAP_OVERHEAD=60 EST_OVERHEAD=20
CAP_COMPILE=120 EST_COMPILE=60

plan_line() { printf '  %-54s %6s %8s\n' "$1" "$2" "$3"; }
# The first pass's time plan: every step in order, what it should take and its cap.
print_plan() {
  local n=${#MODELS[@]} total
  echo "Time plan (budget ${BUDGET_S}s; expected on 16 cores, caps are hard limits):"
  plan_line "step" "expect" "cap"
  plan_line "configure" "${EST_CONFIGURE}s" "${CAP_CONFIGURE}s"
  plan_line "build the preflight" "${EST_PREFLIGHT_BUILD}s" "${CAP_PREFLIGHT_BUILD}s"
  plan_line "preflight" "${EST_PREFLIGHT}s" "${CAP_PREFLIGHT}s"
  total=$((EST_CONFIGURE + EST_PREFLIGHT_BUILD + EST_PREFLIGHT))
  if ((RUN_TESTS)); then
    plan_line "build the CUDA tests (${TEST_TARGETS[*]})" "${EST_TEST_BUILD}s" "${CAP_TEST_BUILD}s"
    plan_line "ctest -L cuda" "${EST_TESTS}s" "${CAP_TESTS}s"
    total=$((total + EST_TEST_BUILD + EST_TESTS))
  fi
  if ((RUN_BENCH)); then
    plan_line "build the benchmarks (${BENCH_TARGETS[*]})" "${EST_BENCH_BUILD}s" "${CAP_BENCH_BUILD}s"
    plan_line "duet, eager and CUDA graph: $n models" "$((n * (EST_ROW + EST_GRAPH_ROW)))s" "${CAP_ROW}s each"
    total=$((total + EST_BENCH_BUILD + n * (EST_ROW + EST_GRAPH_ROW)))
    if ((RUN_TORCH)); then
      plan_line "PyTorch eager: $n models" "$((n * EST_TORCH_ROW))s" "${CAP_ROW}s each"
      plan_line "host overhead per op" "${EST_OVERHEAD}s" "${CAP_OVERHEAD}s"
      total=$((total + n * EST_TORCH_ROW + EST_OVERHEAD))
      if ((FULL)); then
        plan_line "--full: torch.compile: $n models" "$((n * EST_COMPILE))s" "${CAP_COMPILE}s each"
        plan_line "--full: eager, cudnn.benchmark: $n models" "$((n * EST_TORCH_ROW))s" "${CAP_ROW}s each"
        total=$((total + n * (EST_COMPILE + EST_TORCH_ROW)))
      fi
    fi
  fi
  plan_line "total" "${total}s" "${BUDGET_S}s"
  echo "A retried row adds up to its cap; the budget cuts what no longer fits (listed as skipped)."
}
if ((PLAN_ONLY)); then
  print_plan
  exit 0
fi

mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)

finish() {
  echo
  print_accounting
  echo "Full logs in $OUT. Total: $(($(date +%s) - START))s"
  exit "$1"
}

# stop WHY: ends the run before the benchmarks, with exit status 2.
stop() {
  echo
  echo "STOPPED before the benchmarks: $1"
  finish 2
}

# ctest_step NAME LOG_PREFIX WHAT CAP CTEST_ARGS...: ctest with a JUnit file and its LastTest.log
# in $OUT, then what really ran (ctest_summary.py): fails when a test failed or none ran.
ctest_step() {
  local name=$1 prefix=$2 what=$3 cap=$4
  shift 4
  step "$name" "$cap" "$OUT/$prefix.log" ctest --test-dir "$BUILD_DIR" --no-tests=error --output-on-failure \
    --output-junit "$OUT/$prefix.xml" "$@"
  local ran=$?
  cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$OUT/LastTest-$prefix.log" 2>/dev/null
  "$PYTHON" "$ROOT/bench/gpu/ctest_summary.py" "$OUT/$prefix.xml" --what "$what" | tee "$OUT/$prefix-summary.txt" |
    sed 's/^/   /'
  local counted=${PIPESTATUS[0]}
  if ((ran == 0 && counted != 0)); then FAILURES+=("$name (nothing ran: every test skipped)"); fi
  ((ran == 0 && counted == 0))
}

rm -f "$OUT"/*.json "$OUT"/*.xml "$OUT"/*-summary.txt "$OUT"/table.md "$OUT"/*.retry.log
echo "gpu.sh: build in $BUILD_DIR, logs in $OUT"
print_plan
{
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v nvcc >/dev/null && nvcc --version
} >"$OUT/machine.log" 2>&1
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# PyTorch, probed once while the build runs: importing it from a cold disk takes seconds.
TORCH_PROBE_PID=""
if ((RUN_BENCH && RUN_TORCH)); then
  timeout 90 "$PYTHON" -c "import torch, sys
print('PyTorch', torch.__version__, 'CUDA', torch.version.cuda, 'available:', torch.cuda.is_available())
sys.exit(0 if torch.cuda.is_available() else 3)" >"$OUT/torch-probe.log" 2>&1 &
  TORCH_PROBE_PID=$!
fi

# 1. The environment. The GPU machine has no OpenBLAS, Catch2, CLI11 or nlohmann-json, and no
# network: they come in gpu-deps/, cuDNN and NCCL from PyTorch's packages.
source "$ROOT/bench/gpu/gpu_env.sh" >"$OUT/env.log" 2>&1
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
step configure "$CAP_CONFIGURE" "$OUT/configure.log" \
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 "${CMAKE_ARGS[@]}" "${EXTRA_CMAKE_ARGS[@]}"
configured=$?
cp "$BUILD_DIR/CMakeCache.txt" "$OUT/" 2>/dev/null
((configured == 0)) || stop "the configure failed (full log: $OUT/configure.log)"
grep -E "duet: (CUDA|cuDNN|NCCL|MPI)" "$OUT/configure.log" | sed 's/^-- /   /'
step "build the preflight" "$CAP_PREFLIGHT_BUILD" "$OUT/build-preflight.log" \
  cmake --build "$BUILD_DIR" -j "$JOBS" --target cuda_preflight ||
  stop "the preflight did not build (full log: $OUT/build-preflight.log)"
ctest_step preflight ctest-preflight "preflight" "$CAP_PREFLIGHT" -R '^cuda-preflight$'
preflight=$?
grep -E "^(CUDA runtime|GPU [0-9]|cuBLAS|cuDNN|NCCL|FAILED|preflight|skipped)" "$OUT/LastTest-ctest-preflight.log" \
  2>/dev/null | sed 's/^/   | /'
if ((preflight != 0)); then
  message="the preflight failed: no CUDA test or benchmark can run on this machine (its log: $OUT/ctest-preflight.log)"
  [[ ${GPU_PAST_FAILED_PREFLIGHT:-0} == 1 ]] || stop "$message"
  echo "   $message; going on (GPU_PAST_FAILED_PREFLIGHT=1: the dry run checks the order of what follows)"
fi

# 3. The CUDA tests, built alone and run before anything else is built: a benchmark that does
# not compile must not cost the tests. -k 0 so that one broken file does not hide the others.
if ((RUN_TESTS)); then
  if step "build the CUDA tests" "$CAP_TEST_BUILD" "$OUT/build-tests.log" \
    cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TEST_TARGETS[@]}" -- -k 0; then
    # Four test processes at a time: each spends most of its second or two creating a CUDA
    # context and library handles, and one GPU holds them all. The preflight, which ran above,
    # is left out, so that its pass cannot count as a CUDA test run when duet's own tests all skip.
    filter=(-L cuda -E '^cuda-preflight$')
    [[ -n $TESTS_REGEX ]] && filter+=(-R "$TESTS_REGEX")
    ctest_step "ctest -L cuda${TESTS_REGEX:+ -R '$TESTS_REGEX'}" ctest-cuda "CUDA tests" "$CAP_TESTS" \
      "${filter[@]}" -j 4 --timeout 90
  else
    grep -E "error|FAILED:" "$OUT/build-tests.log" | head -n 40 | sed 's/^/   ! /'
    note "no CUDA test ran: duet_cuda_tests did not build (every error is in $OUT/build-tests.log)"
  fi
fi
((RUN_BENCH)) || finish $((${#FAILURES[@]} ? 1 : 0))

# 4. The benchmarks.
BENCH_BUILT=0
if step "build the benchmarks" "$CAP_BENCH_BUILD" "$OUT/build-bench.log" \
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "${BENCH_TARGETS[@]}" -- -k 0; then
  BENCH_BUILT=1
else
  grep -E "error|FAILED:" "$OUT/build-bench.log" | head -n 40 | sed 's/^/   ! /'
  note "duet's benchmark rows are left out: the benchmarks did not build ($OUT/build-bench.log)"
fi
if [[ -f $DATA_DIR/train-images-idx3-ubyte.gz || -f $DATA_DIR/train-images-idx3-ubyte ]]; then
  DATA_ARGS=(--data-dir "$DATA_DIR")
  echo "Data: Fashion-MNIST from $DATA_DIR"
else
  DATA_ARGS=(--synthetic)
  echo "Data: synthetic batches of Fashion-MNIST's shape ($DATA_DIR has no Fashion-MNIST files)"
fi
BENCH_ARGS=(--device cuda:0 --batch-size 256 --warmup 10 --windows 5 --window-batches 20 "${DATA_ARGS[@]}")

# bench_row NAME FILE CAP COMMAND...: one benchmark run, retried once if it fails; the JSON line
# of the try that counts goes to $OUT/FILE.json.
bench_row() {
  local name=$1 file=$2 cap=$3
  shift 3
  retried_step "$name" "$cap" "$OUT/$file.log" "$@" && grep '^{' "$STEP_LOG" >"$OUT/$file.json"
}

# The capture-safe paths a failed recording's message names (both when it names none), for the
# retry of a CUDA graph row; nothing when the first try failed for another reason.
capture_safe_env() {
  local log=$1 vars=()
  grep -q "recording a CUDA graph" "$log" || return 0
  grep -q "DUET_CONV_IM2COL=1" "$log" && vars+=(DUET_CONV_IM2COL=1)
  grep -q "DUET_BATCH_NORM_KERNELS=duet" "$log" && vars+=(DUET_BATCH_NORM_KERNELS=duet)
  ((${#vars[@]})) || vars=(DUET_CONV_IM2COL=1 DUET_BATCH_NORM_KERNELS=duet)
  echo "${vars[@]}"
}

if ((BENCH_BUILT)); then
  for model in "${MODELS[@]}"; do
    bench_row "duet $model" "duet-$model" "$CAP_ROW" "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" \
      "${BENCH_ARGS[@]}"
    RETRY_ENV=capture_safe_env bench_row "duet CUDA graph $model" "duet-graph-$model" "$CAP_ROW" \
      "$BUILD_DIR/bench/gpu_duet_bench" --model "$model" --cuda-graph "${BENCH_ARGS[@]}"
  done
fi
TORCH_OK=0
if [[ -n $TORCH_PROBE_PID ]]; then
  wait "$TORCH_PROBE_PID" && TORCH_OK=1
  sed 's/^/   /' "$OUT/torch-probe.log" | tail -n 3
  ((TORCH_OK)) || note "the PyTorch rows are left out: $PYTHON cannot import torch or it sees no GPU ($OUT/torch-probe.log)"
fi
if ((TORCH_OK)); then
  for model in "${MODELS[@]}"; do
    bench_row "PyTorch eager $model" "eager-$model" "$CAP_ROW" \
      "$PYTHON" "$ROOT/bench/gpu/gpu_torch_bench.py" --model "$model" --mode eager "${BENCH_ARGS[@]}"
  done
  # The host's cost per op on the GPU (dispatch, autograd, launch): what paces the small models.
  ((BENCH_BUILT)) && retried_step "host overhead per op" "$CAP_OVERHEAD" "$OUT/overhead.log" \
    "$PYTHON" "$ROOT/bench/overhead/overhead.py" --build-dir "$BUILD_DIR" --device cuda:0 --python "$PYTHON"
  if ((FULL)); then
    # Compiling costs tens of seconds per model, and the rows with cudnn.benchmark show what
    # duet's deterministic algorithms leave on the table: the second pass's rows.
    for model in "${MODELS[@]}"; do
      bench_row "PyTorch torch.compile $model" "compile-$model" "$CAP_COMPILE" \
        "$PYTHON" "$ROOT/bench/gpu/gpu_torch_bench.py" --model "$model" --mode compile "${BENCH_ARGS[@]}"
    done
    for model in "${MODELS[@]}"; do
      bench_row "PyTorch eager, cudnn.benchmark $model" "eager-benchmark-$model" "$CAP_ROW" "$PYTHON" \
        "$ROOT/bench/gpu/gpu_torch_bench.py" --model "$model" --mode eager --cudnn benchmark "${BENCH_ARGS[@]}"
    done
  else
    note "torch.compile and cudnn.benchmark rows are left for a second pass (--full)"
  fi
fi

echo
"$PYTHON" "$ROOT/bench/gpu/gpu_table.py" "$OUT" | tee "$OUT/table.md" || echo "(the table script failed)"
echo
grep '^|' "$OUT/overhead.log" "$OUT/overhead.retry.log" 2>/dev/null | cut -d: -f2-
finish $((${#FAILURES[@]} ? 1 : 0))
