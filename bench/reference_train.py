#!/usr/bin/env python3
"""Plain-PyTorch reference for `tfm train`: the same model, optimiser and batches, in Python.

It exists for speed comparisons: train it beside the C++ binary on the same prepared directory
and the gap in tokens/s is what LibTorch-from-C++ buys over torch-from-Python for the same tensor
operations. It is not part of tfm and nothing in tfm depends on it.

What it mirrors:
  data/dataset_file.cpp  reads `train.bin` of a `tfm prepare` directory (64-byte header: magic,
                         version, id width, counts, CRC-32s; format version 2: ids pair by pair,
                         pair offsets, lengths; version 1: offsets and ids per side) and checks the
                         magic, version, size and both checksums
  data/batching.cpp      the same batches in the same order: pairs shuffled with SplitMix64 and
                         Fisher-Yates, stably sorted by (source, target) length, cut greedily so that
                         sentences x (longest + 1) <= --max-tokens on each side, batches shuffled;
                         the generator is seeded with SplitMix64(seed).next() ^ epoch, epochs from 1.
                         Source = tokens + eos, decoder input = bos + tokens, output = tokens + eos
  model/*.cpp            the architecture, parameter names and initialisation (Xavier per
                         [D, D] block of the fused projections, N(0, D^-1/2) embeddings with a zero
                         pad row, zero biases), post- or pre-norm, tied embeddings, dropout. Linear
                         layers compute as LibTorch's C++ frontend does (matmul, then += bias)
  train/trainer.cpp      Adam(0.9, 0.98, 1e-9); the learning rate of update u+1 set before each
                         step (noam: factor * D^-0.5 * min(u^-0.5, u * warmup^-1.5), or
                         inverse_sqrt: peak * u / warmup, then peak * sqrt(warmup / u)); the summed
                         loss of --update-freq batches back-propagated, then gradients divided by
                         their target tokens; optional gradient clipping; bf16 autocast around the
                         forward pass and the loss
  model/loss.cpp         label smoothing 0.1, here as torch's F.cross_entropy(label_smoothing=0.1,
                         ignore_index=pad, reduction="sum"): the same quantity, (1 - eps) * nll +
                         eps * mean_v(-log p_v) over non-pad targets

Reported figures (stderr):
  tokens/s   non-pad source + target tokens (with eos; the target counted as `target_out`) per
             second of training, as tfm's `tok/s` (its log counts the same tokens)
  loss       label-smoothed cross-entropy per target token, averaged over each log interval, as
             the `loss` column of tfm's log (perplexity is not computed: it would cost a second
             log-softmax per batch)
  FLOPs/s    model FLOPs of the matrix products only, counted exactly on the padded batch shapes
             (what the hardware multiplies; pads included), times 3 for forward + backward
             (backward = 2x forward). Per batch of B sentences, padded lengths S and T, width D,
             feed-forward width F, vocabulary V, L_e / L_d layers, forward =
               L_e * [2BS(3D^2) + 4BS^2 D + 2BS D^2 + 4BS DF]                 encoder layers
             + L_d * [2BT(3D^2) + 4BT^2 D + 2BT D^2                           self-attention
                      + 2BT D^2 + 2BS(2D^2) + 4BTS D + 2BT D^2                cross-attention
                      + 4BT DF]                                               feed-forward
             + 2BT DV                                                         output projection
             (scores and attention-weighted values: 2 * len_q * len_k * D each over all heads).
             Embedding lookups, LayerNorm, softmax and the optimiser are left out.

Run, e.g. with tfm's venv, on a directory written by `tfm prepare`:

    ~/.cache/tfm/venv/bin/python bench/reference_train.py --data DIR --preset tiny \\
        [--max-tokens 4096] [--time-limit 60 | --max-updates N] [--dtype float32|bfloat16] \\
        [--lr-scheduler noam|inverse_sqrt] [--warmup 4000] [--threads 0] [--log-interval 50]
    ~/.cache/tfm/venv/bin/python bench/reference_train.py --data DIR --config-from MODEL.pt ...

and compare with `tfm train --train-src DIR --save-dir D --preset tiny --max-tokens 4096
--max-updates N`. With the same --seed both see the same batches in the same order and start from
the same weights (modules are built, and the random generator drawn from, in the same order), so
their loss curves agree to about 3 decimals (tfm also logs at every epoch end, which shifts its
averaging windows there). Nothing is saved: this is a speed reference, not a trainer to keep.
"""
import argparse
import json
import math
import os
import struct
import sys
import time
import warnings
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # tokenizer/special_ids.h

