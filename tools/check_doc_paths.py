#!/usr/bin/env python3
"""Fails when the documentation cites a file or a function the code no longer has.

    tools/check_doc_paths.py [REPOSITORY_ROOT]

Reads README.md, CHANGELOG.md and docs/*.md (ctest runs it as the test docs_paths) and checks
two things:

1. Every relative path with a file extension, such as `parallel/strategy.cpp`, names a file of
   the repository (a Markdown link from docs/ may start with ../). `duet/LAYER/file.h` (how headers are included) may name LAYER/file.h, and a
   few paths are outputs that commands write (GENERATED below), not files of the repository.
2. In a table row, a cell that holds one backticked path followed by a cell of backticked names
   (`SingleDevice::train_accumulated`, `make_strategy`) cites those names in that file: the last
   part of each name must occur in the file's text. docs/architecture.md's walk through one
   training step is such a table, so a function renamed or moved fails here, not in a reader's
   hands.

Prints each stale citation as DOC:LINE: what is wrong, and exits 1 if there is any.
"""
import pathlib
import re
import sys

# Outputs a command writes, which git ignores: cited as where to look, never committed.
GENERATED = {
    "bench/results.json": "bench/cpu/run.py's results",
}

# A relative path: folders, then a file name with an extension; not part of a URL, an absolute
# path, a home or variable path, or an <include> placeholder such as <duet/LAYER/file.h>.
PATH = re.compile(r"(?<![\w./:~$<-])((?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]+)(?![\w/])")
CODE = re.compile(r"`([^`]+)`")
NAME = re.compile(r"^[A-Za-z_][\w:~]*(?:\(\))?$")


def documents(root):
    extra = [root / "CHANGELOG.md"] if (root / "CHANGELOG.md").is_file() else []
    return [root / "README.md"] + extra + sorted((root / "docs").glob("*.md"))


def resolve(root, path):
    """The file a cited path names, or None. A path that starts with ../ is a Markdown link
    from a page under docs/, relative to that folder."""
    if path.startswith("../"):
        path = path[len("../"):]
    candidates = [path]
    if path.startswith("duet/"):
        candidates.append(path[len("duet/"):])
    for candidate in candidates:
        if (root / candidate).is_file():
            return root / candidate
    return None


def check_paths(root, doc, number, line, problems):
    for match in PATH.finditer(line):
        path = match.group(1)
        if path not in GENERATED and resolve(root, path) is None:
            problems.append(f"{doc}:{number}: {path} does not exist")


def check_table_row(root, doc, number, line, problems):
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    for cell, following in zip(cells, cells[1:]):
        quoted = CODE.fullmatch(cell)
        if not quoted or not PATH.fullmatch(quoted.group(1)):
            continue
        source = resolve(root, quoted.group(1))
        if source is None:
            continue  # check_paths reports it
        text = source.read_text(encoding="utf-8", errors="replace")
        for name in CODE.findall(following):
            if not NAME.match(name):
                continue
            last = name.removesuffix("()").split("::")[-1]
            if not re.search(r"\b" + re.escape(last) + r"\b", text):
                problems.append(f"{doc}:{number}: {name} is not in {quoted.group(1)}")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = []
    cited = 0
    for doc in documents(root):
        relative = doc.relative_to(root)
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            cited += len(PATH.findall(line))
            check_paths(root, relative, number, line, problems)
            if line.lstrip().startswith("|"):
                check_table_row(root, relative, number, line, problems)
    for problem in problems:
        print(problem)
    print(f"check_doc_paths: {cited} citations of paths in {len(documents(root))} documents, "
          f"{len(problems)} stale")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
