#!/usr/bin/env python3
"""Converts a tfm model file into a CTranslate2 model directory, for speed comparisons.

The weights are copied as they are (float32, or quantized to int8 by CTranslate2's own converter
code with --quantization int8), so `bench/ct2_translate.py` decodes the same model `tfm translate`
decodes. It is not part of tfm and nothing in tfm depends on it.

    ~/.cache/tfm/venv/bin/python bench/ct2_convert.py --model M.pt --out DIR \\
        [--quantization float32|int8] [--position-rows 2048] [--force]

Runs with tfm's venv (it needs torch to read the model file). The `ctranslate2` and
`sentencepiece` packages are imported from that venv when present, else from the CTranslate2 venv
(--ct2-venv, default ~/.cache/tfm/ct2-venv, or $CT2_VENV), whose site-packages is appended to
sys.path (both venvs are Python 3.11).

How tfm's model (model/*.cpp) maps onto CTranslate2's TransformerSpec:
  embeddings        tied: `embedding.weight` is the source and target embedding and the output
                    projection (CTranslate2 stores it once, as aliases); untied: `source_tokens`,
                    `target_tokens` and `output_projection` (no bias). Both scale by sqrt(d_model).
  positions         sinusoidal: tfm's table (sin/cos interleaved: even columns sin, odd cos, base
                    10000, computed in float64) is written explicitly as each side's position
                    encodings, because CTranslate2's built-in table concatenates the sin and cos
                    halves instead; learned: `{source,target}_embedding.positions.weight`.
  attention         self-attention: the fused in_proj [3D, D] (Q;K;V) is CTranslate2's fused
                    linear_0, out_proj its linear_1; cross-attention: q_proj -> linear_0, the fused
                    kv_proj [2D, D] (K;V) -> linear_1, out_proj -> linear_2. Both scale queries by
                    1/sqrt(d_k) (scaled_dot only).
  layer norms       self_attention_norm, cross_attention_norm and feed_forward_norm are the
                    sub-layers' norms; post-norm LayerNorm(x + f(x)) is CTranslate2's pre_norm=False,
                    pre-norm x + f(LayerNorm(x)) its pre_norm=True with `final_norm` as the
                    encoder's / decoder's final layer_norm. epsilon 1e-5 (torch's default).
  feed-forward      w1 -> linear_0, relu, w2 -> linear_1.
  vocabulary        shared: the SentencePiece pieces in id order (<pad>=0, <unk>=1, <s>=2, </s>=3,
                    tfm's special ids), CTranslate2's unk/bos/eos/decoder-start tokens set to
                    <unk>, <s>, </s>, <s>.

Unsupported (the conversion stops with a message): attention scores other than scaled_dot and a
restricted attention window (neither exists in CTranslate2's Transformer).

DIR receives CTranslate2's model.bin, config.json and shared_vocabulary.json, plus spm.model
(the SentencePiece model, for bench/ct2_translate.py) and tfm_conversion.json (what was converted,
and the number of position rows: longer sequences cannot be decoded). A model that `tfm shortlist`
wrote also gives vmap.txt, its shortlist as CTranslate2's vocabulary map (bench/ct2_translate.py
--use-vmap): the same candidates for each source subword, which CTranslate2 unites over a batch.
"""
import argparse
import json
import os
import sys
import tempfile
import warnings


