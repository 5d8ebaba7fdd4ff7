"""Every fixture in fixtures/: the findings must be exactly the `// expect:` lines.

The fast run uses the `// usage:` lines; the nvcc run ignores them and compiles the fixture for
the archs it names, and must agree. `X.fixed.cu` must equal `X.cu` after every fix (safe and
unsafe) is applied, and must compile.

The fixture format (DESIGN.md):
    // occlint: --arch sm_86 --min-occupancy 0.6     first line: options for this fixture
                                                     (`--lock FILE`: a lockfile beside it, OCC050)
    // usage: NAME[<args>] regs=N smem=N [spills=S/L] [barriers=B] [arch=sm_XX]
    //        [maxregs=N] [threads=N]                the cubin's register cap and max threads
    // compile-error: "message"                      own line: nvcc fails at the next code line
    // expect: OCC020 "text"                         at line end, or own line (next code line)

Build files (fixtures/OCC040/: CMake, Makefile, setup.py, pyproject.toml) run through the same
loader and comparison with `#` comments; compile_commands.json cannot carry comments and is
checked in tests/test_rules_buildfiles.py.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import FIXTURES

from occlint import fix as fixing
from occlint import record
from occlint.config import config_from_table
from occlint.engine import lint_source
from occlint.model import CompileError, Usage

_EXPECT = re.compile(r"(?://|#)\s*expect:\s*(.*)$")      # `#` in .py fixtures
_ITEM = re.compile(r'(OCC\d{3})((?:\s+"[^"]*")*)')      # a code and every quoted text after it
_QUOTED = re.compile(r'"([^"]*)"')
_USAGE = re.compile(r"^\s*//\s*usage:\s*(\S+?)(?:<([^>]*)>)?\s+(.*)$")
_COMPILE_ERROR = re.compile(r'^\s*//\s*compile-error:\s*"([^"]*)"')


@dataclass
class Fixture:
    path: Path
    text: str
    options: dict = field(default_factory=dict)
    usages: list[Usage] = field(default_factory=list)
    compile_errors: list[CompileError] = field(default_factory=list)
    expected: dict[tuple[int, str], list[str]] = field(default_factory=dict)   # (line, code) -> texts

    @property
    def archs(self) -> tuple[str, ...]:
        return tuple(self.options.get("arch", ["sm_90"]))

    def config(self):
        from occlint import lock
        options = {k: v for k, v in self.options.items() if k != "lock"}
        config = config_from_table(options, root=str(self.path.parent))
        return lock.with_lock(config, str(self.path.parent / self.options["lock"]) if "lock" in self.options else None)


def _options(line: str) -> dict:
    m = re.match(r"^\s*(?://|#)\s*occlint:\s*(--.*)$", line)
    if not m:
        return {}
    words, out = shlex.split(m.group(1)), {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            key, _, value = word[2:].partition("=")
            value = value or words[i + 1]
            if key in ("arch", "select", "ignore", "extend-select"):
                out[key] = value.split(",")
            elif key in ("min-occupancy",):
                out[key] = float(value)
            elif key == "cliff-margin":
                out[key] = int(value)
            else:
                out[key] = value
    return out


def _is_code(line: str, python: bool = False) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith(("//", "#") if python else "//")


def load(path: Path) -> Fixture:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    fx = Fixture(path, text, _options(lines[0]) if lines else {})
    python = path.suffix == ".py" or path.parent.name == "OCC040"     # `#` comments
    pending: list[tuple[str, str]] = []
    pending_errors: list[str] = []
    for number, line in enumerate(lines, 1):
        m = _USAGE.match(line)
        if m:
            name, args, rest = m.group(1), m.group(2), dict(kv.split("=", 1) for kv in m.group(3).split())
            stores, _, loads = rest.get("spills", "0/0").partition("/")
            for arch in ([rest["arch"]] if "arch" in rest else fx.archs):
                fx.usages.append(Usage(
                    kernel=name, arch=arch, registers=int(rest["regs"]), static_smem=int(rest.get("smem", 0)),
                    barriers=int(rest.get("barriers", 0)), spill_stores=int(stores), spill_loads=int(loads or 0),
                    template_args=tuple(a.strip() for a in args.split(",")) if args else (), source="recorded",
                    max_registers=int(rest["maxregs"]) if "maxregs" in rest else None,
                    max_threads=int(rest["threads"]) if "threads" in rest else None))
            continue
        m = _COMPILE_ERROR.match(line)
        if m:
            pending_errors.append(m.group(1))
            continue
        m = _EXPECT.search(line)
        if m and not python and line[m.start()] == "#":
            m = None
        items = _ITEM.findall(m.group(1)) if m else []
        if m and not _is_code(line[:m.start()], python):
            pending.extend(items)
            continue
        if _is_code(line, python):
            for code, quoted in [*pending, *items]:
                fx.expected.setdefault((number, code), []).extend(_QUOTED.findall(quoted))
            for message in pending_errors:
                fx.compile_errors.append(CompileError(str(path), number, None, message, fx.archs[0]))
            pending, pending_errors = [], []
    return fx


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


def _check_fixed(fx, path, findings):
    """`X.fixed.SUFFIX` must equal X after every fix; without one, no safe fix may exist."""
    name = path.name[:-len(path.suffix)] + ".fixed" + path.suffix
    fixed = path.with_name(name)
    if fixed.exists():
        after, applied = fixing.apply_fixes(fx.text, findings, unsafe=True)
        assert applied, f"a {name} exists but no fix applies"
        assert after == fixed.read_text(encoding="utf-8")
    else:
        assert not [f for f in findings if f.fix and f.fix.applicability == "safe"], \
            f"a safe fix exists: add the expected result as {name}"


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_fixture(path):
    fx = load(path)
    findings = lint_source(fx.text, str(path), fx.usages, fx.config(), compile_errors=fx.compile_errors)
    _compare(fx, findings)
    _check_fixed(fx, path, findings)


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_fixture_with_nvcc(path, nvcc_path, tmp_path):
    from occlint.toolchain import collect_usage

    fx = load(path)
    config = record.replace(fx.config(), arch=fx.archs, nvcc=nvcc_path, cache_dir=str(tmp_path.parent / "occlint-cache"))
    report = collect_usage([str(path)], config)
    usage = report.usage_for(str(path))
    real = {(u.kernel, u.arch, u.template_args): (u.registers, u.static_smem, u.spill_stores, u.spill_loads)
            for u in usage}
    recorded = {(u.kernel, u.arch, u.template_args): (u.registers, u.static_smem, u.spill_stores, u.spill_loads)
                for u in fx.usages}
    assert recorded == real, "update the fixture's `// usage:` lines to what nvcc reports"
    cubin = {(u.kernel, u.arch, u.template_args): (u.max_registers, u.max_threads) for u in usage}
    for u in fx.usages:           # the cubin's figures, where the fixture records them
        if u.max_registers is not None or u.max_threads is not None:
            assert (u.max_registers, u.max_threads) == cubin[(u.kernel, u.arch, u.template_args)]
    errors = [e for e in report.errors if e.kind != "warning"]
    findings = lint_source(fx.text, str(path), usage, config, compile_errors=errors)
    _compare(fx, findings)
    fixed = path.with_name(path.name[:-3] + ".fixed.cu")
    if fixed.exists() and not fx.compile_errors:
        after = collect_usage([str(fixed)], config)
        assert not after.errors, after.errors


BUILD_CASES = sorted(p for p in (FIXTURES / "OCC040").iterdir() if p.name != "compile_commands.json")


@pytest.mark.parametrize("path", BUILD_CASES, ids=[p.name for p in BUILD_CASES])
def test_build_file_fixture(path):
    from occlint.engine import lint_build_file

    fx = load(path)
    assert fx.expected, "a build-file fixture expects at least one finding"
    _compare(fx, lint_build_file(fx.text, str(path), fx.config()))


# --- CUDA inside Python: compiled with the real NVRTC (CuPy) and nvcc (PyCUDA), no recorded usage

PY_CASES = sorted(p for p in (FIXTURES / "python").glob("*.py") if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("path", PY_CASES, ids=[p.name for p in PY_CASES])
def test_python_fixture(path, nvrtc_lib, nvcc_path, tmp_path):
    from occlint.python import lint_python

    fx = load(path)
    config = record.replace(fx.config(), arch=fx.archs, nvcc=nvcc_path)
    findings, notices = lint_python(fx.text, str(path), config)
    assert not [n for n in notices if "not compiled" in n or "not found" in n], notices
    _compare(fx, findings)
    _check_fixed(fx, path, findings)
