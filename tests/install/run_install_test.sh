#!/usr/bin/env bash
# Installs the duet build into a scratch prefix and checks what an outside user gets: the `duet`
# command runs from bin/ as installed (it finds libduet by its RPATH, without LD_LIBRARY_PATH),
# and tests/install/example builds as an outside CMake project (find_package(duet)) and trains,
# evaluates, saves and reloads its model on the first 5,120 training and 2,000 test images.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > /dev/null

info=$(env -u LD_LIBRARY_PATH "$work/prefix/bin/duet" info)
grep -q "^duet [0-9]" <<< "$info" || { echo "the installed 'duet info' printed: $info" >&2; exit 1; }
env -u LD_LIBRARY_PATH "$work/prefix/bin/duet" train --help | grep -q -- "--model" \
  || { echo "the installed 'duet train --help' does not list --model" >&2; exit 1; }
echo "installed duet runs: $(head -n 1 <<< "$info")"

cmake -S "$source_dir/tests/install/example" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/build" > /dev/null
# The example exits 1 if the reloaded model scores differently from the trained one.
output=$("$work/build/duet_example" 5120 2000 "$work/tinynet.safetensors")
echo "$output"
accuracy=$(awk '/^test accuracy/ { print $3 }' <<< "$output")
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.5) }' \
  || { echo "test accuracy '$accuracy' after 20 steps: expected more than 0.5" >&2; exit 1; }
