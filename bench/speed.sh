#!/usr/bin/env bash
# Every speed figure of tfm against its references, side by side in one run on this machine:
#   - the machine's large-matmul rate (what fraction of it training reaches);
#   - training tokens/s: the plain-PyTorch reference (bench/reference_train.py), tfm with
#     --plain-kernels (the paper's ops one by one) and tfm's fused default, the same updates;
#   - decoding test_2016_flickr (1000 sentences, beam 4): the plain-PyTorch reference
#     (bench/reference_translate.py), tfm plain, tfm fused float32, tfm int8, and CTranslate2
#     float32/int8 on the same weights (bench/ct2_*.py, its own venv) with sentences/s, BLEU,
#     lines identical to tfm float32, peak memory and batch-1 latency.
# Figures move 20% with other load on these shared machines: compare ratios within one run.
#   bench/speed.sh TFM MODEL PREPARED_DIR [UPDATES]   (PREPARED_DIR from `tfm prepare`, e.g. Multi30k;
#   UPDATES 0 skips training)
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL PREPARED_DIR [UPDATES]}
model=${2:?model file}
prepared=${3:?prepared data directory}
updates=${4:-30}
here=$(cd "$(dirname "$0")" && pwd)
python=${TFM_HOME:-$HOME/.cache/tfm}/venv/bin/python
ct2_python=${TFM_HOME:-$HOME/.cache/tfm}/ct2-venv/bin/python
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
threads=${THREADS:-$(nproc)}
# The references and the sgemm probe run PyTorch in Python: that needs the full LibTorch install.
"$here/../scripts/bootstrap" --full
"$python" -c 'import sentencepiece' 2> /dev/null || "$python" -m pip install -q sentencepiece  # for the references
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/test.en"
zcat "$data/test_2016_flickr.de.gz" > "$out/test.de"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $threads threads"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
echo "model: $model | training data: $prepared | decoding: test_2016_flickr.en ($(wc -l < "$out/test.en") lines)"

echo
echo "== machine: float32 matmul rate (4096^3 sgemm through LibTorch)"
("$python" - "$threads" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
a, b = torch.randn(4096, 4096), torch.randn(4096, 4096)
a @ b
best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
print(f"sgemm: {2 * 4096**3 / best / 1e9:.1f} GFLOP/s")
PY
) | tee "$out/sgemm"

if [ "$updates" -gt 0 ]; then
echo
echo "== training: small preset, float32, $updates updates of --max-tokens 4096 (same batches)"
printf '%-28s %10s %12s %8s %10s %10s\n' engine seconds tokens/s ratio GFLOP/s of_sgemm
"$python" "$here/reference_train.py" --data "$prepared" --preset small --max-updates "$updates" \
  --log-interval "$updates" --threads "$threads" > "$out/ref_train.log" 2>&1
summary=$(grep '^reference_train: .* updates' "$out/ref_train.log")
ref_tps=$(grep -oE '[0-9]+ tokens/s' <<< "$summary" | cut -d' ' -f1)
ref_s=$(grep -oE 'in [0-9.]+ s' <<< "$summary" | cut -d' ' -f2)
ref_gflops=$(grep -oE '[0-9.]+ GFLOP/s' <<< "$summary" | cut -d' ' -f1)
sgemm=$(grep -oE '[0-9.]+' "$out/sgemm" | head -1)
# Same batches, so the same matmul FLOPs: tfm's rate is the reference's scaled by the speed ratio.
flops_row() { printf '%-28s %10.1f %12.0f %8.2f %10.1f %9.0f%%\n' "$1" "$2" "$3" "$(echo "$3 / $ref_tps" | bc -l)" \
  "$(echo "$ref_gflops * $3 / $ref_tps" | bc -l)" "$(echo "100 * $ref_gflops * $3 / $ref_tps / $sgemm" | bc -l)"; }
