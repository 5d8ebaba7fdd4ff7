"""OCC040: find `-maxrregcount` in build files.

CMake files and Makefiles are scanned as text with `#` comments removed; setup.py is parsed with
libcst (string literals, so comments and docstrings never match); pyproject.toml and
compile_commands.json are parsed as data and located back in the text.
"""

from __future__ import annotations

import json
import os
import re

from occlint.files import toml
from occlint.model import Span
from occlint.record import dataclass
from occlint.source.text import split_lines

FLAG = re.compile(r"(?<![\w-])--?maxrregcount(?:\s*=\s*|\s+)?(\d+)?")
BUILD_NAMES = ("CMakeLists.txt", "Makefile", "makefile", "GNUmakefile", "setup.py",
               "pyproject.toml", "compile_commands.json")
BUILD_SUFFIXES = (".cmake", ".mk")


@dataclass(frozen=True)
class FlagHit:
    """A register-cap flag found in a build file."""

    span: Span
    flag: str          # as written: "-maxrregcount=32"
    value: int | None
    kind: str          # cmake | make | setup.py | pyproject | compile_commands


def is_build_file(path: str) -> bool:
    name = os.path.basename(path)
    return name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES)


def kind_of(path: str) -> str:
    name = os.path.basename(path)
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return "cmake"
    if name == "setup.py":
        return "setup.py"
    if name == "pyproject.toml":
        return "pyproject"
    if name == "compile_commands.json":
        return "compile_commands"
    return "make"


def scan(text: str, path: str) -> list[FlagHit]:
    """The `-maxrregcount` flags that cap registers for an optimised build: `-maxrregcount=0`
    means no limit (nvcc's default), and a cap set beside `-G` (a device-debug build, where
    unoptimised code needs it to launch at all) is not about occupancy."""
    if "maxrregcount" not in text:      # every scanner's flag spells it (no parse, no libcst)
        return []
    kind = kind_of(path)
    return [hit for hit in SCANNERS[kind](text) if hit.value != 0
            and not _beside_device_debug(text, hit.span, kind)]


_DEBUG = re.compile(r"(?<![\w-])(?:-G|--device-debug)(?![\w-])")
_OPEN = {"cmake": re.compile(r"^\s*if\s*\(", re.I), "make": re.compile(r"^\s*if(?:n?eq|n?def)\b")}
_CLOSE = {"cmake": re.compile(r"^\s*endif\s*\(", re.I), "make": re.compile(r"^\s*endif\b")}
_BRANCH = {"cmake": re.compile(r"^\s*(?:else|elseif)\s*\(", re.I), "make": re.compile(r"^\s*else\b")}


def _beside_device_debug(text: str, span: Span, kind: str) -> bool:
    """Is `-G` on the flag's line, or in the innermost conditional branch that holds it?"""
    lines = [_strip_hash_comments(line) for line in split_lines(text)]
    at = span.line - 1
    if _DEBUG.search(lines[at]):
        return True
    if kind not in _OPEN:
        return False
    start = _branch_edge(lines, at, kind, -1)        # the branch's opening line
    end = _branch_edge(lines, at, kind, +1)          # and the line that ends it
    if start is None or end is None:
        return False
    return any(_DEBUG.search(line) for line in lines[start + 1:end])


def _branch_edge(lines: list[str], at: int, kind: str, step: int) -> int | None:
    """The nearest line from `at` in direction `step` (-1 up, +1 down) that opens (up) or ends
    (down) the conditional branch holding line `at`: its `if`, `else`/`elseif`, or `endif`."""
    inward, outward = (_CLOSE[kind], _OPEN[kind]) if step < 0 else (_OPEN[kind], _CLOSE[kind])
    depth = 0
    for i in range(at + step, -1 if step < 0 else len(lines), step):
        if inward.match(lines[i]):
            depth += 1
        elif outward.match(lines[i]):
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and _BRANCH[kind].match(lines[i]):
            return i
    return None


def _span(text: str, start: int, end: int) -> Span:
    from occlint.fix import make_span
    return make_span(text, start, end)


def _hit(text: str, m: re.Match, kind: str, base: int = 0) -> FlagHit:
    flag = m.group(0).rstrip()
    start, end = base + m.start(), base + m.start() + len(flag)
    return FlagHit(_span(text, start, end), flag, int(m.group(1)) if m.group(1) else None, kind)


