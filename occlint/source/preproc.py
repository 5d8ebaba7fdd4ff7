"""The preprocessor's conditionals for one compilation pass: which branches are dead, which
macros are defined.

A `View` is one pass: the host pass (`arch` None: `__CUDA_ARCH__` undefined) or the device pass
for an arch (`__CUDA_ARCH__` = 900 for sm_90, and for `sm_90a`-style targets the feature macros
nvcc 13 sets: `__CUDA_ARCH_FEAT_SM90_ALL`, `__CUDA_ARCH_SPECIFIC__`,
`__CUDA_ARCH_FAMILY_SPECIFIC__`; `sm_100f` only the family one), with the unit's own `-D`/`-U`.

`scan(data, path, view)` walks `#if/#ifdef/#ifndef/#elif/#else/#endif`, `#define`, `#undef` and
`#include "..."` (project headers: found beside the including file or in the view's include
folders, read once each) in order, as the compiler does, and returns the byte ranges of the
file's branches that are false for this pass, with the macros defined by live lines of the file
and the headers it includes. A condition that names something occlint cannot know (a reserved
`__NAME` it does not set, a function-like macro, a macro a branch of unknown truth defines) is
unknown: both of its branches stay live, as before. When the unit's flags are known
(`View.complete`), a plain name defined nowhere occlint looked (the flags, the file, its project
headers) is undefined, as in C; otherwise it is unknown too.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from bisect import bisect_right

from occlint.files import real_path
from occlint.record import dataclass, field

MAX_INCLUDE_DEPTH = 24
MAX_HEADER_BYTES = 4 << 20
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*([a-z_]+)\b(.*)$")
_BLOCK_COMMENT = re.compile(rb"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(rb"//.*$")
_INCLUDE = re.compile(rb'^\s*"([^"]+)"|^\s*<([^>]+)>')
_NAME = re.compile(rb"[A-Za-z_]\w*")
_DEFINE = re.compile(rb"\s*([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$", re.S)
_TOKEN = re.compile(rb"\s*(?:(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uUlL]*|([A-Za-z_]\w*)|"
                    rb"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~?:()]))")
UNKNOWN = object()          # a macro whose definition depends on a branch of unknown truth


@dataclass(frozen=True)
class View:
    """One compilation pass of one unit."""

    arch: str | None = None                      # the device pass for this arch
    host: bool = False                           # the host pass (`__CUDA_ARCH__` undefined)
    defines: tuple[str, ...] = ()                # -D: "NAME" or "NAME=VALUE", in order
    undefines: tuple[str, ...] = ()              # -U NAME
    include_dirs: tuple[str, ...] = ()           # -I folders, absolute
    complete: bool = False                       # the unit's flags are known (a compile command
                                                 # or the config): a name defined nowhere is undefined
    prefix: tuple = ()           # a header's: (name, body | (params, body)) in force where a unit
                                 # includes it (`macros_at`), after the unit's -D/-U

    def predefined(self) -> dict[bytes, bytes]:
        """Macros in force before the first line of the file."""
        out = {b"__CUDACC__": b"1", b"__NVCC__": b"1", b"__cplusplus": b"201703L"}
        if self.arch:
            m = re.fullmatch(r"(?:sm|compute)_(\d+)([af]?)", self.arch)
            if m:
                number, suffix = int(m.group(1)), m.group(2)
                value = str(number * 10).encode()
                out[b"__CUDA_ARCH__"] = value
                if suffix == "a":
                    out[f"__CUDA_ARCH_FEAT_SM{number}_ALL".encode()] = b"1"
                    out[b"__CUDA_ARCH_SPECIFIC__"] = value
                if suffix in ("a", "f"):
                    out[b"__CUDA_ARCH_FAMILY_SPECIFIC__"] = value
        for d in self.defines:
            name, _, value = d.partition("=")
            out[name.strip().encode()] = value.encode() if "=" in d else b"1"
        for u in self.undefines:
            out.pop(u.strip().encode(), None)
        out.update(self.prefix)
        return out

    def known_undefined(self) -> set[bytes]:
        """Names this pass leaves undefined on purpose (`-U`, `__CUDA_ARCH__` on the host)."""
        out = {u.strip().encode() for u in self.undefines}
        if self.host:
            out |= {b"__CUDA_ARCH__", b"__CUDA_ARCH_SPECIFIC__", b"__CUDA_ARCH_FAMILY_SPECIFIC__"}
        elif self.arch:
            out |= {b"__CUDA_ARCH_SPECIFIC__", b"__CUDA_ARCH_FAMILY_SPECIFIC__"} - \
                set(self.predefined())
        return out | (_HIP - set(self.predefined()))


@dataclass
class Scan:
    """What walking one file's directives found."""

    dead: list[tuple[int, int]] = field(default_factory=list)    # byte ranges of the file
    macros: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)   # live object-like macros
    fmacros: dict[bytes, tuple[tuple[tuple[bytes, ...], bytes], ...]] = field(default_factory=dict)
    headers: list[str] = field(default_factory=list)            # project headers read
    arch_dependent: bool = False     # a condition reads __CUDA_ARCH__ or a feature macro
    evaluated: int = 0           # conditions decided (true or false)
    unknown: int = 0             # conditions left unknown

    def is_dead(self, start: int, end: int | None = None) -> bool:
        """Is the byte range [start, end) inside a dead branch?"""
        i = bisect_right(self.dead, (start, float("inf"))) - 1
        return i >= 0 and self.dead[i][0] <= start and (end or start) <= self.dead[i][1]


