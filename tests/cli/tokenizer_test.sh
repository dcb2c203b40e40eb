#!/usr/bin/env bash
# `tfm tokenizer train|encode|decode` from the command line: stdout carries only results.
source "$(dirname "$0")/lib.sh"

for i in $(seq 1 400); do
  echo "Ein Mann fährt Fahrrad Nummer $i über die Straße."
  echo "Une femme âgée lit le journal numéro $i à côté du café."
done | gzip > "$WORK/corpus.gz"

run "$TFM" tokenizer train --input "$WORK/corpus.gz" --output "$WORK/spm.model" --vocab-size 120
expect_code 0 "tokenizer train"
[ -z "$out" ] || fail "tokenizer train printed to stdout: $out"
[ -s "$WORK/spm.model" ] || fail "tokenizer train wrote no model"

printf 'Ein Mann fährt über die Straße.\n\nUne femme âgée.\n' > "$WORK/text"
"$TFM" tokenizer encode --model "$WORK/spm.model" --input "$WORK/text" > "$WORK/ids" 2>"$WORK/err"
[ "$(wc -l < "$WORK/ids")" = 3 ] || fail "encode: expected 3 lines, got $(wc -l < "$WORK/ids")"
"$TFM" tokenizer decode --model "$WORK/spm.model" < "$WORK/ids" > "$WORK/back" 2>"$WORK/err"
cmp -s "$WORK/text" "$WORK/back" || fail "decode(encode(text)) != text: $(cat "$WORK/back")"

"$TFM" tokenizer encode --model "$WORK/spm.model" --pieces < "$WORK/text" > "$WORK/pieces"
"$TFM" tokenizer decode --model "$WORK/spm.model" --pieces < "$WORK/pieces" > "$WORK/back2"
cmp -s "$WORK/text" "$WORK/back2" || fail "pieces round trip: $(cat "$WORK/back2")"

printf '5 6\n7 x 8\n' > "$WORK/bad_ids"
run "$TFM" tokenizer decode --model "$WORK/spm.model" --input "$WORK/bad_ids"
expect_code 3 "decode of a non-id"
expect_contains "$err" "$WORK/bad_ids:2" "bad id names file and line"

# Settings SentencePiece would refuse only after reading the corpus are usage errors first.
for bad in "--vocab-size 9223372036854775807" "--normalization nfc"; do
  # shellcheck disable=SC2086 # the flags are meant to split
  run "$TFM" tokenizer train --input "$WORK/corpus.gz" --output "$WORK/bad.model" $bad
  expect_code 2 "tokenizer train $bad"
  expect_one_line_error "tokenizer train $bad"
done

finish