def _strip_hash_comments(line: str) -> str:
    """The line up to a `#` that is outside double quotes (CMake and make comments)."""
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        elif ch == "#" and not quoted and (i == 0 or line[i - 1] != "\\"):
            return line[:i]
    return line


def _scan_hash_text(text: str, kind: str) -> list[FlagHit]:
    hits, offset = [], 0
    for line in split_lines(text, keepends=True):
        code = _strip_hash_comments(line)
        if kind == "cmake":
            code = re.sub(r"#\[(=*)\[.*", "", code)
        for m in FLAG.finditer(code):
            hits.append(_hit(text, m, kind, offset))
        offset += len(line)
    return hits


def scan_cmake(text: str) -> list[FlagHit]:
    # drop bracket comments #[[ ... ]] (keeping offsets) before the line scan
    masked = re.sub(r"#\[(=*)\[.*?\]\1\]", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return [FlagHit(h.span, h.flag, h.value, h.kind) for h in _scan_hash_text(masked, "cmake")]


def scan_make(text: str) -> list[FlagHit]:
    return _scan_hash_text(text, "make")


def scan_setup_py(text: str) -> list[FlagHit]:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        wrapper = MetadataWrapper(cst.parse_module(text))
    except Exception:
        return []
    positions = wrapper.resolve(PositionProvider)
    from libcst.metadata import ParentNodeProvider
    parents = wrapper.resolve(ParentNodeProvider)
    line_starts = [0]
    for line in split_lines(text, keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    hits: list[FlagHit] = []

    class Visitor(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if "maxrregcount" not in node.value or isinstance(parents.get(node), cst.Expr):
                return      # docstrings and bare string statements are prose
            pos = positions[node]
            start = line_starts[pos.start.line - 1] + pos.start.column
            raw = node.value
            for m in FLAG.finditer(raw):
                value = m.group(1)
                flag = m.group(0).rstrip()
                if value is None:
                    value = _next_string_number(node, wrapper)
                hits.append(FlagHit(_span(text, start + m.start(), start + m.start() + len(flag)),
                                    flag, int(value) if value else None, "setup.py"))

    wrapper.visit(Visitor())
    return hits


def _next_string_number(node, wrapper) -> str | None:
    """For `["-maxrregcount", "32"]`: the next list element when it is a number string."""
    import libcst as cst
    from libcst.metadata import ParentNodeProvider

    parents = wrapper.resolve(ParentNodeProvider)
    element = parents.get(node)
    container = parents.get(element) if element is not None else None
    if isinstance(container, cst.List):
        items = list(container.elements)
        for i, item in enumerate(items[:-1]):
            if item.value is node and isinstance(items[i + 1].value, cst.SimpleString):
                nxt = items[i + 1].value.value.strip("'\"")
                return nxt if nxt.isdigit() else None
    return None


def _strings(data) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for v in data.values() for s in _strings(v)]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def _locate(text: str, strings: list[str], kind: str) -> list[FlagHit]:
    """Find each flag from parsed string values in the raw text, outside comments."""
    wanted = {m.group(0).rstrip() for s in strings for m in FLAG.finditer(s)}
    hits, offset = [], 0
    seen: set[str] = set()
    for line in split_lines(text, keepends=True):
        code = _strip_hash_comments(line) if kind == "pyproject" else line
        for m in FLAG.finditer(code):
            flag = m.group(0).rstrip()
            if flag in wanted and not (kind == "compile_commands" and flag in seen):
                seen.add(flag)
                hits.append(_hit(text, m, kind, offset))
        offset += len(line)
    return hits


def scan_pyproject(text: str) -> list[FlagHit]:
    try:
        data = toml().loads(text)
    except toml().TOMLDecodeError:
        return []
    return _locate(text, _strings(data), "pyproject")


def scan_compile_commands(text: str) -> list[FlagHit]:
    """One finding per distinct flag (a compile database repeats it for every file)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return _locate(text, _strings(data), "compile_commands")


SCANNERS = {
    "cmake": scan_cmake,
    "make": scan_make,
    "setup.py": scan_setup_py,
    "pyproject": scan_pyproject,
    "compile_commands": scan_compile_commands,
}
