"""OCC040: `-maxrregcount` in build files, located at the flag, never in comments or docstrings."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, run_main

from occlint.config import Config
from occlint.engine import lint_build_file

BUILD = FIXTURES / "OCC040"
FILES = ["CMakeLists.txt", "Makefile", "setup.py", "pyproject.toml", "compile_commands.json"]


def expected_lines(path):
    if path.name == "compile_commands.json":
        return {4}   # one finding per distinct flag: the database repeats it per file
    return {n for n, line in enumerate(path.read_text().splitlines(), 1) if "expect: OCC040" in line}


@pytest.mark.parametrize("name", FILES)
def test_build_file(name):
    path = BUILD / name
    findings = lint_build_file(path.read_text(), str(path), Config(root=str(BUILD)))
    assert {f.span.line for f in findings} == expected_lines(path)
    assert all(f.code == "OCC040" for f in findings)
    for f in findings:
        line = path.read_text().splitlines()[f.span.line - 1]
        assert "maxrregcount" in line[f.span.column - 1:f.span.end_column - 1]
        assert "__launch_bounds__" in f.message


def test_setup_py_flag_and_separate_value():
    path = BUILD / "setup.py"
    findings = lint_build_file(path.read_text(), str(path), Config())
    assert [f.data["regs"] for f in findings] == [64, 32]


def test_build_files_found_by_check_and_ignorable(tmp_path):
    r = run_main("check", str(BUILD), "--output-format", "json", "--no-cache")
    assert r.returncode == 1, r.stderr
    found = json.loads(r.stdout)
    assert sorted({f["filename"].rsplit("/", 1)[1] for f in found}) == sorted(FILES)
    r = run_main("check", str(BUILD), "--ignore", "OCC04", "--output-format", "json", "--no-cache")
    assert r.returncode == 0 and json.loads(r.stdout) == []


def test_a_build_file_without_the_flag_is_not_parsed(monkeypatch):
    """Every scanner's flag spells `maxrregcount`: a setup.py without the word is not parsed
    (libcst's import and parse were 0.25 s of a PyTorch extension's warm check)."""
    from occlint import buildfiles

    parsed = []
    real = buildfiles.SCANNERS["setup.py"]
    monkeypatch.setitem(buildfiles.SCANNERS, "setup.py", lambda t: parsed.append(1) or real(t))
    setup = ('from torch.utils.cpp_extension import CUDAExtension\n'
             'CUDAExtension(name="e", sources=["k.cu"], extra_compile_args={"nvcc": ["-O3"]})\n')
    assert buildfiles.scan(setup, "setup.py") == [] and parsed == []
    hits = buildfiles.scan(setup.replace('"-O3"', '"-O3", "-maxrregcount=32"'), "setup.py")
    assert [h.value for h in hits] == [32] and parsed == [1]
