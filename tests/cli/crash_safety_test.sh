#!/usr/bin/env bash
# Training survives what shared machines do to it: kill -9 at random moments (often during a
# checkpoint write, which happens every update here) leaves an intact checkpoint_last.pt each
# time, and the run resumed after every kill ends at exactly the parameters of an uninterrupted
# run; a full disk while saving is an error that keeps the previous checkpoint; a second
# `tfm train` on a directory in use is refused.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 200 --valid 10 --test 10
"$TFM" prepare --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" \
  --valid-src "$WORK/data/valid.en" --valid-tgt "$WORK/data/valid.de" --vocab-size 100 \
  --out "$WORK/prepared" 2> "$WORK/prepare.err" || { fail "prepare: $(cat "$WORK/prepare.err")"; finish; }
# One thread: the same updates give the same bits. Dropout stays on (its random stream must resume).
train() {
  "$TFM" --threads 1 train --train-src "$WORK/prepared" --preset tiny --d-model 32 --d-ff 64 \
    --max-tokens 512 --keep-last 0 --log-interval 1 --save-interval-updates 1 "$@"
}
# The per-tensor CRC-32 table a model file stores: equal tables mean bit-identical weights.
weights_checksums() {
  python3 - "$1" <<'PY'
import re, sys, zipfile
archive = zipfile.ZipFile(sys.argv[1])
pickles = b"".join(archive.read(name) for name in archive.namelist() if name.endswith("data.pkl"))
match = re.search(rb'\{"[a-z_0-9]+\.[a-z_.0-9]+":-?\d+[^}]*\}', pickles)
print(match.group(0).decode() if match else "no checksums")
PY
}
# In the background, as tfm itself (exec), so that $! is the process to kill.
train_in_background() {
  local log=$1; shift
  (exec "$TFM" --threads 1 train --train-src "$WORK/prepared" --preset tiny --d-model 32 --d-ff 64 \
    --max-tokens 512 --keep-last 0 --log-interval 1 --save-interval-updates 1 "$@" > /dev/null 2> "$log") &
}
loads() { echo "three cats" | "$TFM" translate --model "$1" > /dev/null 2> "$WORK/load.err"; }

updates=80
train --save-dir "$WORK/whole" --max-updates "$updates" > /dev/null 2> "$WORK/whole.err" ||
  fail "uninterrupted run: $(tail -2 "$WORK/whole.err")"

kills=0
for delay in 0.8 1.1 1.4 0.9 1.2; do
  train_in_background "$WORK/killed.err" --save-dir "$WORK/killed" --max-updates "$updates"
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2> /dev/null && kills=$((kills + 1))
  wait "$pid" 2> /dev/null
  if [ -e "$WORK/killed/checkpoint_last.pt" ]; then
    loads "$WORK/killed/checkpoint_last.pt" || fail "after kill -9 at ${delay}s: $(cat "$WORK/load.err")"
  fi
done
[ "$kills" -ge 3 ] || fail "only $kills of 5 runs were still going when killed (the test needs slower runs)"
train --save-dir "$WORK/killed" --max-updates "$updates" > /dev/null 2> "$WORK/resumed.err" ||
  fail "resume after the kills: $(tail -2 "$WORK/resumed.err")"
grep -q "stopped: .* after $updates updates" "$WORK/resumed.err" || fail "resumed run did not end at update $updates"
whole=$(weights_checksums "$WORK/whole/checkpoint_last.pt")
killed=$(weights_checksums "$WORK/killed/checkpoint_last.pt")
[ "$whole" != "no checksums" ] || fail "no checksum table found in the model file"
[ "$whole" = "$killed" ] || fail "killed $kills times and resumed, the weights differ from an uninterrupted run"

# A second run on a directory in use is refused; once the holder is gone (even by kill -9) it is free.
train_in_background "$WORK/busy.err" --save-dir "$WORK/busy" --max-updates 100000
holder=$!
for _ in $(seq 1 300); do grep -q "train |" "$WORK/busy.err" 2>/dev/null && break; sleep 0.1; done
run train --save-dir "$WORK/busy" --max-updates 1
[ "$code" != 0 ] || fail "a second tfm train on a directory in use was not refused"
expect_contains "$err" "is in use by another tfm train (pid $holder)" "the refusal names the holder"
kill -9 "$holder"; wait "$holder" 2> /dev/null
run train --save-dir "$WORK/busy" --max-updates 1
expect_code 0 "the directory is free once its holder died"

# Disk full while saving (a file size limit; SIGXFSZ ignored so that writes fail with EFBIG):
# an error naming the file, and checkpoint_last.pt as it was.
before=$(weights_checksums "$WORK/whole/checkpoint_last.pt")
size=$(stat -c %s "$WORK/whole/checkpoint_last.pt")
(trap '' XFSZ; ulimit -f $((size / 2048)); exec "$TFM" --threads 1 train --train-src "$WORK/prepared" \
  --preset tiny --d-model 32 --d-ff 64 --max-tokens 512 --keep-last 0 --save-interval-updates 1 \
  --save-dir "$WORK/whole" --max-updates $((updates + 2))) > /dev/null 2> "$WORK/full.err"
code=$?
[ "$code" != 0 ] || fail "saving onto a full disk exited 0"
grep -q "checkpoint_last.pt: cannot write" "$WORK/full.err" || fail "full disk: $(tail -1 "$WORK/full.err")"
loads "$WORK/whole/checkpoint_last.pt" || fail "full disk damaged checkpoint_last.pt: $(cat "$WORK/load.err")"
[ "$(weights_checksums "$WORK/whole/checkpoint_last.pt")" = "$before" ] || fail "full disk changed checkpoint_last.pt"

finish
