#!/usr/bin/env bash
# `tfm eval` from the command line: sacreBLEU-style lines and JSON on stdout, exit codes, errors.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${TFM_DATA_DIR:-${TFM_DEFAULT_DATA_DIR:-$HERE/../../../shared}}/testdata/bleu

printf 'The cat sat on the mat .\nA dog runs .\n\n' > "$WORK/hyp.txt"
printf 'The cat sat on the mat.\nThe dog runs.\nSomething.\n' > "$WORK/ref.txt"
printf 'The cat is on the mat.\nA dog runs.\nNothing.\n' > "$WORK/ref2.txt"

run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt"
expect_code 0 "eval"
expect_contains "$out" "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:tfm-" "eval signature"
expect_contains "$out" " (BP = " "eval verbose score"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "eval: expected one line, got: $out"

run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" "$WORK/ref2.txt" --metrics bleu chrf --chrf-word-order 2
expect_code 0 "two metrics, two references"
expect_contains "$out" "BLEU|nrefs:2|" "two references in the signature"
expect_contains "$out" "chrF2++|nrefs:2|case:mixed|eff:yes|nc:6|nw:2|space:no|version:tfm-" "chrF++ line"
columns=$(printf '%s\n' "$out" | awk '{ print index($0, " = ") }' | sort -u | wc -l)
[ "$columns" = 1 ] || fail "the '=' signs of several metrics should line up: $out"

run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" --sentence-level --tokenize intl --smooth-method floor
expect_code 0 "sentence level"
[ "$(printf '%s\n' "$out" | grep -c '^BLEU|nrefs:1|case:mixed|eff:yes|tok:intl|smooth:floor\[0.10\]|')" = 3 ] ||
  fail "sentence level: expected 3 lines with eff:yes, got: $out"

"$TFM" eval --hyp - --ref "$WORK/ref.txt" --metrics chrf < "$WORK/hyp.txt" > "$WORK/stdin_out" 2> "$WORK/err"
code=$?
[ "$code" = 0 ] || fail "--hyp - (stdin): exit code $code ($(cat "$WORK/err"))"
expect_contains "$(cat "$WORK/stdin_out")" "chrF2|nrefs:1" "--hyp - reads stdin"

gzip -c "$WORK/ref.txt" > "$WORK/ref.txt.gz"
run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt.gz" --json
expect_code 0 "gzip reference, --json"
if command -v python3 > /dev/null; then
  printf '%s' "$out" | python3 -c '
import json, sys
report = json.load(sys.stdin)
bleu = report["scores"][0]
assert report["num_segments"] == 3 and report["level"] == "corpus", report
assert bleu["name"] == "BLEU" and bleu["tok"] == "13a" and bleu["nrefs"] == "1", bleu
assert len(bleu["counts"]) == 4 and bleu["hyp_len"] > 0 and 0 <= bleu["score"] <= 100, bleu
' || fail "--json: not the expected JSON object: $out"
fi

