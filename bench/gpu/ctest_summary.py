#!/usr/bin/env python3
"""What a ctest run really did, from its JUnit file (ctest --output-junit): how many tests passed,
failed and were skipped, and the names of those that failed or were skipped.

ctest alone cannot say whether a GPU run tested anything: a test that exits 77 (no usable GPU)
is Skipped, and ctest still prints "100% tests passed" and exits 0 when every test skipped. This
exits 0 only when at least one test ran and none failed; bench/gpu/gpu.sh uses it for its preflight
and for the CUDA tests.

Usage: ctest_summary.py JUNIT_XML [--what "CUDA tests"]
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def outcome(case):
    """'passed', 'failed' or 'skipped' for one <testcase> of ctest's JUnit file."""
    if case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
        return "skipped"
    if case.find("failure") is not None or case.find("error") is not None or case.get("status") == "fail":
        return "failed"
    return "passed"


def summarize(path):
    """{'passed': [names], 'failed': [...], 'skipped': [...], 'skip_reasons': {name: first output line}}."""
    result = {"passed": [], "failed": [], "skipped": [], "skip_reasons": {}}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        kind = outcome(case)
        result[kind].append(name)
        if kind == "skipped":
            out = (case.findtext("system-out") or "").strip().splitlines()
            said = [line for line in out if line.startswith("skipped")] or out  # the test's own reason first
            result["skip_reasons"][name] = said[0] if said else ""
    return result


def report(result, what):
    """The lines to print, and whether the run counts as a success."""
    passed, failed, skipped = (len(result[k]) for k in ("passed", "failed", "skipped"))
    lines = [f"{what}: {passed} passed, {failed} failed, {skipped} skipped, of {passed + failed + skipped}"]
    lines += [f"  FAILED: {name}" for name in result["failed"]]
    if passed + failed == 0:
        reasons = sorted({r for r in result["skip_reasons"].values() if r})
        lines.append(f"  none of the {what} ran" + (f" ({'; '.join(reasons)})" if reasons else "")
                     + ": no usable GPU, or no test matched")
    else:
        lines += [f"  skipped: {name}" for name in result["skipped"]]
    return lines, passed + failed > 0 and failed == 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("junit")
    p.add_argument("--what", default="tests")
    args = p.parse_args(argv)
    try:
        result = summarize(args.junit)
    except (OSError, ET.ParseError) as e:
        print(f"{args.what}: no readable ctest result ({e})")
        return 1
    lines, ok = report(result, args.what)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
