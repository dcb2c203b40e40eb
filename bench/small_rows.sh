#!/usr/bin/env bash
# A decoding step's products at a beam's few rows (bench/small_rows_bench.cpp): microseconds a call
# and weight bytes streamed per second, each shape alone (its weight warm in cache, and copies of it
# called in turn so that it comes from memory) and a whole step's in turn (every layer's own weights,
# as a step streams them), on one thread and on all.
# At batch 1 a float32 step is bound by these bytes: beside the step, a plain read of as many bytes
# gives the memory's rate it approaches. Compare figures from one machine only.
#   bench/small_rows.sh BUILD_DIR [ROWS] [D_MODEL] [D_FF] [VOCABULARY] [LAYERS] [DEAD]
# DEAD (default 0.64): the share of the feed-forward output's inputs that are zero in every row, as a
# ReLU leaves them at a beam's 4 rows; 0 sums every input, as products did before skipping them.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [ROWS] [D_MODEL] [D_FF] [VOCABULARY] [LAYERS]}
shift
cmake --build "$build" --target tfm-small-rows-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" \
  "| bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo native || echo no)"
"$build/tfm-small-rows-bench" "$@"
