"""`--diff-base REF`: keep only findings on lines changed since the merge-base with REF.

Changed lines come from `git diff -U0 <merge-base>` (the working tree against the merge-base, so
uncommitted edits count) plus untracked files, which count as changed throughout. Git runs with
argument lists only.
"""

from __future__ import annotations

import codecs
import os
import re
import subprocess
from collections.abc import Iterable

from occlint.errors import OcclintError
from occlint.model import Finding

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
ALL_LINES = None  # marker: every line of the file changed (an untracked file)


GIT_TIMEOUT = 120.0


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    from occlint.process import run

    cmd = ["git", "-c", "core.quotepath=off", *args]
    try:
        code, out, err = run(cmd, timeout=GIT_TIMEOUT, cwd=cwd, stderr_to_stdout=False)
    except FileNotFoundError:
        raise OcclintError("--diff-base needs git, and git is not on PATH") from None
    if code is None:
        raise OcclintError(f"`git {' '.join(args)}` timed out after {GIT_TIMEOUT:g} s")
    return subprocess.CompletedProcess(cmd, code, out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"))


def _unquote(name: str) -> str:
    if name.startswith('"') and name.endswith('"'):
        raw = codecs.escape_decode(name[1:-1].encode("utf-8"))[0]
        return raw.decode("utf-8", errors="replace")
    return name


def parse_diff(diff: str) -> dict[str, set[int]]:
    """Added or modified line numbers (new side) per path in a `git diff -U0` patch."""
    changed: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = _unquote(line[4:].rstrip("\t"))
            current = None if name == "/dev/null" else changed.setdefault(name[2:], set())
        elif line.startswith("@@") and current is not None:
            m = HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                current.update(range(start, start + count))
    return changed


def changed_lines(ref: str, cwd: str = ".") -> tuple[str, dict[str, set[int] | None]]:
    """(repository top level, {path relative to it: changed lines, or None for a whole new file})."""
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise OcclintError(f"--diff-base needs a git repository, and {os.path.abspath(cwd)} is not in one")
    toplevel = top.stdout.strip()
    if ref.startswith("-") or _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                                   toplevel).returncode != 0:
        raise OcclintError(f"--diff-base: `{ref}` is not a branch, tag or commit in this repository")
    base = _git(["merge-base", "HEAD", ref], toplevel)
    if base.returncode != 0:
        raise OcclintError(f"--diff-base: HEAD and `{ref}` have no common ancestor")
    diff = _git(["diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", base.stdout.strip(),
                 "--"], toplevel)
    if diff.returncode != 0:
        raise OcclintError(f"--diff-base: git diff failed: {diff.stderr.strip()}")
    changed: dict[str, set[int] | None] = dict(parse_diff(diff.stdout))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], toplevel)
    for name in untracked.stdout.split("\0"):
        if name:
            changed[name] = ALL_LINES
    return toplevel, changed


def keep_changed(findings: Iterable[Finding], toplevel: str,
                 changed: dict[str, set[int] | None]) -> list[Finding]:
    """Findings whose span, or a line they were merged from (aggregate), touches a changed line."""
    top = os.path.realpath(toplevel)
    kept = []
    for f in findings:
        rel = os.path.relpath(os.path.realpath(f.path), top).replace(os.sep, "/")
        if rel not in changed:
            continue
        lines = changed[rel]
        held = {*range(f.span.line, f.span.end_line + 1),     # and every line it was merged from
                *(i["line"] for i in f.instances if isinstance(i, dict) and type(i.get("line")) is int)}
        if lines is ALL_LINES or any(n in lines for n in held):
            kept.append(f)
    return kept


def filter_findings(findings: Iterable[Finding], ref: str, cwd: str = ".") -> list[Finding]:
    toplevel, changed = changed_lines(ref, cwd)
    return keep_changed(findings, toplevel, changed)

