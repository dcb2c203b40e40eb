#!/usr/bin/env bash
# The step team (runtime/step_team.h) when there are more runnable threads than cores: batch-1
# latency of `tfm translate` (bench/latency.py: p50 of LINES lines sent one at a time) alone, and
# with two such processes at once, each with as many threads as the machine has cores; for two
# builds in turn, ROUNDS times (median). A team whose waiters only spin can lose a whole time slice
# at every loop once a peer is descheduled; one that yields should lose about the share of the
# cores it gives up (two processes on the same cores: ~2x).
#   bench/step_team_contention.sh TFM_A TFM_B MODEL [LINES=100] [ROUNDS=3]
#   DTYPE=float32 (or e.g. TFM_FLAGS="--quantize int8")
set -euo pipefail
tfm_a=${1:?usage: $0 TFM_A TFM_B MODEL [LINES] [ROUNDS]}
tfm_b=${2:?second build}
model=${3:?model file}
lines=${4:-100}
rounds=${5:-3}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
python=$(command -v python3)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/src"
flags=(--dtype "${DTYPE:-float32}")
for flag in ${TFM_FLAGS:-}; do flags+=("--tfm-flag=$flag"); done

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
echo "model: $model | $lines lines of test_2016_flickr, one at a time | ${flags[*]} | $rounds rounds"
p50() { "$python" "$here/latency.py" "$1" "$model" "$out/src" --lines "$lines" "${flags[@]}"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for _ in $(seq "$rounds"); do
  for build in a b; do
    tfm=$([ "$build" = a ] && echo "$tfm_a" || echo "$tfm_b")
    p50 "$tfm" >> "$out/alone.$build"
    p50 "$tfm" > "$out/first" &
    p50 "$tfm" > "$out/second"
    wait
    cat "$out/first" "$out/second" >> "$out/together.$build"
  done
done
printf '| %s | %s | %s | %s |\n' build "p50 alone (ms)" "p50 two at once (ms)" "two at once / alone"
echo "|---|---:|---:|---:|"
for build in a b; do
  tfm=$([ "$build" = a ] && echo "$tfm_a" || echo "$tfm_b")
  alone=$(median < "$out/alone.$build"); together=$(median < "$out/together.$build")
  printf '| %s | %s | %s | %.2f |\n' "$tfm" "$alone" "$together" "$(echo "$together / $alone" | bc -l)"
done
