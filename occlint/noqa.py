"""Suppression comments, read and written with one grammar.

    // noqa                      this line, every code
    // noqa: OCC001, OCC010      this line, these codes (prefixes work: `OCC0`)
    /* noqa: OCC001 */           the same in a block comment
    // occlint: noqa[: CODES]    the whole file
    # noqa[: CODES], # occlint: noqa[: CODES]    the same on the Python lines of a .py file

`read(text)` gives what a file suppresses; `suppressed` asks it about one finding; `add_code`
says where to write a code so that a line gains it (the language server's "Add noqa" action).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from occlint.source.text import split_lines

FILE = re.compile(r"//\s*occlint:\s*noqa\b(?::\s*(?P<codes>[A-Za-z0-9,\s]+))?", re.I)
LINE = re.compile(r"(?://|/\*)\s*noqa\b(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.I)

PY_FILE = re.compile(r"#\s*occlint:\s*noqa\b(?::\s*(?P<codes>[A-Za-z0-9,\s]+))?", re.I)
PY_LINE = re.compile(r"#\s*noqa\b(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*))?", re.I)
_GRAMMAR = {"//": (FILE, LINE), "#": (PY_FILE, PY_LINE)}

Codes = frozenset[str] | None          # None: every code
Noqa = tuple[Codes | bool, dict[int, Codes]]


def _codes(text: str | None) -> Codes:
    if not text:
        return None                                      # bare: every code
    return frozenset(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def read(text: str, comment: str = "//") -> Noqa:
    """(file-level codes, {line: codes}); codes None = everything, False = no file-level noqa.
    `comment="#"` reads Python comments (`# noqa`)."""
    file_re, line_re = _GRAMMAR[comment]
    file_level: Codes | bool = False
    lines: dict[int, Codes] = {}
    if "noqa" not in text.lower():
        return file_level, lines
    for number, line in enumerate(split_lines(text), 1):
        if "noqa" not in line.lower():
            continue
        m = file_re.search(line)
        if m:
            codes = _codes(m.group("codes"))
            if codes is None or file_level is None:
                file_level = None
            else:
                file_level = (file_level or frozenset()) | codes
            continue
        m = line_re.search(line)
        if m:
            lines[number] = _codes(m.group("codes"))
    return file_level, lines


def _silenced(code: str, codes: Codes) -> bool:
    return codes is None or any(code.startswith(c) for c in codes)


def suppressed(code: str, lines: Sequence[int], noqa: Noqa) -> bool:
    """Whether `code`, reported on any of `lines` (1-based), is silenced."""
    file_level, by_line = noqa
    if file_level is not False and _silenced(code, file_level):
        return True
    return any(line in by_line and _silenced(code, by_line[line]) for line in lines)


def add_code(line: str, code: str, comment: str = "//") -> tuple[int, str] | None:
    """(column offset in `line`, text to insert) so that `line` suppresses `code`: appended to
    its noqa list, or a new `  // noqa: CODE` (`  # noqa: CODE`) at the end; None when the line
    already does."""
    m = _GRAMMAR[comment][1].search(line)
    if m and _silenced(code.upper(), _codes(m.group("codes"))):
        return None
    if m:
        return m.end("codes"), f", {code}"
    return len(line.rstrip()), f"  {comment} noqa: {code}"
