"""Python string values that remember where every character came from.

A `PyStr` is the value of a string expression (literals, concatenation, `textwrap.dedent`,
`.format`, f-strings, `%`, `.replace`, `.strip`) with, per character, the offset in the `.py`
text it came from and whether it is *exact*: one source character that stands for itself in a
literal, so an edit of the CUDA text there is the same edit of the Python text. Escapes,
substituted values and the unknown parts are mapped (to where they were written) but not exact.
"""

from __future__ import annotations

import ast
import re

from occlint.record import dataclass, field

UNKNOWN = "__occlint_unknown__"     # stands for a part of a string occlint could not evaluate


@dataclass(frozen=True)
class Literal:
    """How a literal is written, which decides what an edit inside it may contain."""

    quote: str          # ' " ''' """
    raw: bool
    braces: bool        # f-string or a `.format` template: `{` and `}` must be doubled

    def allows(self, content: str) -> bool:
        if "\\" in content or self.quote[0] in content or "\n" in content or "\r" in content:
            return False
        return not (self.braces and ("{" in content or "}" in content))


@dataclass
class PyStr:
    chars: list[str] = field(default_factory=list)
    pos: list[int] = field(default_factory=list)                 # offset in the .py text
    lit: list[Literal | None] = field(default_factory=list)      # None: not exact
    unknown: list[str] = field(default_factory=list)             # source of parts not evaluated

    @property
    def text(self) -> str:
        return "".join(self.chars)

    def add(self, ch: str, pos: int, lit: Literal | None) -> None:
        self.chars.append(ch)
        self.pos.append(pos)
        self.lit.append(lit)

    def extend(self, other: PyStr) -> PyStr:
        self.chars += other.chars
        self.pos += other.pos
        self.lit += other.lit
        self.unknown += other.unknown
        return self

    def slice(self, keep) -> PyStr:
        out = PyStr(unknown=list(self.unknown))
        for i in keep:
            out.add(self.chars[i], self.pos[i], self.lit[i])
        return out

    @classmethod
    def synthetic(cls, text: str, pos: int) -> PyStr:
        """A substituted value: every character maps to where the substitution was written."""
        out = cls()
        for ch in text:
            out.add(ch, pos, None)
        return out

    @classmethod
    def missing(cls, source: str, pos: int) -> PyStr:
        out = cls.synthetic(UNKNOWN, pos)
        out.unknown.append(source)
        return out

    def copy(self) -> PyStr:
        return PyStr(list(self.chars), list(self.pos), list(self.lit), list(self.unknown))

    # --- mapping edits back -------------------------------------------------------------------

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The .py offsets a CUDA span covers (for positions; not necessarily exact)."""
        n = len(self.pos)
        if not n:
            return 0, 0
        a = self.pos[min(max(start, 0), n - 1)]
        b = self.pos[min(max(end - 1, start, 0), n - 1)] + (1 if end > start else 0)
        return a, max(a, b)

    def exact_edit(self, start: int, end: int, content: str) -> tuple[int, int] | None:
        """The .py offsets of an edit of [start, end) of the text, when the edit is exactly an
        edit of one literal there; None otherwise (escapes, substitutions, several literals)."""
        n = len(self.chars)
        if start < end:
            if end > n or any(self.lit[i] is None for i in range(start, end)):
                return None
            lits = {self.lit[i] for i in range(start, end)}
            if len(lits) != 1 or any(self.pos[i + 1] != self.pos[i] + 1 for i in range(start, end - 1)):
                return None
            lit = lits.pop()
            a, b = self.pos[start], self.pos[end - 1] + 1
        elif start < n and self.lit[start] is not None:
            lit, a = self.lit[start], self.pos[start]
            b = a
        elif 0 < start <= n and self.lit[start - 1] is not None:
            lit, a = self.lit[start - 1], self.pos[start - 1] + 1
            b = a
        else:
            return None
        return (a, b) if lit.allows(content) else None


# --- literals ---------------------------------------------------------------------------------

_PREFIX = re.compile(r"^([rRbBuUfF]*)('''|\"\"\"|'|\")")
_ESCAPE = re.compile(r"\\(?:\r\n|\n|[0-7]{1,3}|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|.)", re.S)


def _decode_body(body: str, base: int, lit: Literal, out: PyStr, braces: bool = False) -> None:
    """Append the value of a literal's body (source text at offset `base`) to `out`."""
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch == "\\" and not lit.raw:
            m = _ESCAPE.match(body, i)
            seq = m.group(0)
            if seq in ("\\\n", "\\\r\n"):
                i += len(seq)
                continue
            try:
                value = ast.literal_eval('"' + seq + '"') if seq[1] not in "\"'" else seq[1]
            except (SyntaxError, ValueError):
                value = seq
            for c in value:
                out.add(c, base + i, None)
            i += len(seq)
            continue
        if ch == "\r" and body.startswith("\r\n", i):
            out.add("\n", base + i, None)
            i += 2
            continue
        if braces and ch in "{}" and body.startswith(ch * 2, i):
            out.add(ch, base + i, None)
            i += 2
            continue
        out.add(ch, base + i, lit)
        i += 1


