#!/usr/bin/env bash
# Resident memory of `tfm train` over time, side by side: oneDNN's primitive cache at its own
# default (1024 primitives) against tfm's bound (64). Two trainings, one thread each, on Multi30k
# with --dtype DTYPE (bf16 is where linear layers go through oneDNN) and the default recipe's
# validation (greedy decoding every 200 updates, which brings many more shapes); RSS every 30 s,
# then the updates each reached (equal speed means the bound costs nothing).
#
#   bench/train_memory.sh [MINUTES=10] [DTYPE=bfloat16]
set -euo pipefail
minutes=${1:-10}; dtype=${2:-bfloat16}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
[ -f "$data/train.en.gz" ] || { echo "no Multi30k at $data (set TFM_DATA_DIR)" >&2; exit 2; }
tfm=${TFM_BIN:-$("$here/../scripts/build")}
out=$(mktemp -d /tmp/tfm-train-memory-XXXXXX)
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
"$tfm" prepare --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" --vocab-size 8000 \
  --valid-src "$data/val.en.gz" --valid-tgt "$data/val.de.gz" --out "$out/prepared" 2> "$out/prepare.log"
declare -A pid
for capacity in 1024 64; do
  ONEDNN_PRIMITIVE_CACHE_CAPACITY=$capacity "$tfm" --threads 1 train --train-src "$out/prepared" \
    --save-dir "$out/cache$capacity" --dtype "$dtype" --time-limit "$minutes" \
    2> "$out/cache$capacity.log" &
  pid[$capacity]=$!
done
rss() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "-"; }
echo "| minute | RSS, cache 1024 (MB) | RSS, cache 64 (MB) |"
echo "|---:|---:|---:|"
start=$(date +%s)
while kill -0 "${pid[1024]}" 2>/dev/null || kill -0 "${pid[64]}" 2>/dev/null; do
  sleep 30
  printf '| %.1f | %s | %s |\n' "$(echo "($(date +%s) - $start) / 60" | bc -l)" "$(rss "${pid[1024]}")" "$(rss "${pid[64]}")"
done
wait
for capacity in 1024 64; do
  echo "cache $capacity: $(grep -oE 'after [0-9]+ updates' "$out/cache$capacity.log")"
done
rm -rf "$out"
