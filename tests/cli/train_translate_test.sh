#!/usr/bin/env bash
# End to end from the command line: train a tiny model for a few updates, then translate, score,
# average and resume with it, checking line accounting, streaming, formats and exit codes.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 400 --valid 20 --test 20
exec_or_run() { "$@"; }
train() {
  exec_or_run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
    --valid-src "$WORK/data/valid.en" --valid-tgt "$WORK/data/valid.de" --save-dir "$WORK/model" \
    --preset tiny --d-model 32 --d-ff 64 --vocab-size 120 --max-tokens 1024 --keep-last 2 --log-interval 5 "$@"
}

run train --max-updates 12 --save-interval-updates 6
expect_code 0 "train"
[ -z "$out" ] || fail "train wrote to stdout: $out"
grep -E 'batch [0-9]+/0 ' <<< "$err" && fail "a progress line lost the epoch's batch count"
for f in checkpoint_last.pt checkpoint_best.pt checkpoint_avg.pt metrics.jsonl; do
  [ -s "$WORK/model/$f" ] || fail "train did not write $f"
done
model="$WORK/model/checkpoint_last.pt"
expect_contains "$err" "the average of the last 2 checkpoints (checkpoint_1_6.pt checkpoint_1_12.pt)" \
  "train averages the 2 kept checkpoints"

# Exactly one output line per input line, whatever the line holds.
long=$(printf 'I see two cats. %.0s' $(seq 1 60))
printf 'I see two cats.\n\n   \n%s\nbad \xff\xfe bytes\nWe buy five dogs.' "$long" > "$WORK/odd.txt"
"$TFM" translate --model "$model" --max-source-len 20 < "$WORK/odd.txt" > "$WORK/odd.out" 2> "$WORK/odd.err"
code=$?
expect_code 0 "translate odd input"
[ "$(wc -l < "$WORK/odd.out")" = 6 ] || fail "6 input lines gave $(wc -l < "$WORK/odd.out") output lines"
[ -z "$(sed -n 2p "$WORK/odd.out")" ] || fail "an empty line must give an empty line"
grep -q "<stdin>:4: longer than 20 subwords (--max-source-len)" "$WORK/odd.err" || fail "no truncation warning naming line 4"
# Translations that cannot be written (a full disk) are an error, never a success.
if [ -w /dev/full ]; then
  for target in stdout file; do
    if [ $target = stdout ]; then
      "$TFM" --log-level error translate --model "$model" < "$WORK/odd.txt" > /dev/full 2> "$WORK/full.err"
    else
      "$TFM" --log-level error translate --model "$model" --output /dev/full < "$WORK/odd.txt" 2> "$WORK/full.err"
    fi
    code=$?
    err=$(cat "$WORK/full.err")
    expect_code 3 "translate to a full disk ($target)"
    expect_contains "$err" "cannot write" "translate to a full disk ($target)"
  done
  "$TFM" --log-level error eval --hyp "$WORK/odd.out" --ref "$WORK/odd.out" > /dev/full 2> "$WORK/full.err"
  code=$?
  err=$(cat "$WORK/full.err")
  expect_code 3 "eval to a full disk"
  head -3 "$WORK/data/test.en" > "$WORK/three.en"
  head -3 "$WORK/data/test.de" > "$WORK/three.de"
  run "$TFM" --log-level error eval --model "$model" --src "$WORK/three.en" --ref "$WORK/three.de" --output /dev/full
  expect_code 3 "eval --output to a full disk"
  expect_contains "$err" "/dev/full: cannot write" "eval --output to a full disk"
fi
# A translation that takes the whole maximum output length may be cut short: the line is named.
# --min-len 3 holds eos back until the 4th position, the last --max-len-b 4 allows.
"$TFM" translate --model "$model" --max-len-a 0 --max-len-b 4 --min-len 3 < "$WORK/odd.txt" > "$WORK/cut.out" \
  2> "$WORK/cut.err" || fail "translate at the maximum length: $(cat "$WORK/cut.err")"
