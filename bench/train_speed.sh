#!/usr/bin/env bash
# Training speed and curve of `tfm train`: trains PRESET on SRC/TGT for MINUTES minutes in a
# fresh directory, then summarises metrics.jsonl (tokens/s, loss and BLEU curve, model FLOPs/s).
#   bench/train_speed.sh TFM PRESET SRC TGT MINUTES [more tfm train flags, e.g. --dtype bfloat16]
set -euo pipefail
tfm=${1:?usage: $0 TFM PRESET SRC TGT MINUTES [flags]}
preset=${2:?preset}
src=${3:?source}
tgt=${4:?target}
minutes=${5:?minutes}
shift 5
here=$(cd "$(dirname "$0")" && pwd)
dir=${TFM_BENCH_DIR:-$(mktemp -d)}
echo "date: $(date -u +%F) | $(nproc) cores | save dir: $dir"
echo "command: $tfm train --train-src $src --train-tgt $tgt --save-dir $dir --preset $preset --time-limit $minutes --no-resume $*"
"$tfm" train --train-src "$src" --train-tgt "$tgt" --save-dir "$dir" --preset "$preset" \
  --time-limit "$minutes" --no-resume --log-interval 20 "$@" 2> "$dir/train.log"
python3 "$here/summarize_training.py" "$dir"
