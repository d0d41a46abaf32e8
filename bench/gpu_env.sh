# Sourced by bench/gpu.sh: makes duet's build dependencies findable on a GPU machine that lacks
# them. Sets CMAKE_ARGS (an array) and exports CPATH, LIBRARY_PATH and LD_LIBRARY_PATH.
#   - gpu-deps/*.deb (from bench/gpu_deps.sh) unpacked under $BUILD_DIR/deps, with no dpkg
#     database touched and nothing written outside the build folder;
#   - cuDNN and NCCL from the nvidia-cudnn / nvidia-nccl Python packages beside PyTorch, when
#     the CUDA toolkit's folders have no cudnn.h / nccl.h. Those wheels ship versioned libraries
#     only (libcudnn.so.9), so a folder of links gives CMake the names it looks for.
CMAKE_ARGS=()

unpack_debs() {
  local debs=("$ROOT"/gpu-deps/*.deb) root=$BUILD_DIR/deps
  [[ -e ${debs[0]} ]] || return 0
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
  local lib=$root/usr/lib/x86_64-linux-gnu system_zlib
  # zlib1g-dev's libz.so points at the runtime library, which is the machine's own here.
  system_zlib=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
  [[ -n $system_zlib ]] && ln -sf "$system_zlib" "$lib/libz.so"
  CMAKE_ARGS+=(-DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_LIBRARY_PATH="$lib/openblas-pthread;$lib")
  export CPATH=$root/usr/include/x86_64-linux-gnu/openblas-pthread:$root/usr/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=$lib/openblas-pthread:$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$lib/openblas-pthread:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "Dependencies: $(ls "$ROOT"/gpu-deps/*.deb | wc -l) Debian packages unpacked in $root"
}

# wheel_library HEADER LIB: the nvidia-* Python package beside PyTorch that holds HEADER, as a
# prefix CMake can search (a folder of links: include/, and lib/libLIB.so to the versioned
# library), left in WHEEL_PREFIX. Fails when no package has it.
wheel_library() {
  local header=$1 lib=$2 site found so
  site=$("$PYTHON" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" 2>/dev/null) || return 1
  found=$(find -L "$site/nvidia" -maxdepth 5 -path "*/include/$header" 2>/dev/null | head -n 1)
  [[ -n $found ]] || return 1
  so=$(find -L "$(dirname "$(dirname "$found")")" -maxdepth 3 -name "lib$lib.so*" 2>/dev/null | sort | head -n 1)
  [[ -n $so ]] || return 1
  WHEEL_PREFIX=$BUILD_DIR/deps/$lib
  rm -rf "$WHEEL_PREFIX" && mkdir -p "$WHEEL_PREFIX/lib"
  ln -s "$(dirname "$found")" "$WHEEL_PREFIX/include"
  ln -s "$so" "$WHEEL_PREFIX/lib/lib$lib.so"
  export LD_LIBRARY_PATH=$(dirname "$so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

toolkit_has() { [[ -f /usr/local/cuda/include/$1 || -f /usr/include/$1 ]]; }

unpack_debs
if ! toolkit_has cudnn.h && wheel_library cudnn.h cudnn; then
  CMAKE_ARGS+=(-DCUDNN_ROOT="$WHEEL_PREFIX")
  echo "cuDNN: PyTorch's, through $WHEEL_PREFIX"
fi
if ! toolkit_has nccl.h && wheel_library nccl.h nccl; then
  CMAKE_ARGS+=(-DNCCL_ROOT="$WHEEL_PREFIX")
  echo "NCCL: PyTorch's, through $WHEEL_PREFIX"
fi
