"""Toolchain unit tests that need no nvcc: the ptxas parser on recorded reports (checked against
the cubins ptxas wrote in the same run), demangling, flags, diagnostics, cache, sidecars."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from occlint.config import Config
from occlint.link import match_usage
from occlint.model import Kernel, Span
from occlint.toolchain import archs_for, load_sidecars, usage_by_arch
from occlint.toolchain.cache import Cache, parse_depfile
from occlint.toolchain.cubin import cubin_usage, object_cubins
from occlint.toolchain.demangle import normalize_qualname, split_name
from occlint.toolchain.flags import archs_in_args, filter_flags, normalize_arch
from occlint.toolchain.ptxas import parse_errors, parse_usage
from occlint.toolchain.sidecar import write_sidecar

PTXAS = Path(__file__).parent / "ptxas"
REPORTS = sorted(PTXAS.glob("cuda*.txt"))


def test_recorded_reports_cover_sm75_to_sm120_for_two_releases():
    names = {p.stem for p in REPORTS}
    for release in ("13.0", "13.5"):
        for arch in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"):
            assert f"cuda{release}_{arch}" in names


@pytest.mark.parametrize("report", REPORTS, ids=[p.stem for p in REPORTS])
def test_parser_agrees_with_the_cubin(report):
    arch = report.stem.split("_", 1)[1].removesuffix("_rdc")
    usages = parse_usage(report.read_text(), unit="kernels.cu")
    # the four entries; the non-entry helper never becomes one
    assert sorted((u.kernel, u.template_args) for u in usages) == [
        ("ns::reduce", ("128", "double")), ("ns::reduce", ("256", "float")),
        ("plain", ()), ("spilly", ()),
    ]
    assert all(u.arch == arch and u.unit == "kernels.cu" for u in usages)
    # cmem is reported before sm_90 only
    major = int(arch[3:])
    assert all((u.cmem is not None) == (major < 90) for u in usages)
    by_name = {u.mangled: u for u in usages}
    assert by_name["_Z6spillyPf"].spill_stores > 0 and by_name["_Z6spillyPf"].spill_loads > 0
    if not report.stem.endswith("_rdc"):
        assert by_name["plain"].static_smem == 4096 and by_name["plain"].barriers == 1
    # an independent reading of the same compile: the cubin's ELF attributes
    cubin = cubin_usage(report.with_suffix(".cubin").read_bytes())
    assert len(cubin) == len(usages)
    for c in cubin:
        p = by_name[c.mangled]
        assert (c.arch, c.registers, c.static_smem, c.barriers, c.stack_frame) == (
            p.arch, p.registers, p.static_smem, p.barriers, p.stack_frame), c.mangled


def test_properties_of_non_entry_functions_are_not_attached():
    # -rdc: ptxas reports the helper (136-byte frame) before the first entry
    text = (PTXAS / "cuda13.5_sm_90_rdc.txt").read_text()
    assert "Function properties for _ZN2ns6helperEf\n    136 bytes stack frame" in text
    reduce = [u for u in parse_usage(text) if u.kernel == "ns::reduce"]
    assert reduce and all(u.stack_frame == 0 for u in reduce)


def test_parser_tolerates_older_formats_and_noise():
    # hand-written in the shape of CUDA 10-12 reports: no barriers field, several cmem banks
    text = """\
