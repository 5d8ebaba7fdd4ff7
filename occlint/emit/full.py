"""`full`: each finding with its source line and the span underlined (like ruff's default)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from occlint.emit.concise import header
from occlint.model import Finding


def snippet(f: Finding, text: str) -> list[str]:
    from occlint.source.text import split_lines

    lines = split_lines(text)
    if not 1 <= f.span.line <= len(lines):
        return []
    first = max(1, f.span.line - 1)
    width = len(str(f.span.line))
    out = [" " * (width + 1) + "|"]
    for number in range(first, f.span.line + 1):
        out.append(f"{number:>{width}} | {lines[number - 1].expandtabs(4)}".rstrip())
    line = lines[f.span.line - 1]
    start = len(line[:f.span.column - 1].expandtabs(4))
    end_col = f.span.end_column if f.span.end_line == f.span.line else len(line) + 1
    length = max(1, len(line[:end_col - 1].expandtabs(4)) - start)
    out.append(" " * (width + 1) + "| " + " " * start + "^" * length + f" {f.code}")
    out.append(" " * (width + 1) + "|")
    return out


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    blocks = []
    for f in findings:
        lines = [header(f, root)]
        lines += snippet(f, (sources or {}).get(f.path, ""))
        if f.fix is not None:
            unsafe = " (unsafe)" if f.fix.applicability == "unsafe" else ""
            lines.append(f"  = help: {f.fix.message}{unsafe}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
