#!/usr/bin/env python3
"""What a loaded tfm process holds, for one or more builds and modes side by side: VmRSS and VmHWM
(/proc/PID/status) of `tfm translate` once it has written the translation of one sentence, its
stdin still open, and of `tfm serve` once it has answered a few requests on 127.0.0.1. A user's
service keeps the first figure for as long as it runs; the second is its peak.

usage: loaded_memory.py MODEL SOURCE --tfm LABEL=PATH [--tfm LABEL=PATH ...]
                        [--mode LABEL=FLAGS ...] [--mode-model LABEL=PATH ...] [--requests 9]
                        [--rounds 2]

Each process is waited for by what it prints (the translation; serve's "listening on" line and
its answers), never for a time; each wait gives up after --timeout seconds.
"""
import json
import re
import selectors
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from startup import bf16_native, builds_and_modes, builds_and_modes_parser, cpu_model


def status_mib(pid):
    """(VmRSS, VmHWM) of `pid` in MiB."""
    values = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def read_line(stream, timeout, what):
    """The next line of `stream`, or exit after `timeout` seconds without one."""
    selector = selectors.DefaultSelector()
    selector.register(stream, selectors.EVENT_READ)
    if not selector.select(timeout):
        sys.exit(f"loaded_memory.py: no {what} within {timeout} s")
    return stream.readline()


def translate_holds(path, model, flags, sentence, timeout):
    command = [path, "translate", "--model", model, *flags]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        process.stdin.write(sentence + "\n")
        process.stdin.flush()
        if not read_line(process.stdout, timeout, "translation from " + " ".join(command)):
            sys.exit(f"loaded_memory.py: {' '.join(command)} ended without a translation")
        return status_mib(process.pid)
    finally:
        process.stdin.close()
        process.wait(timeout)


def serve_holds(path, model, flags, sentences, timeout):
    command = [path, "serve", "--model", model, "--port", "0", *flags]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        port = None
        deadline = time.monotonic() + timeout
        while port is None:
            line = read_line(process.stderr, max(0.0, deadline - time.monotonic()), "'listening on' from serve")
            if not line:
                sys.exit(f"loaded_memory.py: {' '.join(command)} ended before it listened")
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            port = int(found.group(1)) if found else None
        # Its log from here on (a line a request) drains beside the requests.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        for sentence in sentences:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate",
                                             data=json.dumps({"text": sentence}).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                answer.read()
        return status_mib(process.pid)
    finally:
        process.terminate()
        process.wait(timeout)


def main():
    parser = builds_and_modes_parser()
    parser.add_argument("--requests", type=int, default=9, help="requests to tfm serve, a sentence each")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for _, line in zip(range(args.requests), f)]
    builds, modes, models = builds_and_modes(args)
    print(f"CPU: {cpu_model()}; bf16 native: {'yes' if bf16_native() else 'no'}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.rounds} alternating rounds")
    results = {}
    for _ in range(args.rounds):
        for mode, flags in modes:
            for label, path in builds:
                model = models.get(mode, args.model)
                results.setdefault(("translate, 1 sentence", mode, label), []).append(
                    translate_holds(path, model, flags.split(), sentences[0], args.timeout))
                results.setdefault((f"serve, {len(sentences)} requests", mode, label), []).append(
                    serve_holds(path, model, flags.split(), sentences, args.timeout))
    print("| process | mode | build | VmRSS MiB (median) | rounds | VmHWM MiB (max) |")
    print("|---|---|---|---:|---|---:|")
    for (process, mode, label), values in sorted(results.items()):
        rss = [held for held, _ in values]
        rounds = " ".join(f"{held:.0f}" for held in rss)
        peak = max(high for _, high in values)
        print(f"| {process} | {mode} | {label} | {statistics.median(rss):.0f} | {rounds} | {peak:.0f} |")


if __name__ == "__main__":
    main()
