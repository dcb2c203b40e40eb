# Shared helpers for the command-line tests. Each test script gets the tfm binary as $1.
set -u
TFM=${1:?usage: $0 path/to/tfm}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# run CMD...: runs it, capturing stdout, stderr and exit code in $out, $err, $code.
run() {
  "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  code=$?
  out=$(cat "$WORK/out")
  err=$(cat "$WORK/err")
}

expect_code() { [ "$code" = "$1" ] || fail "$2: exit code $code, expected $1 (stderr: $err)"; }
expect_one_line_error() {
  [ "$(printf '%s\n' "$err" | grep -c .)" = 1 ] || fail "$1: expected a one-line error, got: $err"
  [ -z "$out" ] || fail "$1: nothing belongs on stdout on error, got: $out"
}
expect_contains() { case "$1" in *"$2"*) ;; *) fail "$3: expected '$2' in: $1" ;; esac; }

finish() {
  if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}
