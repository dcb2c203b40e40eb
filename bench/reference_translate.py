#!/usr/bin/env python3
"""Plain-PyTorch reference for `tfm translate`: the same model, the same beam search, in Python.

It exists for speed comparisons: run it beside the C++ binary on the same model file and input,
and the gap between the two is what LibTorch-from-C++ buys over torch-from-Python for the same
tensor operations. It is not part of tfm and nothing in tfm depends on it.

What it mirrors, operation for operation (so that float32 translations are identical):
  model/embeddings.cpp   token embedding * sqrt(d_model) + sinusoidal positions (sin/cos
                         interleaved, base 10000, computed in float64 then cast), or learned ones
  model/attention*.cpp   fused in_proj [3D, D] (self-attention), q_proj [D, D] + kv_proj [2D, D]
                         (cross-attention), out_proj; q / sqrt(d_k) then q k^T; masked scores -inf,
                         softmax, rows without any key zeroed; the other scores (dot, general,
                         additive, cosine) too
  model/encoder.cpp, decoder.cpp
                         post-norm LayerNorm(x + sublayer(x)) or pre-norm x + sublayer(LayerNorm(x))
                         with a final LayerNorm; FFN w2(relu(w1 x)); an optional attention window;
                         incremental decoding with a key/value cache grown by torch.cat each step,
                         reordered by index_select (the encoder's keys and values only when a
                         sentence has left the batch: model/decoder_state.cpp)
  model/transformer.cpp  logits = h @ embedding.weight^T (tied) or output_projection (untied);
                         next-token log-probabilities in float32
  decode/beam_search.cpp GNMT length penalty ((5 + len) / 6)^alpha with len counting eos; maximum
                         output length a * source length + b (eos included); pad and bos never
                         produced, eos forced at the maximum length; of each sentence's top 2K
                         candidates eos finishes a hypothesis only when ranked within the top K;
                         at most K finished hypotheses kept per sentence; a sentence stops once no
                         live beam can beat its best finished one (is_done)
  decode/translator.cpp  input read in chunks of 4000 lines; sources = subwords + eos, truncated at
                         1024 subwords; sorted longest first; batches of at most --max-tokens padded
                         source tokens; bf16 converts the weights outright
  app/translate_command.cpp
                         the summary line: sentences, seconds (from the first read to the last
                         write, model loading excluded), sentences/s, target subwords/s (the best
                         hypotheses' subwords, eos excluded)

Model files: `torch.jit.load` reads any tfm model or checkpoint (attributes `format`,
`format_version`, `model_config` (JSON), `tokenizer` (the SentencePiece model's bytes) and the
`weights` submodule, whose parameters carry tfm's dotted names).

Needs torch and the `sentencepiece` package (pip install sentencepiece), e.g. tfm's venv:

    ~/.cache/tfm/venv/bin/python bench/reference_translate.py --model M.pt [--beam 4] \\
        [--lenpen 0.6] [--max-len-a 0] [--max-len-b 50] [--max-tokens 6000] \\
        [--dtype float32|bfloat16] [--threads 0] < input.en > output.de

Compare with `tfm translate --model M.pt --threads N < input.en > output.de`: the outputs should
be identical line for line in float32 with the same thread count.
"""
import argparse
import json
import math
import os
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

PAD, UNK, BOS, EOS = 0, 1, 2, 3  # tokenizer/special_ids.h
CHUNK_LINES = 4000               # app/translate_command.cpp: lines read before translating
MAX_SOURCE_LEN = 1024            # decode/translator.h: longer inputs are truncated


# ---------------------------------------------------------------------------------------------
# The model (model/*.cpp). Module and parameter names are tfm's, so a model file's weights load
# with load_state_dict(strict=True).
# ---------------------------------------------------------------------------------------------

class Linear(nn.Linear):
    """nn.Linear computed as LibTorch's C++ frontend does (torch::nn::functional::linear): addmm
    for 2-D inputs, else matmul followed by `+= bias`. Python's F.linear fuses the bias into the
    matrix product for 3-D inputs too, which rounds differently (by ~1e-7): without this, scores
    differ from tfm's in the last bits and a near-tie can pick a different token."""

    def forward(self, x):
        if x.dim() == 2 and self.bias is not None:
            return torch.addmm(self.bias, x, self.weight.t())
        output = x.matmul(self.weight.t())
        if self.bias is not None:
            output += self.bias
        return output


