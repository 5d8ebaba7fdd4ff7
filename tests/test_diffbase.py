"""--diff-base: real git in a temporary repository."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import SCALE_100

from occlint.diffbase import changed_lines, filter_findings, parse_diff
from occlint.errors import OcclintError
from occlint.model import Finding, Span


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
                    "-c", "maintenance.auto=false", *args],
                   cwd=cwd, check=True, capture_output=True)


def finding(path, line, end_line=None, code="OCC010"):
    return Finding(code, "x", "m", str(path), Span(line, 1, end_line or line, 2))


@pytest.fixture
def repo(tmp_path):
    base = [f"line {i}\n" for i in range(1, 11)]
    git(tmp_path, "init", "-q")
    (tmp_path / "a.cu").write_text("".join(base))
    (tmp_path / "old.cu").write_text("x\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "branch", "feature")
    (tmp_path / "a.cu").write_text("".join(base) + "main only\n")
    git(tmp_path, "commit", "-q", "-am", "main moves on")
    git(tmp_path, "checkout", "-q", "feature")
    lines = list(base)
    lines[2] = "line 3 changed\n"
    lines.insert(7, "inserted after 7\n")                  # new line 8
    (tmp_path / "a.cu").write_text("".join(lines))
    git(tmp_path, "commit", "-q", "-am", "feature work")
    (tmp_path / "a.cu").write_text("".join(lines) + "uncommitted line 12\n")
    (tmp_path / "new.cu").write_text("brand new\n")        # untracked
    return tmp_path


def test_changed_lines_since_the_merge_base(repo):
    top, changed = changed_lines("main", str(repo))
    assert os.path.realpath(top) == os.path.realpath(repo)
    # main's later commit ("main only") is not in the diff: we compare with the merge-base
    assert changed["a.cu"] == {3, 8, 12}
    assert changed["new.cu"] is None
    assert "old.cu" not in changed


def test_keeps_only_findings_on_changed_lines(repo):
    fs = [finding(repo / "a.cu", 3), finding(repo / "a.cu", 4), finding(repo / "a.cu", 6, 8),
          finding(repo / "a.cu", 12), finding(repo / "old.cu", 1), finding(repo / "new.cu", 1)]
    kept = filter_findings(fs, "main", str(repo))
    assert [(f.path.rsplit("/", 1)[1], f.span.line) for f in kept] == [
        ("a.cu", 3), ("a.cu", 6), ("a.cu", 12), ("new.cu", 1)]


def test_unknown_ref_is_one_clear_error(repo):
    with pytest.raises(OcclintError, match="`no-such-branch` is not a branch, tag or commit"):
        changed_lines("no-such-branch", str(repo))
    with pytest.raises(OcclintError, match="not a branch"):
        changed_lines("--output=/tmp/x", str(repo))


def test_outside_a_repository(tmp_path):
    with pytest.raises(OcclintError, match="needs a git repository"):
        changed_lines("main", str(tmp_path))


def test_parse_diff_hunks_and_deletions():
    diff = (
        "diff --git a/x.cu b/x.cu\n--- a/x.cu\n+++ b/x.cu\n"
        "@@ -3 +3 @@\n-a\n+b\n@@ -10,2 +9,0 @@\n-c\n-d\n@@ -20,0 +21,3 @@\n+e\n+f\n+g\n"
        "diff --git a/gone.cu b/gone.cu\n--- a/gone.cu\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
        '--- a/"sp\\303\\244ce.cu"\n+++ "b/sp\\303\\244ce.cu"\n@@ -1 +1 @@\n-x\n+y\n'
    )
    assert parse_diff(diff) == {"x.cu": {3, 21, 22, 23}, "späce.cu": {1}}


KERNEL = SCALE_100


def test_check_diff_base_cli(tmp_path):
    from conftest import run_cli

    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\nselect = ["OCC031"]\n')
    (tmp_path / "old.cu").write_text(KERNEL)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "topic")
    (tmp_path / "new.cu").write_text(KERNEL.replace("scale", "scale2"))
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "new kernel")

    everything = run_cli("check", "--output-format", "concise", cwd=tmp_path)
    assert everything.returncode == 1 and "old.cu" in everything.stdout and "new.cu" in everything.stdout
    r = run_cli("check", "--output-format", "concise", "--diff-base", "main", cwd=tmp_path)
    assert r.returncode == 1
    assert "new.cu:7:20: OCC031" in r.stdout and "old.cu" not in r.stdout
    bad = run_cli("check", "--diff-base", "no-such-ref", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr == "occlint: error: --diff-base: `no-such-ref` is not a branch, tag or commit in this repository\n"


def test_a_finding_merged_from_a_changed_line_is_kept(repo):
    # one kernel's same finding at lines 4 and 8 is one finding at line 4 (aggregate): the
    # branch changed line 8, so the finding holds at a changed place
    from occlint import record

    merged = record.replace(finding(repo / "a.cu", 4),
                                 instances=({"line": 4, "column": 5}, {"line": 8, "column": 5}))
    alone = record.replace(finding(repo / "a.cu", 5), instances=({"line": 5, "column": 5},))
    kept = filter_findings([merged, alone], "main", str(repo))
    assert [f.span.line for f in kept] == [4]
