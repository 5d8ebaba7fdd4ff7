"""`occlint check --output-format ... --output-file ...` through the real CLI (parse-only rules)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from conftest import SCALE_100, run_cli

SOURCE = SCALE_100


def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\nselect = ["OCC031"]\n')
    (tmp_path / "k.cu").write_text(SOURCE)
    return tmp_path


def test_several_formats_in_one_run(tmp_path):
    p = project(tmp_path)
    r = run_cli("check", "--output-format", "github,sarif:occlint.sarif",
                "--output-format", "junit:report.xml", cwd=p)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("::warning file=k.cu,line=7,endLine=7,col=19,endColumn=22,title=occlint (OCC031)::")
    sarif = json.loads((p / "occlint.sarif").read_text())
    from test_emit_formats import _validator

    assert not list(_validator().iter_errors(sarif))
    [result] = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k.cu"
    assert ET.parse(p / "report.xml").getroot().get("failures") == "1"


def test_output_file(tmp_path):
    p = project(tmp_path)
    r = run_cli("check", "--output-format", "json-lines", "--output-file", "f.jsonl", cwd=p)
    assert r.returncode == 1 and r.stdout == ""
    [line] = (p / "f.jsonl").read_text().splitlines()
    assert json.loads(line)["code"] == "OCC031"


def test_bad_output_arguments_are_one_line_errors(tmp_path):
    p = project(tmp_path)
    for args, words in [
        (("--output-format", "nope"), "unknown output format `nope`"),
        (("--output-format", "github,sarif"), "only one output format can go to stdout"),
        (("--output-format", "sarif:a.sarif", "--output-file", "b"), "--output-file needs"),
        (("--output-format", "sarif:no/such/dir/a.sarif"), "cannot write no/such/dir/a.sarif"),
    ]:
        r = run_cli("check", *args, cwd=p)
        assert r.returncode == 2, args
        assert r.stderr.strip().splitlines()[-1].startswith("occlint: error: ") and words in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