# model/model_config.cpp: preset(name) -> d_model, d_ff, heads, layers, dropout
PRESETS = {"base": (512, 2048, 8, 6, 0.1), "big": (1024, 4096, 16, 6, 0.3),
           "small": (256, 1024, 4, 3, 0.1), "tiny": (128, 512, 4, 2, 0.1)}


def preset_config(name, vocab_size):
    d_model, d_ff, heads, layers, dropout = PRESETS[name]
    return {"vocab_size": vocab_size, "d_model": d_model, "d_ff": d_ff, "heads": heads,
            "encoder_layers": layers, "decoder_layers": layers, "dropout": dropout,
            "attention_dropout": 0.0, "relu_dropout": 0.0, "score": "scaled_dot", "attention_window": 0,
            "positions": "sinusoidal", "max_positions": 1024, "norm": "post", "tie_embeddings": True}


# ---------------------------------------------------------------------------------------------
# Prepared data (data/dataset_file.cpp, data/batching.cpp)
# ---------------------------------------------------------------------------------------------

HEADER = struct.Struct("<8sIIqqqqII8x")  # 64 bytes; see data/dataset_header.h


def load_dataset(path):
    """train.bin (format version 1 or 2) -> (source offsets, target offsets, source ids, target ids,
    vocabulary size)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < HEADER.size:
        sys.exit(f"{path}: truncated dataset file (shorter than its header)")
    magic, version, id_bytes, pairs, n_source, n_target, vocab, payload_crc, header_crc = HEADER.unpack_from(blob)
    if magic != b"TFMDATA\0":
        sys.exit(f"{path}: not a tfm dataset file (bad magic)")
    if version not in (1, 2):
        sys.exit(f"{path}: dataset format version {version}, this script reads 1 and 2")
    # Version 2 also covers the two longest-sentence fields at [56, 64).
    expected_crc = zlib.crc32(blob[:52])
    if version == 2:
        expected_crc = zlib.crc32(blob[56:64], expected_crc)
    if expected_crc != header_crc:
        sys.exit(f"{path}: corrupt dataset header (checksum mismatch)")
    ids_bytes = id_bytes * (n_source + n_target)
    offsets_at = (HEADER.size + ids_bytes + 7) // 8 * 8
    size = HEADER.size + 16 * (pairs + 1) + ids_bytes if version == 1 else offsets_at + 12 * pairs + 8
    if id_bytes not in (2, 4) or len(blob) != size:
        sys.exit(f"{path}: corrupt or truncated dataset file ({len(blob)} bytes)")
    if zlib.crc32(memoryview(blob)[HEADER.size:]) != payload_crc:
        sys.exit(f"{path}: corrupt dataset file (checksum mismatch)")
    id_type = np.uint16 if id_bytes == 2 else np.int32
    if version == 1:  # offsets per side, then ids per side
        at = HEADER.size
        source_offsets = np.frombuffer(blob, np.int64, pairs + 1, at)
        target_offsets = np.frombuffer(blob, np.int64, pairs + 1, at + 8 * (pairs + 1))
        at += 16 * (pairs + 1)
        source_ids = np.frombuffer(blob, id_type, n_source, at).astype(np.int64)
        target_ids = np.frombuffer(blob, id_type, n_target, at + id_bytes * n_source).astype(np.int64)
        return source_offsets, target_offsets, source_ids, target_ids, vocab
    # Version 2: ids pair by pair (source, then target), then pair offsets and both sides' lengths.
    ids = np.frombuffer(blob, id_type, n_source + n_target, HEADER.size).astype(np.int64)
    pair_offsets = np.frombuffer(blob, np.int64, pairs + 1, offsets_at)
    source_lengths = np.frombuffer(blob, np.uint16, pairs, offsets_at + 8 * (pairs + 1)).astype(np.int64)
    target_lengths = np.frombuffer(blob, np.uint16, pairs, offsets_at + 8 * (pairs + 1) + 2 * pairs).astype(np.int64)
    pair_lengths = source_lengths + target_lengths
    if not np.array_equal(np.diff(pair_offsets), pair_lengths):
        sys.exit(f"{path}: corrupt dataset file (pair offsets and lengths disagree)")
    within_pair = np.arange(len(ids)) - np.repeat(pair_offsets[:-1], pair_lengths)
    is_source = within_pair < np.repeat(source_lengths, pair_lengths)
    source_offsets = np.concatenate([[0], np.cumsum(source_lengths)])
    target_offsets = np.concatenate([[0], np.cumsum(target_lengths)])
    return source_offsets, target_offsets, ids[is_source], ids[~is_source], vocab


class SplitMix64:
    """Steele et al. (2014), as data/batching.cpp: the same numbers on every machine."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)


