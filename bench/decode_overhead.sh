#!/usr/bin/env bash
# Batch-1 decoding in process on one thread (bench/decode_overhead_bench.cpp): milliseconds per
# sentence and LibTorch op calls per output subword, float32, int8 (`--quantize int8`) and, where
# the CPU computes it natively, bfloat16. Steadier than bench/latency.py's pipe (no second thread, no process start),
# so that a change to the per-step overhead shows; compare figures from one machine only.
#   bench/decode_overhead.sh BUILD_DIR MODEL SOURCE [LINES]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR MODEL SOURCE [LINES]}
model=${2:?model file}; source=${3:?source text}; lines=${4:-100}
cmake --build "$build" --target tfm-decode-overhead-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" \
  "| bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo native || echo no)"
dtypes=(float32 int8)
grep -qw avx512_bf16 /proc/cpuinfo && dtypes+=(bfloat16)
for dtype in "${dtypes[@]}"; do
  "$build/tfm-decode-overhead-bench" "$model" "$source" "$lines" "$dtype"
done
