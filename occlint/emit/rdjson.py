"""`rdjson`: reviewdog's Diagnostic Format (DiagnosticResult as JSON).

Columns are 1-based UTF-8 byte counts and ranges end-exclusive, as reviewdog's proto says, so
character columns are converted with the source text. `suggestions` come from a finding's fix
when every edit lies within the finding's own lines (reviewdog's GitHub reporter rejects
suggestions outside the lines it comments on; a fix is applied whole or not at all), and from
unsafe fixes only with `--unsafe-fixes`. The key is left out otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from occlint.baseline import source_line
from occlint.emit.encode import dumps
from occlint.emit.json_lines import relative_path
from occlint.emit.sarif import INFORMATION_URI, rule_url
from occlint.model import Finding, Span

SEVERITIES = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}


def _byte_column(path: str, line: int, column: int, sources: Mapping[str, str] | None) -> int:
    text = source_line(path, line, sources)
    return len(text[: column - 1].encode("utf-8")) + 1 + max(0, column - 1 - len(text))


def _range(path: str, span: Span, sources: Mapping[str, str] | None) -> dict:
    return {
        "start": {"line": span.line, "column": _byte_column(path, span.line, span.column, sources)},
        "end": {"line": span.end_line,
                "column": _byte_column(path, span.end_line, span.end_column, sources)},
    }


def suggestible(finding: Finding, unsafe_fixes: bool = False) -> bool:
    fix = finding.fix
    if fix is None or not fix.edits or (fix.applicability != "safe" and not unsafe_fixes):
        return False
    first, last = finding.span.line, finding.span.end_line
    return all(first <= e.span.line and e.span.end_line <= last for e in fix.edits)


def diagnostic(finding: Finding, root: str, sources: Mapping[str, str] | None,
               unsafe_fixes: bool = False) -> dict:
    d = {
        "message": finding.message,
        "location": {
            "path": relative_path(finding.path, root),
            "range": _range(finding.path, finding.span, sources),
        },
        "severity": SEVERITIES.get(finding.severity, "WARNING"),
        "source": {"name": "occlint", "url": INFORMATION_URI},
        "code": {"value": finding.code, "url": finding.url or rule_url(finding.code)},
    }
    if suggestible(finding, unsafe_fixes):
        d["suggestions"] = [
            {"range": _range(finding.path, e.span, sources), "text": e.content}
            for e in finding.fix.edits
        ]
    return d


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None,
           unsafe_fixes: bool = False) -> str:
    doc = {
        "source": {"name": "occlint", "url": INFORMATION_URI},
        "diagnostics": [diagnostic(f, root, sources, unsafe_fixes) for f in findings],
    }
    return dumps(doc, indent=2) + "\n"