[ "$(wc -l < "$WORK/cut.out")" = 6 ] || fail "at the maximum length: 6 input lines gave $(wc -l < "$WORK/cut.out") lines"
for line in 1 4 5 6; do
  grep -qF "<stdin>:$line: the translation has the most subwords the search allows (3; --max-len-a 0 * source + --max-len-b 4) and may be cut short" \
    "$WORK/cut.err" || fail "no maximum-length warning naming line $line: $(cat "$WORK/cut.err")"
done
! grep -qE "<stdin>:[23]: the translation" "$WORK/cut.err" || fail "a maximum-length warning for an empty line"
"$TFM" translate --model "$model" --max-len-a 0 --max-len-b 4 --min-len 3 --max-source-len 20 --format json \
  < "$WORK/odd.txt" 2> /dev/null | python3 -c '
import json, sys
flags = [(r.get("truncated", False), r.get("max_length_reached", False)) for r in map(json.loads, sys.stdin)]
sys.exit(flags != [(False, True), (False, False), (False, False), (True, True), (False, True), (False, True)])' ||
  fail "translate --format json: truncated and max_length_reached not on the lines they describe"

# Learned positions end at --max-positions: a training pair longer than that is refused before
# training starts; a longer input line (default --max-source-len 1024) and a huge --max-len-a are
# cut to what the model can place, flagged, and every line is still answered.
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/learned" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 120 --positions learned --max-positions 12 --max-updates 2
expect_code 2 "train on pairs longer than the learned positions"
[ "$(grep -c "error:" <<< "$err")" = 1 ] || fail "pairs longer than the learned positions: expected one error line: $err"
expect_contains "$err" "learned positions hold with eos (filter the data with --max-len 11 or raise --max-positions)" \
  "pairs longer than the learned positions"
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/learned" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 120 --positions learned --max-positions 64 --max-updates 2
expect_code 0 "train with learned positions"
"$TFM" translate --model "$WORK/learned/checkpoint_last.pt" --max-len-a 50 < "$WORK/odd.txt" > "$WORK/learned.out" \
  2> "$WORK/learned.err"
code=$?
expect_code 0 "translate past the learned positions"
[ "$(wc -l < "$WORK/learned.out")" = 6 ] || fail "learned positions: 6 input lines gave $(wc -l < "$WORK/learned.out") output lines"
grep -q "<stdin>:4: longer than 63 subwords (the most the model's learned positions can read)" "$WORK/learned.err" ||
  fail "no truncation warning naming line 4 and the model's limit: $(cat "$WORK/learned.err")"

# JSON lines and n-best.
"$TFM" translate --model "$model" --format json --nbest 2 --beam 3 < "$WORK/data/test.en" > "$WORK/test.json" 2>/dev/null
[ "$(wc -l < "$WORK/test.json")" = 20 ] || fail "json: expected 20 lines"
python3 -c 'import json,sys; [json.loads(l)["nbest"][1]["score"] for l in open(sys.argv[1])]' "$WORK/test.json" ||
  fail "json lines do not parse or lack n-best"
"$TFM" translate --model "$model" --nbest 2 --beam 2 < "$WORK/data/test.en" > "$WORK/test.nbest" 2>/dev/null
[ "$(grep -c ' ||| ' "$WORK/test.nbest")" = 40 ] || fail "n-best text: expected 40 'i ||| text ||| score' lines"

# Sampling: the same seed draws the same translations, another seed others; one line per input.
for seed in 1 1 2; do
  "$TFM" translate --model "$model" --sampling topk:10 --seed "$seed" < "$WORK/data/test.en" \
    >> "$WORK/sampled.$seed" 2> "$WORK/sampled.err" || fail "sampling: $(cat "$WORK/sampled.err")"
