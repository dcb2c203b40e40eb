#!/usr/bin/env bash
# No flag name in a library layer's strings: the libraries name options by key and app/ says which
# flag sets each (scripts/lint/flag_names.py). The check is also run on a planted violation, so a
# check that stopped finding anything would fail here.
set -u
src=${1:?usage: $0 SOURCE_DIR}
cd "$src" || exit 1
if ! python3 scripts/lint/flag_names.py .; then
  echo "FAIL: name options with option_name(\"key\") in library code; map the key in app/flag_names.cpp" >&2
  exit 1
fi
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
mkdir -p "$planted/app" "$planted/data"
cp app/flag_names.cpp app/train_command.cpp "$planted/app/"
printf '%s\n' 'void f() { throw std::invalid_argument("--max-tokens must be >= 2"); }' \
  'void g() { option_name("max_tokenz"); }' >"$planted/data/planted.cpp"
report=$(python3 scripts/lint/flag_names.py "$planted" 2>&1 >/dev/null)
if ! grep -q 'data/planted.cpp:1: a flag name' <<<"$report" || ! grep -q '"max_tokenz" has no flag' <<<"$report"; then
  echo "FAIL: the check missed a planted flag name or an unknown key:" >&2
  echo "$report" >&2
  exit 1
fi
echo "all checks passed"