def _logical_line(data: bytes, pos: int, n: int) -> tuple[int, int, bytes]:
    """(start, end, text) of the line starting at `pos`, backslash continuations joined."""
    end = data.find(b"\n", pos)
    end = n if end < 0 else end
    line = data[pos:end]
    while line.endswith(b"\\") or line.endswith(b"\\\r"):
        nxt = data.find(b"\n", end + 1)
        nxt = n if nxt < 0 else nxt
        line = line.rstrip(b"\r")[:-1] + b" " + data[end + 1:nxt]
        end = nxt
        if end >= n:
            break
    return pos, end, line


# A physical line that may begin a directive: blanks (and blank lines continued by a backslash)
# then `#`. Only such lines can match _DIRECTIVE, so the walk skips every other line in C.
_HASH_LINE = re.compile(rb"^[ \t]*(?:\\\r?\n[ \t]*)*#", re.M)
# The same after a newline: a literal first, and the blanks possessive where Python has it
# (3.11), so the engine neither tests every byte for `^` nor backtracks over indentation
# (33 -> 9 ms on 4.2 MB); the first line is matched on its own.
_HASH_AFTER_NEWLINE = re.compile(rb"\n[ \t]*+(?:\\\r?\n[ \t]*)*#" if sys.version_info >= (3, 11)
                                 else rb"\n[ \t]*(?:\\\r?\n[ \t]*)*#")


def _line_starts(data: bytes):
    """Where `_HASH_LINE.finditer(data)` matches begin."""
    first = _HASH_LINE.match(data)
    if first is not None:
        yield 0
    for m in _HASH_AFTER_NEWLINE.finditer(data, 0 if first is None else first.end()):
        yield m.start() + 1


def _directive_lines(data: bytes):
    """The logical lines of `data` (as `_lines` yields them) that start with `#`: the only ones
    a directive can be on. A line continuing the one before it is never a start."""
    n = len(data)
    for pos in _line_starts(data):
        if pos and (data.endswith(b"\\", 0, pos - 1) or data.endswith(b"\\\r", 0, pos - 1)):
            continue
        yield _logical_line(data, pos, n)


_PATHS: dict[tuple[str, str], str] = {}    # (folder, name) -> the path, per process


def _joined(folder: str, name: str) -> str:
    """os.path.normpath(os.path.join(folder, name)), made once per process (every unit of a
    project tries the same `#include` names in the same folders)."""
    key = (folder, name)
    got = _PATHS.get(key)
    if got is None:
        if len(_PATHS) > 65536:
            _PATHS.clear()
        got = _PATHS[key] = os.path.normpath(os.path.join(folder, name))
    return got


def _folder_of(path: str) -> str:
    """os.path.dirname(os.path.abspath(path)), once per process and working folder."""
    key = (path, "" if path.startswith("/") else os.getcwd())
    got = _FOLDERS.get(key)
    if got is None:
        if len(_FOLDERS) > 65536:
            _FOLDERS.clear()
        got = _FOLDERS[key] = os.path.dirname(os.path.abspath(path))
    return got


_FOLDERS: dict[tuple[str, str], str] = {}


_DIRECTIVES: dict[bytes, list] = {}


def _directives(data: bytes) -> list[tuple[int, int, bytes, bytes]]:
    """(start, end, word, rest without comments) of each directive of `data`, found once per
    text in this process (a header is walked for every view, arch and includer)."""
    found = _DIRECTIVES.get(data)
    if found is None:
        found = []
        for start, end, line in _directive_lines(data):
            m = _DIRECTIVE.match(line) if b"#" in line[:64] else None
            if m is not None:
                found.append((start, end, m.group(1), _strip_comments(m.group(2))))
        if len(_DIRECTIVES) > 4096:
            _DIRECTIVES.clear()
        _DIRECTIVES[data] = found
    return found


_FUNCTION_LIKE = re.compile(rb"\s*([A-Za-z_]\w*)\(")


