"""The README's Neovim set-up in a real headless Neovim (Debian's `neovim`, installed by the test
when missing): open a .cu file, get occlint's diagnostics, apply the finding's fix action, save,
and see the diagnostics clear after the save-time lint with nvcc.

The Lua set-up is read from README.md, the 0.11+ snippet or the 0.7-0.10 one by the installed
version, so the documented configuration is the one tested.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SCALE_100
from harness.system import require

pytestmark = [pytest.mark.slow, pytest.mark.nvcc]
DRIVER = Path(__file__).parent / "editor" / "drive.lua"


def readme_snippet(version: tuple[int, int]) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    heading = "**Neovim** 0.11+" if version >= (0, 11) else "**Neovim** 0.7 to 0.10"
    after = readme[readme.index(heading):]
    return re.search(r"```lua\n(.*?)```", after, re.S).group(1)


@pytest.fixture(scope="module")
def nvim():
    path = require("neovim", "nvim")
    first = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    major, minor = map(int, re.search(r"NVIM v(\d+)\.(\d+)", first).groups())
    return path, (major, minor)


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
    assert seen["after_fix"][6] == "    scale<<<4096, 128>>>(x, 2.0f, 409600);"
    assert seen["saved"] == seen["after_fix"]
    assert seen["steps"] == ["diagnostics", "code action", "save"]
