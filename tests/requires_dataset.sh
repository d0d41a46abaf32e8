#!/usr/bin/env bash
# Runs a test command that trains or reads Fashion-MNIST, or exits 77 (ctest: Skipped) when the
# dataset is not installed, so that a machine without it shows the test as skipped, never as a
# pass that tested nothing.   requires_dataset.sh COMMAND [ARGS...]
dir=/usr/share/datasets/fashion-mnist
for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [[ ! -e $dir/$name.gz ]]; then
    echo "skipped: $dir/$name.gz is missing; install Debian's dataset-fashion-mnist package"
    exit 77
  fi
done
exec "$@"
