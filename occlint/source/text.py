"""Decoded text, the bytes tree-sitter sees, and byte offsets -> model Spans.

tree-sitter reports byte offsets; model objects hold 1-based lines, character columns and
offsets into the decoded `str`. Lines end at `\\n` (a CRLF's `\\r` is the line's last character).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add

from occlint.model import Span

# CUDA spellings tree-sitter-cuda 0.21 does not parse; they are blanked out (same length) before
# parsing and read back by regex.
_BLANKED = re.compile(rb"__(maxnreg|cluster_dims|align)__\s*\(((?:[^()]|\([^()]*\))*)\)")
# A macro call between a kernel's `void` and its name (`__global__ void LAUNCH_BOUNDS(128) k(`,
# PyTorch's `C10_LAUNCH_BOUNDS_1(n)`): tree-sitter reads it as a declaration of its own and the
# kernel as a function without `__global__`. Blanked too; kernels.macro_bounds reads it back.
_QUALS = rb"(?:(?:static|inline|__inline__|__forceinline__|__noinline__|extern\s*\"C\")\s+)*"
_MACRO = (rb"((?!(?:__launch_bounds__|__maxnreg__|__cluster_dims__|void)\b)[A-Za-z_]\w*\s*"
          rb"\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\))")
_BOUNDS_MACRO = re.compile(
    rb"__global__\s+" + _QUALS + rb"(?:void\s+" + _MACRO +
    rb"(?=\s*(?!(?:__attribute__|__launch_bounds__|__maxnreg__|__cluster_dims__|noexcept|throw)\b)"
    rb"[A-Za-z_][\w:]*\s*[(<])"
    rb"|" + _MACRO + rb"(?=\s*" + _QUALS + rb"void\b))")


# `#define PERF_BEGIN` and `#define PERF_END(name)` (empty), then `PERF_BEGIN` or
# `PERF_END("k")` alone on a line beside a launch (Rodinia's dwt2d): tree-sitter reads the line
# and the launch as one statement and the launch is lost. Such a line is blanked: the compiler
# sees nothing there either.
_EMPTY_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)\n]*\))?"
                           rb"(?:[ \t]*|[ \t]+//[^\n]*)\r?$", re.M)
_ANY_DEFINE = re.compile(rb"#[ \t]*define[ \t]+([A-Za-z_]\w*)")
_LONE_NAME = re.compile(rb"[ \t]*(([A-Za-z_]\w*)[ \t]*(\([^\n]*\))?)[ \t]*;?[ \t]*\r?")


_COMMENTS = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_NOISE = re.compile(rb'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*', re.S)


def blank_noise(data: bytes) -> bytes:
    """`data` with its string literals and comments blanked (same length, newlines kept): the
    code's own words (`printf("<<<")` is no launch; `// CTA_THREADS` no use of the name)."""
    if b'"' not in data and b"/" not in data:
        return data
    return _NOISE.sub(_spaces, data)


def _spaces(m) -> bytes:
    """The match's bytes as spaces, its newlines kept."""
    s = m.group(0)
    if b"\n" not in s:
        return b" " * len(s)
    return b"\n".join(b" " * len(line) for line in s.split(b"\n"))