done
[ "$(wc -l < "$WORK/sampled.2")" = 20 ] || fail "sampling: expected 20 lines"
[ "$(head -20 "$WORK/sampled.1")" = "$(tail -20 "$WORK/sampled.1")" ] || fail "sampling with seed 1 twice differs"
[ "$(head -20 "$WORK/sampled.1")" != "$(cat "$WORK/sampled.2")" ] || fail "seeds 1 and 2 drew the same 20 translations"
grep -q "search: sampling among the top 10, temperature 1, seed 2" "$WORK/sampled.err" || fail "sampling is not logged"
run "$TFM" translate --model "$model" --sampling top:3
expect_code 2 "--sampling top:3"
expect_contains "$err" "--sampling top:3: expected none, topk:K (K >= 1) or topp:P (0 < P <= 1)" "bad --sampling"

# Shortlist: `tfm shortlist` writes the model with one; --shortlist decodes over it, one line per
# input; --shortlist on a model without one is a one-line usage error.
run "$TFM" shortlist --model "$model" --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
  --out "$WORK/shortlisted.pt" --shortlist-per-source 8 --shortlist-frequent 10 \
  --valid-src "$WORK/data/test.en" --valid-tgt "$WORK/data/test.de"
expect_code 0 "shortlist"
expect_contains "$err" "shortlist from 400 pairs of" "shortlist reports its corpus"
expect_contains "$err" "target subwords are among their sentence's candidates" "shortlist reports its coverage"
expect_contains "$err" "calibration on " "shortlist reports its calibration"
"$TFM" translate --model "$WORK/shortlisted.pt" --shortlist < "$WORK/odd.txt" > "$WORK/shortlisted.out" \
  2> "$WORK/shortlisted.err" || fail "translate --shortlist: $(cat "$WORK/shortlisted.err")"
[ "$(wc -l < "$WORK/shortlisted.out")" = 6 ] || fail "--shortlist: 6 input lines gave $(wc -l < "$WORK/shortlisted.out")"
grep -q "shortlist: 10 frequent subwords" "$WORK/shortlisted.err" || fail "--shortlist is not logged"
"$TFM" translate --model "$WORK/shortlisted.pt" < "$WORK/data/test.en" > "$WORK/unlisted.out" 2>/dev/null
"$TFM" translate --model "$model" < "$WORK/data/test.en" > "$WORK/plain.out" 2>/dev/null
cmp -s "$WORK/unlisted.out" "$WORK/plain.out" || fail "a model with a shortlist translates differently without --shortlist"
# Batches side by side (--workers) translate as one at a time does, every line in its place.
"$TFM" --threads 2 translate --model "$model" --max-tokens 40 --workers 2 < "$WORK/data/test.en" \
  > "$WORK/workers.out" 2> "$WORK/workers.err" || fail "translate --workers 2: $(cat "$WORK/workers.err")"
"$TFM" --threads 2 translate --model "$model" --max-tokens 40 --workers 1 < "$WORK/data/test.en" \
  > "$WORK/one_worker.out" 2>/dev/null
cmp -s "$WORK/workers.out" "$WORK/one_worker.out" || fail "--workers 2 translates unlike --workers 1"
[ "$(wc -l < "$WORK/workers.out")" = "$(wc -l < "$WORK/data/test.en")" ] || fail "--workers 2 lost lines"
grep -q "batches: up to 2 side by side, each of up to 20 source subwords" "$WORK/workers.err" ||
  fail "--workers 2 is not logged: $(cat "$WORK/workers.err")"
run "$TFM" translate --model "$model" --workers -1
expect_code 2 "--workers -1"
expect_one_line_error "--workers -1"
expect_contains "$err" "--workers must be >= 0" "--workers -1"
run "$TFM" translate --model "$model" --shortlist
expect_code 2 "--shortlist without one"
expect_one_line_error "--shortlist without one"
expect_contains "$err" "the model file has no shortlist" "--shortlist without one"
run "$TFM" shortlist --model "$model" --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
  --out "$WORK/bad.pt" --shortlist-per-source 0
