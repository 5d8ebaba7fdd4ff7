"""Conditionals per compilation pass (source.preproc), checked against real nvcc: the kernels
and launch bounds each arch's device pass keeps are those the cubin holds."""

from __future__ import annotations

import pytest

from occlint import occupancy
from occlint.config import Config
from occlint.engine import lint_paths
from occlint.source import for_arch, parse
from occlint.source.preproc import View, scan, view_from_flags

TEXT = b"""\
#if __CUDA_ARCH__ >= 900
#define A 1
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define A 2
#elif defined(__CUDA_ARCH__)
#define A 3
#else
#define A 4
#endif
#ifdef __CUDA_ARCH_FEAT_SM90_ALL
#define FEAT 1
#endif
#if defined(USE_BIG) && !defined(NO_BIG)
#define BIG 1
#endif
#if __SOMETHING_ELSE__ > 2
#define RESERVED 1
#endif
"""


@pytest.mark.parametrize("view, a, feat, big", [
    (View(host=True, complete=True), "4", False, False),
    (View(arch="sm_75", complete=True), "3", False, False),
    (View(arch="sm_86", complete=True), "2", False, False),
    (View(arch="sm_90", complete=True), "1", False, False),
    (View(arch="sm_90a", complete=True), "1", True, False),
    (View(arch="sm_100f", complete=True), "1", False, False),
    (View(arch="sm_90", defines=("USE_BIG",), complete=True), "1", False, True),
    (View(arch="sm_90", defines=("USE_BIG", "NO_BIG"), complete=True), "1", False, False),
    (View(arch="sm_90", defines=("USE_BIG",), undefines=("USE_BIG",), complete=True), "1", False, False),
])
def test_branches_per_pass(view, a, feat, big):
    s = scan(TEXT, "/nonexistent/t.cu", view)
    live = {k.decode(): v for k, v in s.macros.items()}
    dead_text = b"".join(TEXT[x:y] for x, y in s.dead)
    assert [b for b in live["A"] if b"#define A " + b not in dead_text] == [a.encode()]
    assert (b"#define FEAT" not in dead_text) == feat
    assert (b"#define BIG" not in dead_text) == big
    assert b"#define RESERVED" not in dead_text          # __SOMETHING_ELSE__: unknown, kept
    assert s.arch_dependent


def test_an_unknown_pass_decides_only_what_it_knows():
    s = scan(TEXT, "/nonexistent/t.cu", View())
    dead_text = b"".join(TEXT[x:y] for x, y in s.dead)
    assert dead_text == b""                    # the arch and USE_BIG may be anything
    s = scan(b"#if 0\nint x;\n#elif 1\nint y;\n#else\nint z;\n#endif\n", "t.cu")
    assert [s.is_dead(i) for i in (8, 24, 37)] == [True, False, True]


def test_flags_give_the_view():
    v = view_from_flags(["-DA=3", "-D", "B", "--define-macro=C=1", "-UD", "-Iinc", "-I", "/x"],
                        "/proj", arch="sm_90")
    assert v.defines == ("A=3", "B", "C=1") and v.undefines == ("D",)
    assert v.include_dirs == ("/proj/inc", "/x") and v.complete


UNIT = """\
#include "cfg.cuh"
__global__ void always(float* x) { x[threadIdx.x] = A_VALUE; }
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__global__ void ampere_up(float* x) { x[threadIdx.x] = 1; }
#endif
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
__global__ void hopper_a(float* x) { x[threadIdx.x] = 2; }
#endif
#ifdef WITH_EXTRA
__global__ void extra(float* x) { x[threadIdx.x] = 3; }
#endif
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) bounded(float* x) { x[threadIdx.x] = 4; }
"""
HEADER = """\
#pragma once
#define A_VALUE 7
#if __CUDA_ARCH__ >= 900
#define THREADS 512
#define MIN_BLOCKS 3
#elif __CUDA_ARCH__ >= 800
#define THREADS 256
#define MIN_BLOCKS 4
#else
#define THREADS 128
#define MIN_BLOCKS 1
#endif
"""


