#!/usr/bin/env python3
"""Fails if C++ code outside the strategy parser compares a quoted strategy name.

Strategies are parallel::StrategyKind values: the names live in one table in
parallel/strategy_kind.cpp, whose parse_strategy_kind is the only place that compares them.
This check reads the names from that table and looks through every C++ source of the
repository (comments left out) for a quoted name beside ==, != or a string search
(compare, find, rfind, starts_with, ends_with).

Usage: check_strategy_names.py REPO_ROOT
"""
import pathlib
import re
import sys

PARSER = pathlib.Path("parallel/strategy_kind.cpp")
SOURCE_DIRS = ("apps", "autograd", "bench", "core", "data", "kernels", "nn", "optim", "parallel", "tests", "tools")
SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")

# A string or character literal (kept), or a comment (blanked, its newlines kept).
TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def without_comments(text):
    def keep(m):
        token = m.group(0)
        return token if token[0] in "\"'" else re.sub(r"[^\n]", " ", token)

    return TOKEN.sub(keep, text)


def table_names(root):
    text = (root / PARSER).read_text()
    return re.findall(r'\{\s*StrategyKind::\w+\s*,\s*"([^"]+)"', text)


def comparisons(names):
    quoted = '"(?:' + "|".join(re.escape(n) for n in names) + ')"'
    return re.compile(
        r"(?:==|!=)\s*" + quoted + "|" + quoted + r"\s*(?:==|!=)" + "|"
        r"\.\s*(?:compare|find|rfind|starts_with|ends_with)\s*\(\s*" + quoted)


def offences(text, pattern):
    code = without_comments(text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(0).replace("\n", " ")) for m in pattern.finditer(code)]


def self_test(pattern):
    caught = ['if (name == "ddp") {', 'x != \n "single"', '"dp" == s', 's.rfind("ddp", 0)']
    passed = ['if (comm == "local") {', '// name == "ddp"', 'f("ddp")', 'x == "ddp-extra"', '/* "dp" != s */']
    for text in caught:
        assert offences(text, pattern), "the check misses: " + text
    for text in passed:
        assert not offences(text, pattern), "the check wrongly flags: " + text


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    names = table_names(root)
    if len(names) < 3 or "ddp" not in names:
        print(f"check_strategy_names: could not read the strategy table in {PARSER} (found {names})")
        return 1
    pattern = comparisons(names)
    self_test(pattern)
    found = []
    for folder in SOURCE_DIRS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or path.relative_to(root) == PARSER:
                continue
            for line, what in offences(path.read_text(errors="replace"), pattern):
                found.append(f"{path.relative_to(root)}:{line}: {what}")
    for f in found:
        print(f)
    if found:
        print(f"check_strategy_names: {len(found)} comparison(s) of strategy names outside {PARSER}: "
              "compare parallel::StrategyKind values instead (parse_strategy_kind turns a name into one)")
        return 1
    print(f"check_strategy_names: no strategy name ({', '.join(names)}) is compared outside {PARSER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
