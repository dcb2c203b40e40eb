#!/usr/bin/env bash
# Training lends pages jemalloc has held free for a while to the kernel (MADV_FREE), so that freed
# neighbours are joined and a heap of ever-changing tensor shapes stays bounded; translating keeps
# decay off, and its batch workers share one arena. Read from jemalloc's own statistics at exit
# (MALLOC_CONF=stats_print:true).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 200 --valid 10 --test 10
MALLOC_CONF=stats_print:true run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 --keep-last 0 --save-dir "$WORK/run" \
  --max-updates 2
expect_code 0 "train"
if ! grep -q "jemalloc statistics" <<< "$err"; then
  echo "skipping: this tfm is not linked with jemalloc (-DTFM_USE_JEMALLOC=OFF)"
  finish
  exit 0
fi
decay=$(grep -E "opt\.(dirty|muzzy)_decay_ms" <<< "$err")
expect_contains "$decay" "arenas.dirty_decay_ms: 5000" "training lets freed pages go after 5 s"
expect_contains "$decay" "arenas.muzzy_decay_ms: -1" "... to the kernel lazily, never unmapped"

printf 'one two three\n' > "$WORK/in.txt"
MALLOC_CONF=stats_print:true run "$TFM" translate --model "$WORK/run/checkpoint_last.pt" --input "$WORK/in.txt"
expect_code 0 "translate"
expect_contains "$(grep -E "opt\.dirty_decay_ms" <<< "$err")" "arenas.dirty_decay_ms: -1" \
  "translating keeps its freed pages (decay off)"

# Two workers, many batches: the second worker's tensors (jemalloc's "large" allocations, 16 KiB
# and up) come from the arena of the first, not from one of its own.
cut -f1 "$WORK/data/test.en" > "$WORK/lines.txt"
MALLOC_CONF=stats_print:true run "$TFM" --threads 2 translate --model "$WORK/run/checkpoint_last.pt" \
  --input "$WORK/lines.txt" --workers 2 --batch-size 1
expect_code 0 "translate with two workers"
arenas_with_tensors=$(awk '/^arenas\[[0-9]+\]:/ { arena = $1 } /^large:/ && arena != "" && $2 ~ /^[0-9]+$/ && $3 > 0 { n++ } END { print n + 0 }' <<< "$err")
[ "$arenas_with_tensors" = 1 ] || fail "two workers allocated tensors from $arenas_with_tensors arenas, expected one"
finish