@pytest.mark.parametrize("defines", [(), ("WITH_EXTRA",)])
def test_device_passes_agree_with_nvcc(tmp_path, nvcc_path, defines):
    """Per arch: the kernels for_arch keeps are the cubin's, and the bounds it evaluates (from
    a header's arch-dependent macros) are the cubin's max threads and register cap."""
    from occlint.toolchain import collect_usage
    from occlint.toolchain.flags import source_views

    (tmp_path / "cfg.cuh").write_text(HEADER)
    unit = tmp_path / "u.cu"
    unit.write_text(UNIT)
    archs = ("sm_75", "sm_80", "sm_90", "sm_90a")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=archs, no_cache=True,
                    defines=defines)
    report = collect_usage([str(unit)], config)
    assert not report.errors, report.errors
    sf = parse(UNIT, str(unit), source_views([str(unit)], config)[str(unit)])
    compared = 0
    for arch in archs:
        cubin = {u.kernel: u for u in report.usages[str(unit)] if u.arch == arch}
        device = for_arch(sf, arch)
        assert {k.name for k in device.kernels} == set(cubin), arch
        lb = next(k for k in device.kernels if k.name == "bounded").launch_bounds
        u = cubin["bounded"]
        assert lb.max_threads == u.max_threads
        assert occupancy.register_cap(arch, lb.max_threads, lb.min_blocks) == u.max_registers
        compared += 1
    assert compared == len(archs)
    assert sf.kernels[-1].launch_bounds.max_threads is None      # the base parse: any arch


def test_unit_defines_and_header_macros_reach_launches(tmp_path):
    """-D from the configuration picks the branch; a block size from a project header resolves."""
    (tmp_path / "sizes.cuh").write_text("#pragma once\n#ifdef BIG_BLOCKS\n#define BLOCK 1024\n"
                                        "#else\n#define BLOCK 128\n#endif\n")
    (tmp_path / "k.cu").write_text('#include "sizes.cuh"\n__global__ void k(float* x) { x[0] = 1; }\n'
                                   "void run(float* x) { k<<<1000, BLOCK>>>(x); }\n")
    base = Config(root=str(tmp_path), arch=("sm_90",))
    codes = [f.code for f in lint_paths([str(tmp_path / "k.cu")], base, usage={}).findings]
    assert "OCC030" not in codes
    big = Config(root=str(tmp_path), arch=("sm_90",), defines=("BIG_BLOCKS",))
    found = [f for f in lint_paths([str(tmp_path / "k.cu")], big, usage={}).findings if f.code == "OCC030"]
    assert len(found) == 1 and found[0].span.line == 3


def test_header_constants_resolve(tmp_path):
    """constexpr integers and enumerators of a project header the unit includes."""
    (tmp_path / "cfg.cuh").write_text("#pragma once\nnamespace cfg { constexpr int kThreads = 384; }\n"
                                      "enum { kBlocks = 3 };\n")
    src = ('#include "cfg.cuh"\n'
           "__global__ void __launch_bounds__(cfg::kThreads, kBlocks) k(float* x) { x[0] = 1; }\n"
           "void run(float* x) { k<<<10, cfg::kThreads>>>(x); }\n")
    sf = parse(src, str(tmp_path / "u.cu"))
    lb = sf.kernels[0].launch_bounds
    assert (lb.max_threads, lb.min_blocks) == (384, 3)
    assert sf.launches[0].block.total == 384


def test_library_headers_are_not_walked_and_each_header_once(tmp_path):
    """Walking a CUDA toolkit's headers cost 2 s per cuda-samples unit (3,020 header reads for
    reduction_kernel.cu); only project headers are walked, each once per scan."""
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_text("")
    (toolkit / "include").mkdir()
    (toolkit / "include" / "lib.h").write_text("#define FROM_TOOLKIT 1\n")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "guarded.h").write_text(
        "#ifndef GUARDED_H\n#define GUARDED_H\n#define FROM_PROJECT 2\n#include <lib.h>\n#endif\n")
    unit = project / "k.cu"
    text = b'#include "guarded.h"\n#include "guarded.h"\n#include "guarded.h"\n'
    unit.write_bytes(text)
    reads: list[str] = []

    def reader(path):
        reads.append(path)
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError:
            return None

    view = View(arch="sm_90", include_dirs=(str(toolkit / "include"),), complete=True)
    got = scan(text, str(unit), view, reader)
    assert got.headers == [str(project / "guarded.h")]
    assert b"FROM_PROJECT" in got.macros and b"FROM_TOOLKIT" not in got.macros
    assert reads.count(str(project / "guarded.h")) == 1