def _one_branch(data: bytes) -> list[tuple[int, int]]:
    """Byte spans to blank so that the parser, which sees every branch of a conditional, reads
    one branch of the groups whose branches together are not C++: a kernel's declaration
    split by directives (ccminer: `__global__` `#if __CUDA_ARCH__ >= 500` `__launch_bounds__(512,
    3)` `#endif` `void k(...)`; `#if __CUDA_ARCH__ <= 500` `__global__ __launch_bounds__(384,
    2)` `#else` `__global__ __launch_bounds__(1024, 1)` `#endif`), and branches that each open a
    brace the code after the group closes (`#if A` `for (...) {` `#else` `if (...) {`
    `#endif`). Such a group's directive lines are blanked, and the content of every branch but
    the one kept: the first not dead in nvcc's pass for sm_90 as the file alone decides it (an
    undecided condition keeps its branch: ggml's `#if !defined(GGML_USE_HIP)` CUDA path). The
    preprocessor's own reading of the branches (occlint.source.preproc) is unchanged."""
    from occlint.source.preproc import _directives

    groups = []
    stack: list[tuple[list, list, int]] = []        # (directive lines, branches, content start)
    for start, end, word, _rest in _directives(data):
        if word in (b"if", b"ifdef", b"ifndef"):
            stack.append(([(start, end)], [], end))
        elif word in (b"elif", b"elifdef", b"elifndef", b"else") and stack:
            lines, branches, since = stack.pop()
            stack.append(([*lines, (start, end)], [*branches, (since, start)], end))
        elif word == b"endif" and stack:
            lines, branches, since = stack.pop()
            branches.append((since, start))
            alone = not (_in_a_head(data, lines[0][0], branches) or
                         _opens_in_each(data, branches))
            if not alone or _unbalanced_alone(data, branches):
                groups.append(([*lines, (start, end)], branches, alone))
    if not groups:
        return []
    live = None
    out: list[tuple[int, int]] = []
    for lines, branches, alone in groups:
        out += lines
        if len(branches) == 1 and not alone:
            continue                # (a lone branch in a kernel's head: kept)
        if live is None:
            from occlint.source.preproc import View, scan
            live = scan(data, "", View(arch="sm_90"), reader=lambda _path: None)
        if alone:                   # a lone branch whose braces pair with another group's,
            lo, hi = branches[0]    # dead for sm_90 (vllm's `#if __CUDA_ARCH__ < 800`
            out += branches if live.is_dead(lo + 1, hi) else []     # around `} else {`)
            continue
        keep = next((b for b in branches if b[1] <= b[0] + 1 or
                     not live.is_dead(b[0] + 1, b[1])), branches[-1])
        out += [b for b in branches if b is not keep]
    return [(a, b) for a, b in out if b > a]


def _code(data: bytes, lo: int, hi: int) -> bytes:
    return _COMMENTS.sub(b" ", data[lo:hi])


def _in_a_head(data: bytes, group: int, branches) -> bool:
    """The group sits in a kernel's declaration: no branch holds a brace or a `;`, and one
    names `__global__` or `__launch_bounds__`, or the code before the group ends in
    `__global__`."""
    if any(data.find(c, lo, hi) >= 0 for lo, hi in branches for c in (b"{", b"}", b";")):
        return False            # (a comment with one too: read as not a head, as before)
    codes = [_code(data, lo, hi) for lo, hi in branches]
    if any(b"__global__" in code or b"__launch_bounds__" in code for code in codes):
        return True
    return _code(data, max(0, group - 256), group).rstrip().endswith(b"__global__")


def _unbalanced_alone(data: bytes, branches) -> bool:
    """A group with one branch (no `#else`) that opens or closes braces it does not close or
    open itself: its braces pair with another group's (`#if A` `} else {` `#endif` ... `#if A`
    `}` `#endif`), which the parser, reading every branch, cannot follow."""
    if len(branches) != 1:
        return False
    lo, hi = branches[0]
    if data.count(b"{", lo, hi) == data.count(b"}", lo, hi):
        return False            # (the common case, decided without removing comments)
    code = _code(data, lo, hi)
    return code.count(b"{") != code.count(b"}")


def _opens_in_each(data: bytes, branches) -> bool:
    """Two or more branches, each opening (or closing) the same number of braces, not zero."""
    if len(branches) < 2:
        return False
    raw = {data.count(b"{", lo, hi) - data.count(b"}", lo, hi) for lo, hi in branches}
    if len(raw) != 1 or 0 in raw:
        return False            # (the common case, decided without removing comments)
    nets = {code.count(b"{") - code.count(b"}") for code in
            (_code(data, lo, hi) for lo, hi in branches)}
    return len(nets) == 1 and 0 not in nets


