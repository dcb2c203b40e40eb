#!/usr/bin/env bash
# Batch-1 decoding with and without the step team (runtime/step_team.h), paired in one process
# (bench/step_team_bench.cpp): milliseconds per sentence of each and their ratio, float32, int8
# (`--quantize int8`) and, where the CPU computes it natively, bfloat16; and whether any line's
# translation differs (it must not). Each through `tfm translate`'s path and through a stream, as
# `tfm serve` decodes a lone request. Compare figures from one machine only.
#   bench/step_team.sh BUILD_DIR MODEL SOURCE [LINES] [THREADS] [PASSES]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR MODEL SOURCE [LINES] [THREADS] [PASSES]}
model=${2:?model file}; source=${3:?source text}; lines=${4:-100}; threads=${5:-2}; passes=${6:-3}
cmake --build "$build" --target tfm-step-team-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" \
  "| bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo native || echo no)"
dtypes=(float32 int8)
grep -qw avx512_bf16 /proc/cpuinfo && dtypes+=(bfloat16)
for path in translate stream; do
  for dtype in "${dtypes[@]}"; do
    "$build/tfm-step-team-bench" "$model" "$source" "$lines" "$dtype" "$threads" "$passes" "$path"
  done
done
