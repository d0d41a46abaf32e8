#!/usr/bin/env bash
# Installs the Debian packages duet needs, and only those that are missing, so that
# `make` on a fresh Debian 12 machine works and a second run costs a fraction of a second.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is not a Debian package here: CMake finds it
# under /usr/local/cuda when it is installed, and builds CPU-only when it is not.
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config clang
  libopenblas-dev zlib1g-dev
  catch2 libcli11-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist gnuplot-nox
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