def test_a_header_sees_the_macros_its_includer_defines_before_including_it(tmp_path):
    """imageDenoising in cuda-samples: the .cu includes "imageDenoising.h" (BLOCKDIM_X 8) and
    then the kernel header whose launch uses dim3 threads(BLOCKDIM_X, BLOCKDIM_Y)."""
    from occlint.config import Config
    from occlint.source import parse
    from occlint.toolchain.flags import source_views

    (tmp_path / "sizes.h").write_text("#define BLOCKDIM_X 8\n#define BLOCKDIM_Y 8\n")
    (tmp_path / "k.cuh").write_text(
        "__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }\n"
        "void run(float* x) { dim3 threads(BLOCKDIM_X, BLOCKDIM_Y); k<<<100, threads>>>(x); }\n")
    (tmp_path / "a.cu").write_text('#include "sizes.h"\n#include "k.cuh"\n')
    (tmp_path / "b.cu").write_text('#define BLOCKDIM_Y 4\n#define BLOCKDIM_X 8\n#include "k.cuh"\n')
    header = str(tmp_path / "k.cuh")
    config = Config(root=str(tmp_path))

    def block(units, includes=None):
        views = source_views([header, *[str(tmp_path / u) for u in units]], config, includes)
        [launch] = parse((tmp_path / "k.cuh").read_text(), header, views[header]).launches
        return launch.block.total

    assert block([]) is None                         # no includer given or in a database
    assert block(["a.cu"]) == 64
    assert block(["a.cu", "b.cu"]) is None           # the includers disagree on BLOCKDIM_Y
    # the compiler's dependency lists name the includers when the units are not linted
    deps = {str(tmp_path / "a.cu"): (str(tmp_path / "a.cu"), str(tmp_path / "sizes.h"), header)}
    assert block([], deps) == 64


def _plain(path):
    """A reader of its own: scan never replays a header walk through it."""
    from occlint.source.preproc import read_header

    return read_header(path)


def _random_project(root, rng, headers=8, units=16):
    names = [f"M{i}" for i in range(6)]

    def lines(n, own):
        out, depth = [], 0
        for _ in range(n):
            r = rng.random()
            a, b = rng.choice(names), rng.choice(names)
            if r < 0.2:
                out.append(f"#define {a} {rng.randint(0, 4)}")
            elif r < 0.27:
                out.append(f"#undef {a}")
            elif r < 0.32:
                out.append(f"#define F{a}(x) (x + {a})")
            elif r < 0.52:
                depth += 1
                out.append(rng.choice([f"#ifdef {a}", f"#ifndef {a}", f"#if {a} > 2",
                                       f"#if defined({a}) && {b}", "#if __CUDA_ARCH__ >= 800"]))
            elif r < 0.6 and depth:
                out.append(rng.choice(["#else", f"#elif {a} == 1"]))
            elif r < 0.72 and depth:
                depth -= 1
                out.append("#endif")
            elif r < 0.9:
                k = rng.randrange(headers)
                if k != own:
                    out.append(f'#include "h{k}.h"')
            elif r < 0.93:
                out.append("#pragma once")
            else:
                out.append(f"int v{rng.randint(0, 99)} = {a};")
        return "\n".join(out + ["#endif"] * depth) + "\n"

    for k in range(headers):
        (root / f"h{k}.h").write_text(lines(rng.randint(3, 25), k))
    for u in range(units):
        (root / f"u{u}.cu").write_text(lines(rng.randint(3, 20), -1))
    return [root / f"u{u}.cu" for u in range(units)]


