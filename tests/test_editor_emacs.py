"""The README's Emacs set-up in a real batch Emacs with eglot (Debian's `emacs-nox`, and
`elpa-eglot` where eglot is not built in, both installed by the test when missing): open a .cu
file, get occlint's diagnostics through flymake, list the code actions at the finding, apply the
noqa one through eglot's menu, save, and see the finding clear.

The Emacs Lisp is read from README.md, so the documented configuration is the one tested.
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
from harness.system import Unavailable, install_debian_package, missing, require

pytestmark = [pytest.mark.slow, pytest.mark.nvcc]
DRIVER = Path(__file__).parent / "editor" / "drive.el"


def readme_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index("**Emacs** with eglot"):]
    return re.search(r"```elisp\n(.*?)```", after, re.S).group(1)


def _has_eglot(emacs: str) -> bool:
    return subprocess.run([emacs, "--batch", "--eval", "(require 'eglot)"], capture_output=True,
                          timeout=120, stdin=subprocess.DEVNULL).returncode == 0


@pytest.fixture(scope="module")
def emacs() -> str:
    path = require("emacs-nox", "emacs")
    if not _has_eglot(path):                      # Emacs 28 and older: eglot is a package
        try:
            install_debian_package("elpa-eglot")
        except Unavailable as exc:
            missing(str(exc))
        if not _has_eglot(path):
            missing("eglot does not load in Emacs even after installing elpa-eglot")
    return path


def test_open_diagnostics_code_actions(tmp_path, emacs, nvcc_path):
    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\n')
    source = tmp_path / "k.cu"
    source.write_text(SCALE_100)
    init = tmp_path / "init.el"
    init.write_text(readme_snippet())
    out = tmp_path / "out.json"
    # `occlint` as the README runs it: the one installed beside this Python
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(tmp_path / "home"), "OCCLINT_EMACS_OUT": str(out),
           "OCCLINT_EMACS_FILE": str(source)}
    proc = subprocess.run([emacs, "--batch", "-l", str(init), "-l", str(DRIVER)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=400,
                          stdin=subprocess.DEVNULL)
    assert out.exists(), proc.stdout + proc.stderr
    seen = json.loads(out.read_text())
    assert "error" not in seen, (seen, proc.stderr)
    assert seen["mode"] == "c++-mode"
    assert seen["managed"] is True and seen["server"] == ["occlint", "server"], seen
    assert [(d["line"], d["col"]) for d in seen["diagnostics"]] == [(7, 19)], seen
    assert "OCC031" in seen["diagnostics"][0]["text"], seen
    assert "not a multiple of 32" in seen["diagnostics"][0]["text"]
    assert "Add `// noqa: OCC031`" in seen["actions"], seen
    assert seen["after_action"] == "    scale<<<4096, 100>>>(x, 2.0f, 409600);  // noqa: OCC031", seen
    assert source.read_text().splitlines()[6] == seen["after_action"]
    assert seen["cleared"] is True, seen
