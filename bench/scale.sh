#!/usr/bin/env bash
# How `tfm prepare` and `tfm train` scale with the corpus: Multi30k (29,000 pairs) as the
# baseline, then synthetic corpora of PAIRS pairs each (bench/synthetic_corpus.py: 1-3 Multi30k
# pairs a line, ~44 subwords per pair as in WMT14, 8000-piece vocabulary). For each corpus:
#   - prepare: wall time, peak RSS, and the sentences/s tfm reports;
#   - train, 1 process x 2 threads and 2 ranks x 1 thread (Gloo over 127.0.0.1), small preset,
#     float32, 3 updates: time from launch to the first update line, peak RSS (the kernel's, from
#     wait4), and the maxima of RssAnon/RssFile (/proc/PID/status) and of PSS (smaps_rollup)
#     sampled every 0.2 s, so memory-mapped data is told apart from copies; for 2 ranks also the
#     largest sum of both ranks' PSS at one instant, which counts pages they share once.
# The Markdown table goes to stdout as rows finish (for BENCHMARKS.md); progress to stderr.
#   bench/scale.sh [PAIRS...]        (default: 4500000 45000000; ~14 GB of disk at 45M, freed as it goes)
# Environment: TFM (binary; default: scripts/build), TFM_DATA_DIR (default: ../shared beside the
# checkout), WORK_DIR (scratch space; default /tmp if it has room and is not tmpfs, else beside
# the checkout), KEEP=1 (keep the scratch directory), PREPARE_TIMEOUT and FIRST_UPDATE_TIMEOUT
# (seconds; default 3600 and 1200: a run past them is stopped and reported as "timeout").
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
data=${TFM_DATA_DIR:-$root/../shared}/data/multi30k
prepare_timeout=${PREPARE_TIMEOUT:-3600}
first_update_timeout=${FIRST_UPDATE_TIMEOUT:-1200}
sizes=("$@")
[ "$#" -gt 0 ] || sizes=(4500000 45000000)
for n in "${sizes[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [PAIRS...]: '$n' is not a positive number of pairs" >&2; exit 2; }
done
[ -f "$data/train.en.gz" ] || { echo "no Multi30k at $data (set TFM_DATA_DIR)" >&2; exit 2; }
tfm=${TFM:-$("$root/scripts/build")}

# Bytes per synthetic pair on disk at once: ~205 of text, ~105 of train.bin (16 of offsets, 2 per
# subword), plus checkpoints and slack.
bytes_per_pair=400
largest=$(printf '%s\n' "${sizes[@]}" | sort -n | tail -1)
avail() { df -P -B1 "$1" | awk 'NR == 2 {print $4}'; }
if [ -n "${WORK_DIR:-}" ]; then
  base=$WORK_DIR
elif [ "$(stat -f -c %T /tmp)" != tmpfs ] && [ "$(avail /tmp)" -ge $((largest * bytes_per_pair)) ]; then
  base=/tmp
else
  base=$(cd "$root/.." && pwd)  # a tmpfs /tmp would hold the corpus in the memory being measured
fi
work=$(mktemp -d "$base/tfm-scale-XXXXXX")
helper=""  # the background process being waited for, stopped by the traps
cleanup() {
  if [ -n "$helper" ]; then
    kill "$helper" 2>/dev/null || true
    wait "$helper" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# in_background CMD...: runs CMD as a background job and waits for it, so that a signal reaches
# the traps at once (bash runs traps only between foreground commands) and cleanup can stop it.
in_background() {
  local status=0
  "$@" &
  helper=$!
  wait "$helper" || status=$?
  helper=""
  return "$status"
}

# measure.py TIMEOUT WATCH -- LOG CMD... [-- LOG CMD...]: starts the commands (stderr to LOG),
# samples their memory every 0.2 s until all exit, and prints one line:
#   STATUS WALL_S FIRST_UPDATE_S PSS_SUM_MAX_MIB, then per command PEAK_RSS RSS_ANON_MAX
#   RSS_FILE_MAX PSS_MAX PSS_FILE_MAX (MiB)
# STATUS is ok, timeout, exit=N or signal=N (9: likely the OOM killer). With WATCH=first-update
# the first command's LOG is watched for a progress line; TIMEOUT counts from launch to that line
# and again from it to the end (without WATCH, from launch to the end). Children are killed when
# it stops, however it stops (PR_SET_PDEATHSIG covers a SIGKILL of the helper itself).
cat > "$work/measure.py" <<'PY'
import ctypes, os, re, signal, subprocess, sys, threading, time

timeout, watch = float(sys.argv[1]), sys.argv[2] == "first-update"
specs = []
for arg in sys.argv[3:]:
    if arg == "--":
        specs.append([])
    else:
        specs[-1].append(arg)
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

def sample(pid):  # kB from /proc; a process that has exited but is not yet reaped has none
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("RssAnon", "RssFile"):
                    values[key] = int(rest.split()[0])
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Pss", "Pss_File"):
                    values[key] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return values

start = time.monotonic()
procs, ended = [], {}  # ended: index -> (seconds since start, status, peak RSS kB)
for log, *cmd in specs:
    with open(log, "wb") as err:
        procs.append(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                      preexec_fn=lambda: libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)))

