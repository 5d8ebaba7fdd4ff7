"""Applying fixes: non-overlapping edits, spans and unified diffs."""

from __future__ import annotations

import bisect
import difflib
import functools
import re
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
    crlf = newline_of(text) == "\r\n"
    for edit in accepted:
        out.append(text[pos:edit.span.start])
        # inserted lines take the file's line ending
        out.append(re.sub(r"(?<!\r)\n", "\r\n", edit.content) if crlf else edit.content)
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
    from occlint.source.text import split_lines

    return "".join(difflib.unified_diff(split_lines(before, keepends=True),
                                        split_lines(after, keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def fixable(finding: Finding, *, unsafe: bool = False) -> bool:
    fix: Fix | None = finding.fix
    return bool(fix and fix.edits and (fix.applicability == "safe"
                                       or (unsafe and fix.applicability == "unsafe")))


# --- writing ---------------------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def newline_of(text: str) -> str:
    """The file's line ending: that of its first line ("\\n" when it has none)."""
    end = text.find("\n")
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def write_fixed(path: str, before: str, after: str) -> None:
    """Replace `path`'s text `before` (as linted: decoded, BOM dropped) with `after`, keeping
    what the user has: BOM, mode and owner, symlinks (the target is written) and hard links
    (written in place). OcclintError, one line, when the file is not UTF-8, changed since it
    was read, or cannot be written; nothing is written then."""
    import os
    import stat
    import tempfile

    from occlint.errors import OcclintError
    from occlint.files import read_regular

    target = os.path.realpath(path)
    try:
        data = read_regular(target)
        st = os.stat(target)
    except OSError as exc:
        raise OcclintError(f"{path}: cannot read: {exc.strerror or exc}; fixes not written") from None
    bom = data.startswith(BOM)
    try:
        now = data[len(BOM) if bom else 0:].decode("utf-8")
    except UnicodeDecodeError:
        raise OcclintError(f"{path}: not valid UTF-8; fixes are only written to UTF-8 files") from None
    if now != before:
        raise OcclintError(f"{path}: changed since it was read; fixes not written (run again)")
    out = (BOM if bom else b"") + after.encode("utf-8")
    try:
        if st.st_nlink > 1:     # a hard link: the same inode, written in place
            with open(target, "r+b") as fh:
                fh.write(out)
                fh.truncate()
            return
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".occlint-fix-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(out)
                try:
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
                except OSError:
                    pass        # not ours to give away: the mode still is kept
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise OcclintError(f"{path}: cannot write fixes: {exc.strerror or exc}") from None
