#!/usr/bin/env bash
# Beam search's work on each step's logits (bench/logit_rows_bench.cpp): log-softmax normalizers
# and the top-k, float32 and bfloat16, at all threads and at one.
#   bench/logit_rows.sh BUILD_DIR [SENTENCES] [VOCABULARY]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SENTENCES] [VOCABULARY]}
sentences=${2:-64}; vocabulary=${3:-8000}
cmake --build "$build" --target tfm-logit-rows-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for threads in "$(nproc)" 1; do
  OMP_NUM_THREADS=$threads "$build/tfm-logit-rows-bench" "$sentences" "$vocabulary"
done
