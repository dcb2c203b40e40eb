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
common=(--threads 1 train --train-src "$WORK/prepared" --preset tiny --d-model 32 --d-ff 64 --max-tokens 512
        --keep-last 0 --log-interval 1 --save-interval-updates 1)
train() { "$TFM" "${common[@]}" "$@"; }
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
  (exec "$TFM" "${common[@]}" "$@" > /dev/null 2> "$log") &
}
loads() { echo "three cats" | "$TFM" translate --model "$1" > /dev/null 2> "$WORK/load.err"; }

updates=80
train --save-dir "$WORK/whole" --max-updates "$updates" > /dev/null 2> "$WORK/whole.err" ||
  fail "uninterrupted run: $(tail -2 "$WORK/whole.err")"

# Five kills at points of progress, not after delays: each at an update drawn at random (from a
# seed printed here) ahead of the previous one, so every kill lands while the run is training
# (and, since it saves every update, usually while it writes a checkpoint), however fast the machine.
seed=${TFM_TEST_SEED:-$(( $(date +%s) % 100000 ))}
echo "kill points drawn with TFM_TEST_SEED=$seed" >&2
mapfile -t kill_points < <(python3 -c '
import random, sys
seed, last = int(sys.argv[1]), int(sys.argv[2])
print("\n".join(map(str, sorted(random.Random(seed).sample(range(1, last + 1), 5)))))' "$seed" $((updates - 3)))
kills=0
for point in "${kill_points[@]}"; do
  if python3 "$(dirname "$0")/kill_at_update.py" --update "$point" --log "$WORK/killed.err" -- \
      "$TFM" "${common[@]}" --save-dir "$WORK/killed" --max-updates "$updates" > /dev/null 2> "$WORK/kill.err"; then
    kills=$((kills + 1))
  else
    fail "could not test the kill at update $point (seed $seed): $(cat "$WORK/kill.err"); log: $(tail -2 "$WORK/killed.err")"
  fi
  [ -e "$WORK/killed/checkpoint_last.pt" ] || continue
  loads "$WORK/killed/checkpoint_last.pt" || fail "after kill -9 at update $point: $(cat "$WORK/load.err")"
done
[ "$kills" = 5 ] || fail "only $kills of 5 runs were killed while training (seed $seed)"
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
wait_for_line "$WORK/busy.err" "train |" "$holder" || fail "the holder never trained: $(tail -2 "$WORK/busy.err")"
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
(trap '' XFSZ; ulimit -f $((size / 2048)); exec "$TFM" "${common[@]}" --save-dir "$WORK/whole" \
  --max-updates $((updates + 2))) > /dev/null 2> "$WORK/full.err"
code=$?
[ "$code" != 0 ] || fail "saving onto a full disk exited 0"
grep -q "checkpoint_last.pt: cannot write" "$WORK/full.err" || fail "full disk: $(tail -1 "$WORK/full.err")"
loads "$WORK/whole/checkpoint_last.pt" || fail "full disk damaged checkpoint_last.pt: $(cat "$WORK/load.err")"
[ "$(weights_checksums "$WORK/whole/checkpoint_last.pt")" = "$before" ] || fail "full disk changed checkpoint_last.pt"

finish