def shuffle(items, random):
    """Fisher-Yates, drawing exactly as data/batching.cpp does."""
    for i in range(len(items), 1, -1):
        j = random.next() % i
        items[i - 1], items[j] = items[j], items[i - 1]


def make_batches(source_lengths, target_lengths, max_tokens, seed, epoch):
    """Lists of pair indices: each side's sentences x (longest + 1) <= max_tokens."""
    too_long = np.flatnonzero((source_lengths + 1 > max_tokens) | (target_lengths + 1 > max_tokens))
    if too_long.size:
        sys.exit(f"pair {too_long[0]} does not fit in --max-tokens {max_tokens}")
    random = SplitMix64(SplitMix64(seed).next() ^ epoch)
    order = list(range(len(source_lengths)))
    shuffle(order, random)
    source_list, target_list = source_lengths.tolist(), target_lengths.tolist()
    order.sort(key=lambda i: (source_list[i], target_list[i]))  # stable: ties keep the shuffled order
    batches, batch, longest_source, longest_target = [], [], 0, 0
    for i in order:
        source = max(longest_source, source_list[i] + 1)
        target = max(longest_target, target_list[i] + 1)
        if (len(batch) + 1) * source <= max_tokens and (len(batch) + 1) * target <= max_tokens:
            longest_source, longest_target = source, target
        else:
            batches.append(batch)
            batch, longest_source, longest_target = [], source_list[i] + 1, target_list[i] + 1
        batch.append(i)
    if batch:
        batches.append(batch)
    shuffle(batches, random)
    return batches


def collate(data, indices):
    """-> source [B, S] (tokens + eos), target_in [B, T] (bos + tokens), target_out [B, T] (tokens + eos),
    non-pad source and target tokens."""
    source_offsets, target_offsets, source_ids, target_ids, _ = data
    starts_s, ends_s = source_offsets[indices], source_offsets[np.add(indices, 1)]
    starts_t, ends_t = target_offsets[indices], target_offsets[np.add(indices, 1)]
    lengths_s, lengths_t = ends_s - starts_s, ends_t - starts_t
    batch, S, T = len(indices), int(lengths_s.max()) + 1, int(lengths_t.max()) + 1
    source = np.zeros((batch, S), np.int64)
    target_in = np.zeros((batch, T), np.int64)
    target_out = np.zeros((batch, T), np.int64)
    target_in[:, 0] = BOS
    for b in range(batch):
        ns, nt = lengths_s[b], lengths_t[b]
        source[b, :ns] = source_ids[starts_s[b]:ends_s[b]]
        source[b, ns] = EOS
        target_in[b, 1:nt + 1] = target_ids[starts_t[b]:ends_t[b]]
        target_out[b, :nt] = target_ids[starts_t[b]:ends_t[b]]
        target_out[b, nt] = EOS
    return (torch.from_numpy(source), torch.from_numpy(target_in), torch.from_numpy(target_out),
            int(lengths_s.sum()) + batch, int(lengths_t.sum()) + batch)


# ---------------------------------------------------------------------------------------------
# The model (model/*.cpp), teacher forcing only
# ---------------------------------------------------------------------------------------------

class Linear(nn.Linear):
    """Computed as LibTorch's C++ frontend does (torch::nn::functional::linear): addmm for 2-D
    inputs, else matmul then `+= bias` (Python's F.linear fuses the bias for 3-D inputs too)."""

    def forward(self, x):
        if x.dim() == 2 and self.bias is not None:
            return torch.addmm(self.bias, x, self.weight.t())
        output = x.matmul(self.weight.t())
        if self.bias is not None:
            output += self.bias
        return output


def xavier_blocks(weight, blocks):
    """Xavier-uniform over each [D, D] block, as if the fused matrices were separate."""
    with torch.no_grad():
        for block in weight.chunk(blocks, 0):
            nn.init.xavier_uniform_(block)


