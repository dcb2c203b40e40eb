#!/usr/bin/env python3
"""Writes the quickstart's English->German corpus: counted things, with German number words
("three hundred forty-five" -> "dreihundertfünfundvierzig": units before tens) and verb-second
word order after a fronted adverb ("yesterday I saw" -> "gestern sah ich"). Deterministic for
a given seed; train/valid/test pairs are disjoint. Made here, so no third-party data is needed.

usage: make_numbers_corpus.py OUT_DIR [--train N] [--valid N] [--test N] [--seed S]
"""
import argparse
import os
import random

EN_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " \
           "sixteen seventeen eighteen nineteen".split()
EN_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
DE_UNITS = "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn " \
           "sechzehn siebzehn achtzehn neunzehn".split()
DE_TENS = "_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()

ADJECTIVES = [("red", "rote"), ("big", "große"), ("small", "kleine"), ("old", "alte"), ("new", "neue")]
NOUNS = [("apples", "Äpfel"), ("cats", "Katzen"), ("dogs", "Hunde"), ("houses", "Häuser"),
         ("books", "Bücher"), ("cars", "Autos"), ("birds", "Vögel"), ("trees", "Bäume")]
TEMPLATES = [("I see {}", "ich sehe {}"), ("yesterday I saw {}", "gestern sah ich {}"),
             ("we buy {}", "wir kaufen {}"), ("tomorrow we buy {}", "morgen kaufen wir {}")]


def english(n):
    words = []
    if n >= 100:
        words += [EN_UNITS[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(EN_TENS[n // 10] + ("-" + EN_UNITS[n % 10] if n % 10 else ""))
    elif n > 0:
        words.append(EN_UNITS[n])
    return " ".join(words)


def german(n):
    word = ""
    if n >= 100:
        word += ("ein" if n // 100 == 1 else DE_UNITS[n // 100]) + "hundert"
        n %= 100
    if n >= 20:
        unit = n % 10
        word += (("ein" if unit == 1 else DE_UNITS[unit]) + "und" if unit else "") + DE_TENS[n // 10]
    elif n > 0:
        word += DE_UNITS[n]
    return word


def pair(number, adjective, noun, template):
    en_thing = "{} {} {}".format(english(number), ADJECTIVES[adjective][0], NOUNS[noun][0])
    de_thing = "{} {} {}".format(german(number), ADJECTIVES[adjective][1], NOUNS[noun][1])
    en, de = TEMPLATES[template]
    return first_upper(en.format(en_thing)) + ".", first_upper(de.format(de_thing)) + "."


def first_upper(text):
    return text[0].upper() + text[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--train", type=int, default=8000)
    parser.add_argument("--valid", type=int, default=300)
    parser.add_argument("--test", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    space = [(n, a, o, t) for n in range(2, 1000) for a in range(len(ADJECTIVES))
             for o in range(len(NOUNS)) for t in range(len(TEMPLATES))]
    chosen = random.Random(args.seed).sample(space, args.train + args.valid + args.test)
    os.makedirs(args.out_dir, exist_ok=True)
    splits = [("train", chosen[:args.train]), ("valid", chosen[args.train:args.train + args.valid]),
              ("test", chosen[args.train + args.valid:])]
    for name, items in splits:
        with open(os.path.join(args.out_dir, name + ".en"), "w", encoding="utf-8") as en_file, \
             open(os.path.join(args.out_dir, name + ".de"), "w", encoding="utf-8") as de_file:
            for item in items:
                en, de = pair(*item)
                en_file.write(en + "\n")
                de_file.write(de + "\n")


if __name__ == "__main__":
    main()
