#!/usr/bin/env bash
# CI's check of bench/gpu/gpu.sh on a machine without a GPU (`bench/gpu/gpu.sh --dry-run`, from .ci/run):
# the harness runs as docs/first-gpu-run.md runs it on a lent GPU machine, in a simulated one, twice.
# First as it is, and it must
#   - print the first pass's time plan;
#   - configure with nothing of this machine's own: OpenBLAS, Catch2, CLI11, nlohmann-json and
#     zlib from gpu-deps/ (made here with bench/gpu/gpu_deps.sh if missing; apt works in CI), the
#     system's copies hidden from CMake; cuDNN, NCCL and cuBLAS from a folder shaped like
#     PyTorch's nvidia-* packages (versioned libraries only), made of links to the toolkit's
#     own files, and taken from there even though the toolkit has them;
#   - stop at the preflight, because every CUDA test skips without a GPU, saying so, with exit
#     status 2, before building the library and before any PyTorch run;
#   - leave its logs in OUT: gpu.log (the tee), the environment, configure, preflight build,
#     ctest log, JUnit file, LastTest.log and summary.
# Then past the failed preflight (GPU_PAST_FAILED_PREFLIGHT=1), in the same build folder, with a
# benchmark made to fail to compile (-DDUET_DRY_RUN_BROKEN_BENCH=ON) and the preflight's target,
# built in seconds, standing in for duet_cuda_tests (building that takes many minutes here): the
# tests must be built and run before any benchmark is built, the benchmark's build error must
# be reported without stopping the run, and duet's benchmark rows left out with a note.
# The C++ compiler still sees /usr/include (no container here), so a header missing from
# gpu-deps/ would show only on the GPU machine; the libraries and CMake packages are checked.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build-gpu-dry-run
OUT=$BUILD/out
begin=$(date +%s)
fail() {
  echo "gpu.sh --dry-run: FAILED: $*" >&2
  exit 1
}

