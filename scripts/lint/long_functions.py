#!/usr/bin/env python3
"""Lists C++ function bodies longer than a limit: `long_functions.py LIMIT FILE...`.

A body is a brace block opened at the end of a line that is not inside another function and
does not start a class, struct, enum, namespace or initializer; its length counts the lines from
the signature's line to the closing brace. Exit status 1 when any is longer than LIMIT.
"""
import re
import sys

NOT_FUNCTIONS = re.compile(r"^\s*(namespace|class|struct|enum|union|extern)\b|=\s*\{?$")


def bodies(lines):
    depth, start, name = 0, None, ""
    for number, line in enumerate(lines, 1):
        code = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|//.*', "", line)
        if depth == 0 and start is None and code.rstrip().endswith("{") and not NOT_FUNCTIONS.search(code):
            start, name, depth = number, code.strip()[:80], 0
        if start is not None:
            depth += code.count("{") - code.count("}")
            if depth <= 0 and ("}" in code or number > start):
                yield name, start, number
                start, depth = None, 0


def main():
    limit, paths = int(sys.argv[1]), sys.argv[2:]
    found = False
    for path in paths:
        with open(path, encoding="utf-8") as source:
            lines = source.read().splitlines()
        # Function bodies open inside namespaces: count nesting below namespace braces only.
        stripped = [re.sub(r"^(\s*)namespace\b.*\{\s*$", "", line) for line in lines]
        stripped = [re.sub(r"^\}\s*//\s*namespace.*$", "", line) for line in stripped]
        for name, start, end in bodies(stripped):
            if end - start + 1 > limit:
                print(f"{path}:{start}: {end - start + 1} lines: {name}")
                found = True
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