def launch_macros(data: bytes) -> tuple[bytes, ...]:
    """The function-like macros `data` defines with `<<<` or `__global__` in their body: a use
    launches a kernel (CloverLeaf's `CUDALAUNCH(kernel, ...)`) or defines one (NCCL's
    `DEFINE_ncclDevKernel(...)`). Read from its directives (`_directives`, remembered per text)."""
    if b"<<<" not in data and b"__global__" not in data:
        return ()
    return tuple(m.group(1) for _s, _e, word, rest in _directives(data)
                 if word == b"define" and (b"<<<" in rest or b"__global__" in rest) and
                 (m := _FUNCTION_LIKE.match(rest)))


def kernel_macros(data: bytes) -> tuple[bytes, ...]:
    """The object-like macros `data` defines with `__global__` in their body (pytorch3d's
    pulsar: `#define GLOBAL __global__`, then `GLOBAL void fill(...)`)."""
    if b"__global__" not in data:
        return ()
    return tuple(m.group(1) for _s, _e, word, rest in _directives(data)
                 if word == b"define" and b"__global__" in rest and (m := _OBJECT_LIKE.match(rest)))


_OBJECT_LIKE = re.compile(rb"\s*([A-Za-z_]\w*)(?![\w(])")


# The steps of a walk (`_State.do`).
_SET, _MACRO, _FMACRO, _HEADER, _SEEN, _ONCE, _ARCH, _COUNT = range(8)
_MISSING = object()


class _Effects:
    """The net effect of walking some lines: the table entries set, the definitions and headers
    recorded, the headers marked walked, the conditions counted. Applying it equals doing its
    steps again in order (the table is only looked up; definition lists keep first-seen order)."""

    __slots__ = ("sets", "macros", "fmacros", "headers", "seen", "once", "arch",
                 "evaluated", "unknown")

    def __init__(self):
        self.sets: dict[bytes, object] = {}
        self.macros: dict[bytes, tuple] = {}
        self.fmacros: dict[bytes, tuple] = {}
        self.headers: list[str] = []
        self.seen: set[str] = set()
        self.once: set[str] = set()
        self.arch = False
        self.evaluated = self.unknown = 0

    def note(self, op: int, a, b) -> None:
        """One step of `_State.do`."""
        if op == _SET:
            self.sets[a] = b
        elif op == _MACRO:
            _add(self.macros, a, b)
        elif op == _FMACRO:
            _add(self.fmacros, a, b)
        elif op == _HEADER:
            self.headers.append(a)
        elif op == _SEEN:
            self.seen.add(a)
        elif op == _ONCE:
            self.once.add(a)
        elif op == _ARCH:
            self.arch = True
        elif a is None:
            self.unknown += 1
        else:
            self.evaluated += 1

    def add(self, other: _Effects) -> None:
        self.sets.update(other.sets)
        _merge(self.macros, other.macros)
        _merge(self.fmacros, other.fmacros)
        self.headers += other.headers
        self.seen |= other.seen
        self.once |= other.once
        self.arch = self.arch or other.arch
        self.evaluated += other.evaluated
        self.unknown += other.unknown


# A name's definitions are a tuple in first-seen order, replaced, never changed in place: the
# tables of a header's recorded walk are then shared by every scan that replays it.
def _add(into: dict, name: bytes, item) -> None:
    items = into.get(name)
    if items is None:
        into[name] = (item,)
    elif item not in items:
        into[name] = (*items, item)


def _merge(into: dict, new: dict) -> None:
    """Add `new`'s definitions to `into`, each name's in first-seen order."""
    if not into:
        into.update(new)
        return
    both = new.keys() & into.keys()         # few: a Python loop over these only
    for name in both:
        have, more = into[name], new[name]
        if have is not more:
            into[name] = (*have, *(x for x in more if x not in have))
    if len(both) < len(new):
        into.update({name: items for name, items in new.items() if name not in into})


class _Record(_Effects):
    """One header's walk: what it read from outside itself (macros, whether a header was already
    walked, file contents) and its net effect, so that a later walk of the same header from the
    same outside state is replayed instead of read line by line (a project's common header is
    included by every file, and each file's scan would walk it again)."""

    __slots__ = ("data", "depth", "deepest", "cut", "reads", "checks", "files", "tried")

    def __init__(self, data: bytes, depth: int):
        super().__init__()
        self.data, self.depth = data, depth
        self.deepest = 0            # the deepest include it followed, relative to `depth`
        self.cut = False            # an include was skipped at MAX_INCLUDE_DEPTH
        self.reads: dict[bytes, object] = {}    # name -> its entry before the walk set it
        self.checks: dict[str, bool] = {}       # header -> already walked, when first asked
        self.files: dict[str, bytes | None] = {}   # header -> the bytes read
        self.tried: set[str] = set()            # every path an #include was looked for at

    def fits(self, depth: int) -> bool:
        """Does a walk starting at `depth` follow the same includes?"""
        return depth == self.depth or (not self.cut and depth + self.deepest < MAX_INCLUDE_DEPTH)


