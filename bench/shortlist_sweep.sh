#!/usr/bin/env bash
# How the lexical shortlist's size trades decoding speed for BLEU, in one run on this machine: for
# each --shortlist-per-source P (candidates kept per source subword) and --shortlist-frequent F
# (frequent target subwords in every batch), builds the shortlist from Multi30k train, then
# translates SPLIT (1000 lines of val by default: choose settings on validation data, then confirm
# on test) without and with it, alternating, ROUNDS times. Prints, per setting: the shortlist's size,
# sentences/s without and with it (median of the rounds), their ratio, and BLEU of both.
#   bench/shortlist_sweep.sh TFM MODEL [SPLIT=val]
#   PER_SOURCE="5 10 20 50" FREQUENT="100" ROUNDS=3 DTYPE=auto|float32|bfloat16
#   TFM_FLAGS: more decoding flags (default "--lenpen 0.6"; e.g. "--lenpen 0.6 --quantize int8")
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL [SPLIT]}
model=${2:?model file}
split=${3:-val}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
read -r -a iterations <<< "${ITERATIONS:-5}"
read -r -a per_source <<< "${PER_SOURCE:-50 100}"
read -r -a frequent <<< "${FREQUENT:-100}"
read -r -a flags <<< "${TFM_FLAGS:---lenpen 0.6}"
rounds=${ROUNDS:-3}
dtype=${DTYPE:-auto}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/$split.en.gz" | head -1000 > "$out/src"
zcat "$data/$split.de.gz" | head -1000 > "$out/ref"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
echo "model: $model | $split ($(wc -l < "$out/src") lines) | --dtype $dtype ${flags[*]} | $rounds rounds"
echo
bleu() { "$tfm" eval --hyp "$1" --ref "$out/ref" --width 2 2> /dev/null | grep -oE '= [0-9.]+' | head -1 | cut -c3-; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
translate() {  # MODEL HYP [--shortlist]: prints sentences/s
  "$tfm" translate --model "$1" --dtype "$dtype" "${flags[@]}" "${@:3}" < "$out/src" > "$2" 2> "$out/log"
  grep -oE '[0-9.]+ sentences/s' "$out/log" | tail -1 | cut -d' ' -f1
}
shortlist() {  # VALID_TGT [more shortlist flags]: writes $out/model.pt, logs to $out/shortlist.log
  "$tfm" shortlist --model "$model" --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" \
    --valid-src "$out/src" --valid-tgt "$1" --out "$out/model.pt" "${@:2}" 2> "$out/shortlist.log"
}
covered() { grep -oE '[0-9.]+% of' "$out/shortlist.log" | cut -d' ' -f1; }
"$tfm" translate --model "$model" --dtype "$dtype" "${flags[@]}" < "$out/src" > "$out/hyp.full" 2> /dev/null
printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' I P F entries "candidates/sentence" \
  "reference covered" "translation covered" "without (s/s)" "with (s/s)" ratio "BLEU without / with"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for i in "${iterations[@]}"; do
  for f in "${frequent[@]}"; do
    for p in "${per_source[@]}"; do
      settings=(--shortlist-iterations "$i" --shortlist-per-source "$p" --shortlist-frequent "$f")
      shortlist "$out/hyp.full" "${settings[@]}"
      translation_covered=$(covered)
      shortlist "$out/ref" "${settings[@]}"
      entries=$(grep -oE '\([0-9]+ in all\)' "$out/shortlist.log" | grep -oE '[0-9]+')
      candidates=$(grep -oE '[0-9]+ candidates per sentence' "$out/shortlist.log" | cut -d' ' -f1)
      : > "$out/without"; : > "$out/with"
      for _ in $(seq "$rounds"); do
        translate "$out/model.pt" "$out/hyp.without" >> "$out/without"
        translate "$out/model.pt" "$out/hyp.with" --shortlist >> "$out/with"
      done
      without=$(median < "$out/without"); with=$(median < "$out/with")
      printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %s / %s |\n' "$i" "$p" "$f" "$entries" \
        "$candidates" "$(covered)" "$translation_covered" "$without" "$with" "$(echo "$with / $without" | bc -l)" \
        "$(bleu "$out/hyp.without")" "$(bleu "$out/hyp.with")"
    done
  done
done