expect_code 2 "--shortlist-per-source 0"
expect_contains "$err" "--shortlist-per-source 0: must be at least 1" "--shortlist-per-source 0"
for iterations in -1 1000000; do  # a million passes over the corpus ran silently for hours
  run "$TFM" shortlist --model "$model" --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
    --out "$WORK/bad.pt" --shortlist-iterations $iterations
  expect_code 2 "--shortlist-iterations $iterations"
  expect_contains "$err" "--shortlist-iterations $iterations: must be within 0 and 100" "--shortlist-iterations $iterations"
done
run "$TFM" shortlist --model "$model" --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
  --out "$WORK/bad.pt" --calibration-pairs -1
expect_code 2 "--calibration-pairs -1"
expect_contains "$err" "--calibration-pairs must be >= 0" "--calibration-pairs -1"

# Streaming: a line written to a pipe that stays open is answered at once.
mkfifo "$WORK/fifo"
"$TFM" translate --model "$model" < "$WORK/fifo" > "$WORK/stream.out" 2>/dev/null &
translator=$!
exec 3> "$WORK/fifo"
echo "I see two cats." >&3
# A line in the output while the pipe is still open: the translation did not wait for end of input.
wait_for_line "$WORK/stream.out" "" "$translator" || fail "streaming: translate exited before answering"
[ "$(wc -l < "$WORK/stream.out")" = 1 ] || fail "streaming: no output while the input pipe stays open"
exec 3>&-
wait "$translator" || fail "streaming translate failed"

# Scoring a model directly.
run "$TFM" eval --model "$model" --src "$WORK/data/test.en" --ref "$WORK/data/test.de" --metrics bleu,chrf
expect_code 0 "eval --model"
expect_contains "$out" "BLEU|nrefs:1" "eval --model prints BLEU"
expect_contains "$out" "sentences/s" "eval --model prints speed"
expect_contains "$err" "search: beam 4, length penalty 1.5, max length 1.5 * source + 10" "eval --model logs the default search"
lines=$(wc -l < "$WORK/data/test.en")
run "$TFM" eval --model "$model" --src "$WORK/data/test.en" --ref "$WORK/data/test.de" --max-len-a 0 --max-len-b 4 \
  --min-len 3
expect_code 0 "eval --model at the maximum length"
expect_contains "$err" "$WORK/data/test.en: $lines of $lines translations have the most subwords the search allows (--max-len-a 0 * source + --max-len-b 4) and may be cut short, the first of line 1" \
  "eval --model counts the translations at the maximum length"
[ "$(grep -c "may be cut short" <<< "$err")" = 1 ] || fail "eval --model: one line for the translations at the maximum"

# The trainer's checkpoint_avg.pt is `tfm average` of the checkpoints its log names, and translates.
run "$TFM" average --inputs "$WORK/model/checkpoint_1_6.pt" "$WORK/model/checkpoint_1_12.pt" --output "$WORK/avg.pt"
expect_code 0 "average"
"$TFM" translate --model "$WORK/avg.pt" --format json < "$WORK/data/test.en" > "$WORK/avg.json" 2>/dev/null ||
  fail "translate with the averaged model failed"
"$TFM" translate --model "$WORK/model/checkpoint_avg.pt" --format json < "$WORK/data/test.en" \
  > "$WORK/train_avg.json" 2>/dev/null || fail "translate with checkpoint_avg.pt failed"
cmp -s "$WORK/avg.json" "$WORK/train_avg.json" || fail "checkpoint_avg.pt translates unlike tfm average's model"

# Errors: usage errors exit 2, file errors exit 3, all in one line.
run "$TFM" translate --model "$WORK/missing.pt"
expect_code 3 "missing model"
expect_one_line_error "missing model"
run "$TFM" translate --model "$model" --beam 0
expect_code 2 "--beam 0"
expect_one_line_error "--beam 0"
if ! "$TFM" --version | grep -q "device(s) usable"; then
  run "$TFM" translate --model "$model" --device cuda
  expect_code 2 "--device cuda without a GPU"
  expect_contains "$err" "CUDA is not usable" "--device cuda without a GPU"