# The shared golden data, through the command line: same numbers as sacreBLEU's.
if [ -f "$DATA/sentence_vs_corpus/expected.json" ] && command -v python3 > /dev/null; then
  for case_dir in "$DATA"/*/; do
    refs=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["ref_files"]))' \
      "$case_dir/expected.json")
    ref_paths=()
    for ref in $refs; do ref_paths+=("$case_dir$ref"); done
    run "$TFM" eval --hyp "${case_dir}hyp.txt" --ref "${ref_paths[@]}" --metrics bleu chrf --json
    expect_code 0 "golden case $case_dir"
    printf '%s' "$out" | python3 -c '
import json, sys
expected = json.load(open(sys.argv[1]))
bleu, chrf = json.load(sys.stdin)["scores"]
default = [r for r in expected["bleu"] if r["sacrebleu_args"] == ""][0]
assert abs(bleu["score"] - default["score"]) < 1e-9, (bleu["score"], default["score"])
assert bleu["verbose_score"] == default["cli_output"]["verbose_score"], bleu["verbose_score"]
assert abs(chrf["score"] - expected["chrf"]["score"]) < 1e-9, (chrf["score"], expected["chrf"]["score"])
' "$case_dir/expected.json" || fail "golden case $case_dir: scores differ from sacreBLEU's"
  done
else
  echo "skipping the golden-data checks (needs $DATA and python3)"
fi

# --paired-bs: the first --hyp is the baseline; every other is tested against it on the same resamples.
printf 'The cat sat on the mat.\nA dog runs.\n\n' > "$WORK/better.txt"
run "$TFM" eval --hyp "$WORK/hyp.txt" "$WORK/better.txt" "$WORK/hyp.txt" --ref "$WORK/ref.txt" --metrics bleu chrf \
  --paired-bs --paired-bs-n 200
expect_code 0 "--paired-bs"
expect_contains "$out" "baseline: $WORK/hyp.txt" "--paired-bs names the baseline"
expect_contains "$out" "BLEU|nrefs:1|bs:200|seed:12345|case:mixed|" "--paired-bs BLEU signature"
expect_contains "$out" "chrF2|nrefs:1|bs:200|seed:12345|" "--paired-bs chrF signature"
[ "$(printf '%s\n' "$out" | grep -c 'p = ')" = 2 ] || fail "--paired-bs: a p-value per compared system: $out"
SACREBLEU_SEED=7 "$TFM" eval --hyp "$WORK/hyp.txt" "$WORK/better.txt" --ref "$WORK/ref.txt" --paired-bs --json \
  > "$WORK/paired.json" 2> "$WORK/err" || fail "--paired-bs --json: $(cat "$WORK/err")"
if command -v python3 > /dev/null; then
  python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
assert report["test"] == "paired-bs" and report["samples"] == 1000 and report["seed"] == 7, report
base, other = report["systems"]
assert base["baseline"] and "p_value" not in base["scores"][0], base
bleu = other["scores"][0]
assert bleu["name"] == "BLEU" and 0 < bleu["p_value"] <= 1 and bleu["ci"] >= 0, bleu
assert "|bs:1000|seed:7|" in bleu["signature"], bleu
' "$WORK/paired.json" || fail "--paired-bs --json: not the expected JSON object: $(cat "$WORK/paired.json")"
fi
for bad in "--paired-bs" "--paired-bs --sentence-level --hyp $WORK/better.txt" "--hyp $WORK/better.txt" \
           "--paired-bs --paired-bs-n 0 --hyp $WORK/better.txt"; do
  # shellcheck disable=SC2086 # the flags are meant to split
  run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" $bad
  expect_code 2 "bad paired test: $bad"
  expect_one_line_error "bad paired test: $bad"
done
SACREBLEU_SEED=x run "$TFM" eval --hyp "$WORK/hyp.txt" "$WORK/better.txt" --ref "$WORK/ref.txt" --paired-bs
expect_code 2 "bad SACREBLEU_SEED"
expect_contains "$err" "SACREBLEU_SEED=x" "bad SACREBLEU_SEED is named"
run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" --metrics bleu chrf --confidence --confidence-n 50
expect_code 0 "--confidence"
expect_contains "$out" "BLEU|nrefs:1|bs:50|seed:12345|" "--confidence signature"
[ "$(printf '%s\n' "$out" | grep -c ' = [0-9.]* (μ = [0-9.]* ± [0-9.]*)')" = 2 ] ||
  fail "--confidence: each score followed by its interval: $out"
for bad in "--confidence --sentence-level" "--confidence --paired-bs --hyp $WORK/better.txt" "--confidence --confidence-n 0" \
  "--confidence --confidence-n 1000000000000" "--paired-bs --paired-bs-n 1000000000000 --hyp $WORK/better.txt"; do
  # shellcheck disable=SC2086 # the flags are meant to split
  run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" $bad
  expect_code 2 "bad confidence flags: $bad"
  expect_one_line_error "bad confidence flags: $bad"
done
printf 'one line\n' > "$WORK/one_line.txt"
run "$TFM" eval --hyp "$WORK/hyp.txt" "$WORK/one_line.txt" --ref "$WORK/ref.txt" --paired-bs
expect_code 3 "a compared system of another length"
expect_one_line_error "a compared system of another length"
expect_contains "$err" "$WORK/one_line.txt" "the short system is named"

# Errors: one line on stderr, nothing on stdout, documented exit codes.
printf 'only one line\n' > "$WORK/short.txt"
run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/short.txt"
expect_code 3 "mismatched line counts"
expect_one_line_error "mismatched line counts"
for part in "$WORK/hyp.txt" "$WORK/short.txt" " 3 " " 1 "; do
  expect_contains "$err" "$part" "mismatched line counts names files and counts"
done

run "$TFM" eval --hyp "$WORK/missing.txt" --ref "$WORK/ref.txt"
expect_code 3 "missing hypothesis file"
expect_one_line_error "missing hypothesis file"
expect_contains "$err" "$WORK/missing.txt" "missing file is named"

printf 'ok\nStra\xdfe\n\n' > "$WORK/latin1.txt"
run "$TFM" eval --hyp "$WORK/latin1.txt" --ref "$WORK/ref.txt"
expect_code 3 "not UTF-8"
expect_contains "$err" "$WORK/latin1.txt:2" "bad UTF-8 names file and line"

for bad in "--tokenize zh" "--smooth-method add-n" "--smooth-value 0.5" "--metrics ter" \
           "--metrics bleu chrf --sentence-level" "--smooth-method floor --smooth-value -1" "--chrf-word-order -1"; do
  # shellcheck disable=SC2086 # the flags are meant to split
  run "$TFM" eval --hyp "$WORK/hyp.txt" --ref "$WORK/ref.txt" $bad
  expect_code 2 "bad flags: $bad"
  expect_one_line_error "bad flags: $bad"
done

run "$TFM" eval --hyp "$WORK/hyp.txt"
expect_code 2 "missing --ref"
expect_one_line_error "missing --ref"

# Optional: random sentences against the sacrebleu package, when it is installed
# (TFM_SACREBLEU_PYTHON names a Python that has it; the golden files stay the primary check).
python=${TFM_SACREBLEU_PYTHON:-python3}
if command -v "$python" > /dev/null; then
  "$python" "$HERE/eval_compare_sacrebleu.py" "$TFM" "$WORK"
  compare_code=$?
  [ "$compare_code" = 0 ] || [ "$compare_code" = 77 ] || fail "scores differ from the sacrebleu package"
fi

finish
