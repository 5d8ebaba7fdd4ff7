"""`gitlab`: GitLab Code Quality report (a JSON array of CodeClimate issues).

Paths are relative to `root`; each `fingerprint` hashes the code, file, location and message, and
is unique within the report (a repeat gets a counter mixed in).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from occlint.emit.json_lines import relative_path
from occlint.emit.encode import dumps, to_bytes
from occlint.model import Finding

SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    issues = []
    used: set[str] = set()
    for f in findings:
        path = relative_path(f.path, root)
        s = f.span
        basis = f"{f.code}\0{path}\0{s.line}:{s.column}-{s.end_line}:{s.end_column}\0{f.message}"
        fingerprint = hashlib.sha256(to_bytes(basis)).hexdigest()
        n = 1
        while fingerprint in used:
            n += 1
            fingerprint = hashlib.sha256(to_bytes(f"{basis}\0{n}")).hexdigest()
        used.add(fingerprint)
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
