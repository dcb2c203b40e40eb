#!/usr/bin/env bash
# --dtype auto is the default: the log names the precision chosen and why, metrics.jsonl and the
# checkpoint record it, a resumed run keeps it, and an explicit bfloat16 on a CPU that only
# emulates it warns once.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 200 --valid 10 --test 10
native=no
"$TFM" --version | grep -q "bf16: cpu yes" && native=yes
expected=float32
[ "$native" = yes ] && expected=bfloat16
train() {
  run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --preset tiny \
    --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 --log-interval 1 --keep-last 0 "$@"
}

train --save-dir "$WORK/auto" --max-updates 2
expect_code 0 "train with the default --dtype"
expect_contains "$err" "precision: --dtype auto: $expected" "the log names the automatic choice"
grep -q "\"dtype\":\"$expected\"" "$WORK/auto/metrics.jsonl" || fail "metrics.jsonl does not record dtype $expected"

train --save-dir "$WORK/fp16" --max-updates 1 --dtype float16
expect_code 2 "float16 training (no loss scaling) is refused"
expect_contains "$err" "--dtype float16: training in float16 needs dynamic loss scaling" "the refusal says why"
[ ! -e "$WORK/fp16/checkpoint_last.pt" ] || fail "refused float16 training still wrote a checkpoint"

train --save-dir "$WORK/auto" --max-updates 4  # resumes
expect_code 0 "resume"
expect_contains "$err" "precision: --dtype $expected as asked" "a resumed run keeps its recorded precision"

if [ "$native" = yes ]; then
  echo "skipping the emulated-bf16 warning check: this CPU has native bf16 (AVX512-BF16/AMX)"
else
  train --save-dir "$WORK/bf16" --max-updates 1 --dtype bfloat16
  expect_code 0 "explicit bfloat16 runs as asked"
  [ "$(grep -c 'emulates bfloat16' <<< "$err")" = 1 ] || fail "expected one warning about emulated bf16, got: $err"
  printf 'I see two cats.\n' | "$TFM" translate --model "$WORK/auto/checkpoint_last.pt" > "$WORK/t.out" 2> "$WORK/t.err"
  grep -q "precision: --dtype auto: float32" "$WORK/t.err" || fail "translate does not log its automatic precision"
fi
finish
