#!/usr/bin/env bash
# A base-size model (the paper's: d_model 512, d_ff 2048, 8 heads, 6+6 layers) trained briefly on
# Multi30k, for the speed benchmarks (bench/speed.sh, bench/serve.sh): its figures are those of
# the paper's size, with outputs of real lengths, not only the `small` model's. Not a quality
# recipe: the paper's warm-up of 4000 updates is longer than a 2-core CPU gets in MINUTES, so the
# run warms up over 500 updates to a peak of 1e-3 and decays as fairseq's inverse_sqrt does, with
# LayerNorm before each sub-layer (--norm pre): with the paper's placement after it, this short
# warm-up left the loss flat at ~5.5 for hundreds of updates (BENCHMARKS.md).
# WARMUP (default 500) shortens the warm-up where a CPU without bf16 gets only a few hundred updates
# in MINUTES.
# Prints bench/summarize_training.py's summary (updates, tokens/s, the validation curve) and the
# model file (checkpoint_avg.pt).
#
#   bench/base_model.sh MINUTES OUT_DIR [extra `tfm train` flags...]
set -euo pipefail
minutes=${1:?usage: $0 MINUTES OUT_DIR [train flags...]}
out=${2:?output directory}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
[ -f "$data/train.en.gz" ] || { echo "no Multi30k at $data (set TFM_DATA_DIR)" >&2; exit 2; }
tfm=${TFM_BIN:-$("$here/../scripts/build")}
mkdir -p "$out"
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" train --train-src "$data/train.en.gz" --train-tgt "$data/train.de.gz" \
  --valid-src "$data/val.en.gz" --valid-tgt "$data/val.de.gz" --save-dir "$out/run" \
  --preset base --norm pre --lr-scheduler inverse_sqrt --lr 1e-3 --warmup "${WARMUP:-500}" --max-tokens 2048 \
  --save-interval-updates 100 --validate-every 300 --valid-max-sentences 300 \
  --time-limit "$minutes" "$@" 2> "$out/train.log"
python3 "$here/summarize_training.py" "$out/run"  # updates, tokens/s, the validation curve
model="$out/run/checkpoint_avg.pt"
[ -f "$model" ] || model="$out/run/checkpoint_last.pt"
echo "model: $model"
