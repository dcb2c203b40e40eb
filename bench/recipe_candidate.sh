#!/usr/bin/env bash
# One candidate of the recipe search (issue 14), judged on validation data only: trains on
# Multi30k for MINUTES with THREADS LibTorch threads, averages the last 5 kept checkpoints and
# prints one table row with the validation BLEU of the average under beam 4 (lenpen 0.6).
# The test set is never read here: bench/quality.sh decodes it once for the chosen recipe.
#
#   bench/recipe_candidate.sh NAME MINUTES THREADS [--vocab-size N] [--model-type unigram|bpe] [train flags...]
#
# Two candidates with THREADS=1 can run side by side on a 2-core machine: they then share the
# memory bus, so compare rows of one round only. Output: $TFM_SEARCH_DIR (default
# /tmp/tfm-search)/NAME/{run,train.log,row.txt}; prepared data is cached per vocabulary.
set -euo pipefail
name=${1:?usage: $0 NAME MINUTES THREADS [flags]}; minutes=${2:?}; threads=${3:?}; shift 3
vocab=8000 type=unigram src=en tgt=de
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --vocab-size) vocab=$2; shift 2 ;;
    --model-type) type=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --tgt) tgt=$2; shift 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
top=${TFM_SEARCH_DIR:-/tmp/tfm-search}
tfm=${TFM_BIN:-$("$here/../scripts/build")}
prep="$top/prepared-$src$tgt-$type$vocab"
if [ ! -f "$prep/train.bin" ]; then
  "$tfm" prepare --train-src "$data/train.$src.gz" --train-tgt "$data/train.$tgt.gz" \
    --valid-src "$data/val.$src.gz" --valid-tgt "$data/val.$tgt.gz" \
    --vocab-size "$vocab" --model-type "$type" --out "$prep" 2> "$top/prepare-$src$tgt-$type$vocab.log"
fi
out="$top/$name"
rm -rf "$out"; mkdir -p "$out"
"$tfm" --threads "$threads" train --train-src "$prep" --save-dir "$out/run" --time-limit "$minutes" \
  "${extra[@]}" 2> "$out/train.log"
mapfile -t kept < <(ls -tr "$out"/run/checkpoint*.pt | grep -vE 'checkpoint_(last|best|avg)\.pt$' | tail -n 5)
if [ ${#kept[@]} -ge 2 ]; then
  "$tfm" average --inputs "${kept[@]}" --output "$out/avg.pt" 2>> "$out/train.log"
else
  cp "$out/run/checkpoint_last.pt" "$out/avg.pt"
fi
valid_bleu() {  # MODEL BEAM LENPEN
  "$tfm" --threads "$threads" eval --model "$1" --src "$data/val.$src.gz" --ref "$data/val.$tgt.gz" \
    --beam "$2" --lenpen "$3" --metrics bleu 2>> "$out/eval.log" | grep -oE 'BLEU[^=]*= *[0-9.]+' | grep -oE '[0-9.]+$'
}
avg4=$(valid_bleu "$out/avg.pt" 4 0.6)
best4=$(valid_bleu "$out/run/checkpoint_best.pt" 4 0.6)
python3 - "$out/run/metrics.jsonl" "$name" "$vocab$type" "$avg4" "$best4" "${extra[*]}" <<'PY' | tee "$out/row.txt"
import json, sys
path, name, vocab, avg4, best4, flags = sys.argv[1:]
rows = [json.loads(line) for line in open(path)]
train = [r for r in rows if r.get("type") == "train"]
valid = [r for r in rows if r.get("type") == "valid"]
last = rows[-1]
tps = sorted(r.get("tokens_per_s", 0) for r in train)
best = max(valid, key=lambda r: r["bleu"])
print(f"| {name} | {vocab} {flags} | {last['update']} | {last['epoch']} | {tps[len(tps) // 2] if tps else 0:,.0f} | "
      f"{best['bleu']:.2f} (u{best['update']}) | {valid[-1]['bleu']:.2f} | {best4} | **{avg4}** |")
PY
