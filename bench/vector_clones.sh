#!/usr/bin/env bash
# The vectorized kernels (step attention, log normalizers, top-k) as each CPU class runs them: tfm
# compiles them for AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and the SSE2 baseline, and the loader
# picks the widest the CPU has. Here each version is built alone (TFM_ONE_CLONE,
# runtime/vector_clones.h) and run on this machine, one thread, so that a version that compiles
# badly shows even on a CPU that would never pick it. A version the CPU cannot run is skipped.
#   bench/vector_clones.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
flags=$(grep -m1 '^flags' /proc/cpuinfo)
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for clone in v4 v3 baseline; do
  case $clone in
    v4) [[ $flags == *avx512f* && $flags == *avx512bw* && $flags == *avx512vl* ]] || { echo "== $clone: skipped (no AVX-512)"; continue; } ;;
    v3) [[ $flags == *avx2* && $flags == *fma* ]] || { echo "== $clone: skipped (no AVX2)"; continue; } ;;
  esac
  cmake --build "$build" --target "tfm-step-attention-bench-$clone" "tfm-logit-rows-bench-$clone" > /dev/null
  echo "== $clone"
  OMP_NUM_THREADS=1 "$build/tfm-step-attention-bench-$clone" 10 20 500 | tail -2 | sed 's/^/  in cache (40 rows): /'
  OMP_NUM_THREADS=1 "$build/tfm-step-attention-bench-$clone" 300 20 20 | tail -2 | sed 's/^/  1,200 rows:         /'
  OMP_NUM_THREADS=1 "$build/tfm-logit-rows-bench-$clone" 64 8000 | tail -2 | sed 's/^/  256 x 8000 logits:  /'
done