def simple_string(value: str, offset: int) -> PyStr | None:
    """A SimpleString node's value (`value` is its source, at `offset`); None for bytes."""
    m = _PREFIX.match(value)
    if not m:
        return None
    prefix, quote = m.group(1).lower(), m.group(2)
    if "b" in prefix:
        return None
    lit = Literal(quote, "r" in prefix, False)
    body_start = len(m.group(0))
    out = PyStr()
    _decode_body(value[body_start:len(value) - len(quote)], offset + body_start, lit, out)
    return out


def fstring_text(value: str, offset: int, prefix: str, quote: str) -> PyStr:
    """A literal part of an f-string (`{{` and `}}` are single braces)."""
    lit = Literal(quote, "r" in prefix.lower(), True)
    out = PyStr()
    _decode_body(value, offset, lit, out, braces=True)
    return out


# --- operations -------------------------------------------------------------------------------


def dedent(s: PyStr) -> PyStr:
    """textwrap.dedent with the map kept: the common leading whitespace goes, whitespace-only
    lines become empty."""
    text = s.text
    lines = text.split("\n")
    margin = None
    for line in lines:
        stripped = line.lstrip(" \t")
        if not stripped:
            continue
        indent = line[:len(line) - len(stripped)]
        if margin is None:
            margin = indent
        else:
            k = 0
            while k < min(len(margin), len(indent)) and margin[k] == indent[k]:
                k += 1
            margin = margin[:k]
    keep, at = [], 0
    for idx, line in enumerate(lines):
        if line.strip(" \t"):
            keep.extend(range(at + len(margin or ""), at + len(line)))
        if idx < len(lines) - 1:
            keep.append(at + len(line))          # the newline
        at += len(line) + 1
    return s.slice(keep)


def strip(s: PyStr, chars: str | None, left: bool = True, right: bool = True) -> PyStr:
    text = s.text
    ws = chars if chars is not None else " \t\n\r\x0b\x0c"
    a, b = 0, len(text)
    while left and a < b and text[a] in ws:
        a += 1
    while right and b > a and text[b - 1] in ws:
        b -= 1
    return s.slice(range(a, b))


def replace(s: PyStr, old: str, new: PyStr, count: int = -1) -> PyStr:
    if not old:
        return s
    text, out, i, done = s.text, PyStr(unknown=list(s.unknown) + new.unknown), 0, 0
    while i < len(text):
        if (count < 0 or done < count) and text.startswith(old, i):
            out.extend(PyStr(list(new.chars), [s.pos[i]] * len(new.chars), [None] * len(new.chars)))
            out.unknown = list(dict.fromkeys(out.unknown))
            i += len(old)
            done += 1
            continue
        out.add(text[i], s.pos[i], s.lit[i])
        i += 1
    return out


_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def format_(s: PyStr, args: list, kwargs: dict, pos: int, as_str) -> PyStr:
    """str.format: `{}`, `{0}`, `{name}`, with `{name:spec}`; unknown values stay unknown."""
    text, out, last, auto = s.text, PyStr(unknown=list(s.unknown)), 0, 0
    for m in _FIELD.finditer(text):
        for i in range(last, m.start()):
            lit = s.lit[i]
            out.add(text[i], s.pos[i], Literal(lit.quote, lit.raw, True) if lit else None)
        last = m.end()
        if m.group(0) in ("{{", "}}"):
            out.add(m.group(0)[0], s.pos[m.start()], None)
            continue
        name, _, spec = m.group(1).partition(":")
        name = name.split("!")[0].strip()
        if name == "":
            value = args[auto] if auto < len(args) else None
            auto += 1
        elif name.isdigit():
            value = args[int(name)] if int(name) < len(args) else None
        else:
            value = kwargs.get(name.split(".")[0].split("[")[0])
        out.extend(as_str(value, m.group(0), s.pos[m.start()], spec))
    for i in range(last, len(text)):
        lit = s.lit[i]
        out.add(text[i], s.pos[i], Literal(lit.quote, lit.raw, True) if lit else None)
    return out


_PERCENT = re.compile(r"%%|%(?:\(([^)]*)\))?[-+ #0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]")


def percent(s: PyStr, values, pos: int, as_str) -> PyStr:
    """`"..." % values` for %s/%d-style fields."""
    text, out, last, k = s.text, PyStr(unknown=list(s.unknown)), 0, 0
    seq = values if isinstance(values, tuple) else (values,)
    for m in _PERCENT.finditer(text):
        for i in range(last, m.start()):
            out.add(text[i], s.pos[i], None if text[i] == "%" else s.lit[i])
        last = m.end()
        if m.group(0) == "%%":
            out.add("%", s.pos[m.start()], None)
            continue
        if m.group(1) is not None:
            value = values.get(m.group(1)) if isinstance(values, dict) else None
        else:
            value = seq[k] if k < len(seq) else None
            k += 1
        spec = m.group(0)[1:]
        out.extend(as_str(value, m.group(0), s.pos[m.start()], "d" if spec.endswith(("d", "i")) else ""))
    for i in range(last, len(text)):
        out.add(text[i], s.pos[i], s.lit[i])
    return out
