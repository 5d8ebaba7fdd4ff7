"""Baselines: written from findings, robust to line shifts, counted."""

from __future__ import annotations

import json

import pytest
from conftest import SCALE_100

from occlint import baseline
from occlint.errors import OcclintError
from occlint.model import Finding, Span

TEXT = (
    "__global__ void k(float* x) {\n"
    "    __shared__ float a[4096];\n"
    "    __shared__ float b[4096];\n"
    "}\n"
)


def find(path, text, needle, code="OCC020", kernel="k", nth=0):
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if needle in line]
    i = hits[nth]
    col = lines[i].index(needle) + 1
    return Finding(code, "static-shared-worst-case", "m", path, Span(i + 1, col, i + 1, col + len(needle)),
                   kernel=kernel)


def test_known_findings_hide_after_lines_shift(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(TEXT)
    before = [find(str(src), TEXT, "a[4096]"), find(str(src), TEXT, "b[4096]")]
    file = tmp_path / "occlint-baseline.json"
    assert baseline.write(before, str(file), root=str(tmp_path)) == 2
    doc = json.loads(file.read_text())
    assert doc["findings"][0] == {"code": "OCC020", "path": "k.cu", "kernel": "k",
                                  "snippet": "__shared__floata[4096];", "count": 1}
    assert "line" not in json.dumps(doc)

    shifted = "// header\n\n" + TEXT.replace("    __shared__ float b", "  __shared__   float b")
    src.write_text(shifted)
    after = [find(str(src), shifted, "a[4096]"), find(str(src), shifted, "b[4096]"),
             find(str(src), shifted, "x) {", code="OCC010")]
    kept, hidden = baseline.filter_known(after, baseline.load(str(file)), root=str(tmp_path))
    assert hidden == 2
    assert [f.code for f in kept] == ["OCC010"]


def test_counts_let_a_new_copy_show(tmp_path):
    text = TEXT.replace("float b[4096]", "float a[4096]")       # two identical lines
    src = tmp_path / "k.cu"
    src.write_text(text)
    one = [find(str(src), text, "a[4096]")]
    file = tmp_path / "b.json"
    baseline.write(one, str(file), root=str(tmp_path))
    both = [find(str(src), text, "a[4096]"), find(str(src), text, "a[4096]", nth=1)]
    kept, hidden = baseline.filter_known(both, baseline.load(str(file)), root=str(tmp_path))
    assert (len(kept), hidden) == (1, 1)


def test_another_kernel_or_edited_line_is_new(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(TEXT)
    file = tmp_path / "b.json"
    baseline.write([find(str(src), TEXT, "a[4096]")], str(file), root=str(tmp_path))
    known = baseline.load(str(file))
    other_kernel = find(str(src), TEXT, "a[4096]", kernel="k2")
    edited = TEXT.replace("a[4096]", "a[8192]")
    src.write_text(edited)
    kept, hidden = baseline.filter_known([other_kernel, find(str(src), edited, "a[8192]")], known,
                                         root=str(tmp_path))
    assert (len(kept), hidden) == (2, 0)


def test_stable_output(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(TEXT)
    fs = [find(str(src), TEXT, "b[4096]"), find(str(src), TEXT, "a[4096]")]
    baseline.write(fs, str(tmp_path / "1.json"), root=str(tmp_path))
    baseline.write(fs[::-1], str(tmp_path / "2.json"), root=str(tmp_path))
    assert (tmp_path / "1.json").read_text() == (tmp_path / "2.json").read_text()


def test_missing_or_bad_baseline_is_an_occlint_error(tmp_path):
    with pytest.raises(OcclintError, match="baseline file not found"):
        baseline.load(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(OcclintError, match="is not an occlint baseline"):
        baseline.load(str(bad))
    bad.write_text('{"version": 99, "findings": []}')
    with pytest.raises(OcclintError, match="unsupported version"):
        baseline.load(str(bad))


KERNEL = SCALE_100


def test_baseline_cli_round_trip(tmp_path):
    from conftest import run_cli

    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\nselect = ["OCC031"]\n')
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    r = run_cli("baseline", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Wrote 1 finding to occlint-baseline.json" in r.stderr
    assert run_cli("check", "--baseline", "occlint-baseline.json", cwd=tmp_path).returncode == 0
    # lines move: still known
    src.write_text("// moved down\n#include <cstdio>\n" + KERNEL)
    assert run_cli("check", "--baseline", "occlint-baseline.json", cwd=tmp_path).returncode == 0
    # a new mistake shows, the known one stays hidden
    src.write_text("// moved down\n#include <cstdio>\n" + KERNEL.replace(
        "}\n\nvoid run", "}\n\nvoid run2(float* x) { scale<<<4096, 96 + 4>>>(x, 1.0f, 8); }\nvoid run"))
    r = run_cli("check", "--output-format", "concise", "--baseline", "occlint-baseline.json", cwd=tmp_path)
    assert r.returncode == 1
    assert [line.split(": ")[0] for line in r.stdout.splitlines() if "OCC031" in line] == ["k.cu:8:37"]
    missing = run_cli("check", "--baseline", "nope.json", cwd=tmp_path)
    assert missing.returncode == 2 and "baseline file not found: nope.json" in missing.stderr
