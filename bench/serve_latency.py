#!/usr/bin/env python3
"""Batch-1 latency of `tfm serve` against `tfm translate --buffer-size 1`, in one run: the same
lines go one at a time to a `tfm translate` process reading a pipe (as latency.py does) and to the
server on one keep-alive connection (LibreTranslate's POST /translate, loopback only), each request
waiting for its answer. The two sides take turns in blocks of LINES, ROUNDS times, the first side
alternating, so that both meet the same drift in the machine's speed; a block starts after a second
in which the other side's threads stop spinning. With --pause-ms, each request also waits that long
after the previous answer, as a client that is not sending back to back (the decoding threads have
gone to sleep by then). Synchronous on both sides: neither figure carries an event loop's time.
Prints one JSON line: each side's p50 per round, and the median of the rounds' ratios.

usage: serve_latency.py TFM MODEL SOURCE PORT [--lines 100] [--rounds 5] [--pause-ms 0] [--tfm-flag=--dtype=auto ...]
"""
import argparse
import http.client
import json
import statistics
import time

from latency import add_translate_arguments, first_lines, start_translate


def main():
    parser = argparse.ArgumentParser()
    add_translate_arguments(parser)  # the flags as the server was given them
    parser.add_argument("port", type=int)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pause-ms", type=float, default=0.0)
    parser.add_argument("--source-lang", default="en")
    parser.add_argument("--target-lang", default="de")
    args = parser.parse_args()
    lines = first_lines(args.source, args.lines)
    process = start_translate(args.tfm, args.model, args.tfm_flag)
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)

    def through_translate(line):
        process.stdin.write(line + "\n")
        process.stdout.readline()

    def through_server(line, retry=True):
        body = json.dumps({"q": line, "source": args.source_lang, "target": args.target_lang})
        try:
            connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closes a connection idle past its keep-alive timeout.
            connection.close()
            if not retry:
                raise
            return through_server(line, retry=False)
        response.read()
        if response.status != 200:
            raise SystemExit(f"serve_latency.py: HTTP {response.status} for {line!r}")

    def block(send):
        time.sleep(1.0)
        send(lines[0])  # untimed: reopens the server's connection if it timed out meanwhile
        times = []
        for line in lines:
            time.sleep(args.pause_ms / 1000)
            start = time.perf_counter()
            send(line)
            times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    for line in lines[:5]:  # warm up both (model load, first allocations)
        through_translate(line)
        through_server(line)
    rounds = []
    for n in range(args.rounds):
        if n % 2 == 0:
            translate_p50 = block(through_translate)
            serve_p50 = block(through_server)
        else:
            serve_p50 = block(through_server)
            translate_p50 = block(through_translate)
        rounds.append((translate_p50, serve_p50))
    process.stdin.close()
    process.wait()
    connection.close()
    print(json.dumps({"lines": len(lines), "pause_ms": args.pause_ms,
                      "translate_p50_ms": [round(t, 2) for t, _ in rounds],
                      "serve_p50_ms": [round(s, 2) for _, s in rounds],
                      "ratio": round(statistics.median(s / t for t, s in rounds), 3)}))

if __name__ == "__main__":
    main()
