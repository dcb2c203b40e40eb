#!/usr/bin/env bash
# A decoding step's output layer with and without a shortlist (bench/shortlist_rows_bench.cpp): the
# full product over the vocabulary against the shortlist's scores over each sentence's candidates,
# float32 and (where native) bfloat16, on all threads and on one. Compare figures from one machine only.
#   bench/shortlist_rows.sh BUILD_DIR [SENTENCES] [BEAM] [VOCABULARY] [D_MODEL] [CANDIDATES]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SENTENCES] [BEAM] [VOCABULARY] [D_MODEL] [CANDIDATES]}
shift
cmake --build "$build" --target tfm-shortlist-rows-bench > /dev/null
echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" \
  "| bf16: $(grep -qw avx512_bf16 /proc/cpuinfo && echo native || echo no)" \
  "| AMX: $(grep -qw amx_bf16 /proc/cpuinfo && echo yes || echo no)"
"$build/tfm-shortlist-rows-bench" "$@"
