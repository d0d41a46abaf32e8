# shellcheck shell=bash
# Makes duet's build dependencies findable on a GPU machine that lacks them, and its binaries
# runnable there. Sourced by bench/gpu/gpu.sh, or by hand before running a binary of build-gpu/
# (`source bench/gpu/gpu_env.sh`, then e.g. ./build-gpu/tests/duet_cuda_tests): without it they
# fail with "libcudnn.so.9: cannot open shared object file".
#
# Optional inputs: ROOT (default: this repository), BUILD_DIR (default $ROOT/build-gpu), PYTHON
# (default python3), GPU_SITE_PACKAGES (where PyTorch's nvidia-* packages live; default PYTHON's
# site-packages), GPU_ENV_WHEELS_FIRST=1 (take cuBLAS, cuDNN and NCCL from those packages even
# where the CUDA toolkit has them: bench/gpu/gpu_dry_run.sh's simulated GPU machine).
# Sets CMAKE_ARGS (an array for the configure), GPU_ENV_PROBLEMS (an array: what is missing and
# the command that fixes it; gpu.sh stops on any) and exports CPATH, LIBRARY_PATH, LD_LIBRARY_PATH.
#   - gpu-deps/*.deb (from bench/gpu/gpu_deps.sh: OpenBLAS, zlib's headers, Catch2, CLI11,
#     nlohmann-json) unpacked under $BUILD_DIR/deps/debian, once, with no dpkg database touched;
#   - cuDNN, NCCL and cuBLAS's development files from the nvidia-* Python packages beside
#     PyTorch when the toolkit has none: those wheels ship versioned libraries only
#     (libcudnn.so.9), so a folder of links gives CMake the names it looks for. Without any
#     cuDNN the build goes on with -DDUET_CUDNN=OFF; without NCCL, without the communicator.
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu}
PYTHON=${PYTHON:-python3}
CMAKE_ARGS=()
GPU_ENV_PROBLEMS=()

# prepend_path VAR DIR: DIR in front of the colon-separated VAR, once.
prepend_path() {
  local current=${!1:-}
  [[ ":$current:" == *":$2:"* ]] && return 0
  export "$1=$2${current:+:$current}"
}

# The headers the build needs where the compiler finds them without help (Debian's packages).
system_has_deps() {
  local header
  for header in cblas.h catch2/catch.hpp CLI/CLI.hpp nlohmann/json.hpp zlib.h; do
    [[ -n $(find /usr/include /usr/local/include -maxdepth 3 -path "*/$header" -print -quit 2>/dev/null) ]] || return 1
  done
}

