"""Runs one benchmark program as its own process and returns what it printed (for bench's own
programs, a JSON line) with its peak RSS.

Each measurement is a fresh process, so its peak RSS is that run's alone and no run inherits
another's warm caches or thread pools. The machine may be shared, so each run also records how
busy the CPUs were with *other* work meanwhile (from /proc/stat, less the child's own CPU time),
and where its cores were (placement.py): a run that shared its cores, or ran on cores placed
apart, is slower, and says so."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from placement import placement

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


class BenchError(RuntimeError):
    """A benchmark program failed or printed no result; the message says which and why."""


def progress(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _busy_cpu_seconds():
    """CPU seconds every process on the machine has used (all but idle and iowait, steal included)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle, iowait = fields[3], fields[4]
    return (sum(fields) - idle - iowait) / TICKS_PER_SECOND


def run_process(command, what, timeout=900):
    """Runs `command` and returns (stdout, figures): figures has the child's `peak_rss_mib` (its
    ru_maxrss), `other_cpu_load`, the share of the machine's CPUs that other work used meanwhile,
    and `cross_core_ns`, the slower of the probes before and after (placement.py), when probed."""
    trip_before = placement.cross_core_ns()
    busy, start = _busy_cpu_seconds(), time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        except FileNotFoundError as e:
            raise BenchError(f"{what}: cannot run {command[0]}: {e.strerror}") from e
        # os.kill, not child.kill: that would poll, and could reap the child before wait4 does.
        timer = threading.Timer(timeout, os.kill, (child.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)  # wait4 gives this child's own rusage
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    seconds = time.monotonic() - start
    if seconds >= timeout and child.returncode < 0:
        raise BenchError(f"{what}: still running after {timeout} s: {' '.join(command)}")
    if child.returncode != 0:
        raise BenchError(f"{what} failed (exit {child.returncode}): {' '.join(command)}\n{stderr.strip()}")
    figures = {"peak_rss_mib": usage.ru_maxrss / 1024.0}
    busy_after = _busy_cpu_seconds()
    if busy is not None and busy_after is not None:
        others = (busy_after - busy) - (usage.ru_utime + usage.ru_stime)
        figures["other_cpu_load"] = round(max(0.0, others) / (seconds * (os.cpu_count() or 1)), 3)
    trips = [ns for ns in (trip_before, placement.cross_core_ns()) if ns is not None]
    if trips:
        figures["cross_core_ns"] = round(max(trips), 1)
    return stdout, figures


def last_json_line(stdout, what):
    """The JSON object on the last line of a benchmark program's output."""
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as e:
        raise BenchError(f"{what}: expected a JSON line on stdout, got:\n{stdout}") from e


def run_json(command, what, timeout=900):
    """Runs `command` and returns the JSON object on its last stdout line, with
    `other_cpu_load` and `cross_core_ns` added (run_process)."""
    stdout, figures = run_process(command, what, timeout)
    result = last_json_line(stdout, what)
    for key in ("other_cpu_load", "cross_core_ns"):
        if key in figures:
            result[key] = figures[key]
    return result


DISTURBED = 0.1  # other work on more than this share of the CPUs makes a run unrepresentative


def _disturbance(result):
    """(placed apart, other processes' load): the smaller, the more representative the run."""
    return (placement.is_far(result.get("cross_core_ns")), result.get("other_cpu_load", 0.0))


def _why_disturbed(result):
    reasons = []
    if result.get("other_cpu_load", 0.0) > DISTURBED:
        reasons.append(f"other processes used {100 * result['other_cpu_load']:.0f}% of the CPUs")
    if placement.is_far(result.get("cross_core_ns")):
        reasons.append(f"the cores were placed apart (a cache line took {result['cross_core_ns']:.0f} ns from one "
                       f"to the other, against {placement.fastest:.0f} at best)")
    return " and ".join(reasons)


def run_undisturbed(command, what, retries, wait_seconds=5, run=run_json):
    """run(command, what), run_json by default, repeated up to `retries` times while other
    processes took over DISTURBED of the CPUs during the run, or its cores were placed apart
    (placement.py); returns the least disturbed attempt, warning if even that one was."""
    best = None
    for attempt in range(retries + 1):
        result = run(command, what)
        if best is None or _disturbance(result) < _disturbance(best):
            best = result
        why = _why_disturbed(result)
        if not why:
            break
        if attempt < retries:
            progress(f"{what}: {why}; retrying in {wait_seconds} s")
            time.sleep(wait_seconds)
    why = _why_disturbed(best)
    if why:
        progress(f"warning: during {what}, {why}; its figures are lower than on an idle machine")
    return best
