"""`json-lines`: one JSON object per finding per line (the same objects as `json`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

from occlint.model import Finding, Span


def relative_path(path: str, root: str) -> str:
    """`path` (absolute, or relative to the working directory) relative to `root`, with forward
    slashes; absolute when it lies outside `root`."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(root))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return full.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def _position(span: Span, end: bool = False) -> dict:
    if end:
        return {"row": span.end_line, "column": span.end_column}
    return {"row": span.line, "column": span.column}


def finding_dict(finding: Finding, root: str) -> dict:
    """The JSON shape of one finding (ruff-like; columns count characters, end exclusive)."""
    fix = None
    if finding.fix is not None:
        fix = {
            "message": finding.fix.message,
            "applicability": finding.fix.applicability,
            "edits": [
                {
                    "content": e.content,
                    "location": _position(e.span),
                    "end_location": _position(e.span, end=True),
                }
                for e in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "name": finding.name,
        "message": finding.message,
        "severity": finding.severity,
        "filename": relative_path(finding.path, root),
        "location": _position(finding.span),
        "end_location": _position(finding.span, end=True),
        "kernel": finding.kernel,
        "arch": finding.arch,
        "url": finding.url or None,
        "fix": fix,
    }


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    return "".join(
        json.dumps(finding_dict(f, root), ensure_ascii=False) + "\n" for f in findings
    )