fi
run train --max-updates 20 --max-len-ratio -1
expect_code 2 "bad --max-len-ratio"
# A cool-down needs a budget to end on.
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/nobudget" \
  --preset tiny --lr-cooldown 0.2
expect_code 2 "--lr-cooldown without a budget"
expect_contains "$err" "--lr-cooldown needs a budget to end on" "--lr-cooldown without a budget names the flag"

# SIGINT saves checkpoint_last and exits 130; running again resumes from it.
rm -rf "$WORK/model"
# exec, so that $! is tfm itself and not a subshell (which would ignore SIGINT in the background).
(exec_or_run() { exec "$@"; }; train --max-updates 100000 > /dev/null 2> "$WORK/sigint.err") &
trainer=$!
wait_for_line "$WORK/sigint.err" "train |" "$trainer" || fail "SIGINT: the run never trained: $(tail -2 "$WORK/sigint.err")"
kill -INT "$trainer"
wait "$trainer"
code=$?
[ "$code" = 130 ] || fail "SIGINT: exit code $code, expected 130 ($(tail -2 "$WORK/sigint.err"))"
[ -s "$WORK/model/checkpoint_last.pt" ] || fail "SIGINT: no checkpoint_last.pt"
run train --max-updates 1
expect_code 0 "resume after SIGINT"
expect_contains "$err" "resuming from" "resume after SIGINT"

# The preset's training recipe fills the flags left unset; explicit flags win; --preset auto
# picks small for a small corpus.
expect_contains "$err" "recipe: inverse_sqrt schedule, peak 0.002, warm-up 1000 updates, 1024 tokens" "tiny's recipe"
expect_contains "$err" "validation every 500 updates and at the end" "tiny's validation interval"
run train --no-resume --max-updates 1 --lr 0.0005 --warmup 7 --validate-every 3 --lr-cooldown 0.3
expect_contains "$err" "recipe: inverse_sqrt schedule, peak 0.0005, warm-up 7 updates, linear cool-down to 0 over the \
last 30% of the budget, 1024 tokens" "explicit flags win"
expect_contains "$err" "validation every 3 updates and at the end" "an explicit --validate-every wins"
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/auto" \
  --d-model 32 --d-ff 64 --encoder-layers 1 --decoder-layers 1 --vocab-size 120 --max-updates 1
expect_code 0 "train with --preset auto"
expect_contains "$err" "--preset auto: small (400 training pairs" "auto picks small for a small corpus"
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/base" \
  --preset base --d-model 32 --d-ff 64 --encoder-layers 1 --decoder-layers 1 --vocab-size 120 --max-updates 1
expect_contains "$err" "recipe: noam schedule, factor 1, warm-up 4000 updates" "base keeps the paper's schedule"
expect_contains "$err" "validation at every checkpoint" "base validates at every checkpoint"
# Resumed without --preset (auto would pick small), the run keeps the schedule it started with.
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/base" \
  --vocab-size 120 --max-updates 2
expect_code 0 "resume a base run without --preset"
expect_contains "$err" "recipe: noam schedule, factor 1, warm-up 4000 updates, 4096 tokens" "a resumed run keeps its recipe"

# Progress lines past the first epoch keep the epoch's batch count (once shown as "batch 30/0").
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --save-dir "$WORK/epochs" \
  --preset tiny --d-model 32 --d-ff 64 --vocab-size 120 --max-tokens 1024 --keep-last 0 --log-interval 5 \
  --max-updates 18
expect_code 0 "train into a second epoch"
grep -qE 'epoch 2 \| batch [0-9]+/[1-9]' <<< "$err" || fail "no progress line with a batch count in the second epoch: $err"
grep -E 'batch [0-9]+/0 ' <<< "$err" && fail "a progress line lost the epoch's batch count"

finish
