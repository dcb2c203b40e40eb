#!/usr/bin/env bash
# Every speed figure of tfm against its references, side by side in one run on this machine:
#   - the machine's large-matmul rates, float32 and (where native) bfloat16: what fraction training reaches;
#   - training tokens/s, float32 and (where native) bfloat16: the plain-PyTorch reference
#     (bench/reference_train.py) and tfm, the same updates;
#   - decoding test_2016_flickr (1000 sentences, beam 4): the plain-PyTorch reference
#     (bench/reference_translate.py), tfm float32, int8 and (where native) bfloat16, each with and
#     without its vocabulary shortlist, the default mode with CTranslate2's stopping rule
#     (--early-stop) and at tfm's default maximum length (-source-max; every other row has the flat
#     50 CTranslate2 takes), and CTranslate2 float32/int8 on the same weights, each with
#     one batch on every thread, (rows "xN") N batches at once on a thread each, and (rows "-vmap")
#     with tfm's shortlist as CTranslate2's vocabulary map
#     (bench/ct2_*.py, in a venv of its own that this script creates) with sentences/s, BLEU, lines
#     identical to tfm float32, peak memory and batch-1 latency at all threads and at one;
#     sentences/s and each p50 are the median of DECODE_ROUNDS (default 3) rounds that run every
#     engine in turn, since one run moves 10-20% with the host's load;
#   - then issue 32's ratios of tfm to CTranslate2: speed and memory mode for mode and the default
#     against CTranslate2's best (speed: its faster thread split; memory: its one-batch row, the
#     smaller), the same with both stopping alike, the shortlist's speed-up (also round by round),
#     CTranslate2's vocabulary map's and tfm's shortlist against it, batch-1 latency against
#     CTranslate2's best.
# Run it once per model (e.g. the Multi30k small model and a base-size one).
# Figures move 20% with other load on these shared machines: compare ratios within one run.
#   bench/speed.sh TFM MODEL PREPARED_DIR [UPDATES]   (PREPARED_DIR from `tfm prepare`, e.g. Multi30k;
#   UPDATES 0 skips training; DECODING=0 in the environment skips decoding; TRAIN_ROUNDS, default 3,
#   interleaved rounds of training per engine, of which each engine's median is reported;
#   TRAIN_WARMUP, default 120, updates bfloat16 training runs before the UPDATES it also times;
#   DECODE_ROUNDS likewise for decoding)
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
# median_by COLUMN < LINES: the middle line by that column's numbers (the lower middle of an even count).
median_by() { local lines; lines=$(sort -k"$1" -g); sed -n "$(( ($(wc -l <<< "$lines") + 1) / 2 ))p" <<< "$lines"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/test.en"
zcat "$data/test_2016_flickr.de.gz" > "$out/test.de"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $threads threads"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
echo "model: $model | training data: $prepared | decoding: test_2016_flickr.en ($(wc -l < "$out/test.en") lines)"

echo
echo "== machine: matmul rates (4096^3 through LibTorch; bfloat16 only where the CPU has it natively)"
bf16_native=0; "$tfm" --version | grep -q 'bf16: cpu yes' && bf16_native=1
("$python" - "$threads" "$bf16_native" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
for name, dtype in [("sgemm", torch.float32)] + ([("bf16 gemm", torch.bfloat16)] if sys.argv[2] == "1" else []):
    a, b = torch.randn(4096, 4096, dtype=dtype), torch.randn(4096, 4096, dtype=dtype)
    a @ b
    best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
    print(f"{name}: {2 * 4096**3 / best / 1e9:.1f} GFLOP/s")
PY
) | tee "$out/sgemm"

if [ "$updates" -gt 0 ]; then
rounds=${TRAIN_ROUNDS:-3}
warmup=${TRAIN_WARMUP:-120}
echo
echo "== training: small preset, $updates updates of --max-tokens 4096 (same batches); GFLOP/s: the reference's"
echo "   exact matmul count over each engine's time, against the machine's rate for that dtype;"
echo "   $rounds rounds, reference and tfm in turn, each engine's median round (TRAIN_ROUNDS). bfloat16 runs"
echo "   $warmup more updates (TRAIN_WARMUP) and its rows 'after $warmup' time the last $updates: oneDNN builds"
echo "   its bf16 kernels per product shape, once, in a run's first updates (float32's MKL builds none)"
printf '%-40s %10s %12s %8s %10s %10s   %s\n' engine seconds tokens/s ratio GFLOP/s of_peak rounds
dtypes=(float32); [ "$bf16_native" = 1 ] && dtypes+=(bfloat16)
# Rounds files hold one line per round: "seconds tokens/s GFLOP/s" for the first $updates updates,
# then tokens/s and GFLOP/s for the last $updates (the same figures where nothing runs after them).
tfm_rates() {  # tfm_rates METRICS_JSONL: first and last logged interval
  "$python" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l]; print(round(r[0]["elapsed_s"], 1), round(r[0]["tokens_per_s"]), round(r[-1]["tokens_per_s"]))' "$1"
}
reference_rates() {  # reference_rates LOG: first interval's seconds, tokens/s and GFLOP/s, then the last's
  local first last
  first=$(grep -m1 -E '[0-9]+ tok/s' "$1"); last=$(grep -E '[0-9]+ tok/s' "$1" | tail -1)
  echo "$(grep -oE '[0-9.]+ s$' <<< "$first" | cut -d' ' -f1) $(grep -oE '[0-9]+ tok/s' <<< "$first" | cut -d' ' -f1)" \
    "$(grep -oE '[0-9.]+ GFLOP/s' <<< "$first" | cut -d' ' -f1) $(grep -oE '[0-9]+ tok/s' <<< "$last" | cut -d' ' -f1)" \
    "$(grep -oE '[0-9.]+ GFLOP/s' <<< "$last" | cut -d' ' -f1)"
}
for dtype in "${dtypes[@]}"; do
  peak=$(grep -E "^$( [ "$dtype" = float32 ] && echo sgemm || echo 'bf16 gemm'):" "$out/sgemm" | grep -oE '[0-9.]+' | tail -1)
  total=$updates; [ "$dtype" = bfloat16 ] && total=$(( warmup / updates * updates + updates ))
  : > "$out/ref_rounds"; : > "$out/tfm_rounds"
  for _ in $(seq "$rounds"); do
    "$python" "$here/reference_train.py" --data "$prepared" --preset small --max-updates "$total" \
      --log-interval "$updates" --threads "$threads" --dtype "$dtype" > "$out/ref_train.log" 2>&1
    reference_rates "$out/ref_train.log" >> "$out/ref_rounds"
    rm -rf "$out/train-$dtype"
    "$tfm" --threads "$threads" train --train-src "$prepared" --save-dir "$out/train-$dtype" --preset small \
      --dtype "$dtype" --max-tokens 4096 --max-updates "$total" --log-interval "$updates" --keep-last 0 \
      --valid-max-sentences 1 \
      > /dev/null 2> "$out/train-$dtype.log"
    tfm_rates "$out/train-$dtype/metrics.jsonl" >> "$out/tfm_rounds"
  done
  # Same batches, so the same matmul FLOPs: tfm's rate is the reference's scaled by the speed ratio.
  flops_row() {  # flops_row NAME SECONDS TOKENS/S REFERENCE_TOKENS/S REFERENCE_GFLOP/S ROUNDS
    printf '%-40s %10s %12.0f %8.2f %10.1f %9.0f%%   %s\n' "$1" "$2" "$3" "$(echo "$3 / $4" | bc -l)" \
      "$(echo "$5 * $3 / $4" | bc -l)" "$(echo "100 * $5 * $3 / $4 / $peak" | bc -l)" "$6"; }
  read -r ref_s ref_tps ref_gflops _ < <(median_by 2 < "$out/ref_rounds")
  read -r seconds tps _ < <(median_by 2 < "$out/tfm_rounds")
  flops_row "PyTorch reference $dtype" "$ref_s" "$ref_tps" "$ref_tps" "$ref_gflops" "$(cut -d' ' -f2 "$out/ref_rounds" | paste -sd' ')"
  flops_row "tfm $dtype" "$seconds" "$tps" "$ref_tps" "$ref_gflops" "$(cut -d' ' -f2 "$out/tfm_rounds" | paste -sd' ')"
  if [ "$total" -gt "$updates" ]; then
    read -r _ _ _ ref_tps ref_gflops < <(median_by 4 < "$out/ref_rounds")
    read -r _ _ tps < <(median_by 3 < "$out/tfm_rounds")
    flops_row "PyTorch reference $dtype after $(( total - updates ))" - "$ref_tps" "$ref_tps" "$ref_gflops" \
      "$(cut -d' ' -f4 "$out/ref_rounds" | paste -sd' ')"
    flops_row "tfm $dtype after $(( total - updates ))" - "$tps" "$ref_tps" "$ref_gflops" \
      "$(cut -d' ' -f3 "$out/tfm_rounds" | paste -sd' ')"
  fi