flops_row "PyTorch reference" "$ref_s" "$ref_tps"
for mode in plain fused; do
  flag=(); [ "$mode" = plain ] && flag=(--plain-kernels)
  rm -rf "$out/train-$mode"
  "$tfm" --threads "$threads" "${flag[@]}" train --train-src "$prepared" --save-dir "$out/train-$mode" --preset small \
    --dtype float32 --max-updates "$updates" --log-interval "$updates" --keep-last 0 --valid-max-sentences 1 \
    > /dev/null 2> "$out/train-$mode.log"
  read -r seconds tps < <("$python" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l][-1]; print(r["elapsed_s"], r["tokens_per_s"])' "$out/train-$mode/metrics.jsonl")
  flops_row "tfm $mode" "$seconds" "$tps"
done
fi

echo
echo "== decoding: beam 4, length penalty 0.6, max length source + 50"
printf '%-28s %12s %8s %8s %10s %10s %12s\n' engine sentences/s ratio BLEU identical peak_MiB 'p50_ms(b=1)'
bleu() { "$tfm" eval --hyp "$1" --ref "$out/test.de" --width 2 2>/dev/null | grep -oE '= [0-9.]+' | head -1 | cut -c3-; }
same() { paste -d '\t' "$out/hyp.tfm-fp32" "$1" | awk -F'\t' '$1 == $2' | wc -l; }
row() {  # row NAME HYP LOG RSS_KB [LATENCY]
  local sps; sps=$(grep -oE '[0-9.]+ sentences/s' "$3" | tail -1 | cut -d' ' -f1)
  [ -z "${ref_sps:-}" ] && ref_sps=$sps
  printf '%-28s %12s %8.2f %8s %10s %10s %12s\n' "$1" "$sps" "$(echo "$sps / $ref_sps" | bc -l)" "$(bleu "$2")" \
    "$( [ -f "$out/hyp.tfm-fp32" ] && same "$2" || echo -)" "$(( $4 / 1024 ))" "${5:--}"
}
timed() { /usr/bin/time -f '%M' -o "$out/rss" "$@"; }
timed "$python" "$here/reference_translate.py" --model "$model" --threads "$threads" < "$out/test.en" \
  > "$out/hyp.ref" 2> "$out/log.ref"
ref_rss=$(cat "$out/rss")
for mode in plain fp32 int8; do
  flags=(--threads "$threads"); extra=(--dtype float32 --lenpen 0.6)  # the reference's and CTranslate2's alpha
  [ "$mode" = plain ] && flags+=(--plain-kernels)
  [ "$mode" = int8 ] && extra+=(--quantize int8)
  timed "$tfm" "${flags[@]}" translate --model "$model" "${extra[@]}" < "$out/test.en" > "$out/hyp.tfm-$mode" \
    2> "$out/log.tfm-$mode"
  cp "$out/rss" "$out/rss.tfm-$mode"
done
row "PyTorch reference fp32" "$out/hyp.ref" "$out/log.ref" "$ref_rss"
lat_fp32=$("$python" "$here/latency.py" "$tfm" "$model" "$out/test.en" --dtype float32 --tfm-flag=--lenpen=0.6)
lat_int8=$("$python" "$here/latency.py" "$tfm" "$model" "$out/test.en" --dtype float32 --tfm-flag=--lenpen=0.6 \
  --tfm-flag=--quantize=int8)
row "tfm --plain-kernels fp32" "$out/hyp.tfm-plain" "$out/log.tfm-plain" "$(cat "$out/rss.tfm-plain")"
row "tfm fp32" "$out/hyp.tfm-fp32" "$out/log.tfm-fp32" "$(cat "$out/rss.tfm-fp32")" "$lat_fp32"
row "tfm int8" "$out/hyp.tfm-int8" "$out/log.tfm-int8" "$(cat "$out/rss.tfm-int8")" "$lat_int8"
if [ -x "$ct2_python" ]; then
  "$python" "$here/ct2_convert.py" --model "$model" --out "$out/ct2" > /dev/null 2>&1
  for compute in float32 int8; do
    timed "$ct2_python" "$here/ct2_translate.py" --model-dir "$out/ct2" --threads "$threads" --compute-type "$compute" \
      < "$out/test.en" > "$out/hyp.ct2-$compute" 2> "$out/log.ct2-$compute"
    row "CTranslate2 $compute" "$out/hyp.ct2-$compute" "$out/log.ct2-$compute" "$(cat "$out/rss")"
  done
else
  echo "(CTranslate2 skipped: no $ct2_python; python3 -m venv it and pip install ctranslate2 sentencepiece)"
fi
