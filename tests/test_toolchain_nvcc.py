"""collect_usage with the real nvcc: figures, templates, errors, cache, timeouts, flags."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import run_main

from occlint.config import Config
from occlint.toolchain import collect_usage
from occlint.toolchain.cache import FORMAT

HEADER = """\
#pragma once
template <int BLOCK>
__global__ void tile_sum(const float* in, float* out) {
    __shared__ float tile[BLOCK];
    tile[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) out[0] = tile[BLOCK - 1];
}
"""
UNIT = """\
#include "tile.cuh"
namespace app {
__global__ void saxpy(float a, const float* x, float* y) { y[threadIdx.x] += a * x[threadIdx.x]; }
}
void run(const float* in, float* out) {
    tile_sum<128><<<1, 128>>>(in, out);
    tile_sum<512><<<1, 512>>>(in, out);
}
"""
BAD = """\
__global__ void broken(float* p) {
    p[0] = not_declared;
}
"""


@pytest.fixture
def project(tmp_path, nvcc_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.cuh").write_text(HEADER)
    (tmp_path / "app.cu").write_text(UNIT)
    (tmp_path / "bad.cu").write_text(BAD)
    config = Config(root=str(tmp_path), nvcc=nvcc_path, include_dirs=("inc",),
                    arch=("sm_80", "sm_90"))
    return tmp_path, config


def _ptxas_registers(nvcc, path, arch, flags):
    """ptxas's own report, read with a separate regex: mangled name -> (registers, smem)."""
    out = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", *flags, "-o",
                          str(path) + ".cubin", str(path)], capture_output=True, text=True)
    found = {}
    for name, regs, smem in re.findall(
            r"entry function '(\w+)'.*?Used (\d+) registers[^\n]*?(?:(\d+) bytes smem|\n)",
            out.stdout + out.stderr, re.S):
        found[name] = (int(regs), int(smem or 0))
    return found


def test_figures_templates_errors_and_cache(project, nvcc_path):
    root, config = project
    app, bad, header = str(root / "app.cu"), str(root / "bad.cu"), str(root / "inc" / "tile.cuh")
    report = collect_usage([str(root)], config, jobs=2)
    assert report.archs == ("sm_80", "sm_90") and report.compiled == 4 and report.cached == 0
    usages = report.usages[app]
    # every figure equals ptxas's own report, for both archs
    for arch in ("sm_80", "sm_90"):
        direct = _ptxas_registers(nvcc_path, root / "app.cu", arch, ["-I", str(root / "inc")])
        mine = {u.mangled: (u.registers, u.static_smem) for u in usages if u.arch == arch}
        assert mine == direct and len(mine) == 3
    # template instantiations carry their arguments; the smem follows BLOCK
    tiles = sorted((u.template_args, u.static_smem) for u in usages
                   if u.kernel == "tile_sum" and u.arch == "sm_90")
    assert tiles == [(("128",), 512), (("512",), 2048)]
    assert {u.kernel for u in usages} == {"tile_sum", "app::saxpy"}
    # the header's kernels are reachable through the unit that includes it
    assert {u.kernel for u in report.usage_for(header)} == {"tile_sum", "app::saxpy"}
    # a compile error is reported at the compiler's line, for each arch; other files still ran
    assert [(e.path, e.line, e.arch, e.kind) for e in report.errors] == [
        (bad, 2, "sm_80", "error"), (bad, 2, "sm_90", "error")]
    assert "not_declared" in report.errors[0].message and report.usages[bad] == ()

    # warm: nothing compiles, same answer
    warm = collect_usage([str(root)], config, jobs=2)
    assert (warm.compiled, warm.cached) == (0, 4)
    assert warm.usages == report.usages and warm.errors == report.errors

    # rewriting a file with the same bytes changes nothing (content-addressed)
    (root / "bad.cu").write_text(BAD)
    assert collect_usage([str(root)], config).compiled == 0

    # a header change recompiles only the unit that includes it
    (root / "inc" / "tile.cuh").write_text(HEADER.replace("tile[BLOCK]", "tile[2 * BLOCK]"))
    changed = collect_usage([str(root)], config, jobs=2)
    assert (changed.compiled, changed.cached) == (2, 2)
    assert sorted(u.static_smem for u in changed.usages[app]
                  if u.kernel == "tile_sum" and u.arch == "sm_90") == [1024, 4096]

    # a corrupt entry is ignored and rebuilt
    entries = sorted((root / ".occlint_cache").glob("*/*.json"))
    assert len(entries) >= 4
    for entry in entries:
        entry.write_text("{\"format\": 1, \"deps\": [[")
    rebuilt = collect_usage([str(root)], config, jobs=2)
    assert rebuilt.compiled == 4 and rebuilt.usages == changed.usages
    assert all(json.loads(e.read_text())["format"] == FORMAT for e in entries)

    # --no-cache compiles and writes nothing new
    nocache = Config(**{**config.__dict__, "no_cache": True, "arch": ("sm_90",)})
    assert collect_usage([app], nocache).compiled == 1


