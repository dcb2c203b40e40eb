"""Compares `tfm eval` with the sacrebleu Python package on random perturbed sentences.

Usage: python3 eval_compare_sacrebleu.py path/to/tfm workdir
Exit 0 when every score matches to 1e-9, 1 on a mismatch, 77 when sacrebleu is not installed
(it is an optional test-only dependency; the golden files in ../shared stay the primary check).
"""
import json
import random
import subprocess
import sys

try:
    import numpy
    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest
except ImportError:
    print("sacrebleu is not installed: skipping the comparison")
    sys.exit(77)

# Words that exercise the tokenizers: punctuation between and after digits, entities,
# apostrophes, hyphens, non-Latin scripts, symbols, emoji, case that lowercasing must fold.
WORDS = ("the a dog Dog DOG runs über Straße ÉCOLE l'élève n'est-ce pas 3.5 10,000 2020. e-mail "
         "3-4 U.S. (hi) [x] {y} $5 5€ 100% a+b=c &amp; &quot;quoted&quot; &lt;tag&gt; &apos; don't "
         "«Là-bas» ¿Qué? 東京は 我们今天 한국어 🍕 👍👍 – — … • ΟΔΟΣ Σ İstanbul ﬁ ǅ "
         "x.y 1.. ,, !? ... '' \"\" -- @home #tag").split()
SPACES = [" ", " ", " ", "  ", "\u00a0", "\u3000", "\t"]


def sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
    return "".join(w + rng.choice(SPACES) for w in words).strip()


def perturb(rng, text):
    words = text.split()
    out = []
    for w in words:
        r = rng.random()
        if r < 0.15:
            continue
        out.append(rng.choice(WORDS) if r < 0.3 else w)
    if len(out) > 2 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def tfm_scores(tfm, args):
    result = subprocess.run([tfm, "eval", *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)["scores"]


def main():
    tfm, work = sys.argv[1], sys.argv[2]
    rng = random.Random(20240521)
    refs1 = [sentence(rng) for _ in range(300)]
    refs2 = [perturb(rng, r) for r in refs1]
    hyps = [perturb(rng, r) if i % 17 else "" for i, r in enumerate(refs1)]
    for name, lines in (("hyp", hyps), ("ref1", refs1), ("ref2", refs2)):
        with open(f"{work}/{name}.txt", "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    failures, checks = 0, 0

    def compare(what, expected, actual):
        nonlocal failures, checks
        checks += 1
        if abs(expected - actual) > 1e-9:
            failures += 1
            print(f"MISMATCH {what}: sacrebleu {expected!r}, tfm {actual!r}")

    for nrefs in (1, 2):
        refs = [refs1, refs2][:nrefs]
        files = ["--hyp", f"{work}/hyp.txt", "--ref"] + [f"{work}/ref{r + 1}.txt" for r in range(nrefs)]
        for tok in ("13a", "intl", "char", "none"):
            for lc in (False, True):
                for smooth, value in (("exp", None), ("floor", None), ("add-k", 2.0), ("none", None)):
                    args = files + ["--tokenize", tok, "--smooth-method", smooth] + (["--lowercase"] if lc else [])
                    if value is not None:
                        args += ["--smooth-value", str(value)]
                    bleu = BLEU(tokenize=tok, lowercase=lc, smooth_method=smooth, smooth_value=value)
                    expected = bleu.corpus_score(hyps, refs).score
                    what = f"BLEU {' '.join(args[2 * nrefs + 2:])} nrefs={nrefs}"
                    compare(what, expected, tfm_scores(tfm, args)[0]["score"])
        sentence_bleu = BLEU(effective_order=True)
        actual = tfm_scores(tfm, files + ["--sentence-level"])[0]["segments"]
        for i, hyp in enumerate(hyps):
            expected = sentence_bleu.sentence_score(hyp, [r[i] for r in refs]).score
            compare(f"sentence BLEU segment {i + 1} nrefs={nrefs}", expected, actual[i]["score"])
        for word_order in (0, 2):
            for lc in (False, True):
                args = files + ["--metrics", "chrf", "--chrf-word-order", str(word_order)]
                args += ["--chrf-lowercase"] if lc else []
                expected = CHRF(word_order=word_order, lowercase=lc).corpus_score(hyps, refs).score
                what = f"chrF word_order={word_order} lc={lc} nrefs={nrefs}"
                compare(what, expected, tfm_scores(tfm, args)[0]["score"])
    # Paired bootstrap resampling: the same resamples, means, intervals and p-values. sacreBLEU
    # computes resampled scores from float32 arrays, in float32 under NumPy 2's promotion rules,
    # which tfm reproduces (NumPy 1 promoted to float64).
    if int(numpy.__version__.split(".")[0]) >= 2:
        others = [[perturb(rng, h) if i % 3 else h for i, h in enumerate(hyps)] for _ in range(2)]
        for k, lines in enumerate(others):
            with open(f"{work}/other{k}.txt", "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
        systems = [("base", hyps), ("other0", others[0]), ("other1", others[1])]
        files = ["--hyp", f"{work}/hyp.txt", f"{work}/other0.txt", f"{work}/other1.txt", "--ref", f"{work}/ref1.txt"]
        metrics = {"BLEU": BLEU(), "BLEU-floor": BLEU(smooth_method="floor"), "chrF": CHRF(), "chrF++": CHRF(word_order=2)}
        flags = {"BLEU": [], "BLEU-floor": ["--smooth-method", "floor"], "chrF": ["--metrics", "chrf"],
                 "chrF++": ["--metrics", "chrf", "--chrf-word-order", "2"]}
        for name, metric in metrics.items():
            _, results = PairedTest(systems, {name: metric}, [refs1], test_type="bs", n_samples=300)()
            expected = list(results.values())[-1]  # after the systems' names
            actual = json.loads(subprocess.run([tfm, "eval", *files, *flags[name], "--paired-bs", "--paired-bs-n", "300",
                                                "--json"], capture_output=True, text=True, check=True).stdout)
            for s, (exp, act) in enumerate(zip(expected, actual["systems"])):
                score = act["scores"][0]
                compare(f"paired {name} system {s} score", float(exp.score), score["score"])
                compare(f"paired {name} system {s} mean", float(exp.mean), score["mean"])
                compare(f"paired {name} system {s} ci", float(exp.ci), score["ci"])
                if s > 0:
                    compare(f"paired {name} system {s} p", exp.p_value, score["p_value"])
        # --confidence: one system's bootstrap mean and interval (corpus_score(n_bootstrap=N)).
        for name, metric in metrics.items():
            expected = metric.corpus_score(hyps, [refs1], n_bootstrap=300)
            actual = json.loads(subprocess.run([tfm, "eval", "--hyp", f"{work}/hyp.txt", "--ref", f"{work}/ref1.txt",
                                                *flags[name], "--confidence", "--confidence-n", "300", "--json"],
                                               capture_output=True, text=True, check=True).stdout)["scores"][0]
            compare(f"confidence {name} mean", float(expected._mean), actual["confidence_mean"])
            compare(f"confidence {name} ci", float(expected._ci), actual["confidence_var"])
    print(f"sacrebleu {sacrebleu.__version__}: {checks - failures}/{checks} scores match to 1e-9")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
