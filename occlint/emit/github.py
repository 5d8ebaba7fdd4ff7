"""`github`: GitHub Actions workflow commands that become annotations on a pull request.

`::warning file=F,line=L,endLine=E,col=C,endColumn=EC,title=occlint (OCC010)::message`. Data
escapes `%`, CR and LF; properties also escape `:` and `,`. Spans over several lines carry no
columns (GitHub ignores them there). GitHub shows at most 10 error and 10 warning annotations per
step (and 10 notices; 50 per job), so a first notice says when it will truncate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from occlint.emit.encode import to_bytes
from occlint.emit.json_lines import relative_path
from occlint.model import Finding

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
PER_STEP_LIMIT = 10      # per annotation type, per step
PER_JOB_LIMIT = 50


def _text(text: str) -> str:
    """Valid UTF-8 for the log: an undecodable file-name byte becomes U+FFFD (GitHub's own
    rendering of such names); CR and LF are escaped by the callers."""
    return to_bytes(text).decode("utf-8", "replace")


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, root: str) -> str:
    s = finding.span
    props = [("file", _text(relative_path(finding.path, root))), ("line", s.line), ("endLine", s.end_line)]
    if s.line == s.end_line:
        props += [("col", s.column), ("endColumn", s.end_column)]
    props.append(("title", f"occlint ({finding.code})"))
    head = ",".join(f"{k}={escape_property(str(v))}" for k, v in props)
    command = COMMANDS.get(finding.severity, "warning")
    return f"::{command} {head}::{escape_data(_text(finding.message))}"


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    findings = list(findings)
    lines = [annotation(f, root) for f in findings]
    kinds = Counter(COMMANDS.get(f.severity, "warning") for f in findings)
    over = {k: n for k, n in kinds.items() if n > PER_STEP_LIMIT}
    if over or len(findings) > PER_JOB_LIMIT:
        counts = ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items()))
        lines.insert(0, "::notice title=occlint::" + escape_data(
            f"{len(findings)} findings ({counts}); GitHub shows at most {PER_STEP_LIMIT} "
            f"annotations of each type per step and {PER_JOB_LIMIT} per job, so some are not "
            "annotated: see the log or upload SARIF for all of them"
        ))
    return "".join(line + "\n" for line in lines)