def import_ct2(venv):
    """Imports ctranslate2 and sentencepiece, from the CTranslate2 venv if this one lacks them."""
    try:
        import ctranslate2  # noqa: F401
        import sentencepiece  # noqa: F401
    except ImportError:
        site = os.path.join(venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        if not os.path.isdir(site):
            sys.exit(f"ct2_convert: ctranslate2/sentencepiece not importable and {site} missing (see --ct2-venv)")
        sys.path.append(site)
    import ctranslate2
    import sentencepiece
    return ctranslate2, sentencepiece


def interleaved_sinusoids(rows, d_model):
    """tfm's positions (model/embeddings.cpp): angle = pos / 10000^(2i/D) in float64, column 2i
    sin, column 2i+1 cos, then float32 -> [rows, D]."""
    import numpy as np
    position = np.arange(rows, dtype=np.float64)[:, None]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    angle = position / np.power(10000.0, two_i / d_model)
    table = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(rows, d_model)
    return table.astype(np.float32)


def load_tfm(path):
    """-> (config dict, {name: float32 numpy array}, SentencePiece model bytes)."""
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.load's deprecation notice
        archive = torch.jit.load(path, map_location="cpu")
    fmt = getattr(archive, "format", None)
    version = getattr(archive, "format_version", None)
    if fmt != "tfm-model" or version != 1:
        sys.exit(f"ct2_convert: {path}: format {fmt!r} version {version}, expected a tfm-model 1 file")
    config = json.loads(archive.model_config)
    weights = {name: p.detach().to(torch.float32).contiguous().numpy()
               for name, p in archive.weights.named_parameters()}
    weights.update({name: b.detach().to(torch.float32).contiguous().numpy()
                    for name, b in archive.weights.named_buffers() if b.is_floating_point()})
    shortlist = None
    if hasattr(archive, "shortlist"):  # written by `tfm shortlist`
        stored = archive.shortlist
        shortlist = (stored.frequent.tolist(), stored.offsets.tolist(), stored.targets.tolist())
    return config, weights, archive.tokenizer.numpy().tobytes(), shortlist


def write_vmap(path, pieces, shortlist):
    """tfm's shortlist as CTranslate2's vocabulary map: `<source piece>\t<target pieces>` per source
    subword with candidates, and `\t<the frequent targets>` (the empty key: always candidates).
    CTranslate2 adds <unk>, <s> and </s> itself; tfm's special ids are candidates in tfm too."""
    frequent, offsets, targets = shortlist
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t" + " ".join(pieces[t] for t in frequent) + "\n")
        for source in range(len(offsets) - 1):
            mine = targets[offsets[source]:offsets[source + 1]]
            if mine:
                f.write(pieces[source] + "\t" + " ".join(pieces[t] for t in mine) + "\n")


def check_supported(config):
    problems = []
    if config.get("score", "scaled_dot") != "scaled_dot":
        problems.append(f"score {config['score']!r} (CTranslate2 has scaled_dot attention only)")
    if int(config.get("attention_window", 0)) != 0:
        problems.append(f"attention_window {config['attention_window']} (restricted self-attention)")
    if config.get("positions") not in ("sinusoidal", "learned"):
        problems.append(f"positions {config.get('positions')!r}")
    if config.get("norm") not in ("post", "pre"):
        problems.append(f"norm {config.get('norm')!r}")
    if config["d_model"] % config["heads"] != 0:
        problems.append(f"d_model {config['d_model']} not divisible by heads {config['heads']}")
    if problems:
        sys.exit("ct2_convert: this model cannot be converted: " + "; ".join(problems))


def build_spec(ct2, config, weights, pieces, position_rows):
    """Fills a TransformerSpec with tfm's weights -> (spec, names of the tfm weights used)."""
    from ctranslate2.specs import transformer_spec

    pre_norm = config["norm"] == "pre"
    spec = transformer_spec.TransformerSpec.from_config(
        (config["encoder_layers"], config["decoder_layers"]), config["heads"],
        pre_norm=pre_norm, activation=ct2.specs.common_spec.Activation.RELU)
    spec.config.layer_norm_epsilon = 1e-5  # torch::nn::LayerNorm's default
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = "<unk>", "<s>", "</s>"
    spec.config.decoder_start_token = "<s>"
    spec.config.add_source_bos = False
    spec.config.add_source_eos = False  # bench/ct2_translate.py appends </s> itself, as tfm does

    used = set()

    def w(name):
        if name not in weights:
            sys.exit(f"ct2_convert: the model file has no parameter {name!r}")
        used.add(name)
        return weights[name]

    def linear(target, prefix, bias=True):
        target.weight = w(prefix + ".weight")
        if bias:
            target.bias = w(prefix + ".bias")

    def norm(target, prefix):
        target.gamma = w(prefix + ".weight")
        target.beta = w(prefix + ".bias")

    def positions(side):
        if config["positions"] == "sinusoidal":
            return interleaved_sinusoids(position_rows, config["d_model"])
        return w(f"{side}_embedding.positions.weight")

    if config["tie_embeddings"]:
        source_tokens = target_tokens = output = "embedding.weight"
    else:
        source_tokens, target_tokens, output = \
            "source_tokens.weight", "target_tokens.weight", "output_projection.weight"

    encoder = spec.encoder
    encoder.embeddings[0].weight = w(source_tokens)
    encoder.scale_embeddings = True  # * sqrt(d_model)
    encoder.position_encodings.encodings = positions("source")
    for i, layer in enumerate(encoder.layer):
        p = f"encoder.layers.{i}."
        linear(layer.self_attention.linear[0], p + "self_attention.in_proj")   # fused Q;K;V
        linear(layer.self_attention.linear[1], p + "self_attention.out_proj")
        norm(layer.self_attention.layer_norm, p + "self_attention_norm")
        linear(layer.ffn.linear_0, p + "feed_forward.w1")
        linear(layer.ffn.linear_1, p + "feed_forward.w2")
        norm(layer.ffn.layer_norm, p + "feed_forward_norm")
    if pre_norm:
        norm(encoder.layer_norm, "encoder.final_norm")

    decoder = spec.decoder
    decoder.embeddings.weight = w(target_tokens)
    decoder.scale_embeddings = True
    decoder.position_encodings.encodings = positions("target")
    for i, layer in enumerate(decoder.layer):
        p = f"decoder.layers.{i}."
        linear(layer.self_attention.linear[0], p + "self_attention.in_proj")   # fused Q;K;V
        linear(layer.self_attention.linear[1], p + "self_attention.out_proj")
        norm(layer.self_attention.layer_norm, p + "self_attention_norm")
        linear(layer.attention.linear[0], p + "cross_attention.q_proj")
        linear(layer.attention.linear[1], p + "cross_attention.kv_proj")       # fused K;V
        linear(layer.attention.linear[2], p + "cross_attention.out_proj")
        norm(layer.attention.layer_norm, p + "cross_attention_norm")
        linear(layer.ffn.linear_0, p + "feed_forward.w1")
        linear(layer.ffn.linear_1, p + "feed_forward.w2")
        norm(layer.ffn.layer_norm, p + "feed_forward_norm")
    if pre_norm:
        norm(decoder.layer_norm, "decoder.final_norm")
    decoder.projection.weight = w(output)  # no bias: logits = h @ E^T

    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    return spec, used


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="tfm model or checkpoint file")
    parser.add_argument("--out", required=True, help="CTranslate2 model directory to write")
    parser.add_argument("--quantization", default="float32",
                        help="float32 (default) or int8; any other CTranslate2 weight type works too")
    parser.add_argument("--position-rows", type=int, default=2048,
                        help="rows of the sinusoidal position table (longest source+eos or output)")
    parser.add_argument("--force", action="store_true", help="replace DIR if it exists")
    parser.add_argument("--ct2-venv", default=os.environ.get("CT2_VENV", os.path.expanduser("~/.cache/tfm/ct2-venv")),
                        help="venv to import ctranslate2/sentencepiece from when this Python lacks them")
    args = parser.parse_args()
    if args.position_rows < 2:
        parser.error("--position-rows must be >= 2")
    if os.path.exists(args.out) and not args.force:
        sys.exit(f"ct2_convert: {args.out} exists (--force replaces it)")

    ct2, sentencepiece = import_ct2(args.ct2_venv)
    from ctranslate2.converters import Converter
    from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES
    if args.quantization not in ACCEPTED_MODEL_TYPES:
        parser.error(f"--quantization: one of {', '.join(ACCEPTED_MODEL_TYPES)}")

    config, weights, tokenizer_bytes, shortlist = load_tfm(args.model)
    check_supported(config)
    sp = sentencepiece.SentencePieceProcessor(model_proto=tokenizer_bytes)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if len(pieces) != config["vocab_size"]:
        sys.exit(f"ct2_convert: model vocabulary {config['vocab_size']} != tokenizer vocabulary {len(pieces)}")
    expected = {0: "<pad>", 1: "<unk>", 2: "<s>", 3: "</s>"}
    wrong = {i: pieces[i] for i, piece in expected.items() if pieces[i] != piece}
    if wrong:
        sys.exit(f"ct2_convert: special pieces {wrong}, expected {expected} (tfm's special ids)")
    if len(set(pieces)) != len(pieces):
        sys.exit("ct2_convert: the SentencePiece model has duplicate pieces")

    with tempfile.TemporaryDirectory() as scratch:
        spm_path = os.path.join(scratch, "spm.model")
        with open(spm_path, "wb") as f:
            f.write(tokenizer_bytes)
        info_path = os.path.join(scratch, "tfm_conversion.json")
        with open(info_path, "w", encoding="utf-8") as f:
            json.dump({"source_model": os.path.abspath(args.model), "model_config": config,
                       "quantization": args.quantization,
                       "position_rows": args.position_rows if config["positions"] == "sinusoidal"
                       else config["max_positions"],
                       "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3}}, f, indent=2)
            f.write("\n")
        vmap_path = os.path.join(scratch, "vmap.txt")
        if shortlist is not None:
            write_vmap(vmap_path, pieces, shortlist)

        class TfmConverter(Converter):
            """CTranslate2's Converter does validate(), optimize(quantization) (aliasing the tied
            embedding, quantizing) and save(); _load supplies the filled spec."""

            def _load(self):
                spec, used = build_spec(ct2, config, weights, pieces, args.position_rows)
                unused = sorted(set(weights) - used)
                if unused:
                    sys.exit(f"ct2_convert: parameters not converted (unsupported model?): {', '.join(unused)}")
                spec.register_file(spm_path, "spm.model")
                spec.register_file(info_path, "tfm_conversion.json")
                if shortlist is not None:
                    spec.register_file(vmap_path, "vmap.txt")
                return spec

        out = TfmConverter().convert(args.out, quantization=args.quantization, force=args.force)

    size = os.path.getsize(os.path.join(out, "model.bin"))
    print(f"ct2_convert: {args.model} -> {out} ({config['encoder_layers']}+{config['decoder_layers']} layers, "
          f"d_model {config['d_model']}, {config['heads']} heads, {config['norm']}-norm, "
          f"{'tied' if config['tie_embeddings'] else 'untied'} embeddings, {config['positions']} positions, "
          f"{args.quantization}, model.bin {size / 2**20:.1f} MiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
