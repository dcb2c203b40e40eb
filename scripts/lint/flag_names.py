#!/usr/bin/env python3
"""Flags belong to the command line: library layers name options by key (option_name("max_tokens"))
and app/flag_names.cpp says which flag sets each key.

Usage: flag_names.py SOURCE_DIR. Fails (exit 1) listing
  - every string literal in a library layer that holds a flag name ("--" and a letter), unless its
    line says NOLINT(flag-name) (another program's flag, such as a script's);
  - every key a library names that app/flag_names.cpp neither maps nor lists as having no flag;
  - every flag in that table that no command of app/ defines.
"""
import pathlib
import re
import sys

LIBRARY_LAYERS = "runtime text tokenizer metrics data model decode translation dist train viz".split()
# Options a C++ caller can set but no command exposes: messages name them by key.
KEYS_WITHOUT_FLAG = {"chrf_char_order", "chrf_beta"}

STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
FLAG = re.compile(r'(?<![\w-])--[a-z]')
KEY_USE = re.compile(r'option_name\("([a-z0-9_]+)"\)')
TABLE_ENTRY = re.compile(r'\{"([a-z0-9_]+)", "(--[a-z0-9-]+)"\}')


def code_of(line):
    """The line without a // comment (a crude cut that is enough for our sources)."""
    stripped = line.lstrip()
    return "" if stripped.startswith("//") or stripped.startswith("///") else line


def library_sources(root):
    for layer in LIBRARY_LAYERS:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix in (".cpp", ".h"):
                yield path


def main(root):
    root = pathlib.Path(root)
    problems = []
    keys = {}
    for path in library_sources(root):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{path.relative_to(root)}:{number}"
            code = code_of(line)
            if "NOLINT(flag-name)" not in line and any(FLAG.search(s) for s in STRING.findall(code)):
                problems.append(f"{where}: a flag name in a library string: {line.strip()}")
            for key in KEY_USE.findall(code):
                keys.setdefault(key, where)
    table_text = (root / "app/flag_names.cpp").read_text()
    table = dict(TABLE_ENTRY.findall(table_text))
    for key, where in sorted(keys.items()):
        if key not in table and key not in KEYS_WITHOUT_FLAG:
            problems.append(f"{where}: option key \"{key}\" has no flag in app/flag_names.cpp")
    commands = "".join(p.read_text() for p in sorted((root / "app").glob("*.cpp")) if p.name != "flag_names.cpp")
    for key, flag in sorted(table.items()):
        if f'"{flag}"' not in commands and f'"{flag},' not in commands:
            problems.append(f"app/flag_names.cpp: {key} -> {flag}, but no command defines {flag}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
