"""`gitlab`: GitLab Code Quality report (a JSON array of CodeClimate issues).

Paths are relative to `root`. Each `fingerprint` is SARIF's line hash (code, file, kernel, the
normalized source line, arch: no line numbers, so unrelated edits above do not change it) with the
occurrence number mixed in; GitLab matches issues across pipelines by it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping

from occlint.emit.encode import dumps, to_bytes
from occlint.emit.json_lines import relative_path
from occlint.emit.sarif import line_hash
from occlint.model import Finding

SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    issues = []
    seen: Counter = Counter()
    for f in findings:
        path = relative_path(f.path, root)
        s = f.span
        h = line_hash(f, root, sources)
        seen[h] += 1
        fingerprint = hashlib.sha256(to_bytes(f"{h}:{seen[h]}")).hexdigest()
        issues.append({
            "description": f"{f.code} {f.message}",
            "check_name": f.code,
            "fingerprint": fingerprint,
            "severity": SEVERITIES.get(f.severity, "minor"),
            "location": {
                "path": path,
                "positions": {
                    "begin": {"line": s.line, "column": s.column},
                    "end": {"line": s.end_line, "column": s.end_column},
                },
            },
        })
    return dumps(issues, indent=2) + "\n"