@pytest.mark.parametrize("seed", range(4))     # 64 random units: the inner loop's budget
def test_replayed_header_walks_equal_fresh_walks(tmp_path, seed, monkeypatch):
    """A header walked again from the same outside state is replayed from its first walk; the
    scan must equal a fresh walk of every line, for every unit and pass, and replays happen."""
    import random

    from occlint.source import preproc

    monkeypatch.setattr(preproc, "_WALKS", {})
    replays = []
    real_replay = preproc._State._replay
    monkeypatch.setattr(preproc._State, "_replay",
                        lambda self, rec, depth: replays.append(1) or real_replay(self, rec, depth))
    units = _random_project(tmp_path, random.Random(seed))
    views = [View(), View(host=True, complete=True), View(arch="sm_90", complete=True),
             View(arch="sm_80", defines=("M1=3",), include_dirs=(str(tmp_path),))]
    class Forget(dict):                      # a memo that keeps nothing: every walk is fresh
        def setdefault(self, key, default=None):
            return []

    def fresh(fn, *args):
        with monkeypatch.context() as m:
            m.setattr(preproc, "_WALKS", Forget())
            return fn(*args)

    headers = sorted(str(h) for h in tmp_path.glob("h*.h"))
    want: dict = {}         # the fresh walks, made once: the second round compares the replays
    for _round in range(2):
        for unit in units:
            data = unit.read_bytes()
            for view in views:
                key = (unit, view)
                if key not in want:
                    want[key] = fresh(scan, data, str(unit), view)
                assert scan(data, str(unit), view) == scan(data, str(unit), view, _plain) == \
                    want[key], (unit.name, view)
                for h in headers[:3]:
                    if (key, h) not in want:
                        want[key, h] = fresh(preproc.macros_at, data, str(unit), view, h)
                    assert preproc.macros_at(data, str(unit), view, h) == want[key, h], \
                        (unit.name, h)
    assert replays


