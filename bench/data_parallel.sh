#!/usr/bin/env bash
# Data parallelism on one CPU machine, side by side in one run: `tfm train` (small preset,
# Multi30k En-De) as 1 process x 2 threads, then as 2 processes x 1 thread (Gloo over 127.0.0.1),
# MINUTES each, alternating ROUNDS times. Prints the median training tokens/s of each (rank 0
# reports the sum over ranks) and the time rank 0 spends in the all-reduce per update (gradients
# plus loss and token counts; it includes waiting for the slower rank).
#   bench/data_parallel.sh [MINUTES=4] [ROUNDS=2]
set -euo pipefail
minutes=${1:-4}
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
[ -f "$data/train.en.gz" ] || { echo "no Multi30k at $data (set TFM_DATA_DIR)" >&2; exit 2; }
tfm=$("$here/../scripts/build")
out=$(mktemp -d /tmp/tfm-dp-XXXXXX)
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
# The data once, outside the timings (the 8000-piece joint vocabulary of `tfm train`'s default).
"$tfm" prepare --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" -o "$out/prepared" 2> "$out/prepare.log"
common=(train --train-src "$out/prepared" --preset small --dtype float32 --time-limit "$minutes" --log-interval 20
        --average-last 0 --keep-last 1)
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

summary() {  # SAVE_DIR LABEL: median tokens/s and all-reduce ms per update, past the first log line
  python3 - "$1/metrics.jsonl" "$2" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
train = [r for r in rows if r.get("type") == "train"][1:]
tok = statistics.median(r["tokens_per_s"] for r in train)
ms = [r["allreduce_ms_per_update"] for r in train if "allreduce_ms_per_update" in r]
updates = rows[-1]["update"]
line = f"{sys.argv[2]:<24} {tok:8.0f} tok/s  {updates:5d} updates"
if ms:
    line += f"  all-reduce {statistics.median(ms):6.1f} ms/update"
print(line)
PY
}

echo "run: small preset, float32, $minutes min each, $rounds round(s); output: $out"
for round in $(seq 1 "$rounds"); do
  one="$out/r$round-1x2"
  "$tfm" --threads 2 "${common[@]}" --save-dir "$one" 2> "$one.log"
  summary "$one" "round $round: 1 proc x 2 thr"
  two="$out/r$round-2x1"
  p=$(port)
  for rank in 1 0; do
    env MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" WORLD_SIZE=2 RANK=$rank LOCAL_RANK=$rank LOCAL_WORLD_SIZE=2 \
      "$tfm" --threads 1 "${common[@]}" --save-dir "$two" 2> "$two.rank$rank.log" &
  done
  wait
  summary "$two" "round $round: 2 proc x 1 thr"
done
grep -m1 'data parallel:' "$out/r1-2x1.rank0.log" | sed 's/^.*info /rank 0: /'
