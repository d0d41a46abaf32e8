#!/usr/bin/env bash
# Installs those of the Debian packages named on the command line that dpkg does not list as
# installed, with sudo when not root; when none is missing it returns at once without touching
# apt, so that a second `make` costs a fraction of a second. Used by scripts/install-deps.sh
# (duet's build dependencies) and bench/cpu/setup.sh (PyTorch for `make bench`).
#
#   scripts/install-missing-debs.sh PACKAGE...
set -euo pipefail

missing=()
for pkg in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-missing-debs: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-missing-debs: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
