#!/usr/bin/env bash
# tfm's footprint on this machine (issue 12), in one run:
#   - `tfm --version`: peak resident memory and wall time (median of 5), i.e. what starting tfm costs;
#   - `tfm translate` of test_2016_flickr (1000 sentences, beam 4): peak resident memory and
#     sentences/s for float32, bfloat16 and int8;
#   - the LibTorch install: size of the venv that scripts/bootstrap made, and which shared libraries
#     a CPU run maps;
#   - with --install: a fresh `scripts/bootstrap` into a temporary TFM_HOME, CPU-only and full
#     (downloads several GB for the full one), size and wall time of each.
#   bench/footprint.sh TFM MODEL [--install]
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL [--install]}
model=${2:?model file}
install=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
tfm_home=${TFM_HOME:-$HOME/.cache/tfm}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/test.en"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | paste -sd ' ' | sed 's/^/versions: /'

echo
echo "== start-up: tfm --version (median of 5)"
for _ in 1 2 3 4 5; do
  /usr/bin/time -f '%M %e' -o "$out/t" "$tfm" --version > /dev/null
  cat "$out/t"
done | sort -n -k2 | sed -n 3p | awk '{printf "peak RSS %.0f MiB, wall %.2f s\n", $1 / 1024, $2}'
# Which libraries a CPU run maps (a GPU library here is a footprint bug).
"$tfm" translate --help > /dev/null
echo "shared libraries mapped by a CPU run: $(LD_DEBUG=libs "$tfm" --version 2>&1 >/dev/null |
  grep -oE 'calling init: [^ ]+' | awk '{print $3}' | xargs -n1 basename | sort -u | paste -sd ' ')"

echo
echo "== tfm translate: $model, test_2016_flickr.en ($(wc -l < "$out/test.en") lines), beam 4"
printf '%-16s %12s %10s\n' precision sentences/s peak_MiB
for variant in "float32:--dtype float32" "float32-mt1000:--dtype float32 --max-tokens 1000" \
               "bfloat16:--dtype bfloat16" "int8:--dtype float32 --quantize int8"; do
  name=${variant%%:*}
  # shellcheck disable=SC2086
  /usr/bin/time -f '%M' -o "$out/rss" "$tfm" translate --model "$model" ${variant#*:} \
    < "$out/test.en" > "$out/hyp.$name" 2> "$out/log.$name"
  speed=$(grep -oE '[0-9.]+ sentences/s' "$out/log.$name" | cut -d' ' -f1)
  printf '%-16s %12s %10d\n' "$name" "$speed" $(( $(cat "$out/rss") / 1024 ))
done

echo
echo "== LibTorch install ($tfm_home/venv): $(cat "$tfm_home/venv/.tfm-torch-version" 2>/dev/null || echo unknown)"
du -sh "$tfm_home/venv" | awk '{print "venv: " $1}'
site=$(echo "$tfm_home"/venv/lib/python3*/site-packages)
du -sh "$site/torch" "$site/nvidia" 2>/dev/null | awk '{n=split($2, p, "/"); print p[n] ": " $1}'

if [ "$install" = --install ]; then
  for variant in cpu full; do
    echo
    echo "== fresh scripts/bootstrap, TFM_TORCH_VARIANT=$variant (no pip cache)"
    home="$out/home-$variant"
    start=$(date +%s)
    TFM_HOME="$home" TFM_TORCH_VARIANT=$variant PIP_NO_CACHE_DIR=1 "$here/../scripts/bootstrap" 2> "$out/bootstrap.$variant"
    echo "wall: $(( $(date +%s) - start )) s, venv: $(du -sh "$home/venv" | cut -f1)"
    rm -rf "$home"
  done
fi
