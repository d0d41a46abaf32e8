"""Runs one benchmark program as its own process and returns the JSON line it printed.

Each measurement is a fresh process, so its peak RSS is that run's alone and no run inherits
another's warm caches or thread pools. The machine may be shared, so each run also records how
busy the CPUs were with *other* work meanwhile (from /proc/stat, less the child's own CPU time):
a run that shared its cores is slower, and says so."""
import json
import os
import resource
import subprocess
import sys
import time

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


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_json(command, what, timeout=900):
    """Runs `command` and returns the JSON object on its last stdout line, with
    `other_cpu_load` added: the share of the machine's CPUs that other work used meanwhile."""
    busy, own, start = _busy_cpu_seconds(), _children_cpu_seconds(), time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as e:
        raise BenchError(f"{what}: cannot run {command[0]}: {e.strerror}") from e
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"{what}: still running after {timeout} s: {' '.join(command)}") from e
    if done.returncode != 0:
        raise BenchError(f"{what} failed (exit {done.returncode}): {' '.join(command)}\n{done.stderr.strip()}")
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as e:
        raise BenchError(f"{what}: expected a JSON line on stdout, got:\n{done.stdout}{done.stderr}") from e
    busy_after = _busy_cpu_seconds()
    if busy is not None and busy_after is not None:
        others = (busy_after - busy) - (_children_cpu_seconds() - own)
        capacity = (time.monotonic() - start) * (os.cpu_count() or 1)
        result["other_cpu_load"] = round(max(0.0, others) / capacity, 3)
    return result


DISTURBED = 0.1  # other work on more than this share of the CPUs makes a run unrepresentative


def run_undisturbed(command, what, retries, wait_seconds=5):
    """run_json, repeated up to `retries` times while other processes took over DISTURBED of the
    CPUs during the run; returns the least disturbed attempt, warning if even that one was."""
    best = None
    for attempt in range(retries + 1):
        result = run_json(command, what)
        load = result.get("other_cpu_load", 0.0)
        if best is None or load < best.get("other_cpu_load", 0.0):
            best = result
        if load <= DISTURBED:
            break
        if attempt < retries:
            progress(f"{what}: other processes used {100 * load:.0f}% of the CPUs; retrying in {wait_seconds} s")
            time.sleep(wait_seconds)
    if best.get("other_cpu_load", 0.0) > DISTURBED:
        progress(f"warning: other processes used {100 * best['other_cpu_load']:.0f}% of the CPUs during {what}; "
                 f"its figures are lower than on an idle machine")
    return best