done
fi

[ "${DECODING:-1}" = 0 ] && exit 0
decode_rounds=${DECODE_ROUNDS:-3}
# One model file with a shortlist serves every tfm row (without --shortlist it is the same model).
"$tfm" shortlist --model "$model" --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" \
  --out "$out/model.pt" 2> "$out/shortlist.log"
if [ ! -x "$ct2_python" ]; then  # CTranslate2 in a venv of its own: never a dependency of tfm
  python3 -m venv "$(dirname "$(dirname "$ct2_python")")"
  "$ct2_python" -m pip install -q ctranslate2 sentencepiece
fi
ct2_version=$("$ct2_python" -c 'import ctranslate2; print(ctranslate2.__version__)')
# From the model with the shortlist: its CTranslate2 directory also holds the shortlist as a
# vocabulary map (vmap.txt), for the -vmap rows; without --use-vmap it decodes as the plain model.
"$python" "$here/ct2_convert.py" --model "$out/model.pt" --out "$out/ct2" > /dev/null 2>&1

modes=(fp32 fp32-shortlist int8 int8-shortlist)
[ "$bf16_native" = 1 ] && modes+=(bf16 bf16-shortlist)
# The default mode once more with CTranslate2's stopping rule: with a length penalty it ends a
# sentence once `beam` hypotheses have finished (patience 1), which is tfm's --early-stop; tfm's
# default searches on until no live hypothesis can still win (more steps, the same or better score).
default_mode=fp32 && [ "$bf16_native" = 1 ] && default_mode=bf16
modes+=("$default_mode-early-stop")
# And at tfm's own default maximum length (1.5 x source + 10) rather than the flat 50 every other
# row shares: the exact rule searches until no live beam can win within the maximum, so a tighter
# one ends sentences sooner (its "identical" column says whether any translation changed).
modes+=("$default_mode-source-max")
# Each CTranslate2 compute type twice where there are several threads: one batch on every thread,
# and one batch per thread at once (inter_threads), CTranslate2's faster int8 on two cores.
splits=("$threads 1") && [ "$threads" -gt 1 ] && splits+=("1 $threads")
engines=("PyTorch reference fp32")
for mode in "${modes[@]}"; do engines+=("tfm $mode"); done
for compute in float32 int8; do
  for split in "${splits[@]}"; do
    read -r intra inter <<< "$split"
    name="CTranslate2 $compute" && [ "$inter" -gt 1 ] && name+=" x$inter"
    engines+=("$name")
  done