def test_an_edited_nested_header_is_walked_again(tmp_path):
    """A replay checks the bytes of every header the first walk read, so an edit of a header
    included by an included header is seen in the same process (the language server)."""
    import os

    (tmp_path / "outer.h").write_text('#include "inner.h"\n')
    inner = tmp_path / "inner.h"
    inner.write_text("#define SIZE 1\n")
    text = b'#include "outer.h"\n'
    unit = str(tmp_path / "k.cu")
    assert scan(text, unit).macros[b"SIZE"] == (b"1",)
    assert scan(text, unit).macros[b"SIZE"] == (b"1",)
    inner.write_text("#define SIZE 22\n")
    st = inner.stat()
    os.utime(inner, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert scan(text, unit).macros[b"SIZE"] == (b"22",)


def test_replays_respect_the_include_depth_limit(tmp_path):
    """A header chain walked first from deep down (cut at MAX_INCLUDE_DEPTH) is not replayed
    from shallower includes, where more of the chain is followed."""
    from occlint.source.preproc import MAX_INCLUDE_DEPTH

    n = MAX_INCLUDE_DEPTH + 4
    for i in range(n):
        (tmp_path / f"c{i}.h").write_text(f'#define C{i} 1\n#include "c{i + 1}.h"\n')
    (tmp_path / f"c{n}.h").write_text(f"#define C{n} 1\n")
    for first in (6, 0, 3):
        text = f'#include "c{first}.h"\n'.encode()
        unit = str(tmp_path / f"u{first}.cu")
        assert scan(text, unit) == scan(text, unit, reader=_plain)


def test_directive_lines_are_the_logical_lines_starting_with_hash():
    """The walk reads only lines that can hold a directive; they must be exactly the logical
    lines (backslash continuations joined, a continued line never a start) that do."""
    import random

    from occlint.source.preproc import _DIRECTIVE, _directive_lines

    def every_line(data):
        pos, n = 0, len(data)
        while pos < n:
            end = data.find(b"\n", pos)
            end = n if end < 0 else end
            line, start = data[pos:end], pos
            while line.endswith(b"\\") or line.endswith(b"\\\r"):
                nxt = data.find(b"\n", end + 1)
                nxt = n if nxt < 0 else nxt
                line = line.rstrip(b"\r")[:-1] + b" " + data[end + 1:nxt]
                end = nxt
                if end >= n:
                    break
            yield start, end, line
            pos = end + 1

    def directives(lines):
        return [x for x in lines if b"#" in x[2][:64] and _DIRECTIVE.match(x[2])]

    rng = random.Random(3)
    parts = [b"#", b"\\", b"\n", b"\r", b" ", b"\t", b"define", b"if", b"x", b"/*", b"*/"]
    for _ in range(20000):
        data = b"".join(rng.choices(parts, k=rng.randint(0, 30)))
        assert directives(_directive_lines(data)) == directives(every_line(data)), data


def test_one_run_reads_a_header_once_and_outside_it_a_change_is_seen(tmp_path):
    # a command's run reads each header once; the language server (no run) sees every save
    from occlint.source import preproc

    h = tmp_path / "h.h"
    h.write_bytes(b"#define A 1\n")
    assert preproc.read_header(str(h)) == b"#define A 1\n"
    with preproc.one_run():
        assert preproc.read_header(str(h)) == b"#define A 1\n"
        h.write_bytes(b"#define A 22\n")
        assert preproc.read_header(str(h)) == b"#define A 1\n"
        assert preproc.read_header(str(tmp_path / "new.h")) is None
        (tmp_path / "new.h").write_bytes(b"#define B 1\n")
        assert preproc.read_header(str(tmp_path / "new.h")) is None
    assert preproc.read_header(str(h)) == b"#define A 22\n"
    assert preproc.read_header(str(tmp_path / "new.h")) == b"#define B 1\n"


def test_directive_line_starts_are_the_multiline_patterns():
    # _line_starts finds what `^[ \t]*(\\\n[ \t]*)*#` under re.M finds, without testing every
    # byte for `^`: crafted edges (continued blank lines, CRLF, a first line, indentation) and
    # random texts over the characters that matter
    import random

    from occlint.source.preproc import _HASH_LINE, _line_starts

    cases = [b"", b"#", b"#a\n#b", b"  \\\n#x\n", b"\\\n#x", b"a\n  \\\r\n \t#y\r\n#z",
             b"x # y\n  # z\n\t\t#w", b"\n\n#", b" \\\n \\\n #q\n", b"#a\\\n#b\n"]
    rng = random.Random(3)
    cases += [bytes(rng.choices(b"# \t\\\n\rab", k=rng.randrange(40)))
              for _ in range(3000)]
    for data in cases:
        assert list(_line_starts(data)) == [m.start() for m in _HASH_LINE.finditer(data)], data


def test_hip_branches_are_dead_under_nvcc_and_a_header_function_is_evaluated(tmp_path):
    # bitsandbytes: compat.cuh `#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
    # #define BNB_HIP 1 #else 0`, then ops.cu defines `bnb_host_warp_size()` twice under `#if
    # BNB_HIP` / `#else` (`return 32;`): `const int ws = bnb_host_warp_size();` was unknown
    (tmp_path / "compat.cuh").write_text(
        "#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)\n#define BNB_HIP 1\n"
        "#else\n#define BNB_HIP 0\n#endif\n"
        "static constexpr int tile_rows() { return 8; }\n")
    unit = tmp_path / "ops.cu"
    unit.write_text('#include "compat.cuh"\n__global__ void k(float* p) {}\n'
                    "#if BNB_HIP\nstatic int warp() { int w; query(&w); return w; }\n#else\n"
                    "static constexpr int warp() { return 32; }\n#endif\n"
                    "void run(float* p) {\n  const int ws = warp();\n  k<<<tile_rows(), ws>>>(p);\n}\n")
    view = view_from_flags([], str(tmp_path))
    (la,) = parse(unit.read_text(), str(unit), view).launches
    assert (la.grid.x, la.block.x) == (8, 32)
    hip = view_from_flags(["-D__HIPCC__"], str(tmp_path))
    assert parse(unit.read_text(), str(unit), hip).launches[0].block.x is None


def test_a_header_function_is_read_from_its_definition_alone_or_its_live_branch(tmp_path):
    # a header's one-return function is parsed from its definition, not the whole header;
    # overloads are no one answer; definitions in #if branches are read from the live one
    (tmp_path / "h.cuh").write_text(
        "#pragma once\n#define WIDE 4\n"
        "template <int N> __host__ __device__ constexpr int rows() { return N * WIDE; }\n"
        "constexpr int pick(int a) { return a; }\nconstexpr long pick(long a) { return 2 * a; }\n"
        "#if defined(__HIPCC__)\nconstexpr int warp() { return 64; }\n#else\n"
        "constexpr int warp() { return 32; }\n#endif\n")
    unit = tmp_path / "u.cu"
    unit.write_text('#include "h.cuh"\n__global__ void k() {}\n'
                    "void f() { k<<<rows<8>(), warp()>>>(); k<<<pick(3), 64>>>(); }\n")
    view = view_from_flags([], str(tmp_path))
    got = [(la.grid.x, la.block.x) for la in parse(unit.read_text(), str(unit), view).launches]
    assert got == [(32, 32), (None, 64)]


@pytest.mark.parametrize("outer", ["#ifdef WITH_X", "#ifndef __CUDACC__", "#if 0",
                                   "#if defined(A) && defined(B)"])
@pytest.mark.parametrize("inner", ["#ifdef Y\n#endif", "#if 1\nint y;\n#else\n#endif",
                                   "#ifdef Y\n#elif 1\n#endif"])
def test_code_after_a_nested_conditional_in_a_dead_branch_is_dead(outer, inner):
    # NVIDIA-developer-blog's longstaff_schwartz_svd_2.cu: a launch inside `#ifdef WITH_CDP`
    # after a nested `#if ... #endif` was live (a false OCC032): the nested branch's dead range
    # hid the rest of the outer one
    data = f"int a;\n{outer}\n{inner}\nvoid host() {{}}\n#else\nint live;\n#endif\nint b;\n".encode()
    s = scan(data, "x.cu", View(host=True, complete=True))
    at = data.index(b"void host")
    assert s.is_dead(at, at + 10)
    for word in (b"int a", b"int live", b"int b"):
        assert not s.is_dead(data.index(word)), word
    text = ("__global__ void __launch_bounds__(256) a(float *x) {}\n#ifdef WITH_X\n#ifdef Y\n"
            "#endif\nvoid host(float *x) { a<<<2, 1024>>>(x); }\n#endif\n"
            "int main() { a<<<1, 128>>>(0); }\n")
    launches = parse(text, "x.cu", View(host=True, complete=True)).launches
    assert [la.block.total for la in launches] == [128]


def test_names_the_toolkit_and_c_library_headers_define_are_unknown_not_undefined():
    # ggml's common.cuh: `#if !defined(GGML_USE_HIP) && CUDART_VERSION >= 11070` then
    # `#define GGML_CUDA_USE_CUB`; cuda_runtime.h (which nvcc includes in every .cu, and which
    # occlint does not walk) defines CUDART_VERSION: the CUB branches were dead
    data = (b"#include <cuda_runtime.h>\n#if !defined(GGML_USE_HIP) && CUDART_VERSION >= 11070\n"
            b"#define USE_CUB\n#endif\n#ifdef USE_CUB\nint cub_path;\n#endif\n"
            b"#if CUDA_VERSION >= 12000 || THRUST_VERSION > 1\nint versioned;\n#endif\n"
            b"#if INT_MAX > 5 && defined(M_PI)\nint limits;\n#endif\n"
            b"#ifdef MY_PROJECT_FLAG\nint flag;\n#endif\n#if defined(GGML_USE_HIP)\nint hip;\n#endif\n")
    s = scan(data, "x.cu", View(host=True, complete=True))
    live = {w: not s.is_dead(data.index(w)) for w in
            (b"int cub_path", b"int versioned", b"int limits", b"int flag", b"int hip")}
    assert live == {b"int cub_path": True, b"int versioned": True, b"int limits": True,
                    b"int flag": False, b"int hip": False}
