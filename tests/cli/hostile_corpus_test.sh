#!/usr/bin/env bash
# What web-crawled corpora throw at `tfm prepare`: each case is handled (CRLF, NUL bytes, a 1 MB
# line, a missing final newline) or rejected with a one-line error naming the file (and the line
# where there is one) and exit code 3 (invalid UTF-8, binary garbage, truncated gzip, empty file).
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 200 --valid 10 --test 10
en="$WORK/data/train.en" de="$WORK/data/train.de"
prepare() { run "$TFM" prepare --train-src "$1" --train-tgt "$2" --vocab-size 60 --out "$WORK/out.$3"; }
accepted() {  # accepted NAME SOURCE TARGET EXPECTED_PAIRS
  prepare "$2" "$3" "$1"
  expect_code 0 "$1"
  expect_contains "$err" "$4 sentences read" "$1: every line pair is read"
}
rejected() {  # rejected NAME SOURCE TARGET EXPECTED_MESSAGE
  prepare "$2" "$3" "$1"
  expect_code 3 "$1"
  expect_one_line_error "$1"
  expect_contains "$err" "$4" "$1"
}

sed 's/$/\r/' "$en" > "$WORK/crlf.en"
accepted "CRLF line ends" "$WORK/crlf.en" "$de" 400
{ cat "$en"; printf 'x\0y\n'; } > "$WORK/nul.en"; { cat "$de"; echo z; } > "$WORK/nul.de"
accepted "a NUL byte inside a line" "$WORK/nul.en" "$WORK/nul.de" 402
{ cat "$en"; python3 -c "print('a' * 1000000)"; } > "$WORK/long.en"; { cat "$de"; echo b; } > "$WORK/long.de"
accepted "a 1 MB line" "$WORK/long.en" "$WORK/long.de" 402
head -c -1 "$en" > "$WORK/nonl.en"
accepted "no final newline" "$WORK/nonl.en" "$de" 400

{ cat "$en"; printf 'bad \xff\xfe bytes\n'; } > "$WORK/utf8.en"; { cat "$de"; echo ok; } > "$WORK/utf8.de"
rejected "invalid UTF-8" "$WORK/utf8.en" "$WORK/utf8.de" "utf8.en:201: not valid UTF-8"
head -c 3000 /dev/urandom | tr -d '\n' > "$WORK/garbage.en"; echo >> "$WORK/garbage.en"
printf '\xff' | cat - "$WORK/garbage.en" > "$WORK/garbage2.en"
rejected "binary garbage" "$WORK/garbage2.en" "$de" "garbage2.en:1: not valid UTF-8"
gzip -c "$en" | head -c 500 > "$WORK/truncated.en.gz"
rejected "truncated gzip" "$WORK/truncated.en.gz" "$de" "truncated.en.gz: truncated gzip file"
: > "$WORK/empty.en"
rejected "empty corpus" "$WORK/empty.en" "$WORK/empty.en" "empty.en: no sentences"
head -n 150 "$de" > "$WORK/short.de"
rejected "mismatched line counts" "$en" "$WORK/short.de" "short.de"

finish
