#!/usr/bin/env bash
# `tfm quantize` writes an int8 model file: smaller than the float model, it translates without
# flags exactly as --quantize int8 translates the float model, and it refuses what needs float
# weights (another dtype, averaging, quantizing again) with a one-line error.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 200 --valid 10 --test 10
run "$TFM" train --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --preset tiny \
  --d-model 32 --d-ff 64 --vocab-size 100 --max-tokens 1024 --max-updates 2 --keep-last 0 --save-dir "$WORK/run"
expect_code 0 "train a tiny model"
run "$TFM" average --inputs "$WORK/run/checkpoint_last.pt" "$WORK/run/checkpoint_last.pt" -o "$WORK/float.pt"
expect_code 0 "a float model file"

run "$TFM" quantize --model "$WORK/float.pt" --output "$WORK/int8.pt"
expect_code 0 "quantize"
expect_contains "$err" "int8) from $WORK/float.pt" "quantize says what it wrote"
[ "$(stat -c %s "$WORK/int8.pt")" -lt "$(stat -c %s "$WORK/float.pt")" ] || fail "the int8 file is not smaller"

"$TFM" translate --model "$WORK/float.pt" --quantize int8 < "$WORK/data/test.en" > "$WORK/float.out" 2> "$WORK/float.err" ||
  fail "translate --quantize int8 failed: $(cat "$WORK/float.err")"
"$TFM" translate --model "$WORK/int8.pt" < "$WORK/data/test.en" > "$WORK/int8.out" 2> "$WORK/int8.err" ||
  fail "translate the int8 file failed: $(cat "$WORK/int8.err")"
[ "$(wc -l < "$WORK/int8.out")" = "$(wc -l < "$WORK/data/test.en")" ] || fail "one output line per input line"
cmp -s "$WORK/float.out" "$WORK/int8.out" || fail "the int8 file translates otherwise than --quantize int8"
grep -q "int8 model file" "$WORK/int8.err" || fail "translate does not say it read an int8 model file"
grep -q "int8 linear layers" "$WORK/int8.err" || fail "translate does not log int8 precision"

printf 'one two\n' > "$WORK/one.en"
run "$TFM" translate --model "$WORK/int8.pt" --dtype bfloat16 --input "$WORK/one.en"
expect_code 2 "an int8 model file in bfloat16"
expect_one_line_error "an int8 model file in bfloat16"
expect_contains "$err" "int8.pt: an int8 model file decodes with --dtype float32" "the refusal says why"

run "$TFM" average --inputs "$WORK/int8.pt" "$WORK/int8.pt" -o "$WORK/avg.pt"
expect_code 3 "averaging int8 model files"
expect_one_line_error "averaging int8 model files"
expect_contains "$err" "int8.pt: an int8 model file, which only translates; averaging needs the float model" \
  "the refusal names the file"

run "$TFM" quantize --model "$WORK/int8.pt" --output "$WORK/again.pt"
expect_code 3 "quantizing an int8 model file"
expect_one_line_error "quantizing an int8 model file"
[ ! -e "$WORK/again.pt" ] || fail "a refused quantize still wrote a file"

finish