[[ -e $(ls "$ROOT"/gpu-deps/*.deb 2>/dev/null | head -n 1) ]] || "$ROOT/bench/gpu/gpu_deps.sh"

# PyTorch's nvidia-* packages, as pip lays them out for CUDA 13: headers and versioned libraries,
# linked to this machine's files. Where those are differs between machines (beside the toolkit,
# under targets/, under Debian's /usr): the folders the main build's CMake found them in come
# first, then the places CMake itself searches.
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
cache=$ROOT/build/CMakeCache.txt
cached() {  # the main build's cache entry $1, or nothing
  [[ -f $cache ]] || return 0
  grep -E "^$1:" "$cache" | cut -d= -f2- | grep -v NOTFOUND || true
}
source "$ROOT/bench/gpu/cuda_toolkit.sh"
toolkit=$(cuda_toolkit_root "$(cached CUDAToolkit_NVCC_EXECUTABLE)")
targets=$toolkit/targets/x86_64-linux
matches() {  # matches PATTERN DIR...: the files matching PATTERN in the first DIR that has any
  local pattern=$1 dir
  shift
  for dir in "$@"; do
    [[ -n $dir ]] && compgen -G "$dir/$pattern" && return 0
  done
  fail "no $pattern in any of: $*"
}
wheel() {  # wheel PACKAGE HEADER_PATTERN LIB_PATTERN LIBRARY_ENTRY [INCLUDE_ENTRY]
  local library headers libraries f
  library=$(cached "$4")
  headers=$(matches "$2" "$(cached "${5:-}")" "$toolkit/include" "$targets/include" /usr/include \
    /usr/include/x86_64-linux-gnu)
  libraries=$(matches "$3" "${library:+$(dirname "$library")}" "$toolkit/lib64" "$toolkit/lib" "$targets/lib" \
    /usr/lib/x86_64-linux-gnu)
  mkdir -p "$site/nvidia/$1/include" "$site/nvidia/$1/lib"
  for f in $headers; do ln -s "$f" "$site/nvidia/$1/include/"; done
  for f in $libraries; do ln -s "$(readlink -f "$f")" "$site/nvidia/$1/lib/$(basename "$f")"; done
  echo "gpu.sh --dry-run: the $1 package links to $(dirname "$f")"
}
wheel cudnn 'cudnn*' 'libcudnn*.so.[0-9]' DUET_CUDNN_LIBRARY DUET_CUDNN_INCLUDE_DIR
wheel nccl 'nccl*' 'libnccl.so.[0-9]' DUET_NCCL_LIBRARY DUET_NCCL_INCLUDE_DIR
wheel cu13 'cublas*' 'libcublas*.so.[0-9]*' CUDA_cublas_LIBRARY
# What must not shadow the toolkit's.
runtime_header=$(matches cuda_runtime_api.h "$toolkit/include" "$targets/include" /usr/include)
ln -s "$runtime_header" "$site/nvidia/cu13/include/"

# The GPU machine has none of duet's other dependencies (MPI is optional): hide this machine's from CMake.
hidden="/usr/include;/usr/lib/x86_64-linux-gnu;/usr/lib/x86_64-linux-gnu/openblas-pthread;/usr/lib/cmake"
hidden+=";/usr/share/cmake;/usr/lib/x86_64-linux-gnu/cmake"
rm -rf "$BUILD"
mkdir -p "$OUT"
set +e
BUILD_DIR=$BUILD OUT=$OUT GPU_SITE_PACKAGES=$site GPU_ENV_WHEELS_FIRST=1 BUDGET_S=400 \
  GPU_CMAKE_ARGS="-DCMAKE_IGNORE_PREFIX_PATH=/usr -DCMAKE_IGNORE_PATH=$hidden -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON" \
  bash "$ROOT/bench/gpu/gpu.sh" 2>&1 | tee "$OUT/gpu.log"
status=${PIPESTATUS[0]}
set -e

echo
echo "== checking what gpu.sh did"
((status == 2)) || fail "gpu.sh exited with $status, expected 2 (stopped at the preflight)"
grep -q "STOPPED before the benchmarks: the preflight failed" "$OUT/gpu.log" || fail "no 'the preflight failed' line"
grep -q "none of the preflight ran" "$OUT/gpu.log" || fail "the summary does not say that nothing ran"
grep -q "^Time plan" "$OUT/gpu.log" || fail "gpu.sh printed no time plan"
grep -qE "^== (build the CUDA tests|ctest -L cuda|build the benchmarks|duet |PyTorch)" "$OUT/gpu.log" &&
  fail "gpu.sh went on after the preflight"
[[ -e $BUILD/libduet.so ]] && fail "the dry run built the library"
for file in gpu.log env.log machine.log configure.log CMakeCache.txt build-preflight.log ctest-preflight.log \
  ctest-preflight.xml LastTest-ctest-preflight.log ctest-preflight-summary.txt; do
  [[ -s $OUT/$file ]] || fail "$OUT/$file is missing or empty"
done
# Every dependency came from gpu-deps/ or the package folder, none from this machine.
for entry in BLAS_openblas_LIBRARY Catch2_DIR CLI11_DIR nlohmann_json_DIR ZLIB_LIBRARY_RELEASE DUET_CUDNN_INCLUDE_DIR \
  DUET_CUDNN_LIBRARY DUET_NCCL_INCLUDE_DIR DUET_NCCL_LIBRARY CUDA_cublas_LIBRARY CUDA_cublasLt_LIBRARY; do
  value=$(grep -E "^$entry:" "$OUT/CMakeCache.txt" | cut -d= -f2-)
  [[ $value == "$BUILD/deps/"* ]] || fail "$entry is '$value', not from $BUILD/deps"
done
# --no-tests=error: a filter that matches nothing fails instead of passing having run nothing.
if ctest --test-dir "$BUILD" -R '^no-such-test$' --no-tests=error >/dev/null 2>&1; then
  fail "ctest --no-tests=error passed with no test"
fi
echo
echo "== gpu.sh past the failed preflight, with a benchmark that does not compile"
ORDER_OUT=$BUILD/out-order
mkdir -p "$ORDER_OUT"
set +e
BUILD_DIR=$BUILD OUT=$ORDER_OUT GPU_SITE_PACKAGES=$site GPU_ENV_WHEELS_FIRST=1 BUDGET_S=400 \
  GPU_PAST_FAILED_PREFLIGHT=1 GPU_TEST_TARGETS=cuda_preflight GPU_BENCH_TARGETS=dry_run_broken_bench \
  GPU_CMAKE_ARGS="-DCMAKE_IGNORE_PREFIX_PATH=/usr -DCMAKE_IGNORE_PATH=$hidden -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
-DDUET_DRY_RUN_BROKEN_BENCH=ON" bash "$ROOT/bench/gpu/gpu.sh" --models lenet 2>&1 | tee "$ORDER_OUT/gpu.log"
status=${PIPESTATUS[0]}
set -e
((status == 1)) || fail "past the preflight, gpu.sh exited with $status, expected 1 (a step failed, none stopped it)"
steps=$(grep -oE "^== (build the CUDA tests|ctest -L cuda|build the benchmarks)" "$ORDER_OUT/gpu.log" | cut -c4- |
  paste -sd, -)
[[ $steps == "build the CUDA tests,ctest -L cuda,build the benchmarks" ]] ||
  fail "the steps ran in the order '$steps', not: build the CUDA tests, ctest -L cuda, build the benchmarks"
[[ -s $ORDER_OUT/ctest-cuda.log ]] || fail "the test step left no log"
grep -q "dry_run_broken_bench.cpp" "$ORDER_OUT/build-bench.log" || fail "the broken benchmark was not compiled"
grep -q "build the benchmarks (exit" "$ORDER_OUT/gpu.log" || fail "the benchmark's build error is not reported"
grep -q "duet's benchmark rows are left out" "$ORDER_OUT/gpu.log" || fail "no note that duet's rows were left out"
grep -q "^== duet " "$ORDER_OUT/gpu.log" && fail "gpu.sh ran a benchmark row that was not built"
echo "gpu.sh --dry-run: passed in $(($(date +%s) - begin))s (the build and logs are in $BUILD)"
