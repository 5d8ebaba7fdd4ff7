"""Issue 10 item 1: no file name or flag reaches nvcc's shell (real nvcc).

nvcc runs its stages through `sh -c`; a name like `$(touch PWNED).cu` used to run `touch`.
Every hostile name below must compile (registers found, no OCC900) and run nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import run_cli

from occlint.toolchain.safe import is_safe, stage

KERNEL = """\
#include "helper.cuh"
__global__ void k(float* x) { x[threadIdx.x] = SCALE * x[threadIdx.x]; }
void go(float* x) { k<<<4, 100>>>(x); }
"""
BROKEN = """\
__global__ void k(float* x) { x[0] = ; }
"""

# Each makes a file called PWNED (in the working directory) if any shell interprets it.
NAMES = [
    "$(touch PWNED).cu",
    "`touch PWNED`.cu",
    'a"b.cu',
    "a'b.cu",
    "a;touch PWNED;b.cu",
    "a b.cu",
    "a\nb.cu",
    "a|touch PWNED.cu",
    "a&touch PWNED&.cu",
    "a\\b.cu",
    "-rf.cu",
    "~x.cu",
    "a*b?.cu",
]
BYTES_NAME = b"caf\xe9 $(touch PWNED).cu"     # not UTF-8 (Latin-1)


def _project(tmp_path, name: str | bytes, folder: str | bytes = b"src", text: str = KERNEL):
    root = tmp_path / "proj"
    d = os.path.join(os.fsencode(root), os.fsencode(folder))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, b"helper.cuh"), "w") as fh:
        fh.write("#define SCALE 2.0f\n")
    path = os.path.join(d, os.fsencode(name))
    with open(path, "w") as fh:
        fh.write(text)
    return root, os.fsdecode(path)


def _no_marker(tmp_path):
    found = [p for p in tmp_path.rglob("*PWNED*") if p.is_file() and p.stat().st_size == 0
             and not p.name.endswith((".cu", ".cuh"))]
    assert not found, f"a shell ran a file name: {found}"


def _check(root, *args):
    return run_cli("check", "--no-cache", "--output-format", "json", "--select", "OCC", *args,
                   ".", cwd=root)


@pytest.mark.parametrize("name", NAMES + [BYTES_NAME], ids=repr)
def test_hostile_file_names_compile_and_run_nothing(tmp_path, nvcc_path, name):
    root, path = _project(tmp_path, name)
    proc = _check(root)
    _no_marker(tmp_path)
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)
    codes = {f["code"] for f in findings}
    assert "OCC900" not in codes, findings
    assert "OCC031" in codes                       # the launch with 100 threads
    assert {f["filename"] for f in findings} == {os.path.abspath(path)}
    kernels = run_cli("kernels", "--no-cache", "--json", ".", cwd=root)
    _no_marker(tmp_path)
    assert kernels.returncode == 0, kernels.stderr
    recs = [r for r in json.loads(kernels.stdout) if r["kind"] == "kernel"]
    assert recs and all(r.get("usage") for r in recs), recs   # nvcc's registers arrived


@pytest.mark.parametrize("folder", [b"$(touch PWNED) dir", b"q\"uote`touch PWNED`", b"l\xe4tin"],
                         ids=repr)
def test_hostile_folder_names(tmp_path, nvcc_path, folder):
    root, path = _project(tmp_path, "ok.cu", folder)
    proc = _check(root)
    _no_marker(tmp_path)
    findings = json.loads(proc.stdout)
    assert "OCC900" not in {f["code"] for f in findings}, findings
    assert any(f["code"] == "OCC031" for f in findings)


def test_compile_error_positions_map_back_to_the_real_name(tmp_path, nvcc_path):
    root, path = _project(tmp_path, 'x"$(touch PWNED).cu', text=BROKEN)
    proc = _check(root)
    _no_marker(tmp_path)
    errors = [f for f in json.loads(proc.stdout) if f["code"] == "OCC900"]
    assert errors and all(f["filename"] == os.path.abspath(path) for f in errors)
    assert errors[0]["location"]["row"] == 1
    assert "occlint-" not in proc.stdout           # no temp name leaks into a message


def test_header_errors_map_back_through_the_folder_link(tmp_path, nvcc_path):
    root, path = _project(tmp_path, "$(touch PWNED).cu")
    (root / "src" / "helper.cuh").write_text("#define SCALE 2.0f\nint y = ;\n")
    proc = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=root)
    _no_marker(tmp_path)
    assert "occlint-" not in proc.stdout + proc.stderr
    assert "helper.cuh" in proc.stdout + proc.stderr


def test_hostile_names_are_cached_under_their_real_dependencies(tmp_path, nvcc_path):
    root, path = _project(tmp_path, "$(touch PWNED).cu")
    first = run_cli("check", "--output-format", "json", ".", cwd=root)
    second = run_cli("check", "--output-format", "json", ".", cwd=root)
    assert first.stdout == second.stdout
    lists = list((root / ".occlint_cache").rglob("*.deps"))    # the entries' dependency lists
    assert lists
    deps = [d for e in lists for d, _h in json.loads(e.read_text())["list"]]
    assert any(d.endswith("helper.cuh") for d in deps)
    assert not any("occlint-" in d for d in deps)   # never a temp file as a dependency
    _no_marker(tmp_path)


# --- flags from compile_commands.json and the config ------------------------------------------

HOSTILE_FLAGS = [
    "-DFOO=$(touch PWNED)", "-DBAR=`touch PWNED`", "-DQ=\"quoted string\"",
    "-Xcompiler=-DX=1;touch PWNED", "-Xcompiler", "-DY=`touch PWNED`",
    "--compiler-options=-Wall -Wextra", "-Xptxas", "-O3;touch PWNED",
    "-I/nonexistent/$(touch PWNED)", "-isystem", "/x y/`touch PWNED`",
]


def test_dryrun_shows_no_shell_active_characters(tmp_path, nvcc_path):
    """What nvcc hands its shell (its own -dryrun) has no unquoted metacharacter from us."""
    src = tmp_path / "a $(touch PWNED).cu"
    src.write_text(KERNEL.replace('#include "helper.cuh"', "#define SCALE 1"))
    tmp = tmp_path / "t"
    tmp.mkdir()
    st = stage(str(src), HOSTILE_FLAGS, str(tmp_path), str(tmp))
    assert all(is_safe(a) for a in [st.source, *st.flags]), st.flags
    out = subprocess.run([nvcc_path, "-dryrun", "-cubin", "-arch=sm_90", *st.flags, "-o",
                          str(tmp / "x.cubin"), st.source], capture_output=True, text=True,
                         cwd=tmp_path).stderr
    commands = [ln[3:] for ln in out.splitlines() if ln.startswith("#$ ") and "=" not in ln[3:8]]
    assert commands
    for cmd in commands:
        for bad in ("$(", "`", ";touch", "PWNED"):
            assert bad not in cmd, cmd
    # the quoted define survives, as a #define in a forced include
    header = next(tmp.glob("defines.h"))
    assert '#define Q "quoted string"' in header.read_text()
    assert "-Wall,-Wextra" in st.flags
    assert any("skipped" in w for w in st.warnings)


def test_flags_from_compile_commands_are_never_interpreted(tmp_path, nvcc_path):
    root, path = _project(tmp_path, "k.cu")
    args = [nvcc_path, *HOSTILE_FLAGS, "-DSCALE_UNUSED=\"a b\"", "-c", path, "-o", "k.o"]
    (root / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(root), "file": path, "arguments": args}]))
    proc = _check(root)
    _no_marker(tmp_path)
    _no_marker(root)
    assert "OCC900" not in proc.stdout, proc.stdout
    assert "skipped: nvcc would pass it to a shell" in proc.stderr
    # the config's nvcc-flags go the same way
    (root / "compile_commands.json").unlink()
    (root / "occlint.toml").write_text('nvcc-flags = ["-DFOO=$(touch PWNED)", "-DQ=`touch PWNED`"]\n'
                                       'defines = ["Z=$(touch PWNED)"]\n')
    proc = _check(root)
    _no_marker(tmp_path)
    assert "OCC900" not in proc.stdout, proc.stdout + proc.stderr


def test_safe_characters():
    assert is_safe("/usr/local/cuda-13.0/bin/nvcc")
    assert is_safe("-Xcompiler=-MD,-MF,/tmp/occlint-abc/x.d")
    for bad in ("a b", "$x", "`x`", "a\"b", "a'b", "a;b", "a|b", "a&b", "a\\b", "a\nb", "~x",
                "a*b", "a?b", "a[b]", "(x)", "a<b", "a>b", "a#b", "a!b", "a{b}", "", "caf\udce9"):
        assert not is_safe(bad), bad


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
