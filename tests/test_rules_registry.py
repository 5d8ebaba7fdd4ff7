"""rules/*.toml, check functions and fixtures line up one to one; templates match the values."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES, run_main

from occlint import checks, registry

CODES = sorted(registry.RULES)


@pytest.mark.parametrize("code", CODES)
def test_rule_has_check_and_fixture(code):
    rule = registry.RULES[code]
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", rule.name), rule.name
    assert rule.severity in registry.SEVERITIES
    assert rule.summary and rule.message and rule.rationale.strip()
    assert code in checks.CHECKS, f"no check function registered for {code}"
    assert list(FIXTURES.glob(f"{code}*.cu")) or (FIXTURES / code).is_dir(), f"no fixture for {code}"


@pytest.mark.parametrize("code", CODES)
def test_check_function_is_named_after_the_rule(code):
    """Searching a rule's name finds its one function: `register-cliff` -> `register_cliff`."""
    assert checks.CHECKS[code].__name__ == registry.RULES[code].name.replace("-", "_")


def test_every_check_has_a_rule():
    assert set(checks.CHECKS) <= set(registry.RULES)


def test_every_fixture_names_a_rule():
    for path in FIXTURES.glob("OCC*"):
        assert path.name[:6] in registry.RULES, path.name


@pytest.mark.parametrize("code", CODES)
def test_rule_page_renders(code):
    page = registry.page(code)
    assert page.startswith(f"# {code} {registry.RULES[code].name}")


def test_render_fills_templates_and_variants():
    text = registry.render("OCC031", block=100, idle=28, rounded=128)
    assert text == "block of 100 threads is not a multiple of 32: its last warp runs with 28 idle lanes; use 128 threads/block"
    assert "opts in to only 1024" in registry.render("OCC022", "too_small", kernel="k", dynamic_smem=65536, opted=1024)


def test_percentages_format_like_nsight():
    assert f"{checks.Pct(0.75)}" == "75%"
    assert f"{checks.Pct(2 / 3)}" == "66.7%"


def test_selection_is_ruff_like():
    from occlint.config import Config

    assert registry.is_enabled("OCC010", Config())
    assert not registry.is_enabled("OCC010", Config(ignore=("OCC01",)))
    assert registry.is_enabled("OCC010", Config(ignore=("OCC0",), extend_select=("OCC010",)))
    assert not registry.is_enabled("OCC031", Config(select=("OCC01",)))
    cfg = Config(per_file_ignores=(("legacy/*", ("OCC031",)),), root="/p")
    assert not registry.is_enabled("OCC031", cfg, "/p/legacy/a.cu")
    assert registry.is_enabled("OCC031", cfg, "/p/src/a.cu")


def test_rule_and_rules_commands():
    r = run_main("rule", "OCC010")
    assert r.returncode == 0 and r.stdout.startswith("# OCC010 register-cliff")
    r = run_main("rule", "register-cliff")
    assert r.returncode == 0 and "OCC010" in r.stdout
    r = run_main("rule", "OCC011x")
    assert r.returncode == 2 and "did you mean `OCC011`" in r.stderr
    r = run_main("rules")
    assert r.returncode == 0 and all(code in r.stdout for code in CODES)


def test_docs_are_generated_from_the_toml(tmp_path):
    written = registry.write_docs(tmp_path)
    assert {p.stem for p in written} == set(CODES)
    assert (tmp_path / "OCC020.md").read_text() == registry.page("OCC020")


def test_committed_docs_are_current():
    from conftest import ROOT

    for code in CODES:
        page = ROOT / "docs" / "rules" / f"{code}.md"
        assert page.read_text() == registry.page(code), f"run `python -m occlint.registry docs/rules` ({code})"


@pytest.mark.parametrize("code", CODES)
def test_rule_page_names_the_fix_without_placeholders_and_its_safety(code):
    rule = registry.RULES[code]
    page = registry.page(code)
    assert not re.search(r"<\w+>|\{\w+\}", page.split("## Why")[0]), page
    if rule.fix_title:
        assert rule.fix_safety in ("safe", "unsafe") and rule.fix_summary
        assert f"Fix ({rule.fix_safety}: " in page
    else:
        assert "No automatic fix." in page


def test_fix_safety_on_the_page_is_what_the_checks_give():
    from occlint.config import Config
    from occlint.engine import lint_source
    from occlint.model import Usage
    from occlint.source import parse

    seen = {}
    for path in sorted(FIXTURES.glob("OCC*.cu")):
        text = path.read_text()
        sf = parse(text, str(path))
        for regs in (33, 40, 72, 128):
            usage = [Usage(kernel=k.qualname, arch="sm_90", registers=regs, static_smem=70000)
                     for k in sf.kernels]
            for f in lint_source(text, str(path), usage, Config(arch=("sm_90",)), source=sf):
                if f.fix is not None and f.fix.applicability != "display":
                    seen.setdefault(f.code, set()).add(f.fix.applicability)
    assert {"OCC010", "OCC031", "OCC022"} <= set(seen)
    for code, kinds in seen.items():
        assert kinds == {registry.RULES[code].fix_safety}, code


def test_messages_say_one_in_the_singular():
    text = registry.render("OCC001", "best", kernel="k", regs=84, arch="sm_90", max_block=1024,
                           occupancy="31.2%", block=640, limiter="limited by registers", shed=1,
                           target_regs=64, target_occupancy="50%", target_block=1024, target_blocks=1)
    assert "(1 block/SM)" in text and "1 fewer register/thread" in text, text
    assert registry.singular("11 blocks, 0.1 blocks, 21 bytes") == "11 blocks, 0.1 blocks, 21 bytes"


def test_messages_shorten_long_template_arguments_and_the_data_keeps_them():
    """xgboost's `EvaluateSplitsKernel<512, IterSpan<transform_iterator<..., {lambda}>>>` was
    700 characters in each OCC001 message."""
    long_arg = ("xgboost::common::IterSpan<thrust::transform_iterator<xgboost::tree::Evaluate("
                "xgboost::Context const*)::{lambda(unsigned long)#1}, thrust::counting_iterator<"
                "unsigned long> > >")
    label = f"EvaluateSplitsKernel<512, {long_arg}>"
    assert registry.short_label(label) == "EvaluateSplitsKernel<512, xgboost::common::IterSpan<...>>"
    assert registry.short_label("k<(anonymous namespace)::Functor<float>, 128>") == \
        "k<(anonymous namespace)::Functor<float>, 128>"
    assert registry.short_label("k<{lambda(int)#1} with a body longer than forty characters, 4>") \
        == "k<..., 4>"
    assert registry.short_label("k<a, b") == "k<a, b"
    text = registry.render("OCC001", kernel=label, arch="sm_80", regs=102, block=512,
                           occupancy="25%", shed=38, target_regs=64, target_blocks=2,
                           target_occupancy="50%", limiter="registers")
    assert "EvaluateSplitsKernel<512, xgboost::common::IterSpan<...>>" in text and "lambda" not in text