_WALKS: dict[tuple, list[_Record]] = {}     # (header path, view) -> its recent walks
_WALKS_PER_HEADER = 8


class _State:
    def __init__(self, view: View, reader):
        self.view = view
        self.read = reader
        self.table: dict[bytes, object] = dict(view.predefined())   # name -> body | (params, body) | UNKNOWN
        self.undefined = view.known_undefined()
        self.seen_headers: set[str] = set()
        self.once: set[str] = set()
        self.out = Scan()
        # macros_at: the headers whose first #include it records the macros at (`snapshots`)
        self.stop_at: frozenset[str] | None = None
        self.snapshots: dict[str, dict] = {}
        self.recording: list[_Record] = []      # the header walks in progress, outermost first
        self.files: dict[str, bytes | None] = {}

    # --- reads and steps, also noted by the header walks being recorded ----------------------

    def get(self, name: bytes):
        """The table's entry for `name` (_MISSING when absent)."""
        v = self.table.get(name, _MISSING)
        for rec in self.recording:
            if name not in rec.sets and name not in rec.reads:
                rec.reads[name] = v
        return v

    def walked(self, path: str) -> bool:
        """Was this header walked (or marked `#pragma once`) in this scan?"""
        v = path in self.once or path in self.seen_headers
        for rec in self.recording:
            if path not in rec.seen and path not in rec.once and path not in rec.checks:
                rec.checks[path] = v
        return v

    def read_file(self, path: str) -> bytes | None:
        """A header's bytes, read once per scan (replays check every file their walk read)."""
        data = self.files.get(path, _MISSING)
        if data is _MISSING:
            data = self.files[path] = self.read(path)
        for rec in self.recording:
            rec.files.setdefault(path, data)
        return data

    def do(self, op: int, a=None, b=None) -> None:
        out = self.out
        if op == _SET:
            self.table[a] = b
        elif op == _MACRO:
            _add(out.macros, a, b)
        elif op == _FMACRO:
            _add(out.fmacros, a, b)
        elif op == _HEADER:
            out.headers.append(a)
        elif op == _SEEN:
            self.seen_headers.add(a)
        elif op == _ONCE:
            self.once.add(a)
        elif op == _ARCH:
            out.arch_dependent = True
        elif a is None:
            out.unknown += 1
        else:
            out.evaluated += 1
        for rec in self.recording:
            rec.note(op, a, b)

    def apply(self, eff: _Effects) -> None:
        """Do what `eff` records, as `do` would have step by step."""
        out = self.out
        self.table.update(eff.sets)
        _merge(out.macros, eff.macros)
        _merge(out.fmacros, eff.fmacros)
        out.headers += eff.headers
        self.seen_headers |= eff.seen
        self.once |= eff.once
        out.arch_dependent = out.arch_dependent or eff.arch
        out.evaluated += eff.evaluated
        out.unknown += eff.unknown
        for rec in self.recording:
            rec.add(eff)

    # --- the walk -----------------------------------------------------------------------------

    def walk_header(self, data: bytes, path: str, depth: int) -> None:
        """Walk a project header, or replay an earlier walk of it that read the same state."""
        memo = self.read is read_header         # a reader of its own (tests): no replays
        key = (path, self.view)
        for rec in _WALKS.get(key, ()) if memo else ():
            if (rec.data is data or rec.data == data) and rec.fits(depth) and \
                    not self._may_stop(rec) and self._replay(rec, depth):
                return
        rec = _Record(data, depth)
        self.recording.append(rec)
        try:
            self.walk(data, path, depth, record=False)
        finally:
            self.recording.pop()
        if memo:
            if len(_WALKS) > 4096:
                _WALKS.clear()
            recs = _WALKS.setdefault(key, [])
            recs.insert(0, rec)
            del recs[_WALKS_PER_HEADER:]

    def _replay(self, rec: _Record, depth: int) -> bool:
        """Apply `rec` if everything it read outside itself reads the same now."""
        for name, v in rec.reads.items():
            got = self.get(name)
            if got is not v and got != v:
                return False
        for p, v in rec.checks.items():
            if self.walked(p) != v:
                return False
        for p, v in rec.files.items():
            got = self.read_file(p)
            if got is not v and got != v:
                return False
        self.apply(rec)
        self._followed(depth + rec.deepest, rec.cut)
        for outer in self.recording:
            outer.tried |= rec.tried
        return True

    def _may_stop(self, rec: _Record) -> bool:
        """Would walking `rec`'s header meet the include macros_at stops at?"""
        return self.stop_at is not None and any(
            (real := _realpath(p)) in self.stop_at and real not in self.snapshots for p in rec.tried)

    def _followed(self, depth: int, cut: bool) -> None:
        """An include was followed at `depth` (with `cut`: one was skipped at the limit)."""
        for rec in self.recording:
            rec.deepest = max(rec.deepest, depth - rec.depth)
            rec.cut = rec.cut or cut

    def walk(self, data: bytes, path: str, depth: int, record: bool) -> None:
        stack: list[list] = []      # [parent_live, branch_live, any_taken, start_of_dead]
        live: object = True         # True | False | None (unknown)
        for start, end, word, rest in _directives(data):
            if word in (b"if", b"ifdef", b"ifndef"):
                if live is False:
                    cond = False
                elif word == b"if":
                    cond = self.condition(rest)
                else:
                    name = _NAME.match(rest.strip())
                    cond = self.is_defined(name.group(0)) if name else None
                    if word == b"ifndef" and cond is not None:
                        cond = not cond
                if live is not False:
                    self._count(cond)
                branch = _and(live, cond)
                # a dead range starts only where the parent is not dead already: nested ranges
                # would hide the rest of the parent's (Scan.is_dead looks at one range)
                stack.append([live, branch, cond,
                              end + 1 if branch is False and live is not False else None])
                live = branch
            elif word in (b"elif", b"elifdef", b"elifndef", b"else") and stack:
                frame = stack[-1]
                parent, _branch, taken, dead_from = frame
                if dead_from is not None and record:
                    self.out.dead.append((dead_from, start))
                if word == b"else":
                    cond = None if taken is None else not taken
                elif taken is True or parent is False:
                    cond = False
                else:
                    if word == b"elif":
                        c = self.condition(rest)
                    else:
                        name = _NAME.match(rest.strip())
                        c = self.is_defined(name.group(0)) if name else None
                        if word == b"elifndef" and c is not None:
                            c = not c
                    self._count(c)
                    cond = c if taken is False else (None if c is not False else False)
                branch = _and(parent, cond)
                frame[1] = branch
                frame[2] = True if taken is True or cond is True else \
                    (None if taken is None or cond is None else False)
                frame[3] = end + 1 if branch is False and parent is not False else None
                live = branch
            elif word == b"endif" and stack:
                parent, _branch, _taken, dead_from = stack.pop()
                if dead_from is not None and record:
                    self.out.dead.append((dead_from, start))
                live = parent
            elif live is False:
                continue
            elif word == b"define":
                self.define(rest, live, record)
            elif word == b"undef":
                name = _NAME.match(rest.strip())
                if name:
                    self.do(_SET, name.group(0), None if live is True else UNKNOWN)
            elif word == b"include":
                if depth < MAX_INCLUDE_DEPTH:
                    self._followed(depth, False)
                    self.include(rest, path, depth)
                else:
                    self._followed(depth, True)
            elif word == b"pragma" and rest.strip() == b"once":
                self.do(_ONCE, path)
        for _parent, _branch, _taken, dead_from in stack:     # unterminated: dead to the end
            if dead_from is not None and record:
                self.out.dead.append((dead_from, len(data)))

    def _count(self, cond) -> None:
        self.do(_COUNT, None if cond is None else True)

    def define(self, rest: bytes, live, record: bool) -> None:
        m = _DEFINE.match(rest)
        if not m:
            return
        name, body = m.group(1), m.group(4).strip()
        params = None if m.group(2) is None else \
            tuple(p.strip() for p in m.group(3).split(b",") if p.strip())
        if live is not True:
            self.do(_SET, name, UNKNOWN)
        elif params is not None:
            self.do(_SET, name, (params, body))
        else:
            self.do(_SET, name, body)
        if params is not None:
            self.do(_FMACRO, name, (params, body))
        else:
            self.do(_MACRO, name, body)

    def include(self, rest: bytes, path: str, depth: int) -> None:
        m = _INCLUDE.match(rest)
        if not m:
            return
        name = (m.group(1) or m.group(2)).decode("utf-8", "replace")
        folders = ([_folder_of(path)] if m.group(1) else []) + list(self.view.include_dirs)
        for folder in folders:
            full = _joined(folder, name)
            for rec in self.recording:
                rec.tried.add(full)
            if self.stop_at is not None:
                real = _realpath(full)
                if real in self.stop_at and real not in self.snapshots:
                    self.snapshots[real] = {k: v for k, v in self.table.items()
                                            if v is not None and v is not UNKNOWN}
                    if len(self.snapshots) == len(self.stop_at):
                        raise _Reached
            if self.walked(full):
                return              # walked once per scan: include guards make a second walk a no-op
            data = self.read_file(full)
            if data is None:
                continue
            self.do(_SEEN, full)
            if not _project_file(full):
                return              # toolkit, system and wheel headers: their macros stay unknown
            self.do(_HEADER, full)
            self.walk_header(data, full, depth + 1)
            return

    # --- conditions ---------------------------------------------------------------------------

    def is_defined(self, name: bytes):
        v = self.get(name)
        if v is not _MISSING:
            return None if v is UNKNOWN else v is not None
        if self.undefined_name(name):
            return False
        return None

    def undefined_name(self, name: bytes) -> bool:
        """Known to be undefined (it is not in the table)."""
        if name.startswith(b"__CUDA_ARCH"):
            self.do(_ARCH)
            if self.view.arch or self.view.host:
                return True          # nvcc sets every arch macro it means to set
        return name in self.undefined or (self.view.complete and not _reserved(name) and
                                          not _LIBRARY_NAME.fullmatch(name))

    def condition(self, text: bytes):
        """True, False or None (unknown) for an `#if` expression."""
        try:
            tokens = self.expand(_tokens(text), set())
            if tokens is None:
                return None
            value, rest = _Expr(tokens).parse()
        except (ValueError, IndexError, ZeroDivisionError, RecursionError):
            return None
        if value is None or rest:
            return None
        return bool(value)

    def expand(self, tokens: list, active: set):
        out = []
        i = 0
        while i < len(tokens):
            kind, tok = tokens[i]
            if kind == "name" and tok == b"defined":
                paren = i + 1 < len(tokens) and tokens[i + 1] == ("op", b"(")
                j = i + 2 if paren else i + 1
                if j >= len(tokens) or tokens[j][0] != "name":
                    return None
                d = self.is_defined(tokens[j][1])
                out.append(("num", None if d is None else int(d)))
                i = j + (2 if paren else 1)
                continue
            if kind == "name":
                if tok.startswith(b"__CUDA_ARCH"):
                    self.do(_ARCH)
                v = self.get(tok)
                if v is UNKNOWN:
                    return None
                if isinstance(v, tuple):
                    return None                 # function-like macros: not expanded here
                if isinstance(v, bytes) and tok not in active:
                    inner = self.expand(_tokens(v), active | {tok})
                    if inner is None:
                        return None
                    out += inner if inner else [("num", 0)]
                elif tok in (b"true", b"false") or v is not _MISSING or self.undefined_name(tok):
                    out.append(("num", 0))      # undefined (or `true`/`false` below)
                    if tok == b"true":
                        out[-1] = ("num", 1)
                else:
                    return None                 # a reserved name occlint does not set
                i += 1
                continue
            out.append((kind, tok))
            i += 1
        return out


