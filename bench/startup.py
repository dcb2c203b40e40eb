#!/usr/bin/env python3
"""Start-up: the wall time and peak memory of a process that translates one sentence, from its
start to its exit (what a user waits for with `echo ... | tfm translate`), for one or more tfm
builds side by side in alternating rounds, and CTranslate2 for reference.

usage: startup.py MODEL SOURCE --tfm LABEL=PATH [--tfm LABEL=PATH ...] [--rounds 7]
                  [--mode LABEL=FLAGS ...] [--mode-model LABEL=PATH ...]
                  [--ct2-python PY --ct2-dir DIR --spm SPM]

CTranslate2 runs in a Python process of its own: its wall time includes the interpreter and the
import of ctranslate2 (printed apart, "ct2 load+translate", from inside the process).
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

CT2_SCRIPT = r"""
import sys, time
import ctranslate2, sentencepiece
imported = time.perf_counter()
translator = ctranslate2.Translator(sys.argv[1], device="cpu", compute_type=sys.argv[2], intra_threads=2)
subwords = sentencepiece.SentencePieceProcessor(model_file=sys.argv[3])
result = translator.translate_batch([subwords.encode(sys.argv[4], out_type=str)], beam_size=4, length_penalty=0.6)
print(subwords.decode(result[0].hypotheses[0]))
print(f"{time.perf_counter() - imported:.4f}", file=sys.stderr)
"""


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def bf16_native():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = f.read()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def run(command, stdin_text):
    """(wall seconds, peak RSS MiB, stdout, stderr) of `command` fed `stdin_text`. Its stderr is
    a few log lines, below a pipe's buffer: reading stdout first cannot block it."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    process.stdin.write(stdin_text)
    process.stdin.close()
    out, err = process.stdout.read(), process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"startup.py: {' '.join(command)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024, out, err


def builds_and_modes_parser():
    """The arguments startup.py and loaded_memory.py share: MODEL SOURCE, the builds and the modes."""
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("source")
    parser.add_argument("--tfm", action="append", required=True, help="LABEL=PATH of a tfm binary")
    parser.add_argument("--mode", action="append", default=[],
                        help="LABEL=FLAGS for tfm (default: default= and int8=--quantize int8)")
    parser.add_argument("--mode-model", action="append", default=[],
                        help="LABEL=PATH: the model file that mode translates with instead of MODEL (an int8 model file)")
    return parser


def builds_and_modes(args):
    """[(label, path)] of the builds, [(label, flags)] of the modes, {mode label: model path}."""
    builds = [spec.split("=", 1) for spec in args.tfm]
    modes = [spec.split("=", 1) for spec in (args.mode or ["default=", "int8=--quantize int8"])]
    return builds, modes, dict(spec.split("=", 1) for spec in args.mode_model)


def main():
    parser = builds_and_modes_parser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ct2-python")
    parser.add_argument("--ct2-dir")
    parser.add_argument("--spm")
    args = parser.parse_args()
    with open(args.source, encoding="utf-8") as f:
        sentence = f.readline().rstrip("\n")
    builds, modes, models = builds_and_modes(args)
    print(f"CPU: {cpu_model()}; bf16 native: {'yes' if bf16_native() else 'no'}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.rounds} alternating rounds")
    print(f"sentence: {sentence}")
    results = {}
    for _ in range(args.rounds):
        for mode, flags in modes:
            for label, path in builds:
                command = [path, "translate", "--model", models.get(mode, args.model), *flags.split()]
                wall, peak, _, _ = run(command, sentence + "\n")
                results.setdefault((mode, label), []).append((wall, peak))
            if args.ct2_python and mode in ("default", "int8"):
                compute_type = "int8" if mode == "int8" else "float32"
                command = [args.ct2_python, "-c", CT2_SCRIPT, args.ct2_dir, compute_type, args.spm, sentence]
                wall, peak, _, err = run(command, "")
                inside = float(err.strip().splitlines()[-1])
                results.setdefault((mode, "ctranslate2 " + compute_type), []).append((wall, peak))
                results.setdefault((mode, "ctranslate2 " + compute_type + " load+translate"), []).append((inside, 0))
    print("| mode | build | median s | rounds s | peak MiB |")
    print("|---|---|---:|---|---:|")
    for (mode, label), values in results.items():
        walls = [wall for wall, _ in values]
        peak = max(peak for _, peak in values)
        rounds = " ".join(f"{wall:.2f}" for wall in walls)
        print(f"| {mode} | {label} | {statistics.median(walls):.2f} | {rounds} | {f'{peak:.0f}' if peak else ''} |")


if __name__ == "__main__":
    main()
