"""Lint the CUDA of a Python file with the same engine as `.cu` files, at the `.py` positions.

Each kernel source string becomes a *virtual* CUDA file: the string's value, then a host function
with one `<<<...>>>` launch per Python launch site and one `cudaFuncSetAttribute` per
`max_dynamic_shared_size_bytes` assignment, written from the values libcst evaluated. The
engine lints that text (so every launch rule and `// noqa` inside the string apply), and each
finding is mapped back: inside the string through the string's position map, in the appended
host function to the Python call (the grid, block or shared-memory argument where the finding
points at one). A fix survives only when every edit maps exactly into one literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from occlint import record
from occlint.fix import make_span
from occlint.model import CompileError, Edit, Finding, Fix, Usage
from occlint.python.extract import Arg, Module, PyModel, Unknown
from occlint.python.strings import UNKNOWN
from occlint.record import dataclass, field

HOST = "__occlint_python_launches__"
_NAME = re.compile(r"^[A-Za-z_][\w:]*(?:<[^<>;{}()]*>)?$")


@dataclass
class _Site:
    start: int                       # the line in the virtual text
    end: int
    call: tuple[int, int]            # the Python call
    args: list[tuple[int, int, Arg]] = field(default_factory=list)


@dataclass
class Virtual:
    module: Module
    text: str
    code_len: int
    sites: list[_Site]


def _dim(value) -> str | None:
    """A CuPy/PyCUDA grid or block value as C++ `dim3(x, y, z)`; None when absent."""
    if value is None:
        return None
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(items) <= 3:
        return f"dim3({UNKNOWN}, 1, 1)"
    parts = [str(v) if isinstance(v, int) and not isinstance(v, bool) else UNKNOWN for v in items]
    parts += ["1"] * (3 - len(parts))
    return f"dim3({', '.join(parts)})"


def _smem(value) -> str:
    if value is None:
        return "0"
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else UNKNOWN


def build_virtual(model: PyModel, mod: Module) -> Virtual:
    """The string's value, then one host function with the module's Python launch sites."""
    code = mod.code.text
    lines = ["", "", f"void {HOST}() {{"]
    at = len(code) + sum(len(s) + 1 for s in lines)
    sites: list[_Site] = []

    def add(line: str, site: _Site, pieces: list[tuple[str, Arg | None]]) -> None:
        nonlocal at
        site.start, site.end = at, at + len(line)
        col = 0
        for piece, arg in pieces:
            idx = line.index(piece, col)
            if arg is not None and arg.end > arg.start:
                site.args.append((at + idx, at + idx + len(piece), arg))
            col = idx + len(piece)
        lines.append(line)
        sites.append(site)
        at += len(line) + 1

    for ln in model.launches:
        if ln.kernel.module != mod.index or not _NAME.match(ln.kernel.name):
            continue
        grid = _dim(ln.grid.value) or "dim3(1, 1, 1)"
        block = _dim(ln.block.value) or f"dim3({UNKNOWN}, 1, 1)"
        smem = _smem(ln.shared.value)
        line = f"  {ln.kernel.name}<<<{grid}, {block}, {smem}>>>();"
        add(line, _Site(0, 0, (ln.start, ln.end)), [(grid, ln.grid), (block, ln.block), (smem, ln.shared)])
    for attr in model.attributes:
        if attr.kernel.module != mod.index or not _NAME.match(attr.kernel.name):
            continue
        value = _smem(attr.value.value) if not isinstance(attr.value.value, Unknown) else UNKNOWN
        line = f"  cudaFuncSetAttribute({attr.kernel.name}, cudaFuncAttributeMaxDynamicSharedMemorySize, {value});"
        add(line, _Site(0, 0, (attr.start, attr.end)), [(value, attr.value)])
    lines.append("}")
    return Virtual(mod, code + "\n".join(lines) + "\n", len(code), sites)


# --- mapping back ----------------------------------------------------------------------------


def _map_offsets(v: Virtual, start: int, end: int) -> tuple[int, int]:
    if start < v.code_len or not v.sites:
        return v.module.code.span(min(start, max(v.code_len - 1, 0)), min(end, v.code_len))
    for site in v.sites:
        if site.start <= start <= site.end:
            for a, b, arg in site.args:
                if a <= start < b:
                    return arg.start, arg.end
            return site.call
    return v.module.offset, v.module.end


def python_offset(v: Virtual, offset: int) -> int:
    """Where in the .py file an offset of the virtual text is (see `_map_offsets`)."""
    return _map_offsets(v, offset, offset)[0]


def _map_fix(v: Virtual, fix: Fix | None, pytext: str) -> Fix | None:
    if fix is None:
        return None
    edits = []
    for e in fix.edits:
        if e.span.end > v.code_len:
            return None
        where = v.module.code.exact_edit(e.span.start, e.span.end, e.content)
        if where is None:
            return None
        edits.append(Edit(e.content, make_span(pytext, *where)))
    return Fix(fix.message, tuple(edits), fix.applicability)


def map_finding(v: Virtual, f: Finding, pytext: str, inside: frozenset[int] = frozenset()) -> Finding:
    """`inside`: the .py offsets of newlines that are part of a string value; a finding on a line
    ending inside the string is silenced with `// noqa` there, any other with `# noqa`."""
    a, b = _map_offsets(v, f.span.start, f.span.end)
    span = make_span(pytext, a, b)
    eol = pytext.find("\n", a)
    comment = "//" if eol >= 0 and eol in inside else "#"
    return record.replace(f, span=span, fix=_map_fix(v, f.fix, pytext),
                               data={**f.data, "noqa_comment": comment})


# --- the pure entry point -------------------------------------------------------------------


def lint_python_source(text: str, path: str, model: PyModel, usage: Mapping[int, Sequence[Usage]],
                       errors: Mapping[int, Sequence[CompileError]], config) -> list[Finding]:
    """Findings for every CUDA string of a Python file (usage/errors per module index). Pure."""
    from occlint import noqa as suppressions
    from occlint.engine import lint_source

    noqa = suppressions.read(text, "#")
    findings: list[Finding] = []
    for mod in model.modules:
        if mod.code is None:
            continue
        v = build_virtual(model, mod)
        inside = frozenset(p for ch, p in zip(mod.code.chars, mod.code.pos, strict=True)
                           if ch == "\n" and text[p:p + 1] == "\n")
        found = lint_source(v.text, path, list(usage.get(mod.index, ())), config,
                            compile_errors=list(errors.get(mod.index, ())))
        for f in found:
            g = map_finding(v, f, text, inside)
            lines = [*range(g.span.line, g.span.end_line + 1)]
            closing = model.literal_end_line(g.span.start)
            if closing is not None:
                lines.append(closing)       # ruff: a multi-line string's noqa goes after it
            if not suppressions.suppressed(g.code, lines, noqa):
                findings.append(g)
    findings = list(dict.fromkeys(findings))
    findings.sort(key=lambda f: (f.span.line, f.span.column, f.code, f.arch or ""))
    return findings


def notices_for(model: PyModel) -> list[str]:
    """What occlint could not see in this file, one line each (`path:line:col: ...`)."""
    from occlint.emit.concise import display_path
    from occlint.python.extract import _short

    out = []
    path = display_path(model.path, ".")        # as findings show it
    for offset, what in model.problems:
        span = make_span(model.text, offset, offset)
        out.append(f"{path}:{span.line}:{span.column}: {what}")
    for mod in model.modules:
        if mod.code is not None and mod.code.unknown:
            span = make_span(model.text, mod.offset, mod.offset)
            parts = ", ".join(f"`{_short(u)}`" for u in dict.fromkeys(mod.code.unknown))
            out.append(f"{path}:{span.line}:{span.column}: {mod.api} source is partly unknown ({parts}): "
                       "linted where it parses; not compiled, so register and spill checks were skipped")
        elif mod.code is not None and not mod.options_known:     # (a source not compiled: no word)
            span = make_span(model.text, mod.offset, mod.offset)
            out.append(f"{path}:{span.line}:{span.column}: {mod.api} options could not be evaluated; "
                       "compiled without them")
    return out