# what hipcc defines and nvcc never does (`#if defined(__HIPCC__)`: ROCm branches of ML code),
# and what nvcc no longer defines (`__DEVICE_EMULATION__`: the emulation mode CUDA 3.0 removed)
_HIP = frozenset((b"__HIPCC__", b"__HIP__", b"__HIP_PLATFORM_AMD__", b"__HIP_PLATFORM_HCC__",
                  b"__HIP_DEVICE_COMPILE__", b"__HIP_ROCclr__", b"__DEVICE_EMULATION__"))


# names the CUDA toolkit's and common libraries' headers define, which occlint does not walk:
# never "undefined" for being defined nowhere occlint looked (ggml's `#if CUDART_VERSION >=
# 11070` then `#define GGML_CUDA_USE_CUB`: cuda_runtime.h, which nvcc includes in every .cu,
# defines it), but unknown; likewise <climits>/<cfloat>/<cmath> limits and constants
_LIBRARY_NAME = re.compile(
    rb"(?:CUDART|CUDA|CU|THRUST|CUB|CUDNN|NCCL|CUBLAS|CUBLASLT|CUSPARSE|CUFFT|CURAND|CUSOLVER|"
    rb"CUTENSOR|NVSHMEM|NVTX|NPP|NV|CUTLASS|CUTE|CCCL|LIBCUDACXX|TORCH|C10|AT|PYBIND11)_\w+|"
    rb"U?(?:INT|LONG|LLONG|SHRT|CHAR|INT\d+|SIZE|PTRDIFF|INTPTR)_(?:MAX|MIN|WIDTH)|"
    rb"(?:FLT|DBL|LDBL)_\w+|M_\w+|HUGE_VALF?|INFINITY|NAN|RAND_MAX|EXIT_\w+|EOF|BUFSIZ")