def sinusoidal_positions(first, length, d_model):
    """§3.5, interleaved sin/cos, in float64 then float32 -> [T, D]."""
    position = torch.arange(first, first + length, dtype=torch.float64).unsqueeze(1)  # [T, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)                           # [D/2]
    angle = position / torch.pow(10000.0, two_i / d_model)                             # [T, D/2]
    return torch.stack([torch.sin(angle), torch.cos(angle)], -1).view(length, d_model).float()


def window_mask(queries, keys, window, query_offset):
    """Restricted self-attention: |query position - key position| <= window -> [1, 1, T, S]."""
    q = torch.arange(query_offset, query_offset + queries).unsqueeze(1)
    k = torch.arange(keys).unsqueeze(0)
    return (q - k).abs().le(window).view(1, 1, queries, keys)


class TokenAndPosition(nn.Module):
    """Token vectors * sqrt(D) + positions, then dropout. The token matrix is owned (and
    registered) by the Transformer, possibly shared, so it is passed in."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        if config["positions"] == "learned":
            self.positions = nn.Embedding(config["max_positions"], config["d_model"])

    def forward(self, ids, tokens, first_position=0):  # ids [B, T] -> [B, T, D]
        length = ids.size(1)
        if self.config["positions"] == "sinusoidal":
            position_vectors = sinusoidal_positions(first_position, length, self.config["d_model"])
        else:
            position_vectors = self.positions.weight.narrow(0, first_position, length)
        token_vectors = F.embedding(ids, tokens) * math.sqrt(self.config["d_model"])
        embedded = token_vectors + position_vectors.to(token_vectors.dtype)
        return F.dropout(embedded, self.config["dropout"], self.training)


class Scorer(nn.Module):
    """Query-key compatibility per head (model/attention_score.cpp): q [B,H,T,Dh], k [B,H,S,Dh]
    -> [B, H, T, S]. Only the parameters' names and shapes matter here: they are loaded."""

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
                                torch.matmul(k, self.key_proj).unsqueeze(2))  # [B, H, T, S, Dh]
            return torch.matmul(hidden, self.energy.view(1, -1, 1, self.head_dim, 1)).squeeze(-1)
        qn, kn = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return torch.matmul(qn, kn.transpose(-2, -1)) * self.sharpness.view(1, -1, 1, 1)


def attend(scores, v, mask, dropout, training):
    """softmax(scores) v with masked scores -inf; a row with no key gets zero weights -> [B,H,T,Dh]."""
    if mask is not None:
        weights = torch.softmax(scores.masked_fill(mask.logical_not(), float("-inf")), -1)
        weights = weights.masked_fill(mask.any(-1, keepdim=True).logical_not(), 0.0)
    else:
        weights = torch.softmax(scores, -1)
    return torch.matmul(F.dropout(weights, dropout, training), v)


