#!/usr/bin/env bash
# `tfm prepare` from the command line: writes a dataset directory, reports cleaning, and each bad
# input gives its one-line error with the documented exit code.
source "$(dirname "$0")/lib.sh"

for i in $(seq 1 300); do
  echo "A man rides bike number $i over the street." >> "$WORK/train.en"
  echo "Ein Mann fährt Fahrrad Nummer $i über die Straße." >> "$WORK/train.de"
done
printf '\n' >> "$WORK/train.en"                       # an empty source side
printf 'Ein leerer Satz.\n' >> "$WORK/train.de"
gzip -k "$WORK/train.de"
head -20 "$WORK/train.en" > "$WORK/valid.en"
head -20 "$WORK/train.de" > "$WORK/valid.de"

run "$TFM" prepare --train-src "$WORK/train.en" --train-tgt "$WORK/train.de.gz" \
    --valid-src "$WORK/valid.en" --valid-tgt "$WORK/valid.de" --vocab-size 100 --out "$WORK/prepared"
expect_code 0 "prepare"
[ -z "$out" ] || fail "prepare printed to stdout: $out"
for file in spm.model train.bin valid.bin; do [ -s "$WORK/prepared/$file" ] || fail "prepare wrote no $file"; done
expect_contains "$err" "301 pairs read, 300 kept; dropped: 1 with an empty side" "cleaning is reported"
expect_contains "$err" "padding efficiency" "padding efficiency is reported"
ls "$WORK/prepared" | grep -q tmp && fail "temporary files left in the output: $(ls "$WORK/prepared")"

# The same corpus as one TSV file, with the model just trained.
paste "$WORK/train.en" "$WORK/train.de" > "$WORK/train.tsv"
run "$TFM" prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/from-tsv"
expect_code 0 "prepare --train-tsv"
cmp -s "$WORK/prepared/train.bin" "$WORK/from-tsv/train.bin" || fail "TSV and two files give different datasets"
[ -e "$WORK/from-tsv/valid.bin" ] && fail "valid.bin written without a validation corpus"

# Cleaning flags: with --max-len 5 every sentence (more than 5 subwords) is dropped.
run "$TFM" --log-level error prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/none" --max-len 5
expect_code 3 "everything cleaned away"
expect_one_line_error "everything cleaned away"
expect_contains "$err" "no pair left after cleaning" "empty result names the cause"

# Bad inputs: each is one line on stderr, naming the file (and line).
head -299 "$WORK/train.de" > "$WORK/short.de"
run "$TFM" prepare --train-src "$WORK/train.en" --train-tgt "$WORK/short.de" --spm "$WORK/prepared/spm.model" --out "$WORK/x"
expect_code 3 "mismatched line counts"
expect_one_line_error "mismatched line counts"
expect_contains "$err" "$WORK/train.en has 301 lines but $WORK/short.de has 299" "mismatch names files and counts"

cp "$WORK/train.de" "$WORK/latin1.de"
printf 'Stra\xdfe\n' >> "$WORK/latin1.de"
cp "$WORK/train.en" "$WORK/plus1.en"
echo "Street" >> "$WORK/plus1.en"
run "$TFM" prepare --train-src "$WORK/plus1.en" --train-tgt "$WORK/latin1.de" --spm "$WORK/prepared/spm.model" --out "$WORK/x"
expect_code 3 "invalid UTF-8"
expect_one_line_error "invalid UTF-8"
expect_contains "$err" "$WORK/latin1.de:302: not valid UTF-8" "invalid UTF-8 names file and line"

seq 1 20000 | gzip > "$WORK/full.gz"
head -c 20000 "$WORK/full.gz" > "$WORK/cut.de.gz"
seq 1 20000 > "$WORK/full.en"
run "$TFM" prepare --train-src "$WORK/full.en" --train-tgt "$WORK/cut.de.gz" --spm "$WORK/prepared/spm.model" --out "$WORK/x"
expect_code 3 "truncated gzip"
expect_one_line_error "truncated gzip"
expect_contains "$err" "$WORK/cut.de.gz: truncated gzip file" "truncated gzip names the file"

run "$TFM" prepare --train-src "$WORK/missing.en" --train-tgt "$WORK/train.de" --spm "$WORK/prepared/spm.model" --out "$WORK/x"
expect_code 3 "missing corpus"
expect_one_line_error "missing corpus"
expect_contains "$err" "$WORK/missing.en" "missing corpus names the file"

