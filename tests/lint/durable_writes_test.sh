#!/usr/bin/env bash
# Every file tfm must find whole later goes through one writer (runtime/durable_file.h: a temporary
# beside it, fsync, rename, fsync of the directory). A rename or fsync anywhere else in the product
# is a hand-made copy of it, which is how five of six such paths once came to skip the flush.
set -u
src=${1:?usage: $0 SOURCE_DIR}
cd "$src" || exit 1
layers=(app data decode dist metrics model runtime serve text tokenizer train translation viz)
found=$(grep -nE '\b(std::)?(rename|fsync|fdatasync)\s*\(|fs::rename|filesystem::rename' \
  --include='*.cpp' --include='*.h' -r "${layers[@]}" | grep -v '^runtime/durable_file\.cpp:')
if [ -n "$found" ]; then
  echo "FAIL: write durable files with runtime/durable_file.h, not by hand:" >&2
  echo "$found" >&2
  exit 1
fi
echo "all checks passed"
