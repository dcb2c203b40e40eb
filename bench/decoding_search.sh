#!/usr/bin/env bash
# The second half of the recipe search (issue 14), on validation data only: for a finished
# `tfm train` run, which checkpoints to average and which beam and length penalty to decode with.
#
#   bench/decoding_search.sh RUN_DIR [--src en --tgt de]
#
# Prints validation BLEU for checkpoint_last, checkpoint_best and the average of the newest K
# numbered checkpoints (K = 2, 3, 5, 8, all kept), each with beam 4 and length penalty 1.5 (tfm's
# defaults); then, for the trainer's checkpoint_avg.pt, greedy, and beam 4, 5 and 6 with length
# penalty 0.6 (the paper's), 1.0, 1.5 and 2.0.
set -euo pipefail
run=${1:?usage: $0 RUN_DIR [--src en --tgt de]}; shift
src=en tgt=de
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$2; shift 2 ;;
    --tgt) tgt=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
tfm=${TFM_BIN:-$("$here/../scripts/build")}
scratch=$(mktemp -d /tmp/tfm-decoding-XXXXXX)
trap 'rm -rf "$scratch"' EXIT

bleu() {  # MODEL BEAM LENPEN
  "$tfm" eval --model "$1" --src "$data/val.$src.gz" --ref "$data/val.$tgt.gz" --beam "$2" --lenpen "$3" \
    --metrics bleu 2> /dev/null | grep -oE 'BLEU[^=]*= *[0-9.]+' | grep -oE '[0-9.]+$'
}
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) | run: $run"
echo
echo "| model (validation, beam 4, lenpen 1.5) | BLEU |"
echo "|---|---:|"
echo "| checkpoint_last.pt | $(bleu "$run/checkpoint_last.pt" 4 1.5) |"
echo "| checkpoint_best.pt | $(bleu "$run/checkpoint_best.pt" 4 1.5) |"
mapfile -t newest < <(ls -t "$run"/checkpoint*.pt | grep -E '/checkpoint([0-9]+|_[0-9]+_[0-9]+)\.pt$')
done_k=' '
for k in 2 3 5 8 ${#newest[@]}; do  # "all kept" is skipped where it equals a K already listed
  [ "$k" -le "${#newest[@]}" ] || continue
  [ "$k" -ge 2 ] || continue
  [[ "$done_k" != *" $k "* ]] || continue
  done_k+="$k "
  "$tfm" average --inputs "${newest[@]:0:k}" --output "$scratch/avg$k.pt" 2> /dev/null
  names=$(printf '%s\n' "${newest[@]:0:k}" | xargs -n1 basename | sed 's/checkpoint//; s/\.pt//' | paste -sd ' ')
  echo "| average of the newest $k ($names) | $(bleu "$scratch/avg$k.pt" 4 1.5) |"
done
echo
echo "| checkpoint_avg.pt (validation) | lenpen 0.6 | 1.0 | 1.5 | 2.0 |"
echo "|---|---:|---:|---:|---:|"
echo "| greedy (no length penalty choice) | $(bleu "$run/checkpoint_avg.pt" 1 1.5) | | | |"
for beam in 4 5 6; do
  row="| beam $beam"
  for lenpen in 0.6 1.0 1.5 2.0; do row+=" | $(bleu "$run/checkpoint_avg.pt" "$beam" "$lenpen")"; done
  echo "$row |"
done
