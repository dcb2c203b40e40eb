#!/usr/bin/env bash
# The trainer and the search stay readable: no function in train/, decode/ or serve/ over 60 lines
# (STYLE.md: functions around 60 lines or less; a longer one usually holds two ideas).
set -u
src=${1:?usage: $0 SOURCE_DIR}
cd "$src" || exit 1
if ! python3 scripts/lint/long_functions.py 60 train/*.cpp decode/*.cpp serve/*.cpp; then
  echo "FAIL: split the functions above into parts with one job each" >&2
  exit 1
fi
echo "all checks passed"
