#!/usr/bin/env python3
"""Translates with CTranslate2 a tfm model converted by bench/ct2_convert.py, for speed comparisons.

    ~/.cache/tfm/ct2-venv/bin/python bench/ct2_translate.py --model-dir DIR [--beam 4] \\
        [--lenpen 0.6] [--max-len 50] [--threads 2] [--inter-threads 1] [--batch-tokens 6000] \\
        [--compute-type float32|int8] [--use-vmap] < input.en > output.de

Needs the `ctranslate2` and `sentencepiece` packages (the CTranslate2 venv has both); not torch.
One output line per input line, in order; an empty (or all-blank) input line gives an empty output
line without being translated. It is not part of tfm and nothing in tfm depends on it.

Mirrors `tfm translate` where CTranslate2 lets it:
  sources           SentencePiece pieces of DIR/spm.model, at most 1024, plus </s> (tfm's
                    decode/translator.cpp); the decoder starts from <s>
  output length     --max-len counts eos, as tfm's --max-len-b (with --max-len-a 0): at most
                    max-len - 1 subwords. CTranslate2's max_decoding_length excludes the end token,
                    so it gets max-len - 1. min_decoding_length 0: eos may come first, as in tfm.
  banned tokens     <pad> and <s> are never produced (suppressed, as tfm's step rules do)
  threads           --threads intra-op threads per batch; --inter-threads N decodes N batches at
                    once (CTranslate2's inter_threads), each on --threads threads. On two cores,
                    --threads 1 --inter-threads 2 is CTranslate2's fastest int8 (BENCHMARKS.md).
  batching          inputs read in chunks of 4000 lines; CTranslate2 sorts each chunk by length
                    and cuts it into batches of at most --batch-tokens tokens (batch_type "tokens").
                    CTranslate2 sums the sources' real lengths where tfm's --max-tokens counts
                    padded ones (longest x sentences); after sorting the two nearly agree.
  summary line      on stderr, the same as tfm's: `translated N sentences in S.SS s: X.X
                    sentences/s, Y.Y target subwords/s`; the clock runs from the first read of the
                    input to the last write (tokenization included, model loading excluded), as in
                    tfm's app/translate_command.cpp; target subwords are the best hypotheses'
                    subwords, eos excluded.

Differences that remain (outputs can differ slightly from tfm's with --beam > 1):
  * length penalty: CTranslate2 divides a hypothesis' log-probability by |Y|^alpha with |Y|
    excluding eos; tfm uses GNMT's ((5 + |Y|) / 6)^alpha with |Y| counting eos. Greedy search
    (--beam 1) is unaffected.
  * when a sentence stops: with a length penalty, CTranslate2 ends it once `beam` hypotheses have
    finished (patience 1), as tfm's --early-stop does; tfm's default searches on until no live
    hypothesis can still beat them. Its kernels (oneDNN/MKL/ruy GEMMs, fused softmax/layer norm) round
    differently from LibTorch's, so a near-tie can go the other way.
  * int8: CTranslate2 quantizes per output row, the embeddings/output projection included, with its
    own int8 GEMM; tfm's --quantize int8 is its own scheme. Compare their BLEU, not their strings.
"""
import argparse
import json
import os
import sys
import time

