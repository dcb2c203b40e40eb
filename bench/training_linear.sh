#!/usr/bin/env bash
# A bf16 training step's linear layers on one thread, as each sub-batch runs them
# (bench/training_linear_bench.cpp): forward and backward of autocast's torch::linear against
# bf16_training_linear (model/bf16_training_linear.h), and the backward's gradient layout beside a
# plain copy of as many bytes. Needs a CPU that computes bfloat16 natively; compare figures from
# one machine only.
#   bench/training_linear.sh BUILD_DIR [ROWS] [D_MODEL] [D_FF] [VOCABULARY]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [ROWS] [D_MODEL] [D_FF] [VOCABULARY]}
shift
cmake --build "$build" --target tfm-training-linear-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" \
  "| bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo native || echo no)" \
  "| AMX: $(grep -qw amx_bf16 /proc/cpuinfo && echo yes || echo no)"
"$build/tfm-training-linear-bench" "$@"