done
# CTranslate2 with tfm's shortlist as its vocabulary map: each batch's output layer over the union
# of its sentences' candidates (tfm's shortlist takes each sentence's own).
engines+=("CTranslate2 float32-vmap" "CTranslate2 int8-vmap")

key_of() { echo "${1// /_}"; }
tfm_settings() {  # tfm_settings MODE: sets dtype and flags
  # The reference's and CTranslate2's alpha and maximum length (CTranslate2's is one number, not
  # a multiple of the source; ct2_translate.py's --max-len 50 counts eos as tfm's --max-len-b does).
  flags=(--lenpen 0.6 --max-len-a 0 --max-len-b 50)
  [[ $1 == *-source-max ]] && flags=(--lenpen 0.6)
  dtype=float32
  case "$1" in
    int8*) flags+=(--quantize int8) ;;
    bf16*) dtype=bfloat16 ;;
  esac
  case "$1" in
    *-shortlist) flags+=(--shortlist) ;;
    *-early-stop) flags+=(--early-stop) ;;
  esac
}
ct2_settings() {  # ct2_settings NAME ("CTranslate2 int8 x2", "CTranslate2 int8-vmap"): sets compute, intra, inter, vmap
  read -r _ compute inter <<< "$1"
  vmap=()
  [[ $compute == *-vmap ]] && compute=${compute%-vmap} && vmap=(--use-vmap)
  inter=${inter#x}
  [ -n "$inter" ] || inter=1
  intra=$(( inter > 1 ? 1 : threads ))
}
timed() { /usr/bin/time -f '%M' -o "$out/rss" "$@"; }
run_once() {  # run_once NAME: one throughput run -> $out/hyp.KEY, log.KEY, rss.KEY; sentences/s appended to sps.KEY
  local key; key=$(key_of "$1")
  case "$1" in
    "PyTorch reference fp32")
      timed "$python" "$here/reference_translate.py" --model "$model" --threads "$threads" < "$out/test.en" \
        > "$out/hyp.$key" 2> "$out/log.$key" ;;
    "tfm "*)
      tfm_settings "${1#tfm }"
      timed "$tfm" --threads "$threads" translate --model "$out/model.pt" --dtype "$dtype" "${flags[@]}" \
        < "$out/test.en" > "$out/hyp.$key" 2> "$out/log.$key" ;;
    "CTranslate2 "*)
      ct2_settings "$1"
      timed "$ct2_python" "$here/ct2_translate.py" --model-dir "$out/ct2" --threads "$intra" --inter-threads "$inter" \
        --compute-type "$compute" "${vmap[@]}" < "$out/test.en" > "$out/hyp.$key" 2> "$out/log.$key" ;;
  esac
  cp "$out/rss" "$out/rss.$key"
  grep -oE '[0-9.]+ sentences/s' "$out/log.$key" | tail -1 | cut -d' ' -f1 >> "$out/sps.$key"
}
latencies() {  # latencies NAME: batch-1 p50 at all threads and at one, where measured
  case "$1" in
    "tfm "*-early-stop | "tfm "*-source-max) ;;
    "tfm "*)
      tfm_settings "${1#tfm }"
      for t in "$threads" 1; do
        "$python" "$here/latency.py" "$tfm" "$out/model.pt" "$out/test.en" --dtype "$dtype" \
          "${flags[@]/#/--tfm-flag=}" "--tfm-flag=--threads=$t" 2> /dev/null
      done ;;
    "CTranslate2 "*" x"*) ;;  # one sentence is one batch, whatever inter_threads says
    "CTranslate2 "*)
      ct2_settings "$1"
      for t in "$threads" 1; do
        "$ct2_python" "$here/ct2_translate.py" --model-dir "$out/ct2" --threads "$t" --compute-type "$compute" \
          "${vmap[@]}" --latency-lines 100 < "$out/test.en"
      done ;;
  esac
}

