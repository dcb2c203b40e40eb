#!/usr/bin/env bash
# Text -> prepared dataset throughput (sentences/s) of `tfm prepare` on Multi30k train, and in the
# same run Debian's `spm_encode` on the same files with the same model, for comparison.
#   bench/prepare_throughput.sh path/to/tfm [runs]
# Reads $TFM_DATA_DIR/data/multi30k (default: ../shared beside the checkout). Each figure is the
# best of `runs` runs (default 5), so other load on the machine disturbs it as little as possible.
# Both tools read the same uncompressed files; tfm's time is its own (it excludes process start-up
# and the padding report; it includes reading, UTF-8 checks, tokenizing, cleaning and writing);
# spm_encode's is wall time of the process writing ids to /dev/null.
set -euo pipefail
TFM=${1:?usage: $0 path/to/tfm [runs]}
RUNS=${2:-5}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
data=${TFM_DATA_DIR:-$root/../shared}/data/multi30k
command -v spm_encode >/dev/null || { echo "spm_encode missing: apt-get install sentencepiece" >&2; exit 1; }
[ -f "$data/train.en.gz" ] || { echo "needs $data/train.en.gz (set TFM_DATA_DIR)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

zcat "$data/train.en.gz" > "$work/train.en"
zcat "$data/train.de.gz" > "$work/train.de"
sentences=$(( $(wc -l < "$work/train.en") + $(wc -l < "$work/train.de") ))
"$TFM" --log-level warn tokenizer train --input "$work/train.en" "$work/train.de" --vocab-size 8000 \
    --output "$work/spm.model"

# best_rate CMD...: runs CMD (which prints seconds on its last stdout line) $RUNS times; prints the best rate.
best_rate() {
  local best=0 seconds rate
  for _ in $(seq 1 "$RUNS"); do
    seconds=$("$@" | tail -1)
    rate=$(awk -v n="$sentences" -v s="$seconds" 'BEGIN { printf "%.0f", n / s }')
    [ "$rate" -gt "$best" ] && best=$rate
  done
  echo "$best"
}

tfm_prepare() {  # prints tfm's own "... in X s" time
  "$TFM" --threads "$1" prepare --train-src "$work/train.en" --train-tgt "$work/train.de" \
      --spm "$work/spm.model" --out "$work/prepared" 2>&1 | sed -n 's/.* written in \([0-9.]*\) s .*/\1/p'
}

spm_encode_both() {
  local start end
  start=$(date +%s.%N)
  spm_encode --model "$work/spm.model" --output_format id < "$work/train.en" > /dev/null
  spm_encode --model "$work/spm.model" --output_format id < "$work/train.de" > /dev/null
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

cores=$(nproc)
tfm_all=$(best_rate tfm_prepare 0)
tfm_one=$(best_rate tfm_prepare 1)
spm=$(best_rate spm_encode_both)
echo "date: $(date +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Multi30k train: $sentences sentences ($(( sentences / 2 )) pairs), 8000-piece unigram model, best of $RUNS runs"
echo "tfm prepare, all $cores cores:  $tfm_all sentences/s"
echo "tfm prepare, --threads 1:      $tfm_one sentences/s"
echo "spm_encode (one process/file): $spm sentences/s"