unpack_debs() {
  local debs=("$ROOT"/gpu-deps/*.deb) root=$BUILD_DIR/deps/debian
  if [[ ! -e ${debs[0]} ]]; then
    if system_has_deps; then
      echo "Dependencies: the system's (no gpu-deps/ folder)"
    else
      GPU_ENV_PROBLEMS+=("no gpu-deps/ folder, and this machine lacks OpenBLAS, Catch2, CLI11, nlohmann-json or \
zlib's headers: run bench/gpu/gpu_deps.sh where apt works and carry gpu-deps/ along (run's carry: [\"gpu-deps\"])")
    fi
    return 0
  fi
  # Unpacked once per set of packages: a hand-sourced gpu_env.sh or a follow-up run reuses it.
  local stamp=$root/.packages listing
  listing=$(cd "$ROOT/gpu-deps" && ls -l *.deb | awk '{print $5, $NF}')
  if [[ ! -f $stamp || $(cat "$stamp") != "$listing" ]]; then
    rm -rf "$root" && mkdir -p "$root"
    local deb data
    for deb in "${debs[@]}"; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$root"
        continue
      fi
      data=$(ar t "$deb" | grep '^data\.tar')  # a .deb is an ar archive holding data.tar.*
      case $data in
        *.xz) ar p "$deb" "$data" | tar -xJ -C "$root" ;;
        *.zst) ar p "$deb" "$data" | tar -x --zstd -C "$root" ;;
        *) ar p "$deb" "$data" | tar -xz -C "$root" ;;
      esac
    done
    local system_zlib
    # zlib1g-dev's libz.so points at the runtime library, which is the machine's own here.
    system_zlib=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
    [[ -n $system_zlib ]] && ln -sf "$system_zlib" "$root/usr/lib/x86_64-linux-gnu/libz.so"
    echo "$listing" >"$stamp"
  fi
  local lib=$root/usr/lib/x86_64-linux-gnu
  CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_LIBRARY_PATH="$lib/openblas-pthread;$lib")
  prepend_path CPATH "$root/usr/include"
  prepend_path CPATH "$root/usr/include/x86_64-linux-gnu/openblas-pthread"
  prepend_path LIBRARY_PATH "$lib"
  prepend_path LIBRARY_PATH "$lib/openblas-pthread"
  prepend_path LD_LIBRARY_PATH "$lib"
  prepend_path LD_LIBRARY_PATH "$lib/openblas-pthread"
  echo "Dependencies: ${#debs[@]} Debian packages from gpu-deps/, unpacked in $root"
}

site_packages() {
  if [[ -n ${GPU_SITE_PACKAGES:-} ]]; then
    echo "$GPU_SITE_PACKAGES"
  else
    "$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" 2>/dev/null
  fi
}

# wheel_prefix NAME HEADER LIB...: $BUILD_DIR/deps/NAME, a prefix CMake can search made of links
# into the nvidia-* Python package that holds include/HEADER: include/ gets the headers named
# like it (cudnn*, nccl*, cublas*: only those, so none of the package's other CUDA headers
# shadows the toolkit's), lib/libLIB.so each library's versioned file. The package's library
# folder goes on LD_LIBRARY_PATH. Left in WHEEL_PREFIX; fails when no package has them all.
wheel_prefix() {
  local name=$1 header=$2 site found include package so lib
  shift 2
  site=$(site_packages) && [[ -d $site/nvidia ]] || return 1
  found=$(find -L "$site/nvidia" -maxdepth 4 -path "*/include/$header" 2>/dev/null | sort | head -n 1)
  [[ -n $found ]] || return 1
  include=$(dirname "$found")
  package=$(dirname "$include")
  WHEEL_PREFIX=$BUILD_DIR/deps/$name
  rm -rf "$WHEEL_PREFIX" && mkdir -p "$WHEEL_PREFIX/include" "$WHEEL_PREFIX/lib"
  ln -s "$include/$name"* "$WHEEL_PREFIX/include/"
  for lib in "$@"; do
    so=$(find -L "$package" -maxdepth 2 -name "lib$lib.so*" 2>/dev/null | sort | head -n 1)
    [[ -n $so ]] || return 1
    ln -s "$so" "$WHEEL_PREFIX/lib/lib$lib.so"
    prepend_path LD_LIBRARY_PATH "$(dirname "$so")"
  done
}

# The CUDA toolkit nvcc belongs to (the toolkit, or a targets/ folder within it, or Debian's /usr).
source "$ROOT/bench/gpu/cuda_toolkit.sh"
TOOLKIT=$(cuda_toolkit_root)
toolkit_has() {
  local dir
  for dir in "$TOOLKIT" "$TOOLKIT/targets/x86_64-linux" /usr; do
    [[ -e $dir/$1 ]] && return 0
  done
  return 1
}
toolkit_has_lib() { toolkit_has "lib64/lib$1.so" || toolkit_has "lib/lib$1.so" || toolkit_has "lib/x86_64-linux-gnu/lib$1.so"; }
wheels_first() { [[ ${GPU_ENV_WHEELS_FIRST:-0} == 1 ]]; }

unpack_debs
where=$(site_packages || echo "(no Python site-packages)")
if wheels_first || ! toolkit_has include/cudnn.h || ! toolkit_has_lib cudnn; then
  if wheel_prefix cudnn cudnn.h cudnn; then
    CMAKE_ARGS+=(-DCUDNN_ROOT="$WHEEL_PREFIX")
    echo "cuDNN: PyTorch's, through $WHEEL_PREFIX"
  else
    # cuDNN is optional (DUET_CUDNN): the run goes on, convolution through im2col + cuBLAS and
    # batch norm on duet's kernels, and the [cudnn] tests skip, saying why.
    CMAKE_ARGS+=(-DDUET_CUDNN=OFF)
    echo "cuDNN: neither the CUDA toolkit ($TOOLKIT) nor a nvidia-cudnn package under $where has cudnn.h and \
libcudnn; building without cuDNN (DUET_CUDNN=OFF)"
  fi
fi
if wheels_first || ! toolkit_has include/nccl.h || ! toolkit_has_lib nccl; then
  if wheel_prefix nccl nccl.h nccl; then
    CMAKE_ARGS+=(-DNCCL_ROOT="$WHEEL_PREFIX")
    echo "NCCL: PyTorch's, through $WHEEL_PREFIX"
  else
    echo "NCCL: none found, building without the NCCL communicator"
  fi
fi
# cuBLAS ships with the toolkit, but a runtime-only image has libcublas.so.13 without the
# header and the unversioned link; PyTorch's nvidia/cu13 (or nvidia/cublas) package has both.
if wheels_first || ! toolkit_has include/cublas_v2.h || ! toolkit_has_lib cublas; then
  if wheel_prefix cublas cublas_v2.h cublas cublasLt; then
    # FindCUDAToolkit looks for the libraries only beside the toolkit: name them; the headers
    # come through CPATH (only cublas*, so nothing else of the toolkit is shadowed).
    CMAKE_ARGS+=(-DCUDA_cublas_LIBRARY="$WHEEL_PREFIX/lib/libcublas.so"
                 -DCUDA_cublasLt_LIBRARY="$WHEEL_PREFIX/lib/libcublasLt.so")
    prepend_path CPATH "$WHEEL_PREFIX/include"
    echo "cuBLAS: PyTorch's development files, through $WHEEL_PREFIX"
  else
    GPU_ENV_PROBLEMS+=("cuBLAS: the CUDA toolkit ($TOOLKIT) lacks cublas_v2.h or libcublas.so, and no nvidia-* \
package under $where has them")
  fi
fi
unset where
