"""The engine's contracts: pure lint_source, sorted findings, suppression parsing, edit application."""

from __future__ import annotations

import ast
import random
import subprocess

import pytest
from conftest import FIXTURES

from occlint import fix
from occlint.config import Config
from occlint.engine import lint_source
from occlint.model import Edit, Usage
from occlint.noqa import read as noqa_map

CASES = sorted(p for p in FIXTURES.glob("*.cu") if not p.name.endswith(".fixed.cu"))


def test_lint_source_is_pure(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("lint_source must not run processes")

    monkeypatch.setattr(subprocess, "run", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    text = (FIXTURES / "OCC031_block_not_warp_multiple.cu").read_text()
    assert lint_source(text, "x.cu", [], Config())


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_any_usage_gives_sorted_in_bounds_findings(path):
    from occlint.source import parse

    text = path.read_text()
    sf = parse(text, str(path))
    rng = random.Random(path.name)
    lines = text.splitlines()
    for _ in range(6):
        usage = [Usage(kernel=k.qualname, arch=arch, registers=rng.choice([8, 33, 40, 64, 72, 128, 255]),
                       static_smem=rng.choice([0, 4096, 49152, 70000]), barriers=rng.choice([0, 1, 3]),
                       spill_stores=rng.choice([0, 16]))
                 for k in sf.kernels for arch in ("sm_86", "sm_90")]
        config = Config(arch=("sm_86", "sm_90"), min_occupancy=rng.choice([0.25, 0.5, 1.0]))
        findings = lint_source(text, str(path), usage, config, source=sf)
        keys = [(f.span.line, f.span.column, f.code, f.arch or "") for f in findings]
        assert keys == sorted(keys)
        for f in findings:
            assert 1 <= f.span.line <= len(lines) and f.message and "{" not in f.message
            assert len({(g.code, g.span.start, g.arch) for g in findings if g.code == f.code}) >= 1
        # one cause, one code, at one launch and arch
        per_place = {}
        for f in findings:
            if f.code in ("OCC001", "OCC002", "OCC003", "OCC034", "OCC032", "OCC022"):
                # a launch of a few block sizes: one code per size (each finding names its own)
                held_for = f.data.get("holds_for")     # a str in Finding.data
                for held in (ast.literal_eval(held_for) if held_for else (None,)):
                    per_place.setdefault((f.span.start, f.arch, held), []).append(f.code)
        for codes in per_place.values():
            assert len(codes) == 1, codes


def test_noqa_parsing():
    text = "\n".join([
        "a;  // noqa: OCC010, OCC020",
        "b;  // noqa",
        "c;  /* noqa: OCC031 */",
        "d;  // expect: nothing",
        "// occlint: noqa: OCC033",
    ])
    file_level, lines = noqa_map(text)
    assert file_level == frozenset({"OCC033"})
    assert lines == {1: frozenset({"OCC010", "OCC020"}), 2: None, 3: frozenset({"OCC031"})}
    assert noqa_map("// occlint: noqa\n")[0] is None
    assert noqa_map("x\n")[0] is False


def test_apply_drops_overlapping_edits_of_a_later_fix():
    from occlint.fix import make_span

    text = "abcdef"
    edits = [Edit("X", make_span(text, 1, 3)), Edit("Y", make_span(text, 2, 4)), Edit("Z", make_span(text, 5, 5))]
    assert fix.apply(text, edits) == "aXdeZf"
    span = make_span("ab\ncd", 3, 5)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 1, 2, 3)


LAUNCHED_THRICE = """\
__global__ void jacobi(float* x) { x[threadIdx.x] += 1.0f; }

void run(float* x, int n) {
    jacobi<<<n, 256>>>(x);
    jacobi<<<n, 256>>>(x);{noqa}
    if (n > 4) jacobi<<<n, 256>>>(x);
}
"""


def test_one_kernels_same_finding_at_several_launches_is_one_finding():
    """One cause (36 registers at 256 threads), one remedy (__launch_bounds__ at the kernel):
    one finding at the first launch naming the others; a noqa silences only its own line."""
    usage = [Usage("jacobi", "sm_90", 36)]
    config = Config(arch=("sm_90",), select=("OCC010",))
    findings = lint_source(LAUNCHED_THRICE.replace("{noqa}", ""), "j.cu", usage, config)
    assert [(f.code, f.span.line) for f in findings] == [("OCC010", 4)]
    [f] = findings
    assert f.message.endswith("(the same at lines 5, 6)") and len(f.instances) == 3
    assert f.fix is not None and [e.span.line for e in f.fix.edits] == [1]
    quiet = lint_source(LAUNCHED_THRICE.replace("{noqa}", "  // noqa: OCC010"), "j.cu", usage, config)
    assert [(f.span.line, f.message.endswith("(the same at line 6)")) for f in quiet] == [(4, True)]


def test_the_same_finding_fixed_at_each_line_or_not_at_all_stays_one_per_line():
    # OCC031 rounds each launch's own block size: two places to fix, two findings
    text = ("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n"
            "void a(float* x) { k<<<8, 100>>>(x); }\nvoid b(float* x) { k<<<8, 100>>>(x); }\n"
            "void c(float* x) { k<<<8, dim3(10, 10)>>>(x); }\nvoid d(float* x) { k<<<8, dim3(10, 10)>>>(x); }\n")
    findings = lint_source(text, "k.cu", [], Config(select=("OCC031",)))
    assert [f.span.line for f in findings] == [2, 3, 4, 5]
    assert not any("the same at" in f.message for f in findings)


def test_a_finding_merged_across_lines_points_sarif_at_each_line():
    from occlint.emit.sarif import build

    usage = [Usage("jacobi", "sm_90", 36)]
    findings = lint_source(LAUNCHED_THRICE.replace("{noqa}", ""), "j.cu", usage,
                           Config(arch=("sm_90",), select=("OCC010",)))
    [result] = build(findings, root=".")["runs"][0]["results"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in result["relatedLocations"]] == [4, 5, 6]


def test_a_compile_error_names_every_arch_it_failed_for():
    # NVIDIA-developer-blog: `nvcc failed for sm_80` when sm_90 failed the same way; an error of
    # one arch alone still names that arch
    from occlint.model import CompileError

    text = '#include "range.hpp"\n__global__ void k() {}\n#if X\n#endif\n'
    errors = [CompileError("u.cu", 1, 10, "`range.hpp` not found", "sm_80"),
              CompileError("u.cu", 1, 10, "`range.hpp` not found", "sm_90"),
              CompileError("u.cu", 3, 1, "only here", "sm_90")]
    def messages(archs):
        return [f.message for f in lint_source(text, "u.cu", [], Config(arch=archs),
                                               compile_errors=errors) if f.code == "OCC900"]

    assert messages(("sm_80", "sm_90")) == [
        "nvcc failed for every target arch (2): `range.hpp` not found",
        "nvcc failed for sm_90: only here"]
    assert messages(("sm_80", "sm_90", "sm_100")) == [
        "nvcc failed for sm_80, sm_90: `range.hpp` not found", "nvcc failed for sm_90: only here"]
    # the finding's arch: the one it failed for, none when several (as its message says)
    got = [f.arch for f in lint_source(text, "u.cu", [], Config(arch=("sm_80", "sm_90")),
                                       compile_errors=errors) if f.code == "OCC900"]
    assert got == [None, "sm_90"]


def test_no_finding_rests_on_registers_nvcc_failed_to_measure():
    # ccminer's lyra2 (a missing header): OCC002 "limited by shared memory" at 26.6% where the
    # kernel's 168 registers limit it to 18.75%; llama_cu_awq: OCC030's "above 64 registers it
    # cannot launch" for kernels of 22-25 registers. Without nvcc at all, the caveated wording
    # stays (the source rules run)
    from occlint.model import CompileError

    text = ("__global__ void __launch_bounds__(32, 1) k(unsigned* io) {\n"
            "  extern __shared__ unsigned sm[]; io[threadIdx.x] = sm[threadIdx.x];\n}\n"
            "void run(unsigned* io) { k<<<100000, 32, 12288>>>(io); }\n"
            "__global__ void big(float* x) { x[threadIdx.x] = 0; }\n"
            "void run2(float* x) { big<<<1000, 1024>>>(x); }\n")
    config = Config(arch=("sm_80", "sm_90"))
    errors = [CompileError("u.cu", 1, 10, "`h.h` not found", a) for a in config.arch]
    assert {f.code for f in lint_source(text, "u.cu", [], config)} >= {"OCC002", "OCC030"}
    assert [f.code for f in lint_source(text, "u.cu", [], config, compile_errors=errors)] == \
        ["OCC900"]
    # its errors reported in a header of the run (llama_cu_awq's gpu_kernels.h, now linted):
    # the unit's own compile still failed
    assert [f.code for f in lint_source(text, "u.cu", [], config,
                                        failed_archs=frozenset(config.arch))] == []


def test_a_cascade_of_compile_errors_is_its_first_ten_and_a_count():
    # how-to-optim-algorithm-in-cuda's include-less PyTorch excerpt: 51 OCC900, one per line
    from occlint.model import CompileError

    text = "".join(f"int x{i} = undefined_{i};\n" for i in range(14))
    errors = [CompileError("u.cu", i + 1, 9, f"identifier \"undefined_{i}\" is undefined", "sm_90")
              for i in range(14)]
    got = [f.message for f in lint_source(text, "u.cu", [], Config(arch=("sm_90",)),
                                          compile_errors=errors) if f.code == "OCC900"]
    assert len(got) == 10 and got[0].endswith('"undefined_0" is undefined')
    assert got[-1].endswith('"undefined_9" is undefined (and 4 more nvcc errors in this file; '
                            "the first ones often cause the rest)")


def test_a_block_bound_per_call_of_the_launching_template_is_evaluated_per_instantiation():
    # how-to-optim's causal_product: `k<E, WARPS><<<g, WARPS * 32>>>` in a template called as
    # launch<4>, launch<8>, launch<16>: each instantiation at its own block (k<16> at 512 over
    # its bounds), never crossed; the launch's text is shared, so no edits
    text = ("template <int W>\n__global__ void __launch_bounds__(256) k(float *x) {\n"
            "  extern __shared__ float s[];\n  s[threadIdx.x] = x[threadIdx.x];\n"
            "  x[blockIdx.x * W * 32 + threadIdx.x] = s[0];\n}\n"
            "template <int W>\nvoid launch(float *x, int grid) {\n"
            "  k<W><<<grid, W * 32, W * 16384>>>(x);\n}\n"
            "void pick(float *x, int g, int m) { if (m) launch<4>(x, g); else launch<16>(x, g); }\n")
    usage = [Usage("k", "sm_90", 8, template_args=("4",), max_threads=256),
             Usage("k", "sm_90", 8, template_args=("16",), max_threads=256)]
    findings = lint_source(text, "k.cu", usage, Config(arch=("sm_90",)))
    got = [(f.code, f.span.line, f.kernel, f.data.get("block"), f.fix) for f in findings]
    # k<4>: 128 threads and 64 KiB without the opt-in (OCC022, no fix: one call for every W);
    # k<16>: 512 threads, over its __launch_bounds__(256)
    assert [(g[0], g[1], g[3], g[4]) for g in got] == [("OCC022", 9, 128, None),
                                                       ("OCC032", 9, 512, None)]
    assert "`k<4>`" in findings[0].message and "`k<16>`" in findings[1].message


def test_occ030_at_a_block_the_kernels_code_is_written_for_says_so():
    # bitsandbytes' kQuantizeBlockwise<4096, 4><<<g, 1024>>>: THREADS = BLOCK_SIZE / NUM_PER_TH
    # sizes its cub::BlockReduce; "prefer 512 threads/block with the grid adjusted" would leave
    # half of each tile untouched
    text = ("template <int BLOCK_SIZE, int NUM_PER_TH>\n"
            "__global__ void q(const float* a, float* out) {\n"
            "  constexpr int THREADS = BLOCK_SIZE / NUM_PER_TH;\n"
            "  __shared__ float s[THREADS];\n"
            "  s[threadIdx.x] = a[blockIdx.x * BLOCK_SIZE + threadIdx.x * NUM_PER_TH];\n"
            "  out[blockIdx.x] = s[0];\n}\n"
            "__global__ void free_k(const float* a, float* out) {\n"
            "  out[blockIdx.x * blockDim.x + threadIdx.x] = a[0];\n}\n"
            "void run(const float* a, float* out, int n) {\n"
            "  q<4096, 4><<<n / 4096, 1024>>>(a, out);\n"
            "  free_k<<<n / 1024, 1024>>>(a, out);\n}\n")
    usage = [Usage("q", "sm_80", 36, static_smem=4096, template_args=("4096", "4")),
             Usage("free_k", "sm_80", 36)]
    findings = lint_source(text, "q.cu", usage, Config(arch=("sm_80",), select=("OCC030",)))
    assert [(f.span.line, f.kernel) for f in findings] == [(12, "q"), (13, "free_k")]
    assert "written for 1024 threads (its `THREADS` is 1024 here)" in findings[0].message
    assert "prefer 512 threads/block with the grid adjusted" in findings[1].message


def test_occ003_at_a_block_the_kernels_code_is_written_for_says_so():
    # `k<32><<<g, 32>>>` with `__shared__ float s[BLOCK]`: 64 threads means k<64> too
    text = ("template <int BLOCK> __global__ void k(float* x) {\n"
            "  __shared__ float s[BLOCK];\n  s[threadIdx.x] = x[blockIdx.x * BLOCK + threadIdx.x];\n"
            "  x[blockIdx.x] = s[0];\n}\n"
            "void run(float* x, int n) { k<32><<<n / 32, 32>>>(x); }\n")
    usage = [Usage("k", "sm_86", 16, static_smem=128, template_args=("32",))]   # 16 blocks/SM
    [f] = lint_source(text, "k.cu", usage, Config(arch=("sm_86",), select=("OCC003",)))
    assert f.message.endswith("but the kernel's code is written for 32 threads (its `BLOCK` is "
                              "32 here): other template arguments or code as well")


def test_a_dynamic_size_of_the_launching_templates_type_is_read_per_call():
    # cudpp's mergesort: `BLOCKSORT_SIZE * sizeof(T) + ...` in runMergeSort<T>, called with int,
    # unsigned int and float: 8192 B at every call; k<T> with T = float or double: each
    # instantiation at its own size (double's 64 KiB needs the opt-in: OCC022 names k<double>)
    from occlint.source import parse

    text = ("template <typename T> __global__ void k(T* x) { extern __shared__ char s[]; }\n"
            "template <typename T> void sortish(T* x, int g) {\n"
            "  k<T><<<g, 128, 1024 * sizeof(T) + 1024 * sizeof(unsigned)>>>(x);\n}\n"
            "template <typename T> void wide(T* x, int g) { k<T><<<g, 256, 8192 * sizeof(T)>>>(x); }\n"
            "void run(void* x, int g) {\n  sortish<int>((int*)x, g); sortish<float>((float*)x, g);\n"
            "  wide<float>((float*)x, g); wide<double>((double*)x, g);\n}\n")
    a, b = parse(text, "k.cu").launches
    assert (a.block.total, a.dynamic_smem, a.bindings) == (128, 8192, ())
    assert (b.block.total, b.dynamic_smem, b.bindings) == (
        256, None, ((("float",), 256, 32768), (("double",), 256, 65536)))
    usage = [Usage("k", "sm_90", 16, template_args=(t,)) for t in ("int", "float", "double")]
    findings = lint_source(text, "k.cu", usage, Config(arch=("sm_90",), select=("OCC022",)))
    assert [(f.code, f.span.line, f.kernel) for f in findings] == [("OCC022", 5, "k")]
    assert "`k<double>`" in findings[0].message and findings[0].fix is None


def test_a_headers_compile_error_names_the_units_it_stood_in():
    # bitsandbytes without cuBLAS: one OCC900 at compat.cuh:181 stood for 5 units' compiles and
    # named none of them, so a user could not tell how much of the project went unmeasured
    from occlint.model import CompileError

    text = "#pragma once\n#include <cublasLt.h>\n"
    units = ("csrc/kernels.cu", "csrc/gemm_4bit.cu", "csrc/a.cu", "csrc/b.cu", "csrc/c.cu")
    errors = [CompileError("compat.cuh", 2, 10, "`cublasLt.h` not found", arch, "fatal", None, u)
              for u in units for arch in ("sm_80", "sm_90")]
    [f] = lint_source(text, "compat.cuh", [], Config(arch=("sm_80", "sm_90")), compile_errors=errors)
    assert f.message == ("nvcc failed for every target arch (2): `cublasLt.h` not found (compiling "
                         "5 units: kernels.cu, gemm_4bit.cu, a.cu, b.cu and 1 more)")
    [own] = lint_source(text, "csrc/a.cu", [], Config(arch=("sm_80",)), compile_errors=[
        CompileError("csrc/a.cu", 2, 10, "`x.h` not found", "sm_80", "fatal", None, "csrc/a.cu")])
    assert own.message == "nvcc failed for sm_80: `x.h` not found"
    # llm.c: train_gpt2_fp32.cu is a unit that test_gpt2_fp32.cu includes
    [both] = lint_source(text, "csrc/a.cu", [], Config(arch=("sm_80",)), compile_errors=[
        CompileError("csrc/a.cu", 2, 10, "`x.h` not found", "sm_80", "fatal", None, unit)
        for unit in ("csrc/a.cu", "csrc/test_a.cu")])
    assert both.message == "nvcc failed for sm_80: `x.h` not found (also compiling test_a.cu)"


def test_a_macro_defined_kernel_gets_findings_at_its_use_and_no_fix():
    # NCCL: a register step at a kernel a macro defines is reported at the use; the
    # `__launch_bounds__` fix would edit the shared macro text, so there is none
    text = ("#define DEFINE_K(s) __global__ void k_##s(float* p) { p[threadIdx.x] = 0; }\n"
            "DEFINE_K(a)\n"
            "void run(float* p) { k_a<<<100000, 256>>>(p); }\n")
    usage = [Usage("k_a", "sm_90", 34)]
    findings = lint_source(text, "k.cu", usage, Config(arch=("sm_90",), select=("OCC010",)))
    assert [(f.code, f.span.line, f.fix) for f in findings] == [("OCC010", 3, None)]


def test_a_launch_of_another_files_own_kernel_of_the_same_name_is_not_this_ones(tmp_path):
    # cuda-samples' many `testKernel`s (flash-attention's helper found it with two `scale`s):
    # OCC020 in one file took "the largest block that launches it" from another file's launch
    # of its own kernel of that name (512 for a kernel launched at 128)
    from occlint.engine import lint_paths

    (tmp_path / "own1.cu").write_text(
        "__global__ void testKernel(float* x) { __shared__ float s[1024];\n"
        "  s[threadIdx.x] = x[threadIdx.x]; x[0] = s[0]; }\n"
        "void a(float* x) { testKernel<<<10, 128>>>(x); }\n")
    (tmp_path / "own2.cu").write_text("__global__ void testKernel(float* x) { x[threadIdx.x] = 0; }\n"
                                      "void b(float* x) { testKernel<<<10, 512>>>(x); }\n")
    paths = [str(tmp_path / "own1.cu"), str(tmp_path / "own2.cu")]
    result = lint_paths(paths, Config(root=str(tmp_path), arch=("sm_90",), select=("OCC020",)),
                        usage={p: [] for p in paths})
    [f] = result.findings
    assert "the largest block that launches it has 128 threads" in f.message
