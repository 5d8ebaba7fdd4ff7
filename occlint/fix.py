"""Applying fixes: non-overlapping edits, spans and unified diffs."""

from __future__ import annotations

import bisect
import difflib
import functools
from collections.abc import Iterable, Sequence

from occlint.model import Edit, Finding, Fix, Span


@functools.lru_cache(maxsize=8)
def _line_starts(text: str) -> list[int]:
    """Offsets where each line of `text` starts (kept for the few texts of a run: every span of
    a file is a binary search, not a count from the top)."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def make_span(text: str, start: int, end: int) -> Span:
    """A Span for offsets `start:end` of `text` (1-based lines and character columns)."""
    starts = _line_starts(text)
    line = bisect.bisect_right(starts, start)
    end_line = bisect.bisect_right(starts, end)
    return Span(line, start - starts[line - 1] + 1, end_line, end - starts[end_line - 1] + 1, start, end)


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.span.start == b.span.start:
        return True          # two edits at one place: the order would be a guess
    return a.span.start < b.span.end and b.span.start < a.span.end


def apply(text: str, edits: Iterable[Edit]) -> str:
    """Apply edits in order of position; an edit overlapping an earlier-accepted one is dropped."""
    accepted: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.span.start, e.span.end)):
        if not accepted or (not _overlaps(accepted[-1], edit) and accepted[-1].span.end <= edit.span.start):
            accepted.append(edit)
    out, pos = [], 0
    for edit in accepted:
        out.append(text[pos:edit.span.start])
        out.append(edit.content)
        pos = edit.span.end
    out.append(text[pos:])
    return "".join(out)


def select_fixes(findings: Sequence[Finding], *, unsafe: bool = False) -> list[Finding]:
    """Findings whose whole fix can be applied: applicable, and no edit overlaps an earlier fix."""
    taken: list[Edit] = []
    chosen: list[Finding] = []
    for f in sorted(findings, key=lambda f: (f.span.start, f.code)):
        fix = f.fix
        if fix is None or not fix.edits or fix.applicability == "display":
            continue
        if fix.applicability == "unsafe" and not unsafe:
            continue
        if any(_overlaps(e, t) for e in fix.edits for t in taken):
            continue
        taken.extend(fix.edits)
        chosen.append(f)
    return chosen


def apply_fixes(text: str, findings: Sequence[Finding], *, unsafe: bool = False) -> tuple[str, list[Finding]]:
    """The text with every applicable fix, and the findings those fixes resolve."""
    chosen = select_fixes(findings, unsafe=unsafe)
    return apply(text, [e for f in chosen for e in f.fix.edits]), chosen


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def fixable(finding: Finding, *, unsafe: bool = False) -> bool:
    fix: Fix | None = finding.fix
    return bool(fix and fix.edits and (fix.applicability == "safe"
                                       or (unsafe and fix.applicability == "unsafe")))