def test_missing_header_is_fatal_and_not_cached(tmp_path, nvcc_path):
    (tmp_path / "m.cu").write_text('#include "later.cuh"\n__global__ void k(float* p) { p[0] = V; }\n')
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",))
    first = collect_usage([str(tmp_path / "m.cu")], config)
    (err,) = first.errors
    assert (err.line, err.column, err.kind) == (1, 10, "fatal") and "later.cuh" in err.message
    (tmp_path / "later.cuh").write_text("#define V 1.0f\n")
    second = collect_usage([str(tmp_path / "m.cu")], config)
    assert second.compiled == 1 and second.errors == []
    assert [u.kernel for u in second.usages[str(tmp_path / "m.cu")]] == ["k"]


def test_timeout_becomes_an_error_not_a_hang(tmp_path, nvcc_path, monkeypatch):
    # the killed nvcc's temporaries (tmpxft_*: 4 left in /tmp by each run of this test) go with
    # the compile's private folder, nvcc's TMPDIR
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    (tmp_path / "t.cu").write_text(UNIT.replace('#include "tile.cuh"', HEADER))
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",), compile_timeout=0.05)
    report = collect_usage([str(tmp_path / "t.cu")], config)
    (err,) = report.errors
    assert err.kind == "timeout" and "timed out after 0.05 s" in err.message
    assert not list(tmp_path.glob(".occlint_cache/*/*.json"))
    assert not list(temp.iterdir())


def test_flags_and_archs_from_compile_commands(tmp_path, nvcc_path):
    src = tmp_path / "cc.cu"
    src.write_text("__global__ void k(float* p) { __shared__ float s[N]; s[threadIdx.x] = p[0];"
                   " __syncthreads(); p[1] = s[N - 1 - threadIdx.x]; }\n")
    build = tmp_path / "build"
    build.mkdir()
    (build / "compile_commands.json").write_text(json.dumps([{
        "directory": str(build), "file": str(src),
        "command": f"{nvcc_path} -DN=300 --generate-code=arch=compute_86,code=[compute_86,sm_86]"
                   f" -x cu -c {src} -o cc.o"}]))
    config = Config(root=str(tmp_path))
    report = collect_usage([str(src)], config)
    assert report.archs == ("sm_86",)
    (u,) = report.usages[str(src)]
    assert (u.arch, u.static_smem) == ("sm_86", 1200)


def test_ptxas_error_names_the_kernel_and_has_no_line(tmp_path, nvcc_path):
    src = tmp_path / "big.cu"
    src.write_text("namespace ns {\n__global__ void huge(float* p) { __shared__ float s[30000];"
                   " s[threadIdx.x] = p[0]; __syncthreads(); p[1] = s[29999 - threadIdx.x]; }\n}\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",))
    report = collect_usage([str(src)], config)
    (err,) = report.errors
    assert (err.path, err.line, err.kind, err.kernel) == (str(src), None, "ptxas", "ns::huge")
    assert "ns::huge(float*)" in err.message and "too much shared data" in err.message
    # deterministic, so it is cached like a success
    again = collect_usage([str(src)], config)
    assert (again.compiled, again.errors) == (0, report.errors)


def _failing_unit(root, nvcc_path):
    """A unit that needs an absent library header, behind a project header's switch (in its own
    folder: the cache folder created beside it would change a watched folder once)."""
    tmp_path = root / "src"
    (tmp_path / "inc").mkdir(parents=True)
    (tmp_path / "cfg.h").write_text("#pragma once\n#define USE_BLAS 1\n")
    unit = tmp_path / "f.cu"
    unit.write_text('#include "cfg.h"\n#if USE_BLAS\n#include "blaslib_v9.h"\n#endif\n'
                    "__global__ void k(float* p) { p[0] = 1; }\n")
    config = Config(root=str(root), nvcc=nvcc_path, arch=("sm_90",),
                    include_dirs=(str(tmp_path / "inc"),))
    return str(unit), config