class MultiHeadAttention(nn.Module):
    """§3.2.2. Self-attention: in_proj [3D, D]; cross-attention: q_proj [D, D], kv_proj [2D, D]."""

    def __init__(self, config, self_attention):
        super().__init__()
        d = config["d_model"]
        self.d_model, self.heads, self.dropout = d, config["heads"], config["attention_dropout"]
        if self_attention:
            self.in_proj = Linear(d, 3 * d)
            for block in self.in_proj.weight.data.chunk(3, 0):
                nn.init.xavier_uniform_(block)
            nn.init.zeros_(self.in_proj.bias)
        else:
            self.q_proj, self.kv_proj = Linear(d, d), Linear(d, 2 * d)
            nn.init.xavier_uniform_(self.q_proj.weight)
            for block in self.kv_proj.weight.data.chunk(2, 0):
                nn.init.xavier_uniform_(block)
            nn.init.zeros_(self.q_proj.bias)
            nn.init.zeros_(self.kv_proj.bias)
        self.out_proj = Linear(d, d)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.zeros_(self.out_proj.bias)
        self.scorer = Scorer(config["score"], self.heads, d // self.heads)

    def split_heads(self, projected, n):  # [B, T, n*D] -> n tensors [B, H, T, Dh]
        b, t = projected.size(0), projected.size(1)
        return projected.view(b, t, n, self.heads, self.d_model // self.heads).permute(2, 0, 3, 1, 4).unbind(0)

    def project_qkv(self, x):
        return self.split_heads(self.in_proj(x), 3)

    def project_q(self, x):
        return self.split_heads(self.q_proj(x), 1)[0]

    def project_kv(self, memory):
        return self.split_heads(self.kv_proj(memory), 2)

    def attend_heads(self, q, k, v, mask):  # -> [B, T, D]
        context = attend(self.scorer(q, k), v, mask, self.dropout, self.training)  # [B, H, T, Dh]
        return self.out_proj(context.transpose(1, 2).reshape(context.size(0), context.size(2), self.d_model))

    def forward(self, x, mask, memory=None):
        if memory is None:
            q, k, v = self.project_qkv(x)
            return self.attend_heads(q, k, v, mask)
        k, v = self.project_kv(memory)
        return self.attend_heads(self.project_q(x), k, v, mask)


class FeedForward(nn.Module):
    """§3.3: w2(relu(w1 x))."""

    def __init__(self, config):
        super().__init__()
        self.w1 = Linear(config["d_model"], config["d_ff"])
        self.w2 = Linear(config["d_ff"], config["d_model"])
        self.relu_dropout = config["relu_dropout"]
        for layer in (self.w1, self.w2):
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def forward(self, x):
        return self.w2(F.dropout(torch.relu(self.w1(x)), self.relu_dropout, self.training))


def residual(x, norm, config, training, sublayer):
    """Post-norm LayerNorm(x + Dropout(sublayer(x))) or pre-norm x + Dropout(sublayer(LayerNorm(x)))."""
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
        h = residual(x, self.self_attention_norm, self.config, self.training,
                     lambda z: self.self_attention(z, mask))
        return residual(h, self.feed_forward_norm, self.config, self.training, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config["encoder_layers"]))
        if config["norm"] == "pre":
            self.final_norm = nn.LayerNorm(config["d_model"])

    def forward(self, x, mask):  # x [B, S, D], mask [B, 1, 1, S]
        if self.config["attention_window"] > 0:
            mask = mask & window_mask(x.size(1), x.size(1), self.config["attention_window"], 0)
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x) if self.config["norm"] == "pre" else x


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

    def step(self, x, cache, memory_mask, step):
        """One position. x [N, 1, D]; cache: dict with self_k/self_v [N, H, t, Dh] (grown here)
        and memory_k/memory_v [N, H, S, Dh] -> [N, 1, D]."""
        def self_attend(z):
            q, k, v = self.self_attention.project_qkv(z)  # each [N, H, 1, Dh]
            cache["self_k"] = k if cache["self_k"] is None else torch.cat([cache["self_k"], k], 2)
            cache["self_v"] = v if cache["self_v"] is None else torch.cat([cache["self_v"], v], 2)
            mask = None  # earlier positions exist only in the cache: causality needs no mask
            if self.config["attention_window"] > 0:
                mask = window_mask(1, step + 1, self.config["attention_window"], step)
            return self.self_attention.attend_heads(q, cache["self_k"], cache["self_v"], mask)

        def cross_attend(z):
            q = self.cross_attention.project_q(z)
            return self.cross_attention.attend_heads(q, cache["memory_k"], cache["memory_v"], memory_mask)

        h = residual(x, self.self_attention_norm, self.config, self.training, self_attend)
        h = residual(h, self.cross_attention_norm, self.config, self.training, cross_attend)
        return residual(h, self.feed_forward_norm, self.config, self.training, self.feed_forward)


class Decoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config["decoder_layers"]))
        if config["norm"] == "pre":
            self.final_norm = nn.LayerNorm(config["d_model"])

    def finish(self, h):
        return self.final_norm(h) if self.config["norm"] == "pre" else h

    def forward(self, x, memory, memory_mask):  # teacher forcing, x [B, T, D]
        length = x.size(1)
        self_mask = torch.ones(length, length, dtype=torch.bool).tril().view(1, 1, length, length)
        if self.config["attention_window"] > 0:
            self_mask = self_mask & window_mask(length, length, self.config["attention_window"], 0)
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return self.finish(x)


