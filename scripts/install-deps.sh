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

exec "$(dirname "${BASH_SOURCE[0]}")/install-missing-debs.sh" "${packages[@]}"
