#!/usr/bin/env bash
# `tfm serve` under load beside `tfm translate` on the same lines, in one run on this machine:
#   - file mode: `tfm translate` on test_2016_flickr (1000 lines): sentences/s and peak RSS;
#   - batch-1 latency: 100 lines one at a time through `tfm translate --buffer-size 1` and through
#     the server from one client, in turns (bench/serve_latency.py), back to back and 50 ms apart;
#   - the server, one sentence per request (bench/serve_load.py, loopback only) at 1, 8, 32 and
#     128 concurrent clients for SECONDS each: sentences/s, p50/p99 latency, statuses, errors, and
#     the server's peak RSS; then 128 clients against a server with a small queue
#     (--max-queue-sentences 64): every request answered 200 or 503 within its timeout;
#   - a soak: 32 clients for SOAK seconds, the server's RSS sampled every 10 s.
# The load generator shares the machine's cores with the server: its own CPU is part of the figures.
#   bench/serve.sh TFM MODEL [SECONDS=30] [SOAK=300]
#   DTYPE=auto|float32|bfloat16 (default auto); TFM_FLAGS: more decoding flags, each as --flag=value
#   (default "--lenpen=0.6"); SERVE_FLAGS: flags for the server alone (e.g. "--workers 1").
set -euo pipefail
tfm=${1:?usage: $0 TFM MODEL [SECONDS] [SOAK]}
model=${2:?model file}
seconds=${3:-30}
soak=${4:-300}
here=$(cd "$(dirname "$0")" && pwd)
data=${TFM_DATA_DIR:-$here/../../shared}/data/multi30k
dtype=${DTYPE:-auto}
read -r -a extra <<< "${TFM_FLAGS:---lenpen=0.6}"
flags=(--dtype "$dtype" "${extra[@]}")
read -r -a serve_flags <<< "${SERVE_FLAGS:-}"
out=$(mktemp -d)
server=""
cleanup() { [ -z "$server" ] || kill "$server" 2> /dev/null || true; rm -rf "$out"; }
trap cleanup EXIT
zcat "$data/test_2016_flickr.en.gz" > "$out/test.en"

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
echo "model: $model | flags: ${flags[*]} | server: ${serve_flags[*]:-(defaults)} | lines: test_2016_flickr.en ($(wc -l < "$out/test.en"))"

echo
echo "== file mode: tfm translate"
/usr/bin/time -f '%M' -o "$out/translate.rss" "$tfm" translate --model "$model" "${flags[@]}" \
  < "$out/test.en" > "$out/file.de" 2> "$out/translate.log"
file_rate=$(grep -oE '[0-9.]+ sentences/s' "$out/translate.log" | grep -oE '^[0-9.]+')
file_rss=$(( $(cat "$out/translate.rss") / 1024 ))
echo "tfm translate: $file_rate sentences/s, peak RSS $file_rss MiB"

# start_server FLAGS...: a server on a free port; sets $server (pid) and $port.
start_server() {
  "$tfm" serve --model "$model" --port 0 "${flags[@]}" "${serve_flags[@]}" "$@" 2> "$out/serve.log" &
  server=$!
  for _ in $(seq 1 6000); do
    grep -q 'listening on' "$out/serve.log" && break
    kill -0 "$server" || { cat "$out/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$out/serve.log" | grep -o '[0-9]*$')
}
stop_server() { kill -TERM "$server"; wait "$server" || true; server=""; }
peak_rss() { echo $(( $(grep VmHWM "/proc/$server/status" | grep -oE '[0-9]+') / 1024 )); }

echo
echo "== batch-1 latency: 100 lines one at a time through tfm translate --buffer-size 1 and through"
echo "   the server from one client, in turns (bench/serve_latency.py): back to back, five rounds, and"
echo "   50 ms after the previous answer, three rounds"
start_server
tfm_flags=$(printf -- '--tfm-flag=%s ' "${flags[@]}")
for pause in 0 50; do
  python3 "$here/serve_latency.py" "$tfm" "$model" "$out/test.en" "$port" --pause-ms "$pause" \
    --rounds "$([ "$pause" = 0 ] && echo 5 || echo 3)" $tfm_flags | python3 -c '
import json, sys
r = json.load(sys.stdin)
pause, translate, serve, ratio = r["pause_ms"], r["translate_p50_ms"], r["serve_p50_ms"], r["ratio"]
print(f"pause {pause:g} ms: tfm translate p50 {translate} ms, tfm serve p50 {serve} ms; median ratio {ratio:.2f}x")'
done
stop_server

echo
echo "== tfm serve: one sentence per request, ${seconds} s per level"
printf '%-8s %12s %9s %9s %-24s %7s %10s\n' clients sentences/s p50_ms p99_ms statuses errors peak_MiB
start_server
for clients in 1 8 32 128; do
  python3 "$here/serve_load.py" "$port" "$out/test.en" "$clients" "$seconds" > "$out/load.json"
  python3 - "$out/load.json" "$(peak_rss)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['clients']:<8} {r['sentences_per_s']:12.1f} {r['p50_ms']:9.1f} {r['p99_ms']:9.1f} "
      f"{json.dumps(r['statuses']):<24} {r['errors']:7} {sys.argv[2]:>10}")
PY
done
stop_server

echo
echo "== 128 clients, --max-queue-sentences 64, --request-timeout 10: every request 200 or 503 within 10 s"
start_server --max-queue-sentences 64 --max-sentences-per-request 8 --request-timeout 10
python3 "$here/serve_load.py" "$port" "$out/test.en" 128 "$seconds" --timeout 10
stop_server

echo
echo "== soak: 32 clients for $soak s; the server's RSS (MiB) every 10 s"
start_server
python3 "$here/serve_load.py" "$port" "$out/test.en" 32 "$soak" > "$out/soak.json" &
load=$!
samples=()
while kill -0 "$load" 2> /dev/null; do
  samples+=("$(( $(grep VmRSS "/proc/$server/status" | grep -oE '[0-9]+') / 1024 ))")
  sleep 10
done
cat "$out/soak.json"
echo "RSS samples: ${samples[*]}"
echo "RSS after the first minute: min $(printf '%s\n' "${samples[@]:6}" | sort -n | head -1), max $(printf '%s\n' "${samples[@]:6}" | sort -n | tail -1); last sample ${samples[-1]}; peak $(peak_rss)"
stop_server
