"""The source model against real nvcc: the kernels nvcc compiles, the static shared memory it
reports for each (template) instantiation."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from occlint.link import find_kernel
from occlint.source import launch_template_args, parse, specialize

CASES = Path(__file__).parent / "source_cases"


def ptxas_report(nvcc: str, path: Path, tmp_path: Path) -> dict[str, int]:
    """Demangled entry function -> static shared bytes, from `ptxas -v` (sm_90)."""
    import cxxfilt  # imported here: its import runs `ldconfig -p` twice

    r = subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "out.cubin"),
                        str(path), "-Xptxas", "-v"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out, current = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = cxxfilt.demangle(m.group(1))
            out[current] = 0
        m = re.search(r"(\d+) bytes smem", line)
        if m and current is not None:
            out[current] = int(m.group(1))
    return out


def plain_name(demangled: str) -> str:
    """`void outer::inner::nested(int*)` -> `outer::inner::nested`; `templated<128, int>`
    -> `templated`."""
    name, depth = demangled, 0
    for i in range(len(name) - 1, -1, -1):        # cut the parameter list: the last (...)
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            name = name[:i]
            break
    name = name.removeprefix("void ")
    while "<" in name:
        name = re.sub(r"<[^<>]*>", "", name)
    return name


def test_kernels_nvcc_compiles_are_found(nvcc_path, tmp_path):
    report = ptxas_report(nvcc_path, CASES / "kernels.cu", tmp_path)
    compiled = {plain_name(d) for d in report}
    sf = parse((CASES / "kernels.cu").read_bytes(), "kernels.cu")
    found = {k.qualname for k in sf.kernels}
    # the class-member kernel sits under `#ifdef OCCLINT_PARSE_ONLY` (nvcc rejects it)
    assert compiled == found - {"outer::Ops::member"}
    assert len(compiled) == 10


def test_static_shared_matches_ptxas_per_instantiation(nvcc_path, tmp_path):
    report = ptxas_report(nvcc_path, CASES / "shared.cu", tmp_path)
    sf = parse((CASES / "shared.cu").read_bytes(), "shared.cu")
    checked = 0
    for name in ("block_reduce_naive", "transpose"):
        k = find_kernel(sf, name)
        smem = next(v for d, v in report.items() if plain_name(d) == name)
        assert specialize(sf, k, ()).static_smem == smem
        checked += 1
    for la in sf.launches:
        k = find_kernel(sf, la)
        args = launch_template_args(la)
        demangled = next(d for d in report if d.startswith(
            f"void {la.callee}<{', '.join(str(a) for a in args)}>"))
        assert specialize(sf, k, args).static_smem == report[demangled]
        checked += 1
    assert checked == 4


def test_launch_bounds_inserted_at_decl_span_compiles(nvcc_path, tmp_path):
    text = (CASES / "kernels.cu").read_text()
    sf = parse(text, "kernels.cu")
    targets = [k for k in sf.kernels if k.launch_bounds is None and k.maxnreg is None
               and k.qualname != "outer::Ops::member"]
    assert len(targets) >= 5
    for k in sorted(targets, key=lambda k: -k.decl_span.start):     # back to front
        at = k.decl_span.start
        text = text[:at] + "__launch_bounds__(128) " + text[at:]
    (tmp_path / "bounded.cu").write_text(text)
    report = ptxas_report(nvcc_path, tmp_path / "bounded.cu", tmp_path)
    assert len(report) == 11       # ten kernels, `templated` twice
    again = parse(text, "bounded.cu")
    assert all(again.kernels[i].launch_bounds is not None
               for i, k in enumerate(sf.kernels) if k in targets)