def _reserved(name: bytes) -> bool:
    """`__x` or `_X`: the compiler's or the library's, not the project's."""
    return name.startswith(b"__") or (len(name) > 1 and name[:1] == b"_" and name[1:2].isupper())


def _and(a, b):
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _strip_comments(text: bytes) -> bytes:
    if b"/" not in text:            # (most directives: no comment to strip)
        return text
    return _LINE_COMMENT.sub(b"", _BLOCK_COMMENT.sub(b" ", text))


def _tokens(text: bytes) -> list:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(text[pos:pos + 10])
        if m.group(1):
            lit = m.group(1).lower()
            base = 16 if lit[:2] == b"0x" else 2 if lit[:2] == b"0b" else \
                8 if len(lit) > 1 and lit[:1] == b"0" else 10
            out.append(("num", int(lit[2:] if base in (2, 16) else lit, base)))
        elif m.group(2):
            out.append(("name", m.group(2)))
        else:
            out.append(("op", m.group(3)))
        pos = m.end()
        while pos < len(text) and text[pos:pos + 1].isspace():
            pos += 1
    return out


_BINARY = [
    (b"||",), (b"&&",), (b"|",), (b"^",), (b"&",), (b"==", b"!="), (b"<", b">", b"<=", b">="),
    (b"<<", b">>"), (b"+", b"-"), (b"*", b"/", b"%"),
]