def reap(i, proc):  # wait4 gives the exact peak RSS (ru_maxrss), which sampling could miss
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = proc.returncode
    ended[i] = (time.monotonic() - start, "ok" if code == 0 else f"exit={code}" if code > 0 else f"signal={-code}",
                usage.ru_maxrss)

reapers = [threading.Thread(target=reap, args=(i, p), daemon=True) for i, p in enumerate(procs)]
for t in reapers:
    t.start()
peak = [dict.fromkeys(("RssAnon", "RssFile", "Pss", "Pss_File"), 0) for _ in procs]
pss_sum_max, first, status = 0, None, None
update_line = re.compile(rb"\| update [0-9]+ \|")
deadline = start + timeout
try:
    while len(ended) < len(procs):
        now = time.monotonic()
        if now > deadline:
            status = "timeout"
            break
        pss_sum = 0
        for i, proc in enumerate(procs):
            if i not in ended:
                values = sample(proc.pid)
                for key, value in values.items():
                    peak[i][key] = max(peak[i][key], value)
                pss_sum += values.get("Pss", 0)
        pss_sum_max = max(pss_sum_max, pss_sum)
        if watch and first is None:
            with open(specs[0][0], "rb") as f:
                if update_line.search(f.read()):
                    first = now - start
                    deadline = now + timeout
        time.sleep(0.2)
finally:
    for i, proc in enumerate(procs):
        if i not in ended:
            try:  # os.kill, not proc.kill(): Popen would poll, and reap before the reaper thread
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for t in reapers:
        t.join(10)
if status is None:
    status = next((ended[i][1] for i in range(len(procs)) if ended[i][1] != "ok"), "ok")
wall = f"{max(e[0] for e in ended.values()):.1f}" if status != "timeout" else "-"
mib = lambda kb: f"{kb / 1024:.0f}"
fields = [status, wall, f"{first:.1f}" if first is not None else "-", mib(pss_sum_max)]
for i in range(len(procs)):
    fields += [mib(ended[i][2]) if i in ended else "-"] + [mib(peak[i][k]) for k in ("RssAnon", "RssFile", "Pss", "Pss_File")]
print(" ".join(fields))
PY

now() { date -u +%H:%M:%S; }
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail_tail() { echo "  $1:" >&2; tail -5 "$1" | sed 's/^/    /' >&2; }
# cell STATUS VALUE: VALUE when the run ended well, else what went wrong (and VALUE if there is one)
cell() {
  if [ "$1" = ok ]; then echo "$2"
  elif [ "$2" = - ]; then echo "$1"
  else echo "$2 ($1)"; fi
}

