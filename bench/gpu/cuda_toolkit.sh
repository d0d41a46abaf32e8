# shellcheck shell=bash
# cuda_toolkit_root [NVCC]: prints the CUDA toolkit's root folder, the one the build uses.
# NVCC defaults to what CMakeLists.txt prefers: /usr/local/cuda/bin/nvcc, then the nvcc on PATH.
# The toolkit is where nvcc says it is (its TOP), not the folder above the nvcc found: some
# machines put small wrapper scripts in /usr/local/bin (`exec /usr/local/cuda-13.0/bin/nvcc`),
# and the folder above /usr/local/bin/nvcc holds no CUDA library.
cuda_toolkit_root() {
  local nvcc=${1:-} top
  if [[ -z $nvcc ]]; then
    nvcc=/usr/local/cuda/bin/nvcc
    [[ -x $nvcc ]] || nvcc=$(command -v nvcc || echo "$nvcc")
  fi
  top=$("$nvcc" --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)
  if [[ -n $top && -d $top ]]; then
    readlink -f "$top"
  else
    dirname "$(dirname "$(readlink -f "$nvcc")")"
  fi
}
