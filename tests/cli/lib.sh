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

# wait_for_line FILE TEXT PID: waits until FILE holds a line with TEXT (status 0) or process PID has
# exited without writing it (status 1). Waits for a condition, never for a time: the only bound is a
# safety net far beyond any machine's speed (CTest's own timeout is the real one).
wait_for_line() {
  local file=$1 text=$2 pid=$3
  for _ in $(seq 1 6000); do
    grep -qF -- "$text" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { grep -qF -- "$text" "$file" 2>/dev/null; return; }
    sleep 0.1
  done
  return 1
}

finish() {
  if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed" >&2; exit 1; fi
  echo "all checks passed"
}