# corpus LABEL SRC TGT PAIRS GENERATE_S: one table row; prepares and trains from SRC/TGT in $dir.
corpus() {
  local label=$1 src=$2 tgt=$3 pairs=$4 generate=$5 dir=$work/run
  local status wall first pss_sum rss anon file pss rss1 pss1
  mkdir -p "$dir"
  echo "[$(now)] $label: tfm prepare" >&2
  in_background python3 "$work/measure.py" "$prepare_timeout" none -- "$dir/prepare.log" \
    "$tfm" prepare --train-src "$src" --train-tgt "$tgt" --out "$dir/prepared" --vocab-size 8000 > "$dir/m"
  read -r status wall _ _ rss _ < "$dir/m"
  local rate subwords
  rate=$(sed -n 's/.* written in [0-9.]* s (\([0-9]*\) sentences\/s).*/\1/p' "$dir/prepare.log")
  subwords=$(sed -n 's/.*train: \([0-9]*\) pairs, \([0-9]*\) + \([0-9]*\) subwords.*/\1 \2 \3/p' "$dir/prepare.log" |
    awk '{printf "%.1f", ($2 + $3) / $1}')
  local row
  row="| $label | $pairs | ${subwords:--} | $generate | $(cell "$status" "$wall") | $rss | ${rate:--}"
  if [ "$status" != ok ]; then
    fail_tail "$dir/prepare.log"
    echo "$row | - | - | - | - | - | - | - | - | - |"
    rm -rf "$dir"
    return
  fi

  local train=(train --train-src "$dir/prepared" --preset small --dtype float32 --max-updates 3 --log-interval 1
               --average-last 0 --keep-last 1)
  echo "[$(now)] $label: tfm train, 1 process x 2 threads" >&2
  in_background python3 "$work/measure.py" "$first_update_timeout" first-update -- "$dir/train1.log" \
    "$tfm" --threads 2 "${train[@]}" --save-dir "$dir/save1" > "$dir/m"
  read -r status _ first _ rss anon file pss _ < "$dir/m"
  [ "$status" = ok ] || fail_tail "$dir/train1.log"
  echo "  1 process: $(cat "$dir/m") (status wall first - peak_rss rss_anon rss_file pss pss_file)" >&2
  local one_pss=$pss
  row+=" | $(cell "$status" "$first") | $rss | $anon / $file | $pss"

  echo "[$(now)] $label: tfm train, 2 ranks x 1 thread" >&2
  local p rank ranks=()
  p=$(port)
  for rank in 0 1; do
    ranks+=(-- "$dir/rank$rank.log" env MASTER_ADDR=127.0.0.1 MASTER_PORT="$p" WORLD_SIZE=2 RANK="$rank"
            LOCAL_RANK="$rank" LOCAL_WORLD_SIZE=2 "$tfm" --threads 1 "${train[@]}" --save-dir "$dir/save2")
  done
  in_background python3 "$work/measure.py" "$first_update_timeout" first-update "${ranks[@]}" > "$dir/m"
  read -r status _ first pss_sum rss _ _ pss _ rss1 _ _ pss1 _ < "$dir/m"
  [ "$status" = ok ] || { fail_tail "$dir/rank0.log"; fail_tail "$dir/rank1.log"; }
  echo "  2 ranks: $(cat "$dir/m") (status wall first pss_sum, then per rank peak_rss rss_anon rss_file pss pss_file)" >&2
  local ratio
  ratio=$(awk -v a="$pss_sum" -v b="$one_pss" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
  echo "$row | $(cell "$status" "$first") | $rss / $rss1 | $pss / $pss1 | $pss_sum | $ratio |"
  rm -rf "$dir"
}

echo "date: $(date -u '+%F %H:%M') UTC | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
     "native bf16: $(grep -q avx512_bf16 /proc/cpuinfo && echo yes || echo no)," \
     "$(awk '/MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo) GiB memory, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$tfm" --version | grep -E '^(tfm|LibTorch|bf16)' | paste -sd ' ' | sed 's/^/versions: /'
# --no-optional-locks: reading the state must not take index.lock from someone working in the checkout
echo "checkout: $(git --no-optional-locks -C "$root" describe --always --dirty 2>/dev/null || echo unknown); scratch: $work"
echo "train: --preset small --dtype float32 --max-updates 3; time to first update from launch; memory in MiB"
echo
echo "| corpus | pairs | subwords/pair | generate s | prepare s | prepare peak RSS | prepare sentences/s" \
     "| 1 proc: first update s | 1 proc: peak RSS | 1 proc: RssAnon / RssFile max | 1 proc: PSS max" \
     "| 2 ranks: first update s | 2 ranks: peak RSS r0 / r1 | 2 ranks: PSS max r0 / r1 | 2 ranks: PSS sum max" \
     "| PSS sum / 1-proc PSS |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

corpus Multi30k "$data/train.en.gz" "$data/train.de.gz" "$(zcat "$data/train.en.gz" | wc -l)" -
for n in "${sizes[@]}"; do
  label="synthetic $n"
  if [ "$(avail "$work")" -lt $((n * bytes_per_pair)) ]; then
    echo "| $label | $n | - | skipped: needs $((n * bytes_per_pair / 1000000000 + 1)) GB free in $base |"
    continue
  fi
  echo "[$(now)] $label: bench/synthetic_corpus.py" >&2
  start=$(date +%s.%N)
  in_background python3 "$here/synthetic_corpus.py" "$n" "$work/synthetic"
  generate=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  corpus "$label" "$work/synthetic.en" "$work/synthetic.de" "$n" "$generate"
  rm -f "$work/synthetic.en" "$work/synthetic.de"
done
