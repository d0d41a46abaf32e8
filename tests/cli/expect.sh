# Shared by the CLI tests: `source expect.sh DUET_BINARY SUBCOMMAND`. Sets $work (a scratch
# folder removed at exit) and $failures, and defines expect_bad.
duet=$1
subcommand=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {  # fail "what went wrong"
  echo "FAIL: $1"
  failures=$((failures + 1))
}

# expect_bad "message fragment" args...: the subcommand must exit 2 and say so on stderr.
expect_bad() {
  local fragment=$1; shift
  "$duet" "$subcommand" "$@" > "$work/out" 2> "$work/err"
  local status=$?
  if [ $status -ne 2 ] || ! grep -qF -- "$fragment" "$work/err"; then
    fail "duet $subcommand $* -> exit $status, stderr: $(cat "$work/err")"
  else
    echo "ok: duet $subcommand $* -> exit 2: $(head -n 1 "$work/err")"
  fi
}

# without_gnuplot COMMAND...: runs COMMAND (expect_bad, say) with a duet that finds no gnuplot on
# its PATH; the script's own tools keep theirs.
without_gnuplot() {
  local real=$duet
  mkdir -p "$work/no-gnuplot"
  printf '#!/bin/sh\nPATH=%s exec "%s" "$@"\n' "$work/no-gnuplot" "$real" > "$work/duet-without-gnuplot"
  chmod +x "$work/duet-without-gnuplot"
  duet=$work/duet-without-gnuplot
  "$@"
  duet=$real
}
