"""Where the cores are: bench/core_latency's one-way trip of a cache line from one core to the
other, measured before and after each benchmark run (processes.py).

For minutes at a time this project's 2-vCPU VM has its vCPUs placed apart, with no cache in
common: the trip then takes about 165 ns instead of 25 to 30, and whatever one core wrote costs
the other six times as much to read. A run in such a spell measures the placement rather than
the code, and it does not hit both frameworks alike (duet's training step splits its small ops
over both cores, PyTorch's runs them on one; docs/performance.md). So a run whose trip took
over FAR times the fastest one seen so far counts as disturbed, as a run beside a busy
neighbour does: it is run again after a pause, and the table says how many kept runs were."""
import json
import subprocess

FAR = 2.0


class Placement:
    """Probes with the core_latency program at `probe` (None: no probing)."""

    def __init__(self, probe=None):
        self.probe = probe
        self.fastest = None

    def cross_core_ns(self):
        """One probe's trip in ns, or None where there is no probe, no second core or no answer."""
        if not self.probe:
            return None
        try:
            done = subprocess.run([self.probe], capture_output=True, text=True, timeout=30)
            ns = json.loads(done.stdout.strip().splitlines()[-1])["cross_core_ns"]
        except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError):
            return None
        if ns is not None and (self.fastest is None or ns < self.fastest):
            self.fastest = ns
        return ns

    def is_far(self, ns):
        """Whether a trip of `ns` means the cores were placed apart (FAR times the fastest)."""
        return ns is not None and self.fastest is not None and ns > FAR * self.fastest


# bench/cpu/run.py sets the probe once it knows where the programs are.
placement = Placement()
