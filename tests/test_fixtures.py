"""Every fixture in fixtures/: the findings must be exactly the `// expect:` lines.

The fast run uses the `// usage:` lines; the nvcc run ignores them and compiles the fixture for
the archs it names, and must agree. `X.fixed.cu` must equal `X.cu` after every fix (safe and
unsafe) is applied, and must compile.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FIXTURES
from fixture_format import load

from occlint import fix as fixing
from occlint.engine import lint_source

CASES = sorted(p for p in FIXTURES.glob("*.cu") if not p.name.endswith(".fixed.cu"))


def _compare(fx, findings):
    got = {(f.span.line, f.code) for f in findings}
    assert got == set(fx.expected), "\n".join(
        [f"missing: line {line} {code}" for line, code in sorted(set(fx.expected) - got)]
        + [f"unexpected: line {f.span.line} {f.code}: {f.message}" for f in findings
           if (f.span.line, f.code) not in fx.expected])
    for (line, code), texts in fx.expected.items():
        messages = [f.message for f in findings if (f.span.line, f.code) == (line, code)]
        for text in texts:
            assert any(text in m for m in messages), f"line {line} {code}: {text!r} not in {messages}"


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_fixture(path):
    fx = load(path)
    findings = lint_source(fx.text, str(path), fx.usages, fx.config(), compile_errors=fx.compile_errors)
    _compare(fx, findings)
    fixed = path.with_name(path.name[:-3] + ".fixed.cu")
    if fixed.exists():
        after, applied = fixing.apply_fixes(fx.text, findings, unsafe=True)
        assert applied, "a .fixed.cu exists but no fix applies"
        assert after == fixed.read_text(encoding="utf-8")
    else:
        assert not [f for f in findings if f.fix and f.fix.applicability == "safe"], \
            "a safe fix exists: add the expected result as a .fixed.cu"


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_fixture_with_nvcc(path, nvcc_path, tmp_path):
    from occlint.toolchain import collect_usage

    fx = load(path)
    config = dataclasses.replace(fx.config(), arch=fx.archs, nvcc=nvcc_path, cache_dir=str(tmp_path.parent / "occlint-cache"))
    report = collect_usage([str(path)], config)
    usage = report.usage_for(str(path))
    real = {(u.kernel, u.arch, u.template_args): (u.registers, u.static_smem, u.spill_stores, u.spill_loads)
            for u in usage}
    recorded = {(u.kernel, u.arch, u.template_args): (u.registers, u.static_smem, u.spill_stores, u.spill_loads)
                for u in fx.usages}
    assert recorded == real, "update the fixture's `// usage:` lines to what nvcc reports"
    errors = [e for e in report.errors if e.kind != "warning"]
    findings = lint_source(fx.text, str(path), usage, config, compile_errors=errors)
    _compare(fx, findings)
    fixed = path.with_name(path.name[:-3] + ".fixed.cu")
    if fixed.exists() and not fx.compile_errors:
        after = collect_usage([str(fixed)], config)
        assert not after.errors, after.errors