def _empty_macro_lines(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of the lines that are only a use of a macro this file defines empty
    (every `#define` of it is): `NAME` of an object-like one, `NAME(...)` of a function-like
    one; never in a macro's continued body."""
    if b"define" not in data:
        return []
    empty: dict[bytes, list] = {}
    for m in _EMPTY_DEFINE.finditer(data):
        if data[data.rfind(b"\n", 0, m.start()) + 1:m.start()].strip(b" \t") == b"":
            empty.setdefault(m.group(1), []).append(m.group(2) is not None)
    if not empty:
        return []
    counts = _define_counts(data)
    return _lone_uses(data, {n: f[0] for n, f in empty.items()
                             if counts.get(n) == len(f) and len(set(f)) == 1})


def _self_ended_macro_lines(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of the lines that are only `NAME(...)` of a function-like macro of this file
    whose every body ends with its own `;` and launches nothing (bitsandbytes' `#define
    MAKE_X(n, T) template __global__ void k<T, n>(...);` then `MAKE_X(1, float)` lines): the
    parser, seeing no `;`, merged them with the kernel defined after them, which was lost."""
    from occlint.source.preproc import _directives

    if b"define" not in data:
        return []
    ended: dict[bytes, int] = {}
    for _s, _e, word, rest in _directives(data):
        m = _FUNCTION_LIKE.match(rest) if word == b"define" else None
        close = rest.find(b")", m.end()) if m is not None else -1
        body = rest[close + 1:].replace(b"\\\n", b" ").rstrip(b" \t\r\n\\") if close > 0 else b""
        if body.endswith(b";") and not any(w in body for w in _LAUNCH_WORDS):
            ended[m.group(1)] = ended.get(m.group(1), 0) + 1
    if not ended:
        return []
    counts = _define_counts(data)
    return _lone_uses(data, {n: True for n, k in ended.items() if counts.get(n) == k},
                      unended=True)


_FUNCTION_LIKE = re.compile(rb"\s*([A-Za-z_]\w*)\(")
_LAUNCH_WORDS = (b"<<<", b"cudaLaunch", b"cudaFuncSet", b"cudaOccupancy")


def _define_counts(data: bytes) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    for m in _ANY_DEFINE.finditer(data):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def _lone_uses(data: bytes, kind: dict[bytes, bool], unended: bool = False) -> list[tuple[int, int]]:
    """(start, end) of the lines that are only a use of a macro of `kind` (name -> function-
    like): `NAME`, or `NAME(...)` (with `unended`, without a `;` after it); never in a macro's
    continued body."""
    out = []
    for name, function_like in kind.items():
        at = data.find(name)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            m = _LONE_NAME.fullmatch(data, start, end)
            if m is not None and m.group(2) == name and (m.group(3) is not None) == \
                    function_like and start > 0 and data[start - 2:start - 1] != b"\\" and \
                    not (unended and m.group(0).rstrip().endswith(b";")):
                out.append((m.start(1), m.end(1)))
            at = data.find(name, end)
    return out


# an all-capitals name alone on the line before a launch, with no `;` (a statement can never
# be that): a macro, whatever a header defines it as; blanked so the launch is read. Only
# between statements: the line before it ends one (`;`, `{`, `}`, a comment, a directive) and
# the launch's line starts with the kernel's name (not gsplat's `SAFE` / `><<<...`: the last
# of a template's arguments, one per line)
_CAPITALS = re.compile(rb"[ \t]*([A-Z_][A-Z0-9_]*)[ \t]*\r?")
_LAUNCH_LINE = re.compile(rb"[ \t]*(?:::)?[A-Za-z_]")


def _macro_before_launch(data: bytes) -> list[tuple[int, int]]:
    out = []
    at = data.find(b"<<<")
    while at >= 0:
        line = data.rfind(b"\n", 0, at)                 # the launch's line starts after it
        launch_line = line + 1
        prev = data.rfind(b"\n", 0, line) if line > 0 else -1
        while line > 0 and not data[prev + 1:line].strip():     # blank lines between
            line, prev = prev, data.rfind(b"\n", 0, prev) if prev > 0 else -1
        m = _CAPITALS.fullmatch(data, prev + 1, line) if line > 0 else None
        if m is not None and data[prev - 1:prev] != b"\\" and \
                _LAUNCH_LINE.match(data, launch_line) and _ends_statement(data, prev):
            out.append((m.start(1), m.end(1)))
        at = data.find(b"<<<", at + 3)
    return list(dict.fromkeys(out))


def _ends_statement(data: bytes, end: int) -> bool:
    """Does the last non-blank line before offset `end` (a newline) end a statement: `;`, `{`,
    `}`, a `//` comment, a `*/`, a directive? True at the start of the file."""
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        text = data[start:end].strip()
        if text:
            return text.endswith((b";", b"{", b"}", b"*/")) or text.startswith(b"#") or \
                b"//" in text
        end = start - 1
    return True


# `k << <grid, block >> > (...)`: Visual Studio's formatting of a launch, which nvcc compiles
# and tree-sitter does not read as one (diff-gaussian-rasterization's 8 launches); rewritten
# `<<< ` and `>>> ` before parsing when the closing one follows the opening one in the statement
_SPACED_OPEN = re.compile(rb"<<[ \t]+<")
_SPACED_CLOSE = re.compile(rb">>[ \t]*>|>[ \t]+>[ \t]*>")


def _spaced_chevrons(data: bytes) -> list[tuple[int, int, bytes]]:
    out = []
    for m in _SPACED_OPEN.finditer(data):
        stop = data.find(b";", m.end())
        close = _SPACED_CLOSE.search(data, m.end(), stop if stop > 0 else len(data))
        if close is None:
            continue
        out.append((m.start(), m.end(), b"<<<"))
        if close.end() - close.start() > 3:
            out.append((close.start(), close.end(), b">>>"))
    return out


def decode(data: str | bytes) -> str:
    """UTF-8 with the BOM stripped and bad bytes replaced; lone surrogates become U+FFFD."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        text = bytes(data).decode("utf-8", errors="replace")
    else:
        text = str(data)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = re.sub("[\ud800-\udfff]", "\ufffd", text)   # one for one: offsets stay
    return text[1:] if text.startswith("\ufeff") else text


def _line_offsets(text, newline) -> list[int]:
    """Where each line of `text` (str or bytes) starts: 0, then after each newline (the
    lengths summed in C, not a match object per line)."""
    lines = text.split(newline)
    lines.pop()                         # (after the last newline: no line start follows)
    return list(accumulate(map(add, map(len, lines), repeat(1)), initial=0))


class Text:
    """The decoded text plus the UTF-8 bytes handed to tree-sitter."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode("utf-8")
        self.ascii = len(self.data) == len(text)
        self.line_bytes = _line_offsets(self.data, b"\n")
        self.line_chars = self.line_bytes if self.ascii else _line_offsets(text, "\n")
        self.blanked: list[tuple[str, int, int, bytes]] = []   # (kind, start, end, args)
        self.parse_data = self._blank()

    def _blank(self) -> bytes:
        spans = []
        quiet = _empty_macro_lines(self.data) + _macro_before_launch(self.data) \
            if b"<<<" in self.data else []
        if b"__global__" in self.data and b"#" in self.data:
            quiet += _self_ended_macro_lines(self.data)
        spaced = _spaced_chevrons(self.data) if b"<< " in self.data else []
        if b"__global__" in self.data and b"#" in self.data:
            quiet += _one_branch(self.data)
        if b"__maxnreg__" in self.data or b"__cluster_dims__" in self.data \
                or b"__align__" in self.data:
            spans += [(m.group(1).decode(), m.start(), m.end(), m.group(2))
                      for m in _BLANKED.finditer(self.data)]
        if b"__global__" in self.data:      # after `void` (group 1) or before it (group 3)
            found = [("bounds_macro", m.start(g), m.end(g), m.group(g))
                     for m in _BOUNDS_MACRO.finditer(self.data) for g in (1, 3) if m.group(g)]
            if found and b"define" in self.data:    # not in a macro's body: there `void
                from occlint.source.preproc import _directives  # kernelName(...)` is the
                defines = [(a, b) for a, b, word, _r in _directives(self.data)   # kernel
                           if word == b"define"]    # (flash-attention's DEFINE_..._KERNEL)
                found = [f for f in found if not any(a <= f[1] < b for a, b in defines)]
            spans += found
        if not spans and not quiet and not spaced:
            return self.data
        out = bytearray(self.data)
        for kind, start, end, args in sorted(spans, key=lambda b: b[1]):
            self.blanked.append((kind, start, end, args))
            for i in range(start, end):
                if out[i] not in (10, 13):
                    out[i] = 32
        for start, end in quiet:
            out[start:end] = b" " * (end - start)
        for start, end, token in spaced:        # `<< <` -> `<<< `, same length
            out[start:end] = token + b" " * (end - start - 3)
        return bytes(out)

    def char_offset(self, b: int) -> int:
        if self.ascii:
            return b
        row = bisect_right(self.line_bytes, b) - 1
        start = self.line_bytes[row]
        return self.line_chars[row] + len(self.data[start:b].decode("utf-8", "replace"))

    def byte_offset(self, c: int) -> int:
        """The byte offset of character offset `c` (a Span's start or end): char_offset's
        inverse."""
        if self.ascii:
            return c
        row = bisect_right(self.line_chars, c) - 1
        return self.line_bytes[row] + len(self.text[self.line_chars[row]:c].encode("utf-8"))

    def position(self, b: int) -> tuple[int, int, int]:
        """(line, column, char offset) for a byte offset; all 1-based but the offset."""
        row = bisect_right(self.line_bytes, b) - 1
        if self.ascii:
            return row + 1, b - self.line_bytes[row] + 1, b
        off = self.char_offset(b)
        return row + 1, off - self.line_chars[row] + 1, off

    def span(self, start: int, end: int) -> Span:
        if self.ascii:                   # the common case, inlined: bytes are characters
            lines = self.line_bytes
            r = bisect_right(lines, start) - 1
            r2 = r if r + 1 == len(lines) or end < lines[r + 1] else bisect_right(lines, end) - 1
            return Span(r + 1, start - lines[r] + 1, r2 + 1, end - lines[r2] + 1, start, end)
        line, col, s = self.position(start)
        end_line, end_col, e = self.position(end)
        return Span(line, col, end_line, end_col, s, e)

    def node_span(self, node) -> Span:
        return self.span(node.start_byte, node.end_byte)

    def node_text(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """The one line-splitting rule: lines end at `\\n` (CRLF's `\\r` goes with the ending).
    Unlike `str.splitlines()`, a form feed, vertical tab, U+2028 or U+0085 is not a line break,
    so line numbers agree with tree-sitter, spans, noqa comments and snippets."""
    parts = text.split("\n")
    last = parts.pop()
    if keepends:
        return [p + "\n" for p in parts] + ([last] if last else [])
    return [p[:-1] if p.endswith("\r") else p for p in parts] + ([last] if last else [])


_CHAR = re.compile(rb"'(?:\\.|[^'\\\n]){1,8}'")
_BRACES = re.compile(rb"\bnamespace\b\s*((?:inline\s+)?[A-Za-z_]\w*(?:\s*::\s*(?:inline\s+)?"
                     rb"[A-Za-z_]\w*)*)?\s*\{|[{}]")


def namespaces(data: bytes) -> list[tuple[int, int, str]] | None:
    """(open, close, name) of each namespace block of `data` by a count of its braces: the
    code without strings, comments, character literals and directive lines, and of each
    conditional group only its first branch that is not `#if 0`. None when the braces do not
    balance. tree-sitter's error recovery can close a namespace early (xgboost: a macro before
    a constructor, `XGBOOST_DEV_INLINE Loader(...) : batch_{...}`), leaving the kernels after it
    in no namespace, where nvcc's names them in theirs."""
    from occlint.source.preproc import _directives

    code = bytearray(blank_noise(data))
    if b"'" in data:
        for m in _CHAR.finditer(code):
            code[m.start():m.end()] = b" " * (m.end() - m.start())
    groups: list[list] = []        # per open group: [skipping since, a branch kept]
    for start, end, word, rest in _directives(data):
        code[start:end] = b" " * (end - start)
        if word in (b"if", b"ifdef", b"ifndef"):
            dead = word == b"if" and rest.strip() in (b"0", b"false")
            groups.append([start if dead else None, not dead])
        elif word in (b"elif", b"elifdef", b"elifndef", b"else") and groups:
            group = groups[-1]
            if group[0] is not None:
                code[group[0]:start] = b" " * (start - group[0])
            group[0] = start if group[1] else None
            group[1] = True
        elif word == b"endif" and groups:
            since = groups.pop()[0]
            if since is not None:
                code[since:start] = b" " * (start - since)
    out, stack = [], []
    for m in _BRACES.finditer(code):
        if m.group(0)[-1:] == b"}":
            if not stack:
                return None
            at, name = stack.pop()
            if name is not None:
                out.append((at, m.end(), name))
        elif m.group(0) == b"{":
            stack.append((m.start(), None))
        else:
            name = m.group(1)
            stack.append((m.start(), "(anonymous namespace)" if name is None else
                          re.sub(rb"\binline\s+|\s+", b"", name).decode("utf-8", "replace")))
    return None if stack else sorted(out)
