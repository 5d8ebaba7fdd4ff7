"""The pre-commit hooks with the real `pre-commit run` in a temporary git repository.

pre-commit builds the hooks' virtualenv from a snapshot of this checkout (tracked and untracked,
not ignored, files: what `pre-commit try-repo` would snapshot), once per session, under a session
PRE_COMMIT_HOME. It installs occlint from PyPI-style sources, so it needs the package index.
`try-repo` is not used: it installs the environment into a fresh temporary store on every call
(20 s each); a config naming the snapshot repository shares one store across the runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SCALE_100, STAGE_64K, STAGE_OPT_IN

ROOT = Path(__file__).resolve().parent.parent
BAD = SCALE_100 + STAGE_64K
CLEAN = SCALE_100.replace("<<<4096, 100>>>", "<<<4096, 128>>>").replace("409600", "524288")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main", "-c", "maintenance.auto=false"]


def git(cwd, *args) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# the hook compiles with the nvcc on PATH; installing the hook environment is the long pole
pytestmark = [pytest.mark.slow, pytest.mark.nvcc]


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory):
    """(snapshot repository of this checkout, its commit, PRE_COMMIT_HOME)."""
    snap = tmp_path_factory.mktemp("occlint-snapshot")
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (snap / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, snap / name)
    git(snap, "init", "-q")
    git(snap, "add", "-A")
    git(snap, "commit", "-q", "-m", "snapshot")
    rev = git(snap, "rev-parse", "HEAD").strip()
    config = tmp_path_factory.mktemp("pre-commit-config") / ".pre-commit-config.yaml"
    config.write_text(f"repos:\n- repo: {snap}\n  rev: {rev}\n"
                      "  hooks:\n  - id: occlint\n  - id: occlint-fix\n")
    return config, tmp_path_factory.mktemp("pre-commit-home")


KERN_PY = """import cupy as cp
k = cp.RawKernel('extern "C" __global__ void k(float* p) { p[threadIdx.x] = 0.0f; }', "k")
BLOCK = 100
k((4096,), (BLOCK,), (None,))
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\n')
    (tmp_path / "bad.cu").write_text(BAD)
    (tmp_path / "clean.cu").write_text(CLEAN)
    (tmp_path / "kern.py").write_text(KERN_PY)          # CUDA inside Python (types_or: python)
    (tmp_path / "plain.py").write_text("print('no CUDA here')\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "project")
    return tmp_path


def run_hook(hook_repo, project, hook, *args) -> subprocess.CompletedProcess:
    config, home = hook_repo
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook, "-c", str(config), *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=900)


def test_hook_fails_on_the_bad_file_passes_on_the_clean_one_and_fixes(hook_repo, project):
    # one project for all three runs, so the later runs find nvcc's figures in its cache
    r = run_hook(hook_repo, project, "occlint", "--all-files")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "bad.cu:7:19: OCC031" in out
    assert "kern.py:4:13: OCC031" in out
    assert "clean.cu:" not in out and "plain.py" not in out
    assert "Traceback" not in out

    r = run_hook(hook_repo, project, "occlint", "--files", "clean.cu", "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout

    r = run_hook(hook_repo, project, "occlint-fix", "--files", "bad.cu")
    assert r.returncode == 1, r.stdout + r.stderr        # pre-commit fails a hook that edits files
    fixed = (project / "bad.cu").read_text()
    assert STAGE_OPT_IN in fixed                  # the safe fix
    assert "scale<<<4096, 100>>>" in fixed        # OCC031's round-up is unsafe: left alone
    assert (project / "clean.cu").read_text() == CLEAN


def test_hook_honours_exclude_for_the_files_pre_commit_names(hook_repo, project):
    (project / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\nexclude = ["vendor"]\n')
    (project / "vendor").mkdir()
    (project / "vendor" / "v.cuh").write_text(BAD)
    git(project, "add", "-A")
    r = run_hook(hook_repo, project, "occlint", "--files", "vendor/v.cuh", "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr


def test_hook_runs_on_a_cpp_header_that_holds_kernels(hook_repo, project):
    # flash-attention keeps every kernel and launch in `.h` headers: the hook's `files` took
    # only CUDA suffixes, so a change to one of them was never linted
    (project / "kernels.hxx").write_text(BAD)
    git(project, "add", "-A")
    r = run_hook(hook_repo, project, "occlint", "--files", "kernels.hxx")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "kernels.hxx:7:19: OCC031" in out
