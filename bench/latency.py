#!/usr/bin/env python3
"""Batch-1 latency of `tfm translate`: sends one line at a time through a pipe that stays open
and waits for its translation before sending the next; prints the median in milliseconds.

usage: latency.py TFM MODEL SOURCE [--lines 100] [--beam 4] [--dtype float32] [--tfm-flag=--quantize=int8 ...]
"""
import argparse
import statistics
import subprocess
import time


def first_lines(path, count):
    """The first `count` lines of `path`, without their newlines."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(count), f)]


def start_translate(tfm, model, flags):
    """`tfm translate --buffer-size 1` reading a pipe that stays open: write a line, read its
    translation."""
    return subprocess.Popen([tfm, "translate", "--model", model, "--buffer-size", "1", *flags],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)


def add_translate_arguments(parser):
    """TFM MODEL SOURCE [--lines N] [--tfm-flag=FLAG ...]: what start_translate() and first_lines() need."""
    parser.add_argument("tfm")
    parser.add_argument("model")
    parser.add_argument("source")
    parser.add_argument("--lines", type=int, default=100)
    parser.add_argument("--tfm-flag", action="append", default=[],
                        help="extra flag for tfm translate, e.g. --tfm-flag=--quantize=int8 (repeatable)")


def main():
    parser = argparse.ArgumentParser()
    add_translate_arguments(parser)
    parser.add_argument("--beam", default="4")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    lines = first_lines(args.source, args.lines)
    process = start_translate(args.tfm, args.model, ["--beam", args.beam, "--dtype", args.dtype, *args.tfm_flag])
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
