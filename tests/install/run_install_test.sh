#!/usr/bin/env bash
# Installs the duet build into a scratch prefix, builds tests/install/example as an outside
# CMake project against it (find_package(duet)), and runs it for a few batches.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > /dev/null
cmake -S "$source_dir/tests/install/example" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/build" > /dev/null
libdir=$(dirname "$(find "$work/prefix" -name "libduet.so*" | head -n 1)")
LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$work/build/duet_example" 20
