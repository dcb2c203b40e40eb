#!/usr/bin/env bash
# One decoding step's attention (model/step_attention.h) at a large batch's shapes and at one that
# fits in the CPU's caches, float32 and bfloat16 keys and values, at all threads and at one.
#   bench/step_attention.sh BUILD_DIR [SENTENCES] [POSITIONS]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SENTENCES] [POSITIONS]}
sentences=${2:-300}; positions=${3:-20}
cmake --build "$build" --target tfm-step-attention-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for threads in "$(nproc)" 1; do
  for batch in "$sentences" 10; do
    OMP_NUM_THREADS=$threads "$build/tfm-step-attention-bench" "$batch" "$positions" $(( batch >= 100 ? 20 : 500 ))
  done
done
