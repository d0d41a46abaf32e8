#!/usr/bin/env bash
# Run HERE, before a device run: the GPU machine has nvcc, CMake, ninja and PyTorch but none of
# duet's other build dependencies, and no network. This downloads Debian's packages of them
# (OpenBLAS, zlib's headers, nlohmann-json, CLI11, Catch2: about 15 MB) into gpu-deps/, which
# git ignores; the device run carries that folder (carry: ["gpu-deps"]) and bench/gpu/gpu.sh
# unpacks it under its build folder. MPI is left out (optional); cuDNN and NCCL come from the
# GPU machine's PyTorch (bench/gpu/gpu_env.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEST=$ROOT/gpu-deps
# zlib's runtime library is not among them: every machine has one, and an older copy on
# LD_LIBRARY_PATH could break PyTorch there.
PACKAGES=(libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libgfortran5 zlib1g-dev
          nlohmann-json3-dev libcli11-dev catch2)

command -v apt-get >/dev/null || { echo "gpu_deps.sh: needs apt-get (Debian)" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST"
# apt's sandbox user cannot write into an arbitrary folder; download as root into a temporary one.
tmp=$(mktemp -d)
chmod 777 "$tmp"
(cd "$tmp" && apt-get download -q "${PACKAGES[@]}")
mv "$tmp"/*.deb "$DEST/"
rmdir "$tmp"
echo "gpu_deps.sh: $(ls "$DEST" | wc -l) packages, $(du -sh "$DEST" | cut -f1), in $DEST"
echo "Next: a device run with carry [\"gpu-deps\"] and the command in docs/first-gpu-run.md (\"How to run it\") (bash bench/gpu/gpu.sh ...)"