def sinusoidal_positions(length, d_model):
    """§3.5, interleaved sin/cos, in float64 then float32 -> [T, D]."""
    position = torch.arange(0, length, dtype=torch.float64).unsqueeze(1)
    angle = position / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).view(length, d_model).float()


def window_mask(queries, keys, window):
    q, k = torch.arange(queries).unsqueeze(1), torch.arange(keys).unsqueeze(0)
    return (q - k).abs().le(window).view(1, 1, queries, keys)


class TokenAndPosition(nn.Module):
    """Token vectors (matrix owned by the Transformer) * sqrt(D) + positions, then dropout."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        if config["positions"] == "learned":
            self.positions = nn.Embedding(config["max_positions"], config["d_model"])
            nn.init.normal_(self.positions.weight, 0.0, config["d_model"] ** -0.5)

    def forward(self, ids, tokens):  # [B, T] -> [B, T, D]
        length = ids.size(1)
        if self.config["positions"] == "sinusoidal":
            positions = sinusoidal_positions(length, self.config["d_model"])
        else:
            positions = self.positions.weight.narrow(0, 0, length)
        vectors = F.embedding(ids, tokens, padding_idx=PAD) * math.sqrt(self.config["d_model"])
        return F.dropout(vectors + positions.to(vectors.dtype), self.config["dropout"], self.training)


class Scorer(nn.Module):
    """model/attention_score.cpp: q [B,H,T,Dh], k [B,H,S,Dh] -> [B,H,T,S]."""

    def __init__(self, kind, heads, head_dim):
        super().__init__()
        self.kind, self.head_dim = kind, head_dim
        scale = 1.0 / math.sqrt(head_dim)
        if kind == "general":
            self.bilinear = nn.Parameter(torch.eye(head_dim).repeat(heads, 1, 1) * scale)
        elif kind == "additive":
            self.query_proj = nn.Parameter(torch.randn(heads, head_dim, head_dim) * scale)
            self.key_proj = nn.Parameter(torch.randn(heads, head_dim, head_dim) * scale)
            self.energy = nn.Parameter(torch.randn(heads, head_dim) * scale)
        elif kind == "cosine":
            self.sharpness = nn.Parameter(torch.full((heads,), math.sqrt(head_dim)))

    def forward(self, q, k):
        if self.kind == "scaled_dot":
            return torch.matmul(q / math.sqrt(self.head_dim), k.transpose(-2, -1))
        if self.kind == "dot":
            return torch.matmul(q, k.transpose(-2, -1))
        if self.kind == "general":
            return torch.matmul(torch.matmul(q, self.bilinear), k.transpose(-2, -1))
        if self.kind == "additive":
            hidden = torch.tanh(torch.matmul(q, self.query_proj).unsqueeze(3) +
                                torch.matmul(k, self.key_proj).unsqueeze(2))
            return torch.matmul(hidden, self.energy.view(1, -1, 1, self.head_dim, 1)).squeeze(-1)
        qn, kn = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return torch.matmul(qn, kn.transpose(-2, -1)) * self.sharpness.view(1, -1, 1, 1)


class MultiHeadAttention(nn.Module):
    """§3.2.2. Self: in_proj [3D, D]; cross: q_proj [D, D] + kv_proj [2D, D]; out_proj [D, D]."""

    def __init__(self, config, self_attention):
        super().__init__()
        d = config["d_model"]
        self.d_model, self.heads, self.dropout = d, config["heads"], config["attention_dropout"]
        if self_attention:
            self.in_proj = Linear(d, 3 * d)
            xavier_blocks(self.in_proj.weight, 3)
            nn.init.zeros_(self.in_proj.bias)
        else:
            self.q_proj, self.kv_proj = Linear(d, d), Linear(d, 2 * d)
            xavier_blocks(self.q_proj.weight, 1)
            xavier_blocks(self.kv_proj.weight, 2)
            nn.init.zeros_(self.q_proj.bias)
            nn.init.zeros_(self.kv_proj.bias)
        self.out_proj = Linear(d, d)
        xavier_blocks(self.out_proj.weight, 1)
        nn.init.zeros_(self.out_proj.bias)
        self.scorer = Scorer(config["score"], self.heads, d // self.heads)

    def split_heads(self, projected, n):  # [B, T, n*D] -> n x [B, H, T, Dh]
        b, t = projected.size(0), projected.size(1)
        return projected.view(b, t, n, self.heads, self.d_model // self.heads).permute(2, 0, 3, 1, 4).unbind(0)

    def forward(self, x, mask, memory=None):  # x [B, T, D], memory [B, S, D] -> [B, T, D]
        if memory is None:
            q, k, v = self.split_heads(self.in_proj(x), 3)
        else:
            q = self.split_heads(self.q_proj(x), 1)[0]
            k, v = self.split_heads(self.kv_proj(memory), 2)
        scores = self.scorer(q, k)  # [B, H, T, S]
        weights = torch.softmax(scores.masked_fill(mask.logical_not(), float("-inf")), -1)
        weights = weights.masked_fill(mask.any(-1, keepdim=True).logical_not(), 0.0)  # no key: zeros
        context = torch.matmul(F.dropout(weights, self.dropout, self.training), v)  # [B, H, T, Dh]
        return self.out_proj(context.transpose(1, 2).reshape(x.size(0), x.size(1), self.d_model))


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.w1, self.w2 = Linear(config["d_model"], config["d_ff"]), Linear(config["d_ff"], config["d_model"])
        self.relu_dropout = config["relu_dropout"]
        for layer in (self.w1, self.w2):
            xavier_blocks(layer.weight, 1)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        return self.w2(F.dropout(torch.relu(self.w1(x)), self.relu_dropout, self.training))


def residual(x, norm, config, training, sublayer):
    if config["norm"] == "pre":
        return x + F.dropout(sublayer(norm(x)), config["dropout"], training)
    return norm(x + F.dropout(sublayer(x), config["dropout"], training))


class EncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.self_attention = MultiHeadAttention(config, self_attention=True)
        self.feed_forward = FeedForward(config)
        self.self_attention_norm = nn.LayerNorm(config["d_model"])
        self.feed_forward_norm = nn.LayerNorm(config["d_model"])

    def forward(self, x, mask):
        h = residual(x, self.self_attention_norm, self.config, self.training, lambda z: self.self_attention(z, mask))
        return residual(h, self.feed_forward_norm, self.config, self.training, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.self_attention = MultiHeadAttention(config, self_attention=True)
        self.cross_attention = MultiHeadAttention(config, self_attention=False)
        self.feed_forward = FeedForward(config)
        self.self_attention_norm = nn.LayerNorm(config["d_model"])
        self.cross_attention_norm = nn.LayerNorm(config["d_model"])
        self.feed_forward_norm = nn.LayerNorm(config["d_model"])

    def forward(self, x, memory, self_mask, memory_mask):
        h = residual(x, self.self_attention_norm, self.config, self.training,
                     lambda z: self.self_attention(z, self_mask))
        h = residual(h, self.cross_attention_norm, self.config, self.training,
                     lambda z: self.cross_attention(z, memory_mask, memory))
        return residual(h, self.feed_forward_norm, self.config, self.training, self.feed_forward)


class Stack(nn.Module):
    """Encoder or decoder: `layers` plus, with pre-norm, a `final_norm` (names as in tfm)."""

    def __init__(self, config, layer, count):
        super().__init__()
        self.layers = nn.ModuleList(layer(config) for _ in range(count))
        self.final_norm = nn.LayerNorm(config["d_model"]) if config["norm"] == "pre" else None

    def forward(self, x, *args):
        for layer in self.layers:
            x = layer(x, *args)
        return self.final_norm(x) if self.final_norm is not None else x


class Transformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        v, d = config["vocab_size"], config["d_model"]
        if config["tie_embeddings"]:
            self.embedding = self.token_embedding(v, d)
        else:
            self.source_tokens, self.target_tokens = self.token_embedding(v, d), self.token_embedding(v, d)
            self.output_projection = Linear(d, v, bias=False)
        self.source_embedding = TokenAndPosition(config)
        self.target_embedding = TokenAndPosition(config)
        self.encoder = Stack(config, EncoderLayer, config["encoder_layers"])
        self.decoder = Stack(config, DecoderLayer, config["decoder_layers"])

    @staticmethod
    def token_embedding(vocab_size, d_model):
        embedding = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        with torch.no_grad():
            embedding.weight.normal_(0.0, d_model ** -0.5)
            embedding.weight[PAD].zero_()
        return embedding

    def forward(self, source, target_in):  # [B, S], [B, T] -> logits [B, T, V]
        tied = self.config["tie_embeddings"]
        source_matrix = (self.embedding if tied else self.source_tokens).weight
        target_matrix = (self.embedding if tied else self.target_tokens).weight
        window = self.config["attention_window"]
        memory_mask = source.ne(PAD).unsqueeze(1).unsqueeze(2)  # [B, 1, 1, S]
        encoder_mask = memory_mask
        length = target_in.size(1)
        causal = torch.ones(length, length, dtype=torch.bool).tril().view(1, 1, length, length)
        if window > 0:
            encoder_mask = memory_mask & window_mask(source.size(1), source.size(1), window)
            causal = causal & window_mask(length, length, window)
        memory = self.encoder(self.source_embedding(source, source_matrix), encoder_mask)
        hidden = self.decoder(self.target_embedding(target_in, target_matrix), memory, causal, memory_mask)
        return torch.matmul(hidden, self.embedding.weight.t()) if tied else self.output_projection(hidden)


def forward_matmul_flops(config, batch, S, T):
    """Multiply-adds x 2 of every matrix product in one forward pass (see the docstring)."""
    D, Fd, V = config["d_model"], config["d_ff"], config["vocab_size"]
    encoder = 2 * batch * S * 3 * D * D + 4 * batch * S * S * D + 2 * batch * S * D * D + 4 * batch * S * D * Fd
    decoder = (2 * batch * T * 3 * D * D + 4 * batch * T * T * D + 2 * batch * T * D * D
               + 2 * batch * T * D * D + 2 * batch * S * 2 * D * D + 4 * batch * T * S * D + 2 * batch * T * D * D
               + 4 * batch * T * D * Fd)
    return config["encoder_layers"] * encoder + config["decoder_layers"] * decoder + 2 * batch * T * D * V


# ---------------------------------------------------------------------------------------------
# Training (train/trainer.cpp, train/lr_schedule.cpp)
# ---------------------------------------------------------------------------------------------

def learning_rate(args, d_model, step):
    s = max(step, 1)
    if args.lr_scheduler == "inverse_sqrt":
        return args.lr * s / args.warmup if s < args.warmup else args.lr * math.sqrt(args.warmup / s)
    return args.lr_factor * d_model ** -0.5 * min(s ** -0.5, s * args.warmup ** -1.5)


def train_update(model, optimizer, data, batches, args, autocast_dtype):
    """One update over `batches` -> (summed loss, target tokens, all non-pad tokens, forward FLOPs)."""
    loss_sum, target_tokens, all_tokens, flops = 0.0, 0, 0, 0
    for indices in batches:
        source, target_in, target_out, n_source, n_target = collate(data, indices)
        with torch.autocast("cpu", dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = model(source, target_in)  # [B, T, V]
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), target_out.view(-1),
                                   ignore_index=PAD, label_smoothing=args.label_smoothing, reduction="sum")
        loss.backward()
        loss_sum += loss.item()
        target_tokens += n_target
        all_tokens += n_source + n_target
        flops += forward_matmul_flops(model.config, source.size(0), source.size(1), target_in.size(1))
    with torch.no_grad():
        # Summed loss over the accumulated batches, divided by their target tokens (as tfm).
        for p in model.parameters():
            if p.grad is not None:
                p.grad.div_(max(target_tokens, 1))
    if args.clip_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_norm)
    optimizer.step()
    optimizer.zero_grad()
    return loss_sum, target_tokens, all_tokens, flops


def build_model(args, vocab_size):
    if args.config_from:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.load's deprecation notice
            config = json.loads(torch.jit.load(args.config_from, map_location="cpu").model_config)
        if config["vocab_size"] != vocab_size:
            sys.exit(f"{args.config_from}: vocabulary {config['vocab_size']} != the data's {vocab_size}")
    else:
        config = preset_config(args.preset, vocab_size)
    torch.manual_seed(args.seed)
    return Transformer(config)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="directory written by `tfm prepare` (reads train.bin)")
    p.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    p.add_argument("--config-from", help="take the architecture from this tfm model file instead of --preset")
    p.add_argument("--max-tokens", type=int, default=4096, help="padded subwords per side per batch")
    p.add_argument("--update-freq", type=int, default=1, help="batches accumulated per update")
    p.add_argument("--seed", type=int, default=1, help="initialisation and batch order (as tfm's --seed)")
    p.add_argument("--lr-scheduler", default="noam", choices=["noam", "inverse_sqrt"])
    p.add_argument("--lr-factor", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=5e-4, help="inverse_sqrt: peak learning rate")
    p.add_argument("--warmup", type=int, default=4000)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--clip-norm", type=float, default=0.0)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "fp32", "bf16"])
    p.add_argument("--time-limit", type=float, default=0, help="seconds of training (0 = no limit)")
    p.add_argument("--max-updates", type=int, default=0, help="0 = no limit")
    p.add_argument("--log-interval", type=int, default=50, help="updates between loss/speed lines")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0 = all cores)")
    args = p.parse_args()
    if args.time_limit <= 0 and args.max_updates <= 0:
        p.error("give --time-limit SECONDS or --max-updates N")
    if args.max_tokens < 2 or args.update_freq < 1 or args.warmup < 1 or args.log_interval < 1:
        p.error("--max-tokens >= 2, --update-freq >= 1, --warmup >= 1, --log-interval >= 1")
    return args


class Progress:
    """Running sums, one log line every --log-interval updates, and the final summary."""

    def __init__(self, args, d_model):
        self.args, self.d_model = args, d_model
        self.start = self.last_log = time.perf_counter()
        self.update, self.tokens, self.flops, self.curve = 0, 0, 0, []
        self.interval_loss = self.interval_target = self.interval_tokens = self.interval_flops = 0

    def add(self, loss_sum, target_tokens, tokens, forward_flops):
        self.update += 1
        self.tokens += tokens
        self.flops += 3 * forward_flops  # forward + backward (2x forward)
        self.interval_flops += 3 * forward_flops
        self.interval_loss += loss_sum
        self.interval_target += target_tokens
        self.interval_tokens += tokens

    def should_stop(self):
        return (self.args.max_updates > 0 and self.update >= self.args.max_updates) or \
               (self.args.time_limit > 0 and time.perf_counter() - self.start >= self.args.time_limit)

    def log(self, epoch, batch, batches):
        now = time.perf_counter()
        loss = self.interval_loss / max(self.interval_target, 1)
        self.curve.append((self.update, round(loss, 4)))
        print(f"epoch {epoch} | batch {batch}/{batches} | update {self.update} | loss {loss:.3f} | "
              f"lr {learning_rate(self.args, self.d_model, self.update):.3g} | "
              f"{self.interval_tokens / (now - self.last_log):.0f} tok/s | "
              f"{self.interval_flops / (now - self.last_log) / 1e9:.2f} GFLOP/s | {now - self.start:.1f} s", file=sys.stderr)
        self.interval_loss = self.interval_target = self.interval_tokens = self.interval_flops = 0
        self.last_log = now

    def summary(self):
        seconds = time.perf_counter() - self.start
        print(f"reference_train: {self.update} updates, {self.tokens} tokens in {seconds:.1f} s: "
              f"{self.tokens / seconds:.0f} tokens/s, {self.update / seconds:.2f} updates/s, "
              f"{self.flops / seconds / 1e9:.2f} GFLOP/s (matmuls, fwd+bwd); "
              f"loss curve (update, loss/token): {self.curve}", file=sys.stderr)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads if args.threads > 0 else len(os.sched_getaffinity(0)))
    data = load_dataset(os.path.join(args.data, "train.bin"))
    source_lengths, target_lengths = np.diff(data[0]), np.diff(data[1])
    model = build_model(args, data[4])
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    autocast_dtype = torch.bfloat16 if args.dtype in ("bfloat16", "bf16") else None
    parameters = sum(p.numel() for p in model.parameters())
    print(f"reference_train: {parameters} parameters, config {json.dumps(model.config)}; "
          f"{len(source_lengths)} pairs; {torch.get_num_threads()} threads, {args.dtype}", file=sys.stderr)

    progress, epoch, stop = Progress(args, model.config["d_model"]), 1, False
    while not stop:
        batches = make_batches(source_lengths, target_lengths, args.max_tokens, args.seed, epoch)
        for first in range(0, len(batches), args.update_freq):
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(args, model.config["d_model"], progress.update + 1)
            group_batches = batches[first:first + args.update_freq]
            progress.add(*train_update(model, optimizer, data, group_batches, args, autocast_dtype))
            stop = progress.should_stop()
            if progress.update % args.log_interval == 0 or stop:
                progress.log(epoch, first + len(group_batches), len(batches))
            if stop:
                break
        epoch += 1
    progress.summary()


if __name__ == "__main__":
    main()