class _Expr:
    """Precedence climbing over preprocessor tokens; None (unknown) propagates, except where
    `&&`/`||`/`?:` make an operand irrelevant."""

    def __init__(self, tokens):
        self.t = tokens
        self.i = 0

    def parse(self):
        v = self.ternary()
        return v, self.t[self.i:]

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def ternary(self):
        c = self.binary(0)
        if self.peek() == ("op", b"?"):
            self.i += 1
            a = self.ternary()
            if self.peek() != ("op", b":"):
                raise ValueError("?:")
            self.i += 1
            b = self.ternary()
            if c is None:
                return a if a == b else None
            return a if c else b
        return c

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            kind, op = self.peek()
            if kind != "op" or op not in _BINARY[level]:
                return left
            self.i += 1
            right = self.binary(level + 1)
            left = _apply(op, left, right)

    def unary(self):
        kind, tok = self.peek()
        if kind == "op" and tok in (b"!", b"-", b"+", b"~"):
            self.i += 1
            v = self.unary()
            if v is None:
                return None
            return {b"!": int(not v), b"-": -v, b"+": v, b"~": ~v}[tok]
        if kind == "op" and tok == b"(":
            self.i += 1
            v = self.ternary()
            if self.peek() != ("op", b")"):
                raise ValueError(")")
            self.i += 1
            return v
        if kind == "num":
            self.i += 1
            return tok
        raise ValueError(tok)