ptxas info    : 0 bytes gmem, 8 bytes cmem[3]
ptxas info    : Compiling entry function '_Z3oldPf' for 'sm_70'
ptxas info    : Function properties for _Z3oldPf
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 12 registers, 2048 bytes smem, 352 bytes cmem[0], 8 bytes cmem[2]
ptxas warning : something unrelated
ptxas info    : Compiling entry function '_Z3newv' for 'sm_80'
ptxas info    : Used 4 registers, used 0 barriers, 356 bytes cmem[0]
"""
    old, new = parse_usage(text)
    assert (old.kernel, old.arch, old.registers, old.static_smem, old.barriers) == (
        "old", "sm_70", 12, 2048, 0)
    assert (old.stack_frame, old.spill_stores, old.spill_loads, old.cmem) == (16, 4, 8, 360)
    assert (new.kernel, new.registers, new.stack_frame, new.cmem) == ("new", 4, 0, 356)


@pytest.mark.parametrize("mangled,name,args", [
    ("_ZN2ns6reduceILi256EfEEvPKT0_PS1_", "ns::reduce", ("256", "float")),
    ("_Z1kILb1ELj4EEvv", "k", ("true", "4")),
    ("_Z3fooIN2ns3VecILi4EEEEvT_", "foo", ("ns::Vec<4>",)),
    ("_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo", ()),
    ("plain", "plain", ()),
])
def test_split_name(mangled, name, args):
    assert split_name(mangled) == (name, args)


def _kernel(qualname, extern_c=False):
    span = Span(1, 1, 1, 2)
    return Kernel(name=qualname.split("::")[-1], qualname=qualname, path="a.cu", span=span,
                  decl_span=span, extern_c=extern_c)


def test_match_usage_maps_instantiations_and_namespaces():
    usages = parse_usage((PTXAS / "cuda13.5_sm_90.txt").read_text())
    got = match_usage(_kernel("ns::reduce"), usages)
    assert sorted(u.template_args for u in got) == [("128", "double"), ("256", "float")]
    assert match_usage(_kernel("reduce"), usages) == []
    assert [u.kernel for u in match_usage(_kernel("plain", extern_c=True), usages)] == ["plain"]
    assert normalize_qualname("(anonymous namespace)::k") == normalize_qualname("::k") == "k"
    table = usage_by_arch(got)
    assert set(table) == {"sm_90"} and table["sm_90"]["static_smem"] == 1024


def test_filter_flags_keeps_device_flags_and_drops_outputs():
    cmd = shlex.split("-forward-unknown-to-host-compiler -DN=4 -I/inc -isystem /sys --expt-relaxed-constexpr "
           "-std=c++17 --generate-code=arch=compute_90,code=[compute_90,sm_90] -gencode "
           "arch=compute_80,code=sm_80 -arch=sm_86 -Xptxas -v -maxrregcount=64 --use_fast_math "
           "-MD -MT a.o -MF a.o.d -x cu -c /src/a.cu -o a.o -dc")
    assert filter_flags(cmd, "/src/a.cu") == [
        "-forward-unknown-to-host-compiler", "-DN=4", "-I/inc", "-isystem", "/sys",
        "--expt-relaxed-constexpr", "-std=c++17", "-Xptxas", "-v", "-maxrregcount=64",
        "--use_fast_math", "-x", "cu", "-rdc=true"]
    assert archs_in_args(cmd) == ["sm_90", "sm_80", "sm_86"]


def test_archs_for_order():
    entries = [{"file": "a.cu", "directory": "/", "command": "nvcc -arch=sm_86 -c a.cu"}]
    assert archs_for(Config(arch=("sm_80",)), entries) == ("sm_80",)
    assert archs_for(Config(), entries) == ("sm_86",)
    assert archs_for(Config(), []) == ("sm_90",)
    assert [normalize_arch(a) for a in ("90", "compute_80", "8.6", "sm_90a")] == [
        "sm_90", "sm_80", "sm_86", "sm_90a"]


def test_parse_errors_front_end_gcc_ptxas_nvcc():
    text = """\
k.cu(13): error: identifier "x" is undefined
k.cu(14): warning #177-D: variable "y" was declared but never referenced
inc/h.cuh:1:10: fatal error: nothere.h: No such file or directory
ptxas error   : Entry function '_Z3bigPf' uses too much shared data (0x10100 bytes, 0xc000 max)
nvcc fatal   : Unsupported gpu architecture 'compute_50'
"""
    errs = parse_errors(text, "k.cu", "sm_90")
    assert [(e.path, e.line, e.column, e.kind) for e in errs] == [
        ("k.cu", 13, None, "error"), ("inc/h.cuh", 1, 10, "fatal"),
        ("k.cu", None, None, "ptxas"), ("k.cu", None, None, "nvcc")]
    assert errs[2].kernel == "big" and "big(float*)" in errs[2].message
    assert errs[0].message == 'identifier "x" is undefined'


def test_parse_depfile():
    text = "x.cubin : a.cu \\\n    /inc/a\\ b.h \\\n    /usr/include/stdio.h\n"
    assert parse_depfile(text) == ["a.cu", "/inc/a b.h", "/usr/include/stdio.h"]


def test_cache_roundtrip_invalidation_and_corrupt_entry(tmp_path):
    src = tmp_path / "a.cu"
    hdr = tmp_path / "h.cuh"
    src.write_text("x")
    hdr.write_text("1")
    cache = Cache(tmp_path / "c")
    key = cache.key("tc", ["-DX"], "sm_90", str(tmp_path), str(src))
    assert cache.get(key) is None
    cache.put(key, [str(src), str(hdr)], {"usages": [], "errors": []})
    assert Cache(tmp_path / "c").get(key)["usages"] == []
    assert key != cache.key("tc", ["-DY"], "sm_90", str(tmp_path), str(src))
    assert key != cache.key("tc", ["-DX"], "sm_80", str(tmp_path), str(src))
    hdr.write_text("2")  # a header changed: the entry no longer verifies
    assert Cache(tmp_path / "c").get(key) is None
    entry = next((tmp_path / "c").glob("*/*.json"))
    entry.write_text("{not json")
    assert Cache(tmp_path / "c").get(key) is None
    assert (tmp_path / "c" / "CACHEDIR.TAG").read_text().startswith("Signature:")


def test_cache_eviction_keeps_newest(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("x")
    cache = Cache(tmp_path / "c", max_bytes=10**9)
    keys = [cache.key("tc", [str(i)], "sm_90", str(tmp_path), str(src)) for i in range(5)]
    for i, key in enumerate(keys):
        cache.put(key, [str(src)], {"usages": [], "errors": [], "pad": "x" * 1000})
        entry = tmp_path / "c" / key[:2] / f"{key}.json"
        os.utime(entry, (1000 + i, 1000 + i))
    cache.max_bytes = 2500
    assert cache.evict() == 3
    fresh = Cache(tmp_path / "c")
    assert [fresh.get(k) is not None for k in keys] == [False, False, False, True, True]


WRITER = """
import sys
from occlint.toolchain.cache import Cache
cache = Cache(sys.argv[1])
for i in range(200):
    cache.put(sys.argv[2], [sys.argv[3]], {"usages": [{"n": i, "pad": "y" * 5000}], "errors": []})
