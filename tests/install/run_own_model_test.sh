#!/usr/bin/env bash
# Installs the duet build into a scratch prefix and builds tests/install/own_model as an outside
# CMake project (find_package(duet)): a regression net of its own, trained with an MSE loss under
# single, dp and ddp with a learning-rate schedule, checked step by step. It needs no dataset.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > /dev/null
cmake -S "$source_dir/tests/install/own_model" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/build" > /dev/null
# Exits 1, naming the strategy, if a step or the end differs from single-device training.
"$work/build/duet_own_model"
