#!/usr/bin/env bash
# Damaged, truncated and foreign files where tfm expects its own: a prepared dataset, its
# SentencePiece model, a model file or a checkpoint. Each is a one-line error naming the file,
# exit 3, never a crash, an internal error or a silently wrong load.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 300 --valid 10 --test 10
run "$TFM" prepare --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --vocab-size 120 \
  --out "$WORK/prepared"
expect_code 0 "prepare"
train_on() {  # train_on DATA_DIR SAVE_DIR [UPDATES]: a few updates of a very small model
  "$TFM" --log-level error train --train-src "$1" --save-dir "$2" --preset tiny --d-model 32 \
    --d-ff 64 --max-tokens 512 --max-updates "${3:-3}"
}
run train_on "$WORK/prepared" "$WORK/model"
expect_code 0 "train on the prepared directory"
model="$WORK/model/checkpoint_last.pt"
echo "I see two cats." > "$WORK/in.txt"

# damaged NAME FILE EXPECTED CMD...: CMD must fail with exit 3, one line naming FILE and saying EXPECTED.
damaged() {
  local name=$1 file=$2 expected=$3
  shift 3
  run "$@"
  expect_code 3 "$name"
  expect_one_line_error "$name"
  expect_contains "$err" "$file" "$name: the error names the file"
  expect_contains "$err" "$expected" "$name"
}
copy_prepared() { rm -rf "$WORK/p2"; cp -r "$WORK/prepared" "$WORK/p2"; }
size_of() { stat -c %s "$1"; }
overwrite_at() {  # overwrite_at FILE OFFSET: the issue's reproduction, 8 bytes of 0xff at OFFSET
  printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
overwrite_middle() { overwrite_at "$1" $(($(size_of "$1") / 2)); }
# A model file is a zip archive whose records are padded to 64 bytes; the padding is read by no
# one and covered by no checksum, so the middle of the file may fall on it. Damage the middle of
# the largest record's data instead, which the checksums must catch.
overwrite_record_middle() {
  overwrite_at "$1" "$(python3 - "$1" <<'PY'
import struct, sys, zipfile
path = sys.argv[1]
record = max(zipfile.ZipFile(path).infolist(), key=lambda r: r.file_size)
with open(path, "rb") as f:
    f.seek(record.header_offset + 26)
    name_bytes, extra_bytes = struct.unpack("<HH", f.read(4))
print(record.header_offset + 30 + name_bytes + extra_bytes + record.file_size // 2)
PY
)"
}

# Prepared dataset: a flipped byte, a cut file, another file in its place.
copy_prepared
overwrite_middle "$WORK/p2/train.bin"
damaged "bit-flipped train.bin" "$WORK/p2/train.bin" "corrupt dataset file" train_on "$WORK/p2" "$WORK/m2"
copy_prepared
head -c $(($(size_of "$WORK/prepared/train.bin") - 7)) "$WORK/prepared/train.bin" > "$WORK/p2/train.bin"
damaged "truncated train.bin" "$WORK/p2/train.bin" "truncated dataset file" train_on "$WORK/p2" "$WORK/m2"
copy_prepared
cp "$WORK/data/train.en" "$WORK/p2/train.bin"
damaged "foreign train.bin" "$WORK/p2/train.bin" "not a tfm dataset file" train_on "$WORK/p2" "$WORK/m2"

# Its SentencePiece model: garbage, or a real model with another vocabulary size.
copy_prepared
echo "not a sentencepiece model" > "$WORK/p2/spm.model"
damaged "garbage spm.model" "$WORK/p2/spm.model" "" train_on "$WORK/p2" "$WORK/m2"
run "$TFM" tokenizer train --input "$WORK/data/train.en" --output "$WORK/other.model" --vocab-size 80
expect_code 0 "tokenizer train"
copy_prepared
cp "$WORK/other.model" "$WORK/p2/spm.model"
damaged "spm.model of another vocabulary size" "$WORK/p2" "vocabulary" train_on "$WORK/p2" "$WORK/m2"

# Model files and checkpoints, for translation and for resuming.
cp "$model" "$WORK/flipped.pt"
overwrite_record_middle "$WORK/flipped.pt"
damaged "bit-flipped model" "$WORK/flipped.pt" "fails its checksum" "$TFM" translate --model "$WORK/flipped.pt" --input "$WORK/in.txt"
for keep in 0 100 $(($(size_of "$model") / 2)) $(($(size_of "$model") - 10)); do
  head -c "$keep" "$model" > "$WORK/cut.pt"
  damaged "model cut to $keep bytes" "$WORK/cut.pt" "" "$TFM" translate --model "$WORK/cut.pt" --input "$WORK/in.txt"
done
gzip -c "$WORK/data/train.en" > "$WORK/foreign.pt"
damaged "a gzip file as model" "$WORK/foreign.pt" "not a model file" \
  "$TFM" translate --model "$WORK/foreign.pt" --input "$WORK/in.txt"
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "w").writestr("archive/data.pkl", b"\x80\x02}q\x00.")' \
  "$WORK/zip.pt"
damaged "a foreign zip archive as model" "$WORK/zip.pt" "" "$TFM" translate --model "$WORK/zip.pt" --input "$WORK/in.txt"
damaged "the dataset file as model" "$WORK/prepared/train.bin" "not a model file" \
  "$TFM" translate --model "$WORK/prepared/train.bin" --input "$WORK/in.txt"
# A crafted model file, every checksum right: its pickle names memo entry 1.5 billion (LibTorch's
# unpickler would grow its memo table to 24 GB for it) or a string longer than the file.
craft() {  # craft OUT FROM TO: the model with FROM replaced by TO once in data.pkl, rezipped
  python3 - "$model" "$1" "$2" "$3" <<'PY'
import sys, zipfile
source, out, old, new = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
with zipfile.ZipFile(source) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
    for item in zin.infolist():
        data = zin.read(item)
        if item.filename.endswith("data.pkl"):
            assert old in data, "pattern not in data.pkl"
            data = data.replace(old, new, 1)
        zout.writestr(item.filename, data)
PY
}
craft "$WORK/memo.pt" 7100 72ffffff58   # the first BINPUT 0 becomes LONG_BINPUT 1,493,172,223
damaged "a crafted pickle's memo index" "$WORK/memo.pt" "more than it can hold" \
  "$TFM" translate --model "$WORK/memo.pt" --input "$WORK/in.txt"
craft "$WORK/long.pt" 58 58ffffff7f   # a BINUNICODE of 2 GB
damaged "a crafted pickle's string length" "$WORK/long.pt" "bytes past its end" \
  "$TFM" translate --model "$WORK/long.pt" --input "$WORK/in.txt"
cp -r "$WORK/model" "$WORK/resume"
overwrite_record_middle "$WORK/resume/checkpoint_last.pt"
damaged "resuming from a bit-flipped checkpoint" "$WORK/resume/checkpoint_last.pt" "fails its checksum" \
  train_on "$WORK/prepared" "$WORK/resume" 6
finish
