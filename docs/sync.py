#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keeps the code blocks of docs/*.md equal to the files they show.

A block is written between two markers, and the text between them is
generated from the file:

    <!-- file: examples/01_first_actor.c -->
    ```c
    ...the whole file...
    ```
    <!-- end -->

    <!-- file: examples/03_requests.c from ^static.void.on_sqrt to ^} -->
    ...the lines from the first match of the first regex through the
    next match of the second (a snippet of a program that is run)...

`sync.py write DOC...` regenerates the blocks; `sync.py check DOC...`
(a TAP test in docs/meson.build) fails when a block differs from its
file, when a fenced block stands outside markers (so it would be neither
compiled nor run), or, with --examples, when an example program is not
built by docs/meson.build or not shown by any document.
"""
import os
import re
import sys

BEGIN = re.compile(r'^<!-- file: (\S+)(?: from (\S+) to (\S+))? -->$')
END = '<!-- end -->'
LANG = {'.c': 'c', '.out': 'text', '.sh': 'sh'}


def render(base, path, start, stop):
    full = os.path.join(base, path)
    with open(full, encoding='utf-8') as f:
        lines = f.read().splitlines()
    if start:
        try:
            i = next(n for n, l in enumerate(lines) if re.search(start, l))
            j = next(n for n in range(i + 1, len(lines)) if re.search(stop, lines[n]))
        except StopIteration:
            raise ValueError(f'{path}: no lines from /{start}/ to /{stop}/')
        lines = lines[i:j + 1]
    lang = LANG.get(os.path.splitext(path)[1], '')
    return ['```' + lang] + lines + ['```']


def process(doc):
    """Returns (the regenerated text, problems, files shown)."""
    base = os.path.dirname(doc)
    with open(doc, encoding='utf-8') as f:
        old = f.read().splitlines()
    out, problems, shown = [], [], set()
    i = 0
    while i < len(old):
        line = old[i]
        m = BEGIN.match(line)
        if m:
            try:
                end = old.index(END, i + 1)
            except ValueError:
                problems.append(f'{doc}:{i + 1}: marker without {END}')
                return None, problems, shown
            try:
                block = render(base, m.group(1), m.group(2), m.group(3))
            except (OSError, ValueError) as e:
                problems.append(f'{doc}:{i + 1}: {e}')
                block = old[i + 1:end]
            if old[i + 1:end] != block:
                problems.append(f'{doc}:{i + 1}: block differs from {m.group(1)}')
            shown.add(os.path.normpath(os.path.join(base, m.group(1))))
            out += [line] + block + [END]
            i = end + 1
            continue
        if line.lstrip().startswith('```'):
            problems.append(f'{doc}:{i + 1}: a code block outside <!-- file: --> markers')
            close = next((k for k in range(i + 1, len(old))
                          if old[k].lstrip().startswith('```')), len(old) - 1)
            out += old[i:close + 1]
            i = close + 1
            continue
        out.append(line)
        i += 1
    return '\n'.join(out) + '\n', problems, shown


def main(argv):
    mode, args = argv[1], argv[2:]
    examples = None
    if '--examples' in args:
        k = args.index('--examples')
        args, examples = args[:k], args[k + 1:]
    tests = []
    shown = set()
    for doc in args:
        text, problems, s = process(doc)
        shown |= s
        if mode == 'write' and text is not None:
            with open(doc, 'w', encoding='utf-8') as f:
                f.write(text)
            problems = [p for p in problems if 'differs' not in p]
        tests.append((f'{os.path.basename(doc)}: every code block is its file', problems))
    if examples is not None:
        exdir = os.path.join(os.path.dirname(args[0]), 'examples')
        on_disk = {f[:-2] for f in os.listdir(exdir) if f.endswith('.c')}
        built = set(examples)
        problems = [f'{n}.c is not built and run by docs/meson.build'
                    for n in sorted(on_disk - built)]
        problems += [f'{n}.c is in docs/meson.build but not in docs/examples'
                     for n in sorted(built - on_disk)]
        problems += [f'{n}.c is shown by no document' for n in sorted(built)
                     if os.path.normpath(os.path.join(exdir, n + '.c')) not in shown]
        tests.append(('every example is built, run and shown', problems))
    print(f'1..{len(tests)}')
    bad = 0
    for n, (what, problems) in enumerate(tests, 1):
        print(('not ok' if problems else 'ok') + f' {n} - {what}')
        for p in problems:
            print(f'# {p}')
        bad += bool(problems)
    if mode == 'write' and bad:
        print('# (write regenerated what it could)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