class DecoderState:
    """What incremental decoding carries between steps; rows are hypotheses."""

    def __init__(self, layers, memory_mask):
        self.layers = layers            # per layer: dict self_k, self_v, memory_k, memory_v
        self.memory_mask = memory_mask  # [N, 1, 1, S]
        self.step = 0

    def reorder(self, rows, same_memory=False):
        """Keeps rows `rows` ([N'] int64, repeats allowed). `same_memory`: every new row reads the
        encoder output its old row read (beams moving within one sentence), so the memory keys,
        values and mask, identical across those rows, are not copied."""
        for cache in self.layers:
            for key in ("self_k", "self_v") if same_memory else ("self_k", "self_v", "memory_k", "memory_v"):
                if cache[key] is not None:
                    cache[key] = cache[key].index_select(0, rows)
        if not same_memory:
            self.memory_mask = self.memory_mask.index_select(0, rows)


class Transformer(nn.Module):
    """§3: encoder-decoder. Tied: one `embedding` for source, target and output (§3.4)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        v, d = config["vocab_size"], config["d_model"]
        if config["tie_embeddings"]:
            self.embedding = self.make_token_embedding(v, d)
        else:
            self.source_tokens = self.make_token_embedding(v, d)
            self.target_tokens = self.make_token_embedding(v, d)
            self.output_projection = Linear(d, v, bias=False)
        self.source_embedding = TokenAndPosition(config)
        self.target_embedding = TokenAndPosition(config)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)

    @staticmethod
    def make_token_embedding(vocab_size, d_model):
        embedding = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        with torch.no_grad():
            embedding.weight.normal_(0.0, d_model ** -0.5)
            embedding.weight[PAD].zero_()
        return embedding

    def source_matrix(self):
        return (self.embedding if self.config["tie_embeddings"] else self.source_tokens).weight

    def target_matrix(self):
        return (self.embedding if self.config["tie_embeddings"] else self.target_tokens).weight

    def project(self, hidden):  # [.., D] -> [.., V]
        if self.config["tie_embeddings"]:
            return torch.matmul(hidden, self.embedding.weight.t())
        return self.output_projection(hidden)

    def encode(self, source):  # [B, S] -> memory [B, S, D], mask [B, 1, 1, S]
        mask = source.ne(PAD).unsqueeze(1).unsqueeze(2)
        return self.encoder(self.source_embedding(source, self.source_matrix()), mask), mask

    def forward(self, source, target_in):  # teacher forcing -> logits [B, T, V]
        memory, mask = self.encode(source)
        return self.project(self.decoder(self.target_embedding(target_in, self.target_matrix()), memory, mask))

    def start_decoding(self, memory, mask):
        layers = []
        for layer in self.decoder.layers:
            k, v = layer.cross_attention.project_kv(memory)
            layers.append({"self_k": None, "self_v": None, "memory_k": k, "memory_v": v})
        return DecoderState(layers, mask)

    def step(self, last_tokens, state):  # [N] -> log-probabilities [N, V] float32
        h = self.target_embedding(last_tokens.view(-1, 1), self.target_matrix(), state.step)  # [N, 1, D]
        for layer, cache in zip(self.decoder.layers, state.layers):
            h = layer.step(h, cache, state.memory_mask, state.step)
        state.step += 1
        h = self.decoder.finish(h)
        return torch.log_softmax(self.project(h.squeeze(1)).float(), -1)


def load_model_file(path):
    """A tfm model/checkpoint -> (Transformer in eval mode, config dict, tokenizer bytes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.load's deprecation notice
        archive = torch.jit.load(path, map_location="cpu")
    if archive.format != "tfm-model" or archive.format_version != 1:
        sys.exit(f"{path}: format {archive.format!r} version {archive.format_version}, this script reads tfm-model 1")
    config = json.loads(archive.model_config)
    model = Transformer(config)
    state = dict(archive.weights.named_parameters())
    state.update(dict(archive.weights.named_buffers()))
    model.load_state_dict(state, strict=True)
    return model.eval(), config, archive.tokenizer.numpy().tobytes()


# ---------------------------------------------------------------------------------------------
# Beam search (decode/beam_search.cpp)
# ---------------------------------------------------------------------------------------------

def length_penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


class SentenceSearch:
    def __init__(self, index, max_len, beam):
        self.index, self.max_len = index, max_len
        self.beams = [([], 0.0)] + [([], -math.inf)] * (beam - 1)  # (tokens, log_prob); -inf = empty slot
        self.finished = []  # (score, log_prob, tokens), best first, at most K


def add_finished(sentence, tokens, log_prob, beam, alpha):
    score = log_prob / length_penalty(len(tokens) + 1, alpha)
    position = 0  # upper_bound: after every hypothesis scoring >= this one
    while position < len(sentence.finished) and sentence.finished[position][0] >= score:
        position += 1
    sentence.finished.insert(position, (score, log_prob, tokens))
    del sentence.finished[beam:]


def is_done(sentence, generated, alpha, nbest=1):
    best_live = max(log_prob for _, log_prob in sentence.beams)
    if best_live == -math.inf or generated >= sentence.max_len:
        return True
    if len(sentence.finished) < nbest:
        return False
    # The largest penalty over the lengths still reachable, generated+1 .. max_len: the penalty is
    # monotonic in the length, so it is at one end.
    largest_penalty = max(length_penalty(generated + 1, alpha), length_penalty(sentence.max_len, alpha))
    return sentence.finished[nbest - 1][0] >= best_live / largest_penalty


def select_next(sentence, scores, ids, vocab, beam, alpha):
    """From the sentence's top 2K (score, beam*V+token) candidates: eos within the top K finishes;
    the first K others become the beams. Returns (parent rows, next tokens), K each."""
    beams, parents, tokens = [], [], []
    for rank in range(len(scores)):
        if len(beams) >= beam:
            break
        score = scores[rank]
        if score == -math.inf:
            break
        parent, token = divmod(ids[rank], vocab)
        if token == EOS:
            if rank < beam:
                add_finished(sentence, sentence.beams[parent][0], score, beam, alpha)
            continue
        beams.append((sentence.beams[parent][0] + [token], score))
        parents.append(parent)
        tokens.append(token)
    while len(beams) < beam:  # empty slots keep K rows per sentence
        beams.append(([], -math.inf))
        parents.append(0)
        tokens.append(EOS)
    sentence.beams = beams
    return parents, tokens


def apply_constraints(log_probs, active, step, beam):
    """Never pad or bos; eos forced at a sentence's maximum length. log_probs [N, V], in place."""
    log_probs[:, PAD] = -math.inf
    log_probs[:, BOS] = -math.inf
    for a, sentence in enumerate(active):
        if step + 1 < sentence.max_len:
            continue
        rows = log_probs[a * beam:(a + 1) * beam]  # [K, V]
        eos = rows[:, EOS].clone()
        rows.fill_(-math.inf)
        rows[:, EOS] = eos


def beam_search(model, source, source_lengths, beam, alpha, max_len_a, max_len_b):
    """source [B, S] (eos-terminated, pad-filled) -> per sentence the best finished hypothesis
    (score, log_prob, tokens without bos/eos), or None."""
    batch, vocab = source.size(0), model.config["vocab_size"]
    active = [SentenceSearch(b, max(int(max_len_a * n) + max_len_b, 1), beam) for b, n in enumerate(source_lengths)]
    results = [None] * batch
    state = model.start_decoding(*model.encode(source))
    state.reorder(torch.arange(batch).repeat_interleave(beam))  # [B*K] rows
    last_tokens = torch.full((batch * beam,), BOS, dtype=torch.long)
    beam_scores = torch.full((batch * beam,), -math.inf)
    beam_scores[::beam] = 0.0
    step = 0
    while active:
        log_probs = model.step(last_tokens, state)  # [N, V]
        apply_constraints(log_probs, active, step, beam)
        totals = (beam_scores.unsqueeze(1) + log_probs).view(len(active), -1)  # [A, K*V]
        top_scores, top_ids = totals.topk(min(2 * beam, totals.size(1)))      # [A, 2K]
        top_scores, top_ids = top_scores.tolist(), top_ids.tolist()
        still_active, keep_rows, next_tokens, next_scores = [], [], [], []
        for a, sentence in enumerate(active):
            parents, tokens = select_next(sentence, top_scores[a], top_ids[a], vocab, beam, alpha)
            if is_done(sentence, step + 1, alpha):
                results[sentence.index] = sentence.finished[0] if sentence.finished else None
                continue
            keep_rows += [a * beam + p for p in parents]
            next_tokens += tokens
            next_scores += [log_prob for _, log_prob in sentence.beams]
            still_active.append(sentence)
        same_source = len(still_active) == len(active)  # rows stay within their sentence's K rows
        active = still_active
        if not active:
            break
        state.reorder(torch.tensor(keep_rows, dtype=torch.long), same_source)
        last_tokens = torch.tensor(next_tokens, dtype=torch.long)
        beam_scores = torch.tensor(next_scores, dtype=torch.float32)
        step += 1
    return results


# ---------------------------------------------------------------------------------------------
# Translation (decode/translator.cpp)
# ---------------------------------------------------------------------------------------------

def group_rows(order, sources, max_tokens):
    """Rows (longest first) into batches of sentences x (longest + eos) <= max_tokens."""
    batches, current, longest = [], [], 0
    for row in order:
        length = len(sources[row]) + 1
        if current and max(longest, length) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(row)
        longest = max(longest, length)
    if current:
        batches.append(current)
    return batches


def translate_lines(model, sp, lines, args):
    """-> (output texts, target subwords produced)."""
    sources = [sp.encode(line)[:MAX_SOURCE_LEN] for line in lines]
    order = sorted((i for i, ids in enumerate(sources) if ids), key=lambda i: -len(sources[i]))  # stable
    outputs, target_tokens = [""] * len(lines), 0
    for rows in group_rows(order, sources, args.max_tokens):
        longest = max(len(sources[r]) for r in rows) + 1
        source = torch.full((len(rows), longest), PAD, dtype=torch.long)  # [B, S]
        for b, r in enumerate(rows):
            source[b, :len(sources[r])] = torch.tensor(sources[r], dtype=torch.long)
            source[b, len(sources[r])] = EOS
        best = beam_search(model, source, [len(sources[r]) for r in rows], args.beam, args.lenpen,
                           args.max_len_a, args.max_len_b)
        for r, hypothesis in zip(rows, best):
            if hypothesis is not None:
                tokens = hypothesis[2]
                outputs[r] = sp.decode([t for t in tokens if t not in (PAD, BOS, EOS)])
                target_tokens += len(tokens)
    return outputs, target_tokens


def read_lines(path):
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    data = stream.read().decode("utf-8")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline after the last line ends it, it does not start another
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", "-m", required=True, help="tfm model or checkpoint file")
    parser.add_argument("--input", "-i", default="-", help="text to translate (- = stdin)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--lenpen", type=float, default=0.6)
    parser.add_argument("--max-len-a", type=float, default=0.0)
    parser.add_argument("--max-len-b", type=int, default=50)
    parser.add_argument("--max-tokens", type=int, default=6000, help="padded source subwords per batch")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "fp32", "bf16"])
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0 = all cores)")
    args = parser.parse_args()
    if args.beam < 1 or args.max_tokens < 1 or args.max_len_a < 0 or args.max_len_b < 0 or \
            (args.max_len_a == 0 and args.max_len_b == 0):
        parser.error("--beam and --max-tokens must be >= 1; --max-len-a/-b >= 0 and not both 0")
    import sentencepiece  # here, so --help works without it

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    else:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    model, config, tokenizer_bytes = load_model_file(args.model)
    if args.dtype in ("bfloat16", "bf16"):
        model = model.to(torch.bfloat16)  # inference converts the weights outright, as tfm does
    sp = sentencepiece.SentencePieceProcessor(model_proto=tokenizer_bytes)
    if sp.get_piece_size() != config["vocab_size"]:
        sys.exit(f"model vocabulary {config['vocab_size']} != tokenizer vocabulary {sp.get_piece_size()}")

    start = time.perf_counter()
    lines = read_lines(args.input)
    target_tokens = 0
    with torch.inference_mode():
        for first in range(0, len(lines), CHUNK_LINES):
            outputs, produced = translate_lines(model, sp, lines[first:first + CHUNK_LINES], args)
            target_tokens += produced
            sys.stdout.write("".join(text + "\n" for text in outputs))
            sys.stdout.flush()
    seconds = time.perf_counter() - start
    print(f"reference_translate: translated {len(lines)} sentences in {seconds:.2f} s: "
          f"{len(lines) / max(seconds, 1e-9):.1f} sentences/s, {target_tokens / max(seconds, 1e-9):.1f} "
          f"target subwords/s ({torch.get_num_threads()} threads, {args.dtype}, beam {args.beam})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
