#!/usr/bin/env bash
# Installs what `make bench` needs beyond duet's own dependencies: Debian's PyTorch (the CPU
# anchor) and NumPy, only when /usr/bin/python3 cannot import torch, so a second run is instant.
set -euo pipefail

python=/usr/bin/python3
if "$python" -c "import torch, numpy" 2>/dev/null; then
  exit 0
fi

echo "bench/cpu/setup.sh: $python cannot import torch; installing python3-torch python3-numpy" >&2
"$(dirname "${BASH_SOURCE[0]}")/../../scripts/install-missing-debs.sh" python3-torch python3-numpy
"$python" -c "import torch" || { echo "bench/cpu/setup.sh: torch still cannot be imported" >&2; exit 1; }
