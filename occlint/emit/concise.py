"""`concise`: one line per finding, `path:line:col: CODE [*] message` (like ruff)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from occlint.model import Finding


def display_path(path: str, root: str) -> str:
    import os
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(os.getcwd()))
    from occlint.emit.encode import printable
    return printable(full if rel.startswith(os.pardir) else rel)


def header(f: Finding, root: str) -> str:
    mark = " [*]" if f.fix is not None and f.fix.applicability == "safe" else ""
    return f"{display_path(f.path, root)}:{f.span.line}:{f.span.column}: {f.code}{mark} {f.message}"


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    return "".join(header(f, root) + "\n" for f in findings)