CHUNK_LINES = 4000      # tfm's app/translate_command.cpp reads this many lines before translating
MAX_SOURCE_LEN = 1024   # tfm's decode/translator.h: longer inputs are truncated (eos then added)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", required=True, help="directory written by bench/ct2_convert.py")
    parser.add_argument("--beam", type=int, default=4, help="beam size (1 = greedy)")
    parser.add_argument("--lenpen", type=float, default=0.6, help="CTranslate2's length penalty alpha")
    parser.add_argument("--max-len", type=int, default=50, help="maximum output length, eos included")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (per batch)")
    parser.add_argument("--inter-threads", type=int, default=1,
                        help="batches decoded at once (CTranslate2's inter_threads), each on --threads threads")
    parser.add_argument("--batch-tokens", type=int, default=6000, help="source tokens per batch")
    parser.add_argument("--compute-type", default="float32",
                        help="float32 or int8 (any CTranslate2 compute type is passed through)")
    parser.add_argument("--use-vmap", action="store_true",
                        help="restrict each batch's output layer to the union of its sentences' candidates "
                             "in DIR/vmap.txt (CTranslate2's vocabulary map; bench/ct2_convert.py writes it "
                             "from a model with `tfm shortlist`'s shortlist)")
    parser.add_argument("--latency-lines", type=int, default=0,
                        help="instead: translate the first N lines one at a time (batch 1) and print the "
                             "median milliseconds per line on stdout (as bench/latency.py for tfm)")
    args = parser.parse_args()
    if args.beam < 1 or args.max_len < 1 or args.threads < 1 or args.inter_threads < 1 or args.batch_tokens < 1:
        parser.error("--beam, --max-len, --threads, --inter-threads and --batch-tokens must be >= 1")
    if args.use_vmap and not os.path.exists(os.path.join(args.model_dir, "vmap.txt")):
        sys.exit(f"ct2_translate: --use-vmap, but {args.model_dir} has no vmap.txt")

    import ctranslate2
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(args.model_dir, "spm.model"))
    position_rows = None
    info_path = os.path.join(args.model_dir, "tfm_conversion.json")
    if os.path.exists(info_path):
        with open(info_path, encoding="utf-8") as f:
            position_rows = json.load(f).get("position_rows")
    max_source = MAX_SOURCE_LEN
    max_decoding = args.max_len - 1  # CTranslate2 does not count the end token
    if position_rows is not None:
        if max_source + 1 > position_rows:
            max_source = position_rows - 1
        if max_decoding > position_rows:
            sys.exit(f"ct2_translate: --max-len {args.max_len} exceeds the model's {position_rows} "
                     "position rows (reconvert with a larger --position-rows)")

    translator = ctranslate2.Translator(args.model_dir, device="cpu", compute_type=args.compute_type,
                                        intra_threads=args.threads, inter_threads=args.inter_threads)
    options = dict(max_batch_size=args.batch_tokens, batch_type="tokens", beam_size=args.beam,
                   length_penalty=args.lenpen, max_decoding_length=max_decoding,
                   min_decoding_length=0, max_input_length=0, num_hypotheses=1,
                   suppress_sequences=[["<pad>"], ["<s>"]], use_vmap=args.use_vmap)

    if args.latency_lines > 0:
        print("{:.1f}".format(batch1_latency(translator, sp, options, max_source, args.latency_lines)))
        return

    sentences = target_subwords = 0
    start = time.perf_counter()
    stdin = sys.stdin.buffer
    out = sys.stdout
    while True:
        chunk = []
        for line in stdin:
            chunk.append(line.decode("utf-8", errors="replace").rstrip("\r\n"))
            if len(chunk) == CHUNK_LINES:
                break
        if not chunk:
            break
        sentences += len(chunk)
        rows = [i for i, text in enumerate(chunk) if text.strip()]
        sources = []
        for i in rows:
            pieces = sp.encode(chunk[i], out_type=str)
            if len(pieces) > max_source:
                print(f"ct2_translate: line {sentences - len(chunk) + i + 1}: longer than {max_source} "
                      "subwords; translated its beginning only", file=sys.stderr)
                pieces = pieces[:max_source]
            sources.append(pieces + ["</s>"])
        outputs = [""] * len(chunk)
        if sources:
            results = translator.translate_batch(sources, **options)
            for i, result in zip(rows, results):
                tokens = result.hypotheses[0]
                target_subwords += len(tokens)
                outputs[i] = sp.decode_pieces(tokens)
        out.write("".join(text + "\n" for text in outputs))
        out.flush()
        if len(chunk) < CHUNK_LINES:
            break
    seconds = time.perf_counter() - start
    print(f"translated {sentences} sentences in {seconds:.2f} s: {sentences / max(seconds, 1e-9):.1f} "
          f"sentences/s, {target_subwords / max(seconds, 1e-9):.1f} target subwords/s", file=sys.stderr)


def batch1_latency(translator, sp, options, max_source, count):
    """Median milliseconds to tokenize, translate and detokenize one line, after one warm-up line."""
    import statistics
    lines = [line.decode("utf-8", errors="replace").rstrip("\r\n") for _, line in zip(range(count), sys.stdin.buffer)]
    times = []
    for i, text in enumerate([lines[0]] + lines):
        start = time.perf_counter()
        pieces = sp.encode(text, out_type=str)[:max_source] + ["</s>"]
        sp.decode_pieces(translator.translate_batch([pieces], **options)[0].hypotheses[0])
        if i > 0:
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


if __name__ == "__main__":
    main()
