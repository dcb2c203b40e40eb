#!/usr/bin/env python3
"""A large synthetic parallel corpus from Multi30k's training pairs, for bench/scale.sh.

    bench/synthetic_corpus.py PAIRS OUT_PREFIX [--seed N]

Writes OUT_PREFIX.en and OUT_PREFIX.de, aligned, one sentence a line. Each synthetic pair is 1, 2
or 3 Multi30k pairs picked at random (with replacement) and joined with a space on both sides, so
every line stays a real translation of its partner. Multi30k has ~29.8 subwords per pair under an
8000-piece joint vocabulary; 1.5 pairs per line on average gives ~44, the mean of WMT14 En-De
(4.5M pairs, ~200M subwords). Reads $TFM_DATA_DIR/data/multi30k (default: ../shared beside the
checkout). The same seed gives the same files (with the same Python's `random`).

Speed: 45M pairs (~9 GB) must take minutes, not an hour, so lines are built a block at a time by
C-level `map`/`join` over lists that `random.choices` fills, never by a Python loop per line.
"""
import argparse
import gzip
import itertools
import operator
import os
import random
import sys
import time

# Separators after each picked Multi30k pair: a line of k pairs is k-1 spaces and one newline.
PATTERNS = [("\n",), (" ", "\n"), (" ", " ", "\n")]
WEIGHTS = [0.6, 0.3, 0.1]  # mean 1.5 Multi30k pairs per line
BLOCK = 1 << 17  # synthetic pairs per block: ~25 MB of text per side


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        # split("\n"), not splitlines(): U+2028 and the like inside a sentence must not split it
        return f.read().rstrip("\n").split("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=int, help="synthetic pairs to write")
    parser.add_argument("out_prefix", help="writes OUT_PREFIX.en and OUT_PREFIX.de")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error("PAIRS must be at least 1")
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.environ.get("TFM_DATA_DIR") or os.path.join(here, "..", "..", "shared")
    data = os.path.join(shared, "data", "multi30k")
    try:
        en = read_lines(os.path.join(data, "train.en.gz"))
        de = read_lines(os.path.join(data, "train.de.gz"))
    except OSError as e:
        sys.exit(f"synthetic_corpus.py: {e} (set TFM_DATA_DIR to the directory holding data/multi30k)")
    if len(en) != len(de):
        sys.exit(f"synthetic_corpus.py: {data}: train.en.gz has {len(en)} lines, train.de.gz {len(de)}")

    rng = random.Random(args.seed)
    indices = range(len(en))
    start = time.monotonic()
    written = picked = 0
    with open(args.out_prefix + ".en", "w", encoding="utf-8", newline="\n") as out_en, \
         open(args.out_prefix + ".de", "w", encoding="utf-8", newline="\n") as out_de:
        while written < args.pairs:
            lines = min(BLOCK, args.pairs - written)
            seps = list(itertools.chain.from_iterable(rng.choices(PATTERNS, WEIGHTS, k=lines)))
            picks = rng.choices(indices, k=len(seps))
            # sentence + separator, element by element, in C
            out_en.write("".join(map(operator.add, map(en.__getitem__, picks), seps)))
            out_de.write("".join(map(operator.add, map(de.__getitem__, picks), seps)))
            written += lines
            picked += len(picks)
    seconds = time.monotonic() - start
    size = {side: os.path.getsize(f"{args.out_prefix}.{side}") for side in ("en", "de")}
    print(f"synthetic_corpus.py: wrote {written} pairs ({picked / written:.3f} Multi30k pairs each),"
          f" {size['en']} + {size['de']} bytes to {args.out_prefix}.{{en,de}} in {seconds:.1f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
