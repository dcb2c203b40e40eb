#!/usr/bin/env bash
# Translation speed of `tfm translate`, float32 and bfloat16 side by side in one run:
# sentences/s, target subwords/s, peak RSS, and batch-1 latency (median ms per sentence over
# the first 100 lines, each sent through a pipe and answered before the next is written).
#   bench/translate_speed.sh TFM MODEL SOURCE [BEAM]
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL SOURCE [BEAM]}
model=${2:?model file}
source_file=${3:?source text}
beam=${4:-4}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "date: $(date -u +%F) | machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "model: $model | input: $source_file ($(wc -l < "$source_file") lines) | beam $beam"
printf '%-9s %12s %14s %12s %16s\n' dtype sentences/s subwords/s peak_MiB 'latency_ms(p50)'
for dtype in float32 bfloat16; do
  /usr/bin/time -f '%M' -o "$out/rss" "$tfm" translate --model "$model" --beam "$beam" --dtype "$dtype" \
    < "$source_file" > "$out/hyp.$dtype" 2> "$out/log.$dtype"
  line=$(grep 'translated .* sentences' "$out/log.$dtype")
  sentences_per_s=$(sed -E 's/.*: ([0-9.]+) sentences\/s.*/\1/' <<< "$line")
  subwords_per_s=$(sed -E 's/.*, ([0-9.]+) target subwords\/s.*/\1/' <<< "$line")
  peak_mib=$(( $(cat "$out/rss") / 1024 ))
  latency=$(python3 "$here/latency.py" "$tfm" "$model" "$source_file" --beam "$beam" --dtype "$dtype")
  printf '%-9s %12s %14s %12s %16s\n' "$dtype" "$sentences_per_s" "$subwords_per_s" "$peak_mib" "$latency"
done
echo "bf16 vs fp32 outputs: $(paste -d '\t' "$out/hyp.float32" "$out/hyp.bfloat16" | awk -F'\t' '$1 == $2' | wc -l) of $(wc -l < "$out/hyp.float32") lines identical"
