#!/usr/bin/env bash
# Data-parallel `tfm train` from the command line: the torchrun variables and flags are checked up
# front, and a rank that dies makes the other exit with a clear error within --dist-timeout,
# leaving the last checkpoint whole. (Equivalence with one process: tests/train/data_parallel_test.cpp.)
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

python3 "$root/scripts/make_numbers_corpus.py" "$WORK/data" --train 400 --valid 20 --test 20
"$TFM" prepare --train-src "$WORK/data/train.en" --train-tgt "$WORK/data/train.de" --vocab-size 120 \
  -o "$WORK/prepared" 2>/dev/null || fail "prepare"
train() {
  "$TFM" --threads 1 train --train-src "$WORK/prepared" --save-dir "$WORK/model" --preset tiny --d-model 32 \
    --d-ff 64 --max-tokens 256 --keep-last 2 --log-interval 5 "$@"
}
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Flags and variables are checked before anything starts.
run train --max-updates 1 --dist-backend mpi
expect_code 2 "unknown backend"
expect_one_line_error "unknown backend"
expect_contains "$err" "--dist-backend mpi: expected auto, gloo or nccl" "unknown backend"
run train --max-updates 1 --dist-backend nccl
expect_code 2 "nccl on the CPU"
expect_one_line_error "nccl on the CPU"
expect_contains "$err" "--dist-backend nccl runs on GPUs" "nccl on the CPU"
run env WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 LOCAL_RANK=0 "$TFM" train \
  --train-src "$WORK/prepared" --save-dir "$WORK/model" --max-updates 1
expect_code 2 "RANK missing"
expect_one_line_error "RANK missing"
expect_contains "$err" "RANK is not set" "RANK missing"

# A rank killed mid-run: the survivor fails within the timeout, naming what happened; the
# checkpoint written before is intact.
rank_args() {  # `env` becomes tfm, so $! below is tfm itself
  echo MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" WORLD_SIZE=2 RANK="$1" LOCAL_RANK="$1" LOCAL_WORLD_SIZE=2
}
args=(--threads 1 train --train-src "$WORK/prepared" --save-dir "$WORK/model" --preset tiny --d-model 32 --d-ff 64
      --max-tokens 256 --max-updates 100000 --save-interval-updates 5 --dist-timeout 20)
rank_logs() { echo "rank 0: $(tail -3 "$WORK/rank0.log") | rank 1: $(tail -3 "$WORK/rank1.log")"; }
start_ranks() {
  p=$(port)
  # shellcheck disable=SC2046  # the variables are words without spaces
  env $(rank_args 0) "$TFM" "${args[@]}" > "$WORK/rank0.log" 2>&1 & rank0=$!
  # shellcheck disable=SC2046
  env $(rank_args 1) "$TFM" "${args[@]}" > "$WORK/rank1.log" 2>&1 & rank1=$!
  # Until the first checkpoint or a rank's exit; the bound is only a safety net, far past any machine's speed.
  for _ in $(seq 1 6000); do
    [ -s "$WORK/model/checkpoint_last.pt" ] && return 0
    kill -0 "$rank0" 2>/dev/null && kill -0 "$rank1" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# The free port is picked by binding port 0 and releasing it, so another test running beside
# this one can take it before rank 0 listens: then (only then) start again on a new port.
if ! start_ranks && grep -qiE "address already in use|EADDRINUSE" "$WORK/rank0.log" "$WORK/rank1.log"; then
  kill -KILL "$rank0" "$rank1" 2>/dev/null; wait "$rank0" "$rank1" 2>/dev/null
  echo "port $p was taken by another process; starting again on a new port" >&2
  start_ranks
fi
[ -s "$WORK/model/checkpoint_last.pt" ] || fail "no checkpoint before a rank exited: $(rank_logs)"
kill -KILL "$rank1"
killed_at=$(date +%s)
wait "$rank0"; code=$?
waited=$(( $(date +%s) - killed_at ))
wait "$rank1" 2>/dev/null
[ "$code" != 0 ] || fail "rank 0 exited 0 after rank 1 was killed: $(rank_logs)"
# The bound is what the test proves (no hang past the timeout), with room for a loaded machine's exit.
[ "$waited" -le 60 ] || fail "rank 0 took $waited s to give up (--dist-timeout 20): $(rank_logs)"
grep -q "error: rank 0: .* failed (another rank exited" "$WORK/rank0.log" ||
  fail "rank 0 gave no clear error (exit code $code): $(rank_logs)"
run bash -c "echo 'I see two cats.' | '$TFM' translate --model '$WORK/model/checkpoint_last.pt'"
expect_code 0 "translate with the checkpoint left by the failed run"
finish
