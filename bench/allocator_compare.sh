#!/usr/bin/env bash
# The same training run with jemalloc (memory kept cached; what `tfm` links) and with glibc's
# malloc (`tfm-glibc-malloc`, built on demand), alternated in one session so load changes hit both.
#   bench/allocator_compare.sh BUILD_DIR PRESET SRC TGT UPDATES [ROUNDS] [more tfm train flags]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR PRESET SRC TGT UPDATES [ROUNDS] [flags]}
preset=${2:?preset}; src=${3:?source}; tgt=${4:?target}; updates=${5:?updates}; rounds=${6:-2}
shift $(( $# >= 6 ? 6 : 5 ))
cmake --build "$build" --target tfm tfm-glibc-malloc > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Prepare once, so both programs time training only.
"$build/tfm" train --train-src "$src" --train-tgt "$tgt" --save-dir "$work/prep" --preset "$preset" \
  --max-updates 1 --keep-last 0 "$@" 2> /dev/null
echo "date: $(date -u +%F) | $(nproc) cores | preset $preset | $updates updates | flags: $*"
for round in $(seq 1 "$rounds"); do
  for program in tfm tfm-glibc-malloc; do
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$work/rss" "$build/$program" train --train-src "$work/prep/prepared" \
      --save-dir "$work/run-$program" --no-resume --preset "$preset" --max-updates "$updates" --keep-last 0 "$@" \
      2> "$work/log"
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    printf 'round %s %-17s %7.1f s  peak %5d MiB\n' "$round" "$program" "$seconds" $(( $(cat "$work/rss") / 1024 ))
  done
done