def _apply(op, a, b):
    if op == b"&&":
        if a == 0 or b == 0:
            return 0 if (a is not None and a == 0) or (b is not None and b == 0) else None
        return None if a is None or b is None else 1
    if op == b"||":
        if (a is not None and a != 0) or (b is not None and b != 0):
            return 1
        return None if a is None or b is None else 0
    if a is None or b is None:
        return None
    if op in (b"/", b"%") and b == 0:
        return None
    return {
        b"|": lambda: a | b, b"^": lambda: a ^ b, b"&": lambda: a & b,
        b"==": lambda: int(a == b), b"!=": lambda: int(a != b), b"<": lambda: int(a < b),
        b">": lambda: int(a > b), b"<=": lambda: int(a <= b), b">=": lambda: int(a >= b),
        b"<<": lambda: a << b if 0 <= b < 64 else None, b">>": lambda: a >> b if 0 <= b < 64 else None,
        b"+": lambda: a + b, b"-": lambda: a - b, b"*": lambda: a * b,
        b"/": lambda: int(a / b) if (a < 0) != (b < 0) else a // b,
        b"%": lambda: a - b * (int(a / b) if (a < 0) != (b < 0) else a // b),
    }[op]()


def _project_file(path: str) -> bool:
    """A header of the user's project (the toolchain's one answer: not /usr, not a CUDA toolkit,
    not the running Python's wheels). Walking library headers cost seconds per file."""
    hit = _PROJECT_FILES.get(path)
    if hit is None:
        from occlint.toolchain.includers import user_files  # lazy: source/ sits below toolchain/

        if len(_PROJECT_FILES) > 65536:
            _PROJECT_FILES.clear()
        hit = _PROJECT_FILES[path] = bool(user_files([path]))
    return hit


_PROJECT_FILES: dict[str, bool] = {}
_REALPATHS: dict[str, str] = {}


def _realpath(path: str) -> str:
    """os.path.realpath, remembered for this process (macros_at asks for every include of every
    includer of every header)."""
    real = _REALPATHS.get(path)
    if real is None:
        if len(_REALPATHS) > 65536:
            _REALPATHS.clear()
        real = real_path(path, _REALPATHS)
    return real


_HEADERS: dict[str, tuple[tuple, bytes | None]] = {}    # path -> (mtime, size, inode), bytes
READ: set[str] = set()      # every path read_header was asked for in this process (occlint.results)


_RUN: dict | None = None     # within `one_run`: path -> what it read (and run_memo's)


@contextlib.contextmanager
def one_run():
    """Within this, a file is read (and stat'ed) once: one command's files do not change under
    it. Outside, every read_header call checks the modification time (the language server)."""
    global _RUN
    outer, _RUN = _RUN, ({} if _RUN is None else _RUN)
    try:
        yield
    finally:
        _RUN = outer


def run_memo(name: str) -> dict | None:
    """Within `one_run`: a dict kept for the rest of the run under `name` (what one command
    works out once, such as the code's fingerprint); outside one, None."""
    if _RUN is None:
        return None
    return _RUN.setdefault(("memo", name), {})      # (a tuple: never a path)


def remember(path: str, data: bytes) -> None:
    """Within `one_run`: `data` is what `path` (an absolute path) holds, already read (a
    listing's files): read_header answers with it instead of reading it again."""
    if _RUN is not None and len(data) <= MAX_HEADER_BYTES:
        _RUN.setdefault(path, data)


def read_header(path: str) -> bytes | None:
    """A project header's bytes (memoized by modification time); None when it is not a
    readable regular file of reasonable size."""
    READ.add(path)
    run = _RUN
    if run is not None:
        data = run.get(path, _MISSING)
        if data is _MISSING:
            data = run[path] = _read_header(path)
        return data
    return _read_header(path)


def _read_header(path: str) -> bytes | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HEADER_BYTES:
        return None
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = _HEADERS.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        data = None
    if len(_HEADERS) > 4096:
        _HEADERS.clear()
    _HEADERS[path] = (stamp, data)
    return data


def scan(data: bytes, path: str, view: View | None = None, reader=read_header) -> Scan:
    """Dead branches of `data` and the macros live for `view` (the host pass by default)."""
    state = _State(view or View(), reader)
    state.walk(data, path, 0, record=True)
    state.out.dead.sort()
    return state.out


class _Reached(Exception):
    """The walk met the `#include` that `macros_at` looks for."""


def macros_at(data: bytes, path: str, view: View, header: str) -> dict | None:
    """The macros a unit has in force where it first includes `header` (directly or through its
    project headers), for this pass: {name: body | (params, body)}, without those whose value
    depends on a branch of unknown truth. None when the walk never reaches that include."""
    real = os.path.realpath(header)
    return macros_at_all(data, path, view, [real])[real]


def macros_at_all(data: bytes, path: str, view: View, headers) -> dict[str, dict | None]:
    """`macros_at` for several headers (real paths) in one walk of the unit: real path ->
    its table, or None."""
    state = _State(view, read_header)
    state.stop_at = frozenset(headers)
    try:
        state.walk(data, path, 0, record=False)
    except _Reached:
        pass
    return {h: state.snapshots.get(h) for h in state.stop_at}


def common_macros(tables) -> tuple:
    """The macros every includer agrees on (a header's `View.prefix`); a name whose value
    differs between includers is left out, so it stays unknown."""
    tables = [t for t in tables if t is not None]
    if not tables:
        return ()
    first, rest = tables[0], tables[1:]
    return tuple((k, v) for k, v in first.items() if all(t.get(k) == v for t in rest))


def mentions_arch(data: bytes) -> bool:
    """Could this text's conditionals differ between archs (cheap pre-check)?"""
    return b"__CUDA_ARCH" in data


def view_from_flags(flags, cwd: str = ".", arch: str | None = None, *, host: bool = False,
                    complete: bool = True) -> View:
    """The View of a unit compiled with these nvcc flags (-D, -U, -I in their spellings)."""
    defines, undefines, includes = [], [], []
    flags = list(flags)
    i = 0
    while i < len(flags):
        f = flags[i]
        for opt, dest in (("-D", defines), ("-U", undefines), ("-I", includes),
                          ("--define-macro", defines), ("--undefine-macro", undefines),
                          ("--include-path", includes), ("-isystem", None)):
            if f == opt and i + 1 < len(flags):
                if dest is not None:
                    dest.append(flags[i + 1])
                i += 1
                break
            if f.startswith(opt + "=") or (f.startswith(opt) and len(opt) == 2 and len(f) > 2):
                if dest is not None:
                    dest.append(f[len(opt) + 1:] if f.startswith(opt + "=") else f[len(opt):])
                break
        i += 1
    return View(arch=arch, host=host, defines=tuple(defines), undefines=tuple(undefines),
                include_dirs=tuple(os.path.normpath(os.path.join(cwd, d)) for d in includes),
                complete=complete)
