#!/usr/bin/env bash
# What the shortlist's calibration (`tfm shortlist --calibration-pairs`) changes, in one run: builds
# the shortlist from Multi30k train without a correction (--calibration-pairs 0) and with the
# default one (measured on the first 1000 training pairs), then translates test_2016_flickr in
# float32 and int8, without the shortlist, with the uncorrected one and with the corrected one.
# Prints the measured correction, then per mode BLEU, the output's length and each shortlist's BLEU
# and length move from the full softmax. No timing: the correction costs nothing per step.
#   bench/shortlist_calibration.sh TFM MODEL
#   TFM_FLAGS: decoding flags (default "--lenpen 0.6")
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL}
model=${2:?model file}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
read -r -a flags <<< "${TFM_FLAGS:---lenpen 0.6}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/src"
zcat "$data/test_2016_flickr.de.gz" > "$out/ref"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch)' | paste -sd ' ' | sed 's/^/versions: /'
echo "model: $model | test_2016_flickr ($(wc -l < "$out/src") lines) | ${flags[*]}"
shortlist() {  # OUT [flags]
  "$tfm" shortlist --model "$model" --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" \
    --out "$1" "${@:2}" 2> "$out/shortlist.log"
}
shortlist "$out/uncorrected.pt" --calibration-pairs 0
shortlist "$out/corrected.pt"
grep -oE 'calibration on .*' "$out/shortlist.log" | sed 's/^/measured: /'
echo
# score HYP -> "BLEU LENGTH"
score() {
  local line
  line=$("$tfm" eval --hyp "$1" --ref "$out/ref" --width 2 2> /dev/null | head -1)
  echo "$(grep -oE '= [0-9.]+' <<< "$line" | head -1 | cut -c3-) $(grep -oE 'hyp_len = [0-9]+' <<< "$line" | cut -d' ' -f3)"
}
printf '| %s | %s | %s | %s | %s |\n' mode "full softmax: BLEU, length" "shortlist: BLEU, length" \
  "corrected shortlist: BLEU, length" "BLEU move: uncorrected, corrected"
echo "|---|---|---|---|---|"
for quantize in none int8; do
  run() { "$tfm" translate --quantize "$quantize" "${flags[@]}" "$@" < "$out/src" 2> /dev/null; }
  run --model "$out/uncorrected.pt" > "$out/full"
  run --model "$out/uncorrected.pt" --shortlist > "$out/uncorrected"
  run --model "$out/corrected.pt" --shortlist > "$out/corrected"
  read -r full_bleu full_length <<< "$(score "$out/full")"
  read -r plain_bleu plain_length <<< "$(score "$out/uncorrected")"
  read -r fixed_bleu fixed_length <<< "$(score "$out/corrected")"
  mode=$([ "$quantize" = none ] && echo float32 || echo int8)
  printf '| %s | %s, %s | %s, %s | %s, %s | %+.2f, %+.2f |\n' "$mode" "$full_bleu" "$full_length" \
    "$plain_bleu" "$plain_length" "$fixed_bleu" "$fixed_length" \
    "$(echo "$plain_bleu - $full_bleu" | bc -l)" "$(echo "$fixed_bleu - $full_bleu" | bc -l)"
done
