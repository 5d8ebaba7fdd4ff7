"""`json`: a ruff-compatible list of findings (plus `name`, `severity`, `arch`, `kernel`).

`filename` is absolute (as ruff writes it); `location`/`end_location` are 1-based {row, column}
with the end exclusive; `fix` is null or {applicability, message, edits: [{content, location,
end_location}]}; `noqa_row` is the line where `// noqa: CODE` silences the finding; `instances`
lists the causes the finding stands for (one per template instantiation and arch merged into it,
each with `kernel`, `arch`, `message` and its figures).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from occlint.emit.encode import dumps
from occlint.model import Finding, Span


def _pos(span: Span, end: bool = False) -> dict:
    return {"row": span.end_line, "column": span.end_column} if end else {"row": span.line, "column": span.column}


def finding_dict(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {"applicability": f.fix.applicability, "message": f.fix.message,
               "edits": [{"content": e.content, "location": _pos(e.span),
                          "end_location": _pos(e.span, True)} for e in f.fix.edits]}
    return {
        "cell": None,
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "severity": f.severity,
        "filename": os.path.abspath(f.path),
        "location": _pos(f.span),
        "end_location": _pos(f.span, True),
        "fix": fix,
        "noqa_row": f.span.line,
        "url": f.url or None,
        "arch": f.arch,
        "kernel": f.kernel,
        "instances": list(f.instances),
    }


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    return dumps([finding_dict(f) for f in findings], indent=2) + "\n"
