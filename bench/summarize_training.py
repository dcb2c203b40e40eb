#!/usr/bin/env python3
"""Summarises a tfm training run from SAVE_DIR/metrics.jsonl and the model config inside
SAVE_DIR/checkpoint_last.pt: mean training tokens/s, the loss/BLEU curve, and model FLOPs/s.

Model FLOPs per token use the usual estimate: a matmul with P weights costs 2P FLOPs forward and
4P backward, so 6P per token for training. A source token passes the encoder's matmuls
(4 D^2 attention + 2 D d_ff feed-forward per layer); a target token the decoder's (8 D^2 + 2 D d_ff
per layer) and the output projection (V D). Attention's own score and context matmuls
(2 * T * D per layer and token, T ~ 15 on Multi30k) are left out: a few percent here.
Source and target tokens are taken as equally many (true within ~10% for Multi30k En-De).

usage: summarize_training.py SAVE_DIR
"""
import json
import os
import statistics
import sys
import zipfile


def read_config(save_dir):
    """The model_config JSON string stored in the checkpoint's TorchScript archive (a zip)."""
    path = os.path.join(save_dir, "checkpoint_last.pt")
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            data = archive.read(name)
            start = data.find(b'{"attention_dropout"')
            if start >= 0:
                return json.loads(data[start:data.index(b"}", start) + 1])
    raise SystemExit(path + ": no model config found")


def flops_per_token(config):
    d, f, v = config["d_model"], config["d_ff"], config["vocab_size"]
    encoder = config["encoder_layers"] * (4 * d * d + 2 * d * f)
    decoder = config["decoder_layers"] * (8 * d * d + 2 * d * f) + v * d
    return 6 * (encoder + decoder) / 2  # per token, half source and half target


def main():
    save_dir = sys.argv[1]
    records = [json.loads(line) for line in open(os.path.join(save_dir, "metrics.jsonl"))]
    train = [r for r in records if r["type"] == "train"]
    valid = [r for r in records if r["type"] == "valid"]
    config = read_config(save_dir)
    speeds = [r["tokens_per_s"] for r in train[1:]] or [r["tokens_per_s"] for r in train]
    tokens_per_s = statistics.mean(speeds)
    print("model: d_model {d_model}, d_ff {d_ff}, heads {heads}, layers {encoder_layers}+{decoder_layers}, "
          "vocab {vocab_size}".format(**config))
    print("training: {} updates in {:.0f} s".format(train[-1]["update"], train[-1]["elapsed_s"]))
    print("tokens/s (source + target, non-pad): mean {:.0f}, median {:.0f}".format(
        tokens_per_s, statistics.median(speeds)))
    print("model FLOPs/s: {:.2f} GFLOP/s".format(tokens_per_s * flops_per_token(config) / 1e9))
    print("\nvalidation curve:")
    print("{:>8} {:>10} {:>9} {:>8} {:>8}".format("update", "epoch", "minutes", "loss", "BLEU"))
    for r in valid:
        # Older runs recorded the epoch counter after an epoch end (one ahead) without "epoch_end".
        epoch = r["epoch"] if "epoch_end" in r else r["epoch"] - 1
        where = "{} end".format(epoch) if r.get("epoch_end", True) else "{} (part)".format(epoch)
        print("{:>8} {:>10} {:>9.1f} {:>8.3f} {:>8.2f}".format(r["update"], where, r["elapsed_s"] / 60,
                                                               r["loss"], r["bleu"]))
    print("\ntraining loss every ~10% of updates:")
    step = max(1, len(train) // 10)
    for r in train[::step] + [train[-1]]:
        print("  update {:>6}: loss {:.3f}, lr {:.2e}".format(r["update"], r["loss"], r["lr"]))


if __name__ == "__main__":
    main()
