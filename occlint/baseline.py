"""Baselines: record today's findings, hide them later, robust to line shifts.

A finding is known when its code, file, kernel and normalized snippet (its source line with all
whitespace removed) match a baseline entry; each entry carries a count, so a second copy of a
known mistake still shows.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping

from occlint import jsondoc
from occlint.model import Finding

VERSION = 1


def source_line(path: str, line: int, sources: Mapping[str, str] | None = None) -> str:
    """Line `line` (1-based) of `path`, from `sources` when given there, else from disk; '' if gone."""
    text = (sources or {}).get(path)
    if text is None:
        try:
            from occlint.files import decode, read_regular
            text = decode(read_regular(path))
        except OSError:
            return ""
    from occlint.source.text import split_lines

    lines = split_lines(text)
    return lines[line - 1] if 0 < line <= len(lines) else ""


def snippet(finding: Finding, sources: Mapping[str, str] | None = None) -> str:
    """The finding's first source line with all whitespace removed."""
    return "".join(source_line(finding.path, finding.span.line, sources).split())


def key(finding: Finding, root: str, sources: Mapping[str, str] | None = None) -> tuple[str, str, str, str]:
    from occlint.emit.json_lines import relative_path

    return (finding.code, relative_path(finding.path, root), finding.kernel or "", snippet(finding, sources))


def build(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> dict:
    """The baseline document for `findings`: sorted, stable, no line numbers."""
    counts = Counter(key(f, root, sources) for f in findings)
    entries = [
        {"code": c, "path": p, "kernel": k, "snippet": s, "count": n}
        for (c, p, k, s), n in sorted(counts.items())
    ]
    return {"version": VERSION, "findings": entries}


def write(findings: Iterable[Finding], file: str, *, root: str = ".",
          sources: Mapping[str, str] | None = None) -> int:
    """Write the baseline to `file`; returns the number of findings recorded."""
    doc = build(findings, root=root, sources=sources)
    with open(file, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True, ensure_ascii=False)
        fh.write("\n")
    return sum(e["count"] for e in doc["findings"])


def load(file: str) -> Counter:
    """Baseline entries as a Counter of keys; a missing or malformed file is an OcclintError."""
    return jsondoc.load(file, version=VERSION, kind="baseline", missing=f"baseline file not found: {file} (write one with `occlint baseline`)", parse=lambda doc: Counter({
        (e["code"], e["path"], e["kernel"], e["snippet"]): int(e["count"]) for e in doc["findings"]
    }))


def filter_known(findings: Iterable[Finding], known: Counter, *, root: str = ".",
                 sources: Mapping[str, str] | None = None) -> tuple[list[Finding], int]:
    """Findings not covered by `known`, and how many were hidden."""
    left = Counter(known)
    kept: list[Finding] = []
    hidden = 0
    ordered = sorted(findings, key=lambda f: (f.path, f.span.line, f.span.column, f.code))
    for f in ordered:
        k = key(f, root, sources)
        if left[k] > 0:
            left[k] -= 1
            hidden += 1
        else:
            kept.append(f)
    return kept, hidden
