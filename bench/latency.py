#!/usr/bin/env python3
"""Batch-1 latency of `tfm translate`: sends one line at a time through a pipe that stays open
and waits for its translation before sending the next; prints the median in milliseconds.

usage: latency.py TFM MODEL SOURCE [--lines 100] [--beam 4] [--dtype float32] [--tfm-flag=--quantize=int8 ...]
"""
import argparse
import statistics
import subprocess
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tfm")
    parser.add_argument("model")
    parser.add_argument("source")
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--beam", default="4")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--tfm-flag", action="append", default=[],
                        help="extra flag for tfm translate, e.g. --tfm-flag=--quantize=int8 (repeatable)")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(args.lines), f)]
    process = subprocess.Popen([args.tfm, "translate", "--model", args.model, "--beam", args.beam,
                                "--dtype", args.dtype, "--buffer-size", "1", *args.tfm_flag],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, bufsize=1)
    # Warm up (model load, first allocations) before timing.
    process.stdin.write(lines[0] + "\n")
    process.stdout.readline()
    times = []
    for line in lines:
        start = time.perf_counter()
        process.stdin.write(line + "\n")
        process.stdout.readline()
        times.append((time.perf_counter() - start) * 1000)
    process.stdin.close()
    process.wait()
    print("{:.1f}".format(statistics.median(times)))


if __name__ == "__main__":
    main()