echo
echo "== decoding test_2016_flickr: beam 4, length penalty 0.6, at most 50 tokens with eos; CTranslate2 $ct2_version"
echo "   (sentences/s: median of $decode_rounds rounds, every engine in turn (DECODE_ROUNDS; the PyTorch reference"
echo "   once); p50: batch-1 latency, median of 100 lines sent one at a time, then the median of DECODE_ROUNDS"
echo "   rounds likewise; shortlist: \`tfm shortlist\` from Multi30k train; vmap: the same shortlist as CTranslate2's"
echo "   vocabulary map)"
for round in $(seq "$decode_rounds"); do
  for engine in "${engines[@]}"; do
    [ "$round" -gt 1 ] && [ "$engine" = "PyTorch reference fp32" ] && continue
    run_once "$engine"
  done
done
# Batch-1 latency in rounds too, every engine in turn: a single p50 moved 10-20% with the host's
# load, as much as the differences it is read for. p50.KEY: one line per round, all threads and one.
for round in $(seq "$decode_rounds"); do
  for engine in "${engines[@]}"; do
    mapfile -t latency < <(latencies "$engine")
    [ "${#latency[@]}" -gt 0 ] && echo "${latency[*]}" >> "$out/p50.$(key_of "$engine")"
  done
done
printf '%-28s %12s %8s %8s %10s %10s %12s %12s   %s\n' engine sentences/s ratio BLEU identical peak_MiB \
  "p50_ms_${threads}thr" p50_ms_1thr rounds