def test_a_missing_header_failure_is_remembered(tmp_path, nvcc_path):
    """A unit failing on a missing library header is not compiled again on the next run."""
    unit, config = _failing_unit(tmp_path, nvcc_path)
    first = collect_usage([unit], config)
    (err,) = first.errors
    assert err.kind == "fatal" and "blaslib_v9.h" in err.message and first.compiled == 1
    again = collect_usage([unit], config)
    assert (again.compiled, again.cached) == (0, 1)
    assert again.errors == first.errors and again.usages == first.usages


def test_a_missing_header_of_a_common_name_is_remembered(tmp_path, nvcc_path):
    """LeetCUDA: `#include "utils.h"`, not found, was compiled again on every run because a
    `utils.h` sat beside a header the compile read (g++'s pstl/utils.h): a quoted include is
    found beside its includer, and nothing there includes that one."""
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "lib" / "helper.h").write_text("#pragma once\n#define HELPER 1\n")
    (src / "lib" / "utils.h").write_text("#pragma once\n")
    unit = src / "u.cu"
    unit.write_text('#include "lib/helper.h"\n#include "utils.h"\n'
                    "__global__ void k(float* p) { p[0] = HELPER; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",))
    first = collect_usage([str(unit)], config)
    assert first.compiled == 1 and "utils.h" in first.errors[0].message
    assert collect_usage([str(unit)], config).compiled == 0
    (src / "utils.h").write_text("#pragma once\n")          # where the include looks
    assert collect_usage([str(unit)], config).compiled == 1


@pytest.mark.parametrize("change", ["header in -I", "header beside the unit",
                                    "switch in a read header", "environment"])
def test_a_remembered_failure_ends_when_it_could_pass(tmp_path, nvcc_path, monkeypatch, change):
    """Whatever could make the compile pass makes the next run compile again: the header
    created where the preprocessor looks, a header it read edited in place (same folder
    listing), an environment variable that moves the search path."""
    import os

    unit, config = _failing_unit(tmp_path, nvcc_path)
    assert collect_usage([unit], config).compiled == 1
    assert collect_usage([unit], config).compiled == 0
    tmp_path = tmp_path / "src"
    blas = "#pragma once\n#define BLAS_OK 1\n"
    if change == "header in -I":
        (tmp_path / "inc" / "blaslib_v9.h").write_text(blas)
    elif change == "header beside the unit":
        (tmp_path / "blaslib_v9.h").write_text(blas)
    elif change == "switch in a read header":
        cfg = tmp_path / "cfg.h"
        folder = os.stat(tmp_path).st_mtime_ns
        with open(cfg, "r+") as fh:               # in place: the folder does not change
            fh.write("#pragma once\n#define USE_BLAS 0\n")
        os.utime(tmp_path, ns=(folder, folder))
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "blaslib_v9.h").write_text(blas)
        monkeypatch.setenv("CPATH", str(elsewhere))
    after = collect_usage([unit], config)
    assert after.compiled == 1 and after.errors == [], after.errors
    assert [u.kernel for u in after.usages[unit]] == ["k"]


def test_a_missing_header_in_an_existing_subfolder_ends_a_remembered_failure(tmp_path, nvcc_path):
    """`<vendor/extra.h>` where `vendor/` already exists: creating the header inside it (the
    search folder's own listing does not change) makes the next run compile again."""
    (tmp_path / "src" / "inc" / "vendor").mkdir(parents=True)
    unit = tmp_path / "src" / "v.cu"
    unit.write_text("#include <vendor/extra.h>\n__global__ void k(float* p) { p[0] = 1; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",),
                    include_dirs=(str(tmp_path / "src" / "inc"),))
    assert collect_usage([str(unit)], config).errors
    assert collect_usage([str(unit)], config).compiled == 0
    (tmp_path / "src" / "inc" / "vendor" / "extra.h").write_text("#pragma once\n")
    after = collect_usage([str(unit)], config)
    assert after.compiled == 1 and after.errors == []


def test_has_include_of_a_new_file_ends_a_remembered_failure(tmp_path, nvcc_path):
    """`__has_include` reads a folder without naming a missing header: any file created in a
    searched folder ends the remembered failure."""
    (tmp_path / "src").mkdir()
    unit = tmp_path / "src" / "h.cu"
    unit.write_text('#if __has_include("alt.h")\n#include "alt.h"\n#else\n#include <gone_lib.h>\n'
                    "#endif\n__global__ void k(float* p) { p[0] = 1; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",))
    assert collect_usage([str(unit)], config).errors
    assert collect_usage([str(unit)], config).compiled == 0
    (tmp_path / "src" / "alt.h").write_text("#pragma once\n")
    after = collect_usage([str(unit)], config)
    assert after.compiled == 1 and after.errors == []


