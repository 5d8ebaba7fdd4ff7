"""Issue 10 item 9: every output format stays valid for any file name (non-UTF-8 bytes, ESC,
newline, quotes), on stdout and in `FORMAT:FILE`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from urllib.parse import unquote_to_bytes

import pytest
from conftest import SCALE_100, run_cli

from occlint.emit import EMITTERS

NAME = b"caf\xe9 \x1b[31m\"q\"\n<&>.cu"     # Latin-1 byte, ESC, quote, newline, XML specials


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    with open(os.path.join(os.fsencode(root), NAME), "w") as fh:
        fh.write(SCALE_100)
    (root / "occlint.toml").write_text('select = ["OCC031"]\n')
    return root


def _valid(name: str, data: bytes, root) -> None:
    text = data.decode("utf-8")                    # strict: always valid UTF-8
    if name == "json":
        (f,) = json.loads(text)
        assert os.fsencode(f["filename"]) == os.path.join(os.fsencode(root), NAME)
    elif name == "json-lines":
        (line,) = text.splitlines()
        assert os.fsencode(json.loads(line)["filename"]).endswith(NAME)
    elif name == "sarif":
        (result,) = json.loads(text)["runs"][0]["results"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert unquote_to_bytes(uri) == NAME
    elif name == "gitlab":
        (issue,) = json.loads(text)
        assert os.fsencode(issue["location"]["path"]) == NAME
    elif name == "rdjson":
        (diag,) = json.loads(text)["diagnostics"]
        assert os.fsencode(diag["location"]["path"]) == NAME
    elif name == "junit":
        suites = ET.fromstring(data)
        assert len(suites.findall(".//failure")) == 1
    elif name == "github":
        lines = text.splitlines()
        assert len(lines) == 1 and lines[0].startswith("::warning file=caf")
        assert "%0A" in lines[0]                   # the newline in the name, escaped
    elif name == "concise":
        lines = [ln for ln in text.splitlines() if "OCC031" in ln]
        assert len(lines) == 1 and lines[0].startswith("caf\\xe9 \\x1b[31m")
        assert "\x1b" not in text
    elif name == "html":
        assert "<&>.cu" not in text and "\x1b" not in text     # escaped: no markup from a name
    elif name == "full":
        assert text.count("OCC031") >= 2 and "caf\\xe9" in text and "\x1b" not in text


@pytest.mark.parametrize("name", sorted(EMITTERS))
def test_every_format_is_valid_for_any_file_name(project, name):
    proc = subprocess.run([sys.executable, "-m", "occlint", "check", "--output-format", name, "."],
                          cwd=project, capture_output=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
    _valid(name, proc.stdout, project)


@pytest.mark.parametrize("name", sorted(EMITTERS))
def test_format_to_file_is_written_whole(project, name, tmp_path):
    out = tmp_path / f"out.{name}"
    out.write_text("previous contents\n")
    proc = run_cli("check", "--output-format", f"{name}:{out}", ".", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr
    _valid(name, out.read_bytes(), project)