"""


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    src = tmp_path / "a.cu"
    src.write_text("x")
    key = Cache(tmp_path / "c").key("tc", [], "sm_90", str(tmp_path), str(src))
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "c"), key, str(src)])
             for _ in range(2)]
    reader = Cache(tmp_path / "c")
    seen = 0
    while any(p.poll() is None for p in procs):
        got = Cache(tmp_path / "c").get(key)  # never a torn read
        seen += got is not None
        assert got is None or len(got["usages"][0]["pad"]) == 5000
    assert all(p.wait() == 0 for p in procs)
    assert reader.get(key)["usages"][0]["n"] == 199
    assert not list((tmp_path / "c").glob("*/.tmp-*"))


def test_sidecars_merge(tmp_path):
    rec = {"mangled": "_Z1kILi128EEvPf", "arch": "sm_90", "registers": 10, "static_smem": 512,
           "barriers": 1, "stack_frame": 0}
    (tmp_path / "a").mkdir()
    write_sidecar(str(tmp_path / "a" / "x.o"), [str(tmp_path / "x.cu")], [rec], (), [])
    write_sidecar(str(tmp_path / "y.o"), [str(tmp_path / "x.cu")], [rec], (), [])
    (tmp_path / "bad.o.occlint.json").write_text("{")
    got = load_sidecars(tmp_path)
    assert list(got) == [str(tmp_path / "x.cu")]
    (u,) = got[str(tmp_path / "x.cu")]
    assert (u.kernel, u.template_args, u.registers, u.static_smem, u.source) == (
        "k", ("128",), 10, 512, "cubin")
    data = json.loads((tmp_path / "y.o.occlint.json").read_text())
    assert data["lacks"] == [] and data["sources"] == [str(tmp_path / "x.cu")]


def test_object_cubins_reads_a_cubin_file_directly():
    scan = object_cubins((PTXAS / "cuda13.5_sm_80.cubin").read_bytes())
    assert [a for a, _ in scan.cubins] == ["sm_80"] and scan.compressed == []


def test_archs_for_order_config_then_gpu_then_build_flags():
    from occlint.config import Config
    from occlint.toolchain import archs_for

    entries = [{"file": "k.cu", "arguments": ["nvcc", "-arch=sm_86", "-c", "k.cu"]}]
    assert archs_for(Config(arch=("sm_75",), gpu="a100"), entries) == ("sm_75",)
    assert archs_for(Config(gpu="a100"), entries) == ("sm_80",)      # as `check` evaluates
    assert archs_for(Config(), entries) == ("sm_86",)
    assert archs_for(Config()) == ("sm_90",)


VECTOR_ERRORS = """\
vec.cu(8): error: identifier "undefined_handle_t" is undefined
      std::vector<undefined_handle_t> contexts(4);
                  ^

/usr/include/c++/12/bits/ptr_traits.h(179): error: class "std::__rebind<<error-type> *, void>" has no member "type"
          using rebind = typename __rebind<_Ptr, _Up>::type;
          detected during:
            instantiation of type "std::rebind<const <error-type>>" at line 109 of /usr/include/c++/12/bits/alloc_traits.h
            instantiation of class "std::vector<_Tp, _Alloc> [with _Tp=<error-type>]" at line 8 of vec.cu

/usr/include/c++/12/ext/alloc_traits.h(47): error: a class or namespace qualified name is required
          detected during:
            instantiation of class "std::vector<_Tp, _Alloc>" at line 8 of vec.cu

/usr/include/c++/12/bits/stl_uninitialized.h(90): error: static assertion failed with "result type must be constructible from input type"
            instantiation of "std::__check_constructible<_ValueType,_Tp>()" at line 182
            instantiation of "std::vector<_Tp, _Alloc>::vector(const std::vector<_Tp, _Alloc> &)" at line 12 of vec.cu

