#!/usr/bin/env bash
# Every C++ source follows .clang-format (scripts/lint/format); a misformatted copy of one must fail.
set -u
src=${1:?usage: $0 SOURCE_DIR}
cd "$src" || exit 1
scripts/lint/format . || exit 1
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
mkdir -p "$planted/app"
cp .clang-format "$planted/"
printf 'int  f( int x ){return x;}\n' >"$planted/app/planted.cpp"
if scripts/lint/format "$planted" 2>/dev/null; then
  echo "FAIL: the format check passed a misformatted file" >&2
  exit 1
fi
echo "all checks passed"