bleu() { "$tfm" eval --hyp "$1" --ref "$out/test.de" --width 2 2>/dev/null | grep -oE '= [0-9.]+' | head -1 | cut -c3-; }
same() { paste -d '\t' "$out/hyp.tfm_fp32" "$1" | awk -F'\t' '$1 == $2' | wc -l; }
declare -A speed_of mib_of p50_of fastest  # by row name (fastest: by compute type), for the ratios at the end
for engine in "${engines[@]}"; do
  key=$(key_of "$engine")
  sps=$(median_by 1 < "$out/sps.$key")
  [ -z "${ref_sps:-}" ] && ref_sps=$sps
  latency=()  # the median of the rounds' p50s, at all threads and at one
  if [ -f "$out/p50.$key" ]; then
    for column in 1 2; do latency+=("$(median_by "$column" < "$out/p50.$key" | cut -d' ' -f"$column")"); done
  fi
  speed_of[$engine]=$sps; mib_of[$engine]=$(( $(cat "$out/rss.$key") / 1024 ))
  [ "${#latency[@]}" -gt 0 ] && p50_of[$engine]=$(printf '%s\n' "${latency[@]}" | sort -g | head -1)
  printf '%-28s %12s %8.2f %8s %10s %10s %12s %12s   %s\n' "$engine" "$sps" "$(echo "$sps / $ref_sps" | bc -l)" \
    "$(bleu "$out/hyp.$key")" "$( [ "$engine" = "PyTorch reference fp32" ] && echo - || same "$out/hyp.$key")" \
    "${mib_of[$engine]}" "${latency[0]:--}" "${latency[1]:--}" "$(paste -sd' ' "$out/sps.$key")"
done
for compute in float32 int8; do  # the faster split of each compute type: what tfm is compared with
  fastest["$compute"]="CTranslate2 $compute"
  if [ "${#splits[@]}" -gt 1 ] && (( $(echo "${speed_of[CTranslate2 $compute x$threads]} > ${speed_of[CTranslate2 $compute]}" | bc) )); then
    fastest["$compute"]="CTranslate2 $compute x$threads"
  fi
done

echo
echo "== tfm against CTranslate2 in this run: issue 32's ratios (speed: higher is better; memory: lower)"
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
ct2_best=${fastest[int8]}
(( $(echo "${speed_of[${fastest[float32]}]} > ${speed_of[$ct2_best]}" | bc) )) && ct2_best=${fastest[float32]}
default="tfm $default_mode"
printf '%-52s %8s %8s\n' comparison speed memory
one_batch() { echo "${1% x*}"; }  # a CTranslate2 row's one-batch row: its memory, the smaller
printf '%-52s %8s %8s\n' "$default (the default) / $ct2_best" "$(ratio "${speed_of[$default]}" "${speed_of[$ct2_best]}")" \
  "$(ratio "${mib_of[$default]}" "${mib_of[$(one_batch "$ct2_best")]}")"