4 errors detected in the compilation of "vec.cu".
"""


def test_an_error_a_template_instantiation_led_into_a_header_is_the_instantiating_lines():
    # ParRes/Kernels' `std::vector<cublasHandle_t>` without its -D: OCC900 at 1:1 with 1,717
    # characters of libstdc++ internals beside the true error at line 8
    from occlint.toolchain.ptxas import parse_errors

    errors = parse_errors(VECTOR_ERRORS, "vec.cu", "sm_90")
    assert [(e.path, e.line) for e in errors] == [("vec.cu", 8), ("vec.cu", 12)]
    assert errors[0].message == 'identifier "undefined_handle_t" is undefined'
    assert errors[1].message.startswith("/usr/include/c++/12/bits/stl_uninitialized.h:90: static")


NESTED_MISSING = """In file included from inc/mid.h:2,
                 from app/a.cu:4:
inc/top.h:2:10: fatal error: missing_config.h: No such file or directory
    2 | #include "missing_config.h"
      |          ^~~~~~~~~~~~~~~~~~
compilation terminated.
app/b.cu:3:1: error: plain
"""


def test_an_error_two_includes_down_is_placed_at_the_units_include_line():
    # cudpp with include-dirs: `reduce_app.cu:21 -> cudpp_plan.h:17 -> cudpp.h:185` was OCC900
    # at 1:1 (a `// noqa` on the include line could not silence it); the host compiler's
    # include chain names the unit's line
    from occlint.engine import errors_by_file_of
    from occlint.toolchain.ptxas import parse_errors

    errors = parse_errors(NESTED_MISSING, "app/a.cu", "sm_90")
    assert [(e.path, e.line, e.included_from) for e in errors] == [
        ("inc/top.h", 2, ("app/a.cu", 4)), ("app/b.cu", 3, None)]
    placed = errors_by_file_of(errors[:1], ["app/a.cu"], {"app/a.cu": '#include "mid.h"\n'})
    assert [(e.line, e.message) for e in placed["app/a.cu"]] == [
        (4, "inc/top.h:2: missing_config.h: No such file or directory")]


def test_an_undefined_identifier_of_a_cuda_library_names_its_header():
    # ParRes/Kernels' cuBLAS files without the Makefile's -DPRK_USE_CUBLAS: 17 OCC900 "identifier
    # "cublasHandle_t" is undefined" with no hint, where a missing header names its package
    from occlint.toolchain.libraries import explain_undefined

    said = explain_undefined('identifier "cublasHandle_t" is undefined')
    assert "cuBLAS's cublas_v2.h" in said and "-D" in said
    assert "mpi.h" in explain_undefined('identifier "MPI_Comm" is undefined')
    assert explain_undefined('identifier "tile" is undefined') == 'identifier "tile" is undefined'
    assert explain_undefined(said) == said


def test_an_errors_include_chain_is_the_one_gcc_printed_once_for_its_file():
    # tiny-cuda-nn: common.h's `#warning` took the include chain GCC prints once, so the
    # `#error` after it (and a later error whose chain stops at a header already shown) were
    # placed at the unit's line 1, not at its `#include` line
    from occlint.toolchain.ptxas import parse_errors

    k3 = ("In file included from include/lib/device.h:2,\n"
          "                 from k3.cu:3:\n"
          "include/lib/common.h:3:2: warning: #warning MIN_ARCH was not defined. [-Wcpp]\n"
          "    3 | #warning MIN_ARCH was not defined.\n"
          'include/lib/common.h:7:2: error: #error "HALF_PRECISION is undefined."\n'
          "In file included from include/lib/obj.h:2,\n"
          "                 from k3.cu:4:\n"
          "include/lib/host.h:3:10: fatal error: fmtx/format.h: No such file or directory\n"
          "compilation terminated.\n")
    got = [(e.path, e.line, e.included_from) for e in parse_errors(k3, "k3.cu", "sm_90")]
    assert got == [("include/lib/common.h", 7, ("k3.cu", 3)),
                   ("include/lib/host.h", 3, ("k3.cu", 4))]
    k4 = ("In file included from include/lib/mlp.h:2,\n"
          "                 from k4.cu:3:\n"
          'include/lib/common.h:7:2: error: #error "HALF_PRECISION is undefined."\n'
          "In file included from include/lib/obj.h:2,\n"
          "                 from include/lib/graph.h:2,\n"
          "                 from include/lib/mlp.h:3:\n"
          "include/lib/host.h:3:10: fatal error: fmtx/format.h: No such file or directory\n")
    got = [(e.path, e.included_from) for e in parse_errors(k4, "k4.cu", "sm_90")]
    assert got == [("include/lib/common.h", ("k4.cu", 3)), ("include/lib/host.h", ("k4.cu", 3))]
