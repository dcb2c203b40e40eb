#!/usr/bin/env bash
# BLEU for a wall-clock training budget, in one command: trains on Multi30k from scratch for
# MINUTES (the trainer averages its last checkpoints), translates test_2016_flickr with beam search and
# prints BLEU and chrF with the sacreBLEU signature, the CPU, the dtype and the update count.
#
#   bench/quality.sh MINUTES [--src en --tgt de] [--out DIR] [extra `tfm train` flags...]
#
# With no extra flags the run is exactly `tfm train` with its defaults (what a user gets); extra
# flags are appended, for recipe comparisons. Model selection uses validation data only; the
# test set is decoded once, at the end. Data: $TFM_DATA_DIR/data/multi30k (default ../shared).
set -euo pipefail
minutes=${1:?usage: $0 MINUTES [--src en --tgt de] [--out DIR] [train flags...]}
shift
src=en tgt=de out=''
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$2; shift 2 ;;
    --tgt) tgt=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
[ -f "$data/train.$src.gz" ] || { echo "no Multi30k at $data (set TFM_DATA_DIR)" >&2; exit 2; }
tfm=$("$here/../scripts/build")
[ -n "$out" ] || out=$(mktemp -d /tmp/tfm-quality-XXXXXX)
mkdir -p "$out"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
echo "run: $src -> $tgt, $minutes minutes of training, flags: ${extra[*]:-(defaults)} | output: $out"

"$tfm" train --train-src "$data/train.$src.gz" --train-tgt "$data/train.$tgt.gz" \
  --valid-src "$data/val.$src.gz" --valid-tgt "$data/val.$tgt.gz" --save-dir "$out/run" \
  --time-limit "$minutes" "${extra[@]}" 2> "$out/train.log"

# §6.1: the trainer writes checkpoint_avg.pt, the average of its last kept checkpoints
# (--average-last, default 5); its log names them.
model="$out/run/checkpoint_avg.pt"
[ -f "$model" ] || model="$out/run/checkpoint_best.pt"
grep -oE 'the average of the last .*\)' "$out/train.log" | sed 's/^/averaged: /' || echo "averaged: none (using checkpoint_best.pt)"
python3 - "$out/run/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
train = [r for r in rows if r.get("type") == "train"]
valid = [r for r in rows if r.get("type") == "valid"]
last = rows[-1]
best = max(valid, key=lambda r: r["bleu"]) if valid else None
print(f"training: {last['update']} updates, {last['epoch']} epochs, {last['elapsed_s'] / 60:.1f} minutes, "
      f"dtype {train[-1]['dtype'] if train and 'dtype' in train[-1] else '?'}")
if best:
    print(f"validation: best BLEU {best['bleu']:.2f} at update {best['update']} ({best['elapsed_s'] / 60:.1f} min); "
          f"last {valid[-1]['bleu']:.2f}")
PY
echo "model: $model"
"$tfm" eval --model "$model" --src "$data/test_2016_flickr.$src.gz" --ref "$data/test_2016_flickr.$tgt.gz" \
  --metrics bleu,chrf --output "$out/test.hyp" 2> "$out/eval.log"
grep -oE 'search: .*' "$out/eval.log" | head -1 || true
