#!/usr/bin/env bash
# Every parallel loop in the product goes through runtime/parallel_for.h (or team_parallel_for,
# which calls it). A bare at::parallel_for computes the same, but under ThreadSanitizer its
# region's fork and join are invisible (libgomp is not instrumented), and scripts/test --tsan then
# fails on races that are not there.
set -u
src=${1:?usage: $0 SOURCE_DIR}
cd "$src" || exit 1
layers=(app data decode dist metrics model runtime serve text tokenizer train translation viz)
found=$(grep -nE '\bat::parallel_for[(<]' --include='*.cpp' --include='*.h' -r "${layers[@]}" |
  grep -v '^runtime/parallel_for\.h:')
if [ -n "$found" ]; then
  echo "FAIL: run parallel loops with tfm::parallel_for (runtime/parallel_for.h), not at::parallel_for:" >&2
  echo "$found" >&2
  exit 1
fi
echo "all checks passed"