printf '%-52s %8s %8s\n' "$default-early-stop (CTranslate2's stopping rule) / $ct2_best" \
  "$(ratio "${speed_of[$default-early-stop]}" "${speed_of[$ct2_best]}")" \
  "$(ratio "${mib_of[$default-early-stop]}" "${mib_of[$(one_batch "$ct2_best")]}")"
# At tfm's default maximum length: against CTranslate2's best, and in float32 mode for mode.
anchors=("$ct2_best")
[ "$default_mode" = fp32 ] && [ "${fastest[float32]}" != "$ct2_best" ] && anchors+=("${fastest[float32]}")
for anchor in "${anchors[@]}"; do
  printf '%-52s %8s %8s\n' "$default-source-max (1.5 x source + 10) / $anchor" \
    "$(ratio "${speed_of[$default-source-max]}" "${speed_of[$anchor]}")" \
    "$(ratio "${mib_of[$default-source-max]}" "${mib_of[$(one_batch "$anchor")]}")"
done
for pair in "tfm int8:${fastest[int8]}" "tfm fp32:${fastest[float32]}"; do
  printf '%-52s %8s %8s\n' "${pair%%:*} / ${pair##*:}" "$(ratio "${speed_of[${pair%%:*}]}" "${speed_of[${pair##*:}]}")" \
    "$(ratio "${mib_of[${pair%%:*}]}" "${mib_of[$(one_batch "${pair##*:}")]}")"
done
# round_ratio A B: the median of A's sentences/s over B's, round by round. A mode and its shortlist
# run one after the other in each round, so a round's ratio is spared the host's drift between
# rounds (10-20% here), which a ratio of the two medians is not.
round_ratio() {
  paste -d' ' "$out/sps.$(key_of "$1")" "$out/sps.$(key_of "$2")" | awk '{ printf "%.4f\n", $1 / $2 }' | median_by 1 |
    xargs printf '%.2f'
}
for mode in "${modes[@]}"; do
  if [[ $mode == *-shortlist ]]; then
    printf '%-52s %8s   (round by round: %s)\n' "tfm $mode / tfm ${mode%-shortlist}" \
      "$(ratio "${speed_of[tfm $mode]}" "${speed_of[tfm ${mode%-shortlist}]}")" \
      "$(round_ratio "tfm $mode" "tfm ${mode%-shortlist}")"
  fi
done
for compute in float32 int8; do  # the shortlist in each engine, and tfm's against CTranslate2's
  mode=fp32 && [ "$compute" = int8 ] && mode=int8
  printf '%-52s %8s   (round by round: %s)\n' "CTranslate2 $compute-vmap / CTranslate2 $compute" \
    "$(ratio "${speed_of[CTranslate2 $compute-vmap]}" "${speed_of[CTranslate2 $compute]}")" \
    "$(round_ratio "CTranslate2 $compute-vmap" "CTranslate2 $compute")"
  printf '%-52s %8s %8s\n' "tfm $mode-shortlist / CTranslate2 $compute-vmap" \
    "$(ratio "${speed_of[tfm $mode-shortlist]}" "${speed_of[CTranslate2 $compute-vmap]}")" \
    "$(ratio "${mib_of[tfm $mode-shortlist]}" "${mib_of[CTranslate2 $compute-vmap]}")"
done
ct2_p50=$(printf '%s\n' "${p50_of[CTranslate2 float32]}" "${p50_of[CTranslate2 int8]}" | sort -g | head -1)
for mode in fp32 int8 bf16; do
  if [ -n "${p50_of[tfm $mode]:-}" ]; then
    printf '%-52s %8s\n' "batch-1 p50: tfm $mode / CTranslate2's best ($ct2_p50 ms)" \
      "$(ratio "${p50_of[tfm $mode]}" "$ct2_p50")"
  fi
done
