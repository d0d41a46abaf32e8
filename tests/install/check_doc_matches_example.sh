#!/usr/bin/env bash
# Checks that the code blocks docs/writing-models.md takes from the example program are the
# example's code, so that the page shows what the install test compiles and runs.
#   In the example:  // doc: NAME  ...lines...  // end doc
#   On the page:     <!-- example: NAME -->  followed by a ```cpp block
# Indentation is compared after removing each block's common leading spaces. Every named block
# must appear in both files, once.
# Usage: check_doc_matches_example.sh DOC EXAMPLE
set -euo pipefail
doc=$1 example=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/doc" "$work/example"

# Writes each block to DIR/NAME; a name seen twice, or a block left open, is an error.
awk -v dir="$work/example" '
  /^[ \t]*\/\/ doc: / { if (name != "") { print "nested doc block at line " NR > "/dev/stderr"; exit 1 }
                        name = $3; if (seen[name]++) { print "block " name " twice" > "/dev/stderr"; exit 1 }
                        printf "" > (dir "/" name); next }
  /^[ \t]*\/\/ end doc/ { name = ""; next }
  name != "" { print > (dir "/" name) }
  END { if (name != "") { print "block " name " has no end doc" > "/dev/stderr"; exit 1 } }
' "$example"
awk -v dir="$work/doc" '
  /^<!-- example: .* -->$/ { name = $3; if (seen[name]++) { print "block " name " twice" > "/dev/stderr"; exit 1 }
                             expect_fence = 1; next }
  expect_fence { if ($0 != "```cpp") { print "<!-- example: " name " --> is not followed by ```cpp" > "/dev/stderr"; exit 1 }
                 expect_fence = 0; inside = 1; printf "" > (dir "/" name); next }
  inside && /^```$/ { inside = 0; next }
  inside { print > (dir "/" name) }
' "$doc"

dedent() {
  awk 'NR == FNR { if ($0 ~ /[^ ]/) { match($0, /^ */); if (min == "" || RLENGTH < min) min = RLENGTH } next }
       { print substr($0, min + 1) }' "$1" "$1"
}

status=0
names=$(cd "$work" && ls doc example | grep -v ':$' | grep -v '^$' | sort -u)
[ -n "$names" ] || { echo "no example blocks found in $doc and $example" >&2; exit 1; }
for name in $names; do
  for side in doc example; do
    [ -f "$work/$side/$name" ] || { echo "block '$name' is missing from the $side" >&2; status=1; continue 2; }
  done
  if ! diff -u --label "$doc ($name)" --label "$example ($name)" \
       <(dedent "$work/doc/$name") <(dedent "$work/example/$name") >&2; then
    status=1
  fi
done
[ $status -eq 0 ] && echo "$(echo "$names" | wc -w) blocks of $doc match $example"
exit $status