def test_meanwhile_runs_while_the_compiles_do_and_not_on_a_warm_run(tmp_path, nvcc_path):
    # the engine loads the linter while nvcc runs (one-unit cold runs waited ~40 ms for it);
    # a run that compiles nothing has nothing to wait for and does not call it
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",),
                    cache_dir=str(tmp_path / "cache"))
    called = []
    first = collect_usage([str(tmp_path / "k.cu")], config, meanwhile=called.append)
    # with the files the compiles done by then read (this one may still run: none yet)
    assert len(called) == 1 and first.compiled == 1
    assert set(called[0]) <= {os.path.realpath(tmp_path / "k.cu"), *first.includes[str(tmp_path / "k.cu")]}
    again = collect_usage([str(tmp_path / "k.cu")], config, meanwhile=called.append)
    assert len(called) == 1 and again.cached == 1
    assert [u.registers for us in again.usages.values() for u in us] == \
        [u.registers for us in first.usages.values() for u in us]


def test_the_files_and_headers_are_parsed_while_the_last_compile_runs(tmp_path):
    """The engine's `meanwhile` parses the run's files and the project headers the compiles
    read; the lint after the compiles finds their trees made (~7 ms of a one-unit run's tail)."""
    from occlint.engine import _load_the_linter
    from occlint.source import context
    from occlint.source.text import Text

    header = tmp_path / "consts.h"
    header.write_text("constexpr int kThreads = 128;\n")
    unit = "#include \"consts.h\"\n__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n"
    path = tmp_path / "k.cu"
    path.write_text(unit)
    context._PARSED.clear()
    # the compiles' dependency lists start with the unit itself: it is parsed once, as a file
    _load_the_linter({str(path): unit}, [str(path), str(header), "/usr/include/stdio.h"])
    parsed = set(context._PARSED)
    assert Text(unit).parse_data in parsed
    assert Text(header.read_text()).parse_data in parsed
    assert len(parsed) == 2                       # a system header is not the project's


def test_a_cu_file_another_file_includes_is_read_through_it(tmp_path, nvcc_path):
    """Rodinia: 27 `.cu` fragments that a main.cu `#include`s (after defining their types and
    macros) were compiled alone, 863 compile errors; they are read as headers, through the
    including unit (followed up a chain), with its macros."""
    from occlint.toolchain.includers import fragments

    app = tmp_path / "app"
    app.mkdir()
    (app / "main.cu").write_text('typedef float fp;\n#define NUMBER_THREADS 32\n'
                                 '#include "kern.cu"\n#include "work.cu"\n')
    (app / "kern.cu").write_text("__global__ void kern(fp *p) { p[threadIdx.x] = 0.f; }\n")
    (app / "work.cu").write_text('#include "master.cu"\n')
    (app / "master.cu").write_text("void master(fp *p) {\n  dim3 threads;\n"
                                   "  threads.x = NUMBER_THREADS;\n  kern<<<2, threads>>>(p);\n}\n")
    other = tmp_path / "other"          # a unit of the same name elsewhere: not included
    other.mkdir()
    (other / "kern.cu").write_text("__global__ void alone(float *p) { p[0] = 1.f; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_80",))
    paths = [str(p) for p in (app / "kern.cu", app / "master.cu", app / "work.cu",
                               app / "main.cu", other / "kern.cu")]
    found = fragments(paths, config)
    assert {k: [v.rsplit("/", 1)[-1] for v in vs] for k, vs in found.items()} == {
        paths[0]: ["main.cu"], paths[1]: ["main.cu"], paths[2]: ["main.cu"]}
    report = collect_usage(paths[:2] + paths[4:], config)     # the fragments without main.cu
    assert report.errors == [] and report.compiled == 2      # main.cu and other/kern.cu
    assert sorted(u.kernel for u in report.usage_for(paths[0])) == ["kern"]
    proc = run_main("kernels", paths[1], "--arch", "sm_80", "--config",
                    f"cache-dir = '{tmp_path / 'cache'}'", cwd=tmp_path)
    assert "launch kern<<<2, threads>>> grid=2 block=32" in proc.stdout, proc.stdout + proc.stderr
    assert "sm_80: occupancy" in proc.stdout
