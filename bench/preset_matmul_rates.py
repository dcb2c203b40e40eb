#!/usr/bin/env python3
"""LibTorch's matmul rate at a training batch's own product shapes, float32 and bfloat16: the
ceiling for "share of the machine's matmul rate" that bench/speed.sh measures against 4096^3.

A batch of --max-tokens 4096 holds ~3,584 rows a side; the shapes are the forward products of a
layer (fused Q/K/V, output, feed-forward in and out), the output projection, and three of the
backward's (weight gradients contract over the rows). Prints each shape's GFLOP/s (best of 10)
and all of them together (their FLOPs over their summed times, each shape once).

usage: ~/.cache/tfm/venv/bin/python bench/preset_matmul_rates.py [--rows 3584] [--dim 256]
       [--ff 1024] [--vocab 8000] [--threads 2]   (defaults: the small preset, 8,000 subwords)
"""
import argparse
import time

import torch


def best_seconds(a, b, repeats=10):
    # Into one output tensor, as tfm's allocator reuses its memory: a fresh [3584, 8000] result
    # each call is fresh pages from the kernel, which on these VMs cut the rate to a third.
    out = torch.empty(a.size(0), b.size(1), dtype=a.dtype)
    for _ in range(3):
        torch.matmul(a, b, out=out)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3584)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--ff", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    n, d, f, v = args.rows, args.dim, args.ff, args.vocab
    shapes = [  # (m, k, n): [m, k] x [k, n]
        ("q/k/v", (n, d, 3 * d)), ("attention out", (n, d, d)), ("ff in", (n, d, f)), ("ff out", (n, f, d)),
        ("output projection", (n, d, v)), ("q/k/v input grad", (n, 3 * d, d)), ("ff in weight grad", (d, n, f)),
        ("output weight grad", (v, n, d)),
    ]
    for dtype in (torch.float32, torch.bfloat16):
        flops = seconds = 0.0
        for name, (m, k, cols) in shapes:
            took = best_seconds(torch.randn(m, k, dtype=dtype), torch.randn(k, cols, dtype=dtype))
            flops += 2 * m * k * cols
            seconds += took
            print(f"{str(dtype)[6:]:9} {name:20} {m}x{k}x{cols}: {2 * m * k * cols / took / 1e9:8.1f} GFLOP/s")
        print(f"{str(dtype)[6:]:9} {'all shapes':20} {flops / seconds / 1e9:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
