"""`sarif`: SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

Rules come from rules/*.toml (occlint.registry.RULES). Locations are relative to `root` under the
`%SRCROOT%` base id; regions are 1-based with `endColumn` exclusive, and columns count Unicode
code points (`columnKind`), as occlint's spans do.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from occlint import __version__
from occlint.emit.encode import dumps, to_bytes, uri_path
from occlint.emit.json_lines import relative_path
from occlint.model import Finding, Span

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/occlint/occlint"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def rule_url(code: str) -> str:
    """The rule's documentation page (occlint.registry.URL is the one place that names it)."""
    from occlint.registry import RULES, URL

    return RULES[code].url if code in RULES else URL.format(code=code, name="")


def _region(span: Span) -> dict:
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }


def _artifact(path: str, root: str) -> dict:
    rel = relative_path(path, root)
    if os.path.isabs(rel):
        return {"uri": Path(rel).as_uri()}
    return {"uri": uri_path(rel), "uriBaseId": "%SRCROOT%"}


def _root_uri(root: str) -> str:
    uri = Path(os.path.abspath(root)).as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _rule(rule) -> dict:
    url = rule.url
    first_paragraph = (rule.rationale or rule.summary).strip().split("\n\n")[0]
    text = [rule.summary, "", (rule.rationale or "").strip()]
    markdown = [f"**{rule.summary}**", "", (rule.rationale or "").strip()]
    for title, code in (("Example:", rule.example), ("Use instead:", rule.use_instead)):
        if code.strip():
            text += ["", title, code.strip("\n")]
            markdown += ["", title, "```cuda", code.strip("\n"), "```"]
    markdown += ["", f"[{rule.code} {rule.name}]({url})"]
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(first_paragraph.split())},
        "help": {"text": "\n".join(text).strip(), "markdown": "\n".join(markdown).strip()},
        "helpUri": url,
        "defaultConfiguration": {"level": LEVELS.get(rule.severity, "warning")},
        "properties": {"tags": ["cuda", "occupancy", "performance"]},
    }


def line_hash(finding: Finding, root: str, sources: Mapping[str, str] | None) -> str:
    """A location hash that survives line shifts: code, file, kernel, the normalized line and the
    arch (so dropping sm_80 leaves sm_90's identity alone). The GitLab report uses it too."""
    from occlint.baseline import key

    basis = (*key(finding, root, sources), finding.arch or "")
    return hashlib.sha256(to_bytes("\0".join(basis))).hexdigest()[:16]


def _result(finding: Finding, index: dict, root: str, fingerprint: str) -> dict:
    result = {
        "ruleId": finding.code,
        "level": LEVELS.get(finding.severity, "warning"),
        "message": {"text": finding.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": _artifact(finding.path, root),
                "region": _region(finding.span),
            }
        }],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    if finding.fix is not None and finding.fix.edits:
        result["fixes"] = [{
            "description": {"text": finding.fix.message},
            "artifactChanges": [{
                "artifactLocation": _artifact(finding.path, root),
                "replacements": [
                    {"deletedRegion": _region(e.span), "insertedContent": {"text": e.content}}
                    for e in finding.fix.edits
                ],
            }],
        }]
    props = {k: v for k, v in (("kernel", finding.kernel), ("arch", finding.arch)) if v}
    if len(finding.instances) > 1:
        # the instantiations and archs merged into this result: each at the same place, with its
        # own message, and the figures in the properties
        props["instances"] = list(finding.instances)
        result["relatedLocations"] = [{
            "id": i,
            "physicalLocation": _at_line(result["locations"][0]["physicalLocation"], inst),
            "message": {"text": inst.get("message", "")},
        } for i, inst in enumerate(finding.instances, 1)]
    if props:
        result["properties"] = props
    return result


def _at_line(location: dict, inst: dict) -> dict:
    """The result's location, or the line and column an instance holds at when it was merged
    from another line of the same file."""
    line, column = inst.get("line"), inst.get("column")
    region = location.get("region", {})
    if type(line) is not int or line == region.get("startLine"):
        return location
    return {**location, "region": {"startLine": line, **({"startColumn": column} if type(column) is int else {})}}


def build(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None,
          rules: Mapping | None = None) -> dict:
    """The SARIF log as a dict; `rules` defaults to every rule in occlint.registry.RULES."""
    if rules is None:
        from occlint.registry import RULES as rules
    ordered = sorted(rules.values(), key=lambda r: r.code)
    index = {r.code: i for i, r in enumerate(ordered)}
    seen: Counter = Counter()
    results = []
    for f in findings:
        h = line_hash(f, root, sources)
        seen[h] += 1
        results.append(_result(f, index, root, f"{h}:{seen[h]}"))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "occlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(r) for r in ordered],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": _root_uri(root)}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None,
           rules: Mapping | None = None) -> str:
    return dumps(build(findings, root=root, sources=sources, rules=rules), indent=2) + "\n"