# Usage errors (exit code 2), found before any work is done.
run "$TFM" prepare --train-src "$WORK/train.en" --out "$WORK/x"
expect_code 2 "--train-src without --train-tgt"
expect_one_line_error "--train-src without --train-tgt"
run "$TFM" prepare --train-src a --train-tgt b --spm "$WORK/prepared/spm.model" --vocab-size 100 --out "$WORK/x"
expect_code 2 "--spm with --vocab-size"
expect_one_line_error "--spm with --vocab-size"
run "$TFM" prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/x" --max-len-ratio 0.5
expect_code 2 "bad --max-len-ratio"
expect_contains "$err" "--max-len-ratio" "bad --max-len-ratio names the flag"
run "$TFM" prepare --train-tsv "$WORK/train.tsv" --out "$WORK/x" --tokenizer-sample -1
expect_code 2 "bad --tokenizer-sample"
expect_one_line_error "bad --tokenizer-sample"
expect_contains "$err" "--tokenizer-sample" "bad --tokenizer-sample names the flag"

# A directory another tfm prepare is writing is refused (flock(1) holds its lock here, as a
# running preparation would): two would mix one's tokenizer with the other's shards.
if command -v flock > /dev/null; then
  mkdir -p "$WORK/busy"
  run flock "$WORK/busy/.lock" "$TFM" prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" \
    --out "$WORK/busy"
  expect_code 3 "prepare into a directory in use"
  expect_contains "$err" "--out $WORK/busy is in use by another tfm prepare" "prepare into a directory in use"
  [ -e "$WORK/busy/train.bin" ] && fail "prepare wrote into a directory in use"
  run "$TFM" prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/busy"
  expect_code 0 "prepare into the directory once it is free"
fi

# The dataset file starts with its magic (loading corrupt files is covered by dataset_file_test).
[ "$(head -c 7 "$WORK/prepared/train.bin")" = "TFMDATA" ] || fail "train.bin does not start with its magic"

# Shards: the same corpus in files of at most 4 KB, then two prepared directories trained on as
# one set (DIR1:DIR2), and a damaged shard named by training.
run "$TFM" prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/sharded" --shard-size 4k
expect_code 0 "prepare --shard-size 4k"
[ -e "$WORK/sharded/train.bin" ] && fail "train.bin written beside shards"
shards=$(ls "$WORK/sharded" | grep -c '^train\.[0-9][0-9][0-9]\.bin$')
[ "$shards" -ge 2 ] || fail "--shard-size 4k wrote $shards shards: $(ls "$WORK/sharded")"
for shard in "$WORK"/sharded/train.*.bin; do
  [ "$(stat -c %s "$shard")" -le 4096 ] || fail "$shard is larger than --shard-size 4k"
done
expect_contains "$err" "300 pairs" "the shards hold every pair"
run "$TFM" --log-level warn prepare --train-tsv "$WORK/train.tsv" --spm "$WORK/prepared/spm.model" --out "$WORK/sharded" --shard-size 0
expect_code 2 "--shard-size 0"
expect_contains "$err" "--shard-size" "a bad --shard-size names the flag"

train_on() {  # DATA SAVE_DIR: two updates of a tiny model
  run "$TFM" --threads 1 train --train-src "$1" --save-dir "$2" --preset tiny --dtype float32 --max-updates 2 \
      --max-tokens 256 --average-last 0
}
train_on "$WORK/sharded:$WORK/prepared" "$WORK/run-two-dirs"
expect_code 0 "train on two prepared directories"
expect_contains "$err" "600 training pairs" "both directories' pairs are trained on"

for shard in "$WORK"/sharded/train.*.bin; do  # every shard damaged: the first batch meets one
  printf 'XXXX' | dd of="$shard" bs=1 seek=70 conv=notrunc status=none
done
train_on "$WORK/sharded" "$WORK/run-damaged"
[ "$code" = 0 ] && fail "training on damaged shards succeeded"
expect_contains "$err" "corrupt dataset file (checksum mismatch)" "a damaged shard is found by its checksum"
expect_contains "$err" "$WORK/sharded/train." "the damaged shard is named"

finish
