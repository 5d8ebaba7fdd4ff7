"""Issue 13: one finding per place and cause, declared intent, deliberate launches, true advice."""

from __future__ import annotations

import json
from collections import Counter

from occlint.config import Config
from occlint.emit import EMITTERS
from occlint.engine import lint_source
from occlint.model import Usage

TEMPLATE = """\
template <typename T, int N>
__global__ void __launch_bounds__(256) fixup(T* out, int n) {
    out[threadIdx.x] = T(N);
}
"""


def _usages(archs, regs_by_args):
    return [Usage(kernel="fixup", arch=arch, registers=regs, template_args=args)
            for arch in archs for args, regs in regs_by_args.items()]


INSTANCES = {("float", "1"): 33, ("float", "2"): 34, ("double", "1"): 35}


def test_instantiations_and_agreeing_archs_are_one_finding():
    usage = _usages(("sm_80", "sm_90"), INSTANCES)
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_80", "sm_90")))
    cliffs = [f for f in findings if f.code == "OCC010"]
    assert len(cliffs) == 1, [f.message for f in findings]
    f = cliffs[0]
    assert f.span.line == 2
    assert f.arch == "sm_80,sm_90"
    assert "`fixup` (3 instantiations) uses 33-35 registers/thread" in f.message
    assert "on sm_80, sm_90 at 256 threads/block is 75%" in f.message
    assert "1-3 fewer registers/thread would allow 8 blocks/SM (100%)" in f.message
    assert len(f.instances) == 6
    assert {(i["kernel"], i["arch"]) for i in f.instances} == {
        (f"fixup<{a}, {b}>", arch) for a, b in INSTANCES for arch in ("sm_80", "sm_90")}
    assert all(i["message"].startswith("`fixup<") for i in f.instances)


def test_archs_whose_numbers_differ_stay_apart():
    # 41-43 registers: 5 blocks/SM on both, but 83.3% of sm_86's 48 warps and 62.5% of sm_90's 64
    usage = _usages(("sm_86", "sm_90"), {args: regs + 8 for args, regs in INSTANCES.items()})
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_86", "sm_90")))
    cliffs = [f for f in findings if f.code == "OCC010"]
    assert sorted(f.arch for f in cliffs) == ["sm_86", "sm_90"]
    assert all(len(f.instances) == 3 for f in cliffs)


def test_no_two_findings_share_file_line_code_arch():
    usage = _usages(("sm_80", "sm_86", "sm_90"), {**INSTANCES, ("int", "3"): 200})
    text = TEMPLATE + "void run(float* o, double* d) {\n" \
        "    fixup<float, 1><<<1000, 1000>>>(o, 1); fixup<double, 1><<<1000, 1000>>>(d, 1);\n}\n"
    findings = lint_source(text, "f.cu", usage, Config(arch=("sm_80", "sm_86", "sm_90")))
    keys = Counter((f.path, f.span.line, f.code, f.arch) for f in findings)
    assert findings and max(keys.values()) == 1, keys


def test_json_and_sarif_keep_the_instances():
    usage = _usages(("sm_90",), INSTANCES)
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_90",)))
    doc = json.loads(EMITTERS["json"](findings, root="."))
    (cliff,) = [d for d in doc if d["code"] == "OCC010"]
    assert [i["kernel"] for i in cliff["instances"]] == ["fixup<float, 1>", "fixup<float, 2>", "fixup<double, 1>"]
    assert [i["regs"] for i in cliff["instances"]] == [33, 34, 35]
    sarif = json.loads(EMITTERS["sarif"](findings, root="."))
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "OCC010"]
    assert len(result["relatedLocations"]) == 3
    assert len(result["properties"]["instances"]) == 3
    assert result["relatedLocations"][0]["message"]["text"].startswith("`fixup<float, 1>` uses 33")


def test_a_single_cause_has_one_instance():
    usage = [Usage(kernel="fixup", arch="sm_90", registers=34, template_args=("float", "1"))]
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_90",)))
    (cliff,) = [f for f in findings if f.code == "OCC010"]
    assert "instantiations" not in cliff.message and len(cliff.instances) == 1
    assert cliff.instances[0]["kernel"] == "fixup<float, 1>"


def _fixture_findings(name, usage=()):
    from conftest import FIXTURES
    text = (FIXTURES / name).read_text()
    return text, lint_source(text, name, list(usage), Config(arch=("sm_90",)))


def test_occ032_fix_scales_a_grid_written_from_the_block_size_or_says_it_cannot():
    text, findings = _fixture_findings("OCC032_launch_exceeds_bounds.cu")
    titles = {text.splitlines()[f.span.line - 1].split("<<<")[1].split(">>>")[0]: f.fix.message
              for f in findings if f.code == "OCC032" and f.fix}
    assert titles["n / 1024, 1024"] == ("Launch with 256 threads/block and a grid of `n / 256` "
                                        "(was `n / 1024`) to cover the same threads")
    assert "`(n + 255) / 256`" in titles["(n + 1023) / 1024, 1024"]
    assert "`DIV_UP(n, 256)`" in titles["DIV_UP(n, 1024), 1024"]
    assert "`800`" in titles["200, 1024"]
    assert titles["blocks, 512"] == ("Launch with 256 threads/block; the grid `blocks` is not scaled "
                                     "automatically: make it cover 512/256 times as many blocks")
    assert all(f.fix.applicability == "unsafe" for f in findings if f.code == "OCC032" and f.fix)


def test_occ031_round_up_is_unsafe():
    text = ("__global__ void tile(float* x) {\n    __shared__ float t[100];\n"
            "    t[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];\n}\n"
            "void run(float* x) { tile<<<500, 100>>>(x); }\n")
    (f,) = [f for f in lint_source(text, "t.cu", [], Config()) if f.code == "OCC031"]
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_occ031_round_up_scales_a_grid_written_from_the_block_size():
    # Rodinia's huffman: `pack2<<<n / 16, 16>>>` on an unguarded kernel; rounding the block
    # alone ran twice the threads, out of bounds
    text = ("__global__ void pack2(const unsigned *in, unsigned *out) {\n"
            "  unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;\n  out[tid] = in[tid];\n}\n"
            "void host(const unsigned *in, unsigned *out, unsigned n, int g) {\n"
            "  pack2<<<n / 16, 16>>>(in, out);\n  pack2<<<g, 48>>>(in, out);\n}\n")
    fixes = [f.fix for f in lint_source(text, "t.cu", [], Config()) if f.code == "OCC031"]
    assert [[e.content for e in fx.edits] for fx in fixes] == [["n / 32", "32"], ["64"]]
    assert fixes[0].message == ("Round the block size up to 32 and the grid to `n / 32` (was "
                                "`n / 16`): the same threads when their count is a multiple of 32")
    assert fixes[1].message == ("Round the block size up to 64; the grid `g` is not scaled: each "
                                "block runs 16 more threads, which the kernel must guard "
                                "(`if (i < n)`)")


# --- 2: a kernel's findings are at the kernel's own file and line ---------------------------------

HEADER = """\
#pragma once
// kernels of the runner


__global__ void __launch_bounds__(256) scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
"""
RUNNER = """\
#include "kernels.cuh"
void run(float* x, int n, int threads) {
    scale<<<(n + threads - 1) / threads, threads>>>(x, n);
}
"""


def test_header_kernel_findings_stay_in_the_header():
    from occlint.source import parse
    header, runner = parse(HEADER, "kernels.cuh"), parse(RUNNER, "runner.cu")
    usage = [Usage(kernel="scale", arch="sm_90", registers=35)]
    config = Config(arch=("sm_90",))
    in_runner = lint_source(RUNNER, "runner.cu", usage, config, source=runner, project=[header, runner])
    assert in_runner == [], [(f.code, f.span.line) for f in in_runner]
    in_header = lint_source(HEADER, "kernels.cuh", usage, config, source=header, project=[header, runner])
    assert [(f.path, f.span.line, f.code) for f in in_header] == [("kernels.cuh", 5, "OCC010")]


# --- 3: declared intent -------------------------------------------------------------------------

def _kernel(attrs: str, launch: str) -> str:
    return (f"__global__ void {attrs} k(float* x) {{ x[threadIdx.x] = 0.0f; }}\n"
            f"void run(float* x) {{ {launch}; }}\n")


def _codes(text, regs, **config):
    usage = [Usage(kernel="k", arch="sm_90", registers=regs)]
    return sorted(f.code for f in lint_source(text, "k.cu", usage, Config(arch=("sm_90",), **config)))


def test_declared_launch_bounds_met_is_respected():
    # 46 registers at 256 threads: 5 blocks/SM, 62.5%
    launch = "k<<<1000, 256>>>(x)"
    assert _codes(_kernel("", launch), 46, min_occupancy=0.7) == ["OCC001"]
    assert _codes(_kernel("__launch_bounds__(256, 5)", launch), 46, min_occupancy=0.7) == []
    assert _codes(_kernel("__launch_bounds__(256, 6)", launch), 46, min_occupancy=0.7) == ["OCC001"]
    assert _codes(_kernel("__maxnreg__(48)", launch), 46, min_occupancy=0.7) == []
    # cliffs: 46 -> 40 gains a block with a margin of 8
    assert _codes(_kernel("", launch), 46, cliff_margin=8) == ["OCC010"]
    assert _codes(_kernel("__launch_bounds__(256, 5)", launch), 46, cliff_margin=8) == []
    assert _codes(_kernel("__maxnreg__(48)", launch), 46, cliff_margin=8) == []
    # 1024 threads with 2 blocks/SM asked for: warps bind at 1 block, below what it declares
    assert "OCC003" not in _codes(_kernel("__launch_bounds__(512, 4)", "k<<<1000, 512>>>(x)"), 32,
                                  min_occupancy=1.0)


def test_spills_and_bounds_still_apply_with_declared_intent():
    text = _kernel("__launch_bounds__(256, 5)", "k<<<1000, 512>>>(x)")
    assert _codes(text, 46) == ["OCC032"]


# --- 4: a grid of exactly one block ---------------------------------------------------------------

def test_single_block_launches_are_deliberate():
    for launch in ("k<<<1, 1024>>>(x)", "k<<<1, 100>>>(x)", "k<<<dim3(1, 1), 1000>>>(x)"):
        assert _codes(_kernel("", launch), 16) == [], launch
    assert _codes(_kernel("", "k<<<1, 256>>>(x)"), 35) == []          # no OCC010 for one block
    assert _codes(_kernel("", "k<<<2, 100>>>(x)"), 16) == ["OCC031"]
    # a whole launch of at most one warp (cuda-samples' printf demos: <<<2, 2>>>, 2x2 blocks of 2x4)
    assert _codes(_kernel("", "k<<<2, 2>>>(x)"), 16) == []
    assert _codes(_kernel("", "k<<<dim3(2, 2), dim3(2, 4)>>>(x)"), 16) == []
    assert _codes(_kernel("", "k<<<dim3(2, 3), dim3(2, 4)>>>(x)"), 16) == ["OCC031"]     # 48 threads

    # cuda_memtest: one serial walker per block (`<<<grid, 1>>>`, the kernel never reads
    # threadIdx or blockDim): 32 threads would each redo the block's work (the unsafe fix made
    # siblings report false memory errors). A body reading either, or calling a function occlint
    # does not read, stays reported.
    walker = ("__global__ void k(unsigned* p, unsigned* err) {\n  unsigned* q = p + blockIdx.x * 256;\n"
              "  for (int i = 0; i < 256; i++) { if (q[i] != 1) atomicAdd(err, 1u); q[i] = 2; }\n}\n"
              "void run(unsigned* p, unsigned* e) { k<<<128, 1>>>(p, e); }\n")
    assert _codes(walker, 16) == []
    for reads in ("q[i] = threadIdx.x;", "q[i] = blockDim.x;", "helper(q);", "TID(q);"):
        assert _codes(walker.replace("q[i] = 2;", reads), 16) == ["OCC031"], reads
    # declared for fewer threads than a warp (xmrig's `__launch_bounds__(16, 16)` execute_vm,
    # two hashes of 8 workers per block): "use 32" would not launch; a template's bounds count
    sub = _kernel("__launch_bounds__(16, 16)", "k<<<1000, 16>>>(x)")
    assert _codes(sub, 16) == []
    tmpl = ("template <int W> __global__ void __launch_bounds__(W * 2) k(float* x) { x[threadIdx.x] = 0; }\n"
            "void run(float* x) { k<8><<<1000, 16>>>(x); k<32><<<1000, 48>>>(x); }\n")
    assert _codes(tmpl, 16) == ["OCC031"]          # only the 48-thread one (its bound is 64)
    # a macro of the file is read through its definitions (cuda_memtest's RECORD_ERR)
    record = "#define RECORD(e) do { unsigned n = atomicAdd(e, 1u); e[n % 8] = 1; } while (0)\n"
    tid = "#define TID(q) q[threadIdx.x] = 0\n"
    assert _codes(record + tid + walker.replace("atomicAdd(err, 1u);", "RECORD(err);"), 16) == []
    assert _codes(record + tid + walker.replace("q[i] = 2;", "TID(q);"), 16) == ["OCC031"]


# --- 5: a cliff is near ---------------------------------------------------------------------------

def test_cliff_margin_default_4_and_counts_on_a_step():
    launch = "k<<<1000, 256>>>(x)"
    assert Config().cliff_margin == 4
    assert _codes(_kernel("", launch), 35) == ["OCC010"]                 # 3 to shed
    assert _codes(_kernel("", launch), 38) == []                         # 6 to shed
    assert _codes(_kernel("", launch), 38, cliff_margin=8) == ["OCC010"]
    assert _codes(_kernel("", launch), 48, cliff_margin=8) == []         # on a step: a rewrite
    assert _codes(_kernel("", launch), 40, cliff_margin=16) == []


# --- 6: OCC030 with measured usage ----------------------------------------------------------------

def test_occ030_says_what_nvcc_measured():
    text = _kernel("", "k<<<1000, 1024>>>(x)")
    usage = [Usage(kernel="k", arch=a, registers=10) for a in ("sm_86", "sm_90")]
    (f,) = lint_source(text, "k.cu", usage, Config(arch=("sm_86", "sm_90")))
    assert f.code == "OCC030" and "cannot launch" not in f.message
    assert "with 10 registers/thread, occupancy on sm_86 is 66.7%" in f.message
    assert "512 threads/block would reach 100%" in f.message
    # sm_90 alone: two 1024-thread blocks fill the SM, no smaller block does better
    assert lint_source(text, "k.cu", usage[1:], Config(arch=("sm_90",))) == []
    # 40 registers: one block (50%) on sm_90, 512 threads reach 62.5%
    (f,) = lint_source(text, "k.cu", [Usage(kernel="k", arch="sm_90", registers=40)], Config(arch=("sm_90",)))
    assert "occupancy on sm_90 is 50%" in f.message and "would reach 75%" in f.message
    # without usage: the hypothetical wording
    (f,) = lint_source(text, "k.cu", [], Config(arch=("sm_90",)))
    assert "above 64 registers/thread it cannot launch" in f.message
    # measured registers but unknown dynamic shared memory (gups' `d_bench_shmem`, launched with
    # all of it): the hypothetical register limit is moot at 10 registers, true at 80
    shmem = ("__global__ void k(float* x) { extern __shared__ float s[]; x[threadIdx.x] = s[0]; }\n"
             "void run(float* x, int n) { k<<<1000, 1024, n * 4>>>(x); }\n")
    assert lint_source(shmem, "k.cu", usage[1:], Config(arch=("sm_90",))) == []
    (f,) = lint_source(shmem, "k.cu", [Usage(kernel="k", arch="sm_90", registers=80)],
                       Config(arch=("sm_90",)))
    assert "above 64 registers/thread it cannot launch" in f.message
    (f,) = lint_source(shmem, "k.cu", usage, Config(arch=("sm_86", "sm_90")))   # 66.7% on sm_86
    assert f.code == "OCC030"
    # a template nvcc compiled the file without instantiating (OneFlow's grad softmax, called
    # by no code of the unit): its launch does not happen there, with no registers to speak of
    never = ("template <int N> __global__ void g(float* x) { x[threadIdx.x] = N; }\n"
             "template <int N> void grad(float* x) { g<N><<<1000, 1024>>>(x); }\n" + text)
    assert [f.code for f in lint_source(never, "k.cu", usage[1:], Config(arch=("sm_90",)))] == []
    assert [f.code for f in lint_source(never, "k.cu", [], Config(arch=("sm_90",)))] == \
        ["OCC030", "OCC030"]                  # nothing compiled: both hypothetical, as before
    # declared for 1024 threads (llm.c's fused classifier): by design, and ptxas keeps it launchable
    designed = _kernel("__launch_bounds__(1024, 1)", "k<<<1000, 1024>>>(x)")
    assert lint_source(designed, "k.cu", [], Config(arch=("sm_90",))) == []
    assert lint_source(designed, "k.cu", usage, Config(arch=("sm_86", "sm_90"))) == []


# --- 11: OCC002 advice is true --------------------------------------------------------------------

def test_occ002_mentions_the_carveout_only_when_the_kernel_lowers_it():
    body = ("__global__ void k(float* x) { extern __shared__ float s[]; s[threadIdx.x] = x[0]; "
            "x[threadIdx.x] = s[threadIdx.x ^ 1]; }\n")
    launch = ("void run(float* x) {\n    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000);\n"
              "{carve}    k<<<1000, 256, 100000>>>(x);\n}}\n")
    plain = body + launch.replace("{carve}", "").replace("}}", "}")
    (f,) = [f for f in lint_source(plain, "k.cu", [], Config(arch=("sm_90",))) if f.code == "OCC002"]
    assert "carveout" not in f.message
    lowered = body + launch.replace("{carve}", "    cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, 50);\n").replace("}}", "}")
    (f,) = [f for f in lint_source(lowered, "k.cu", [], Config(arch=("sm_90",))) if f.code == "OCC002"]
    assert "raise the carveout the kernel asks for (50%)" in f.message


# --- 10: OCC020 sees loop-bounded subscripts ------------------------------------------------------

def _shared(body: str, launch: str = "k<<<1000, 256>>>(x)") -> list:
    text = f"__global__ void k(float* x) {{\n    __shared__ float buf[1024];\n{body}}}\nvoid run(float* x) {{ {launch}; }}\n"
    return [f for f in lint_source(text, "k.cu", [], Config(arch=("sm_90",))) if f.code == "OCC020"]


def test_occ020_loop_bounded_and_constant_arithmetic_subscripts():
    (f,) = _shared("    for (int k = threadIdx.x; k < 256; k += blockDim.x) buf[k] = x[k];\n"
                   "    __syncthreads();\n    x[threadIdx.x] = buf[threadIdx.x % 256];\n")
    assert "reach only the first 256" in f.message and "3072 bytes" in f.message
    assert f.fix is not None and f.fix.applicability == "unsafe" and f.fix.edits[0].content == "256"
    (f,) = _shared("    buf[255 - threadIdx.x] = x[threadIdx.x];\n", "k<<<1000, 128>>>(x)")
    assert "reach only the first 256" in f.message
    (f,) = _shared("    for (int k = 0; k <= 127; ++k) buf[2 * k + 1] = x[k];\n")
    assert "reach only the first 256" in f.message
    # thread-derived and loop-bounded together: the larger reach decides
    (f,) = _shared("    buf[threadIdx.x] = 0;\n    for (int k = 0; k < 512; k++) buf[k] += x[k];\n")
    assert "first 512" in f.message


def test_occ020_no_bound_no_finding():
    assert _shared("    for (int k = 0; k < 256; k++) { buf[k] = x[k]; k += x[0]; }\n") == []
    assert _shared("    for (int k = 0; k < 256; k--) buf[k] = x[k];\n") == []
    assert _shared("    int k = x[0];\n    buf[k] = 1.0f;\n") == []
    assert _shared("    for (int k = 0; k < 1024; k++) buf[k] = x[k];\n") == []
    assert _shared("    buf[0] = x[0];\n") == []


def test_occ020_not_for_unused_bytes_that_allocate_nothing_less():
    # darknet's transpose_uint32_kernel_2: `tile[33 * 32]`, indexed up to 32 * 33 - 2: 4 bytes
    # unused, and 4220 or 4224 bytes allocate the same (128-byte units on sm_80+)
    tile = ("__global__ void t(unsigned* x) {\n    __shared__ unsigned tile[33 * 32];\n"
            "    const int lx = threadIdx.x % 32;\n    const int ly = (threadIdx.x / 32) % 32;\n"
            "    tile[lx * 33 + ly] = x[threadIdx.x];\n    __syncthreads();\n"
            "    x[threadIdx.x] = tile[ly * 33 + lx];\n}\n"
            "void run(unsigned* x) { t<<<64, 1024>>>(x); }\n")
    found = lint_source(tile, "t.cu", [], Config(arch=("sm_80", "sm_90")))
    assert [f.code for f in found if f.code == "OCC020"] == []
    # 64 unused floats (256 bytes): two allocation units fewer
    (f,) = _shared("    for (int k = 0; k < 960; k++) buf[k] = x[k];\n")
    assert "reach only the first 960" in f.message


# --- OCC033: a small constant grid matters only where the grid is a knob ---------------------------

def test_occ033_only_for_kernels_that_spread_work_over_the_grid():
    stride = ("__global__ void k(float* x, int n) {\n"
              "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] = 0;\n}\n")
    tile = "__global__ void k(float* x, int n) {\n    x[blockIdx.x * blockDim.x + threadIdx.x] = 0;\n}\n"
    launch = "void run(float* x) { k<<<64, 256>>>(x, 1 << 20); }\n"
    assert [f.code for f in lint_source(stride + launch, "k.cu", [], Config())] == ["OCC033"]
    assert lint_source(tile + launch, "k.cu", [], Config()) == []
    # system scope (host or peer memory over PCIe/NVLink): the link, not the SMs, sizes the grid
    for fence in ("__threadfence_system();", "atomicAdd_system(flag, 1);",
                  "cuda::atomic_ref<int, cuda::thread_scope_system>(*flag).store(1);"):
        comm = stride.replace("x[i] = 0;\n", "x[i] = 0;\n    " + fence + "\n").replace("int n)", "int n, int* flag)")
        assert lint_source(comm + launch.replace("1 << 20)", "1 << 20, 0)"), "k.cu", [], Config()) == [], fence
    # a two-pass reduction whose second pass is one block of `grid` threads (NVIDIA's
    # longstaff_schwartz: `partial<<<NT, NT>>>` then `final<<<1, NT>>>`, one partial per
    # thread): the grid is bound to that block, not a knob; another second pass is not
    two = stride + ("__global__ void fin(float* x) { x[0] = x[threadIdx.x]; }\n"
                    "void run(float* x) {\n  const int NT = 128;\n  k<<<NT, NT>>>(x, 1 << 20);\n"
                    "  fin<<<1, NT>>>(x);\n}\n")
    assert lint_source(two, "k.cu", [], Config()) == []
    for other in ("fin<<<1, 256>>>(x)", "fin<<<2, NT>>>(x)"):
        codes = [f.code for f in lint_source(two.replace("fin<<<1, NT>>>(x)", other), "k.cu", [],
                                             Config())]
        assert codes == ["OCC033"], other
    before = two.replace("  k<<<NT, NT>>>(x, 1 << 20);\n  fin<<<1, NT>>>(x);",
                         "  fin<<<1, NT>>>(x);\n  k<<<NT, NT>>>(x, 1 << 20);")
    assert [f.code for f in lint_source(before, "k.cu", [], Config())] == ["OCC033"]


# --- `static __global__` kernels keep their nvcc figures ------------------------------------------

def test_static_kernel_names_demangle_to_the_kernel():
    from occlint.toolchain.demangle import split_name
    mangled = "__nv_static_36__426b201a_14_nv12_resize_cu_d5a6aa57__Z21resizeNV12BatchKernelyyPhiiiiii"
    assert split_name(mangled) == ("resizeNV12BatchKernel", ())
    assert split_name("__nv_static_5__x") == ("__nv_static_5__x", ())


def test_static_kernels_get_their_usage(nvcc_path, tmp_path):
    from occlint import record
    from occlint.toolchain import collect_usage
    path = tmp_path / "s.cu"
    path.write_text("static __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
                    "void run(float* x) { k<<<1000, 1024>>>(x); }\n")
    config = record.replace(Config(arch=("sm_86",)), nvcc=nvcc_path, cache_dir=str(tmp_path / "cache"))
    usage = list(collect_usage([str(path)], config).usage_for(str(path)))
    assert [u.kernel for u in usage] == ["k"]
    (f,) = lint_source(path.read_text(), str(path), usage, config)
    assert f.code == "OCC030" and "registers/thread, occupancy on sm_86 is 66.7%" in f.message


# --- OCC001 only where a register cap is a remedy -----------------------------------------------

def test_occ001_needs_a_cap_that_reaches_the_target_within_the_cut():
    launch = "k<<<1000, 256>>>(x)"
    assert Config().max_register_cut == 0.4
    assert _codes(_kernel("", launch), 72) == ["OCC001"]           # 72 -> 64: 11% of its registers
    assert _codes(_kernel("", launch), 104) == ["OCC001"]          # 104 -> 64: 38%
    assert _codes(_kernel("", launch), 128) == []                  # 128 -> 64: half, a rewrite
    assert _codes(_kernel("", launch), 128, max_register_cut=0.5) == ["OCC001"]
    assert _codes(_kernel("", launch), 72, max_register_cut=0.1) == []
    # registers bind, but 64 KiB of dynamic shared memory allows 3 blocks: no cap reaches 4
    staged = ("__global__ void k(float* x) { extern __shared__ float s[]; x[threadIdx.x] = s[0]; }\n"
              "void run(float* x) { cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,"
              " 65536); k<<<1000, 256, 65536>>>(x); }\n")
    assert _codes(staged, 80) == []
    assert _codes(staged.replace("65536>>>", "16384>>>"), 80) == ["OCC001"]


def test_occ001_without_a_launch_proposes_the_smallest_cap_over_block_sizes():
    text = "__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }\n"
    usage = [Usage(kernel="k", arch="sm_90", registers=80)]
    [f] = lint_source(text, "k.cu", usage, Config(arch=("sm_90",)))
    # best 37.5% at 768 threads; 64 registers reach 50% (4 x 256), not 40 for 2 x 768 (75%)
    assert "37.5% (at 768 threads/block)" in f.message, f.message
    assert "16 fewer registers/thread (64) would reach 50% at" in f.message, f.message


TILED = """\
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))
template <int BM, int TM, int TN>
__global__ void __launch_bounds__(256) tiled(float* c) {
    constexpr int WM = TM * 16;
    constexpr int WMITER = CEIL_DIV(BM, WM);
    float acc[WMITER * TM * TN] = {0.0f};
    float a[TM], b[TN];
    __shared__ float s[BM];
    for (int i = 0; i < TM * TN; ++i) acc[i] += a[i % TM] * b[i % TN] + s[i];
    c[threadIdx.x] = acc[0];
}
void run(float* c) {
    const int TM = 8;
    tiled<128, TM, TM><<<1000, 256>>>(c);
}
"""


def _tiled(text, regs, stack=0, tm=(8, 8), cliff=False):
    usage = [Usage(kernel="tiled", arch="sm_90", registers=regs, stack_frame=stack,
                   template_args=("128",) + tuple(str(t) for t in tm))]
    return sorted(f.code for f in lint_source(text, "t.cu", usage, Config(arch=("sm_90",))))


def test_no_register_cap_below_what_the_per_thread_arrays_hold():
    # 92 registers at 256 threads: 25%; the cap for 50% is 64, but acc[64] + a[8] + b[8] hold
    # 80 registers (no stack frame: ptxas keeps them in registers), so capping spills them
    assert _tiled(TILED, 92) == []
    # 4x4 tiles: 16 + 4 + 4 = 24 registers of arrays, a cap of 64 leaves room: a remedy
    small = TILED.replace("const int TM = 8", "const int TM = 4")
    assert _tiled(small, 92, tm=(4, 4)) == ["OCC001"]
    # a stack frame: some array lives in local memory, the figure is not known to be registers
    assert _tiled(TILED, 92, stack=64) == ["OCC001"]
    # a cliff 34 -> 32 is no remedy when 36 registers of arrays must stay live
    cliff = TILED.replace("const int TM = 8", "const int TM = 6").replace("acc[WMITER * TM * TN]", "acc[TM * TN]")
    assert _tiled(cliff, 34, tm=(6, 6)) == []
    assert _tiled(cliff.replace("acc[TM * TN]", "acc[TM]"), 34, tm=(6, 6)) == ["OCC010"]


HALF_TILED = """\
#include <cuda_fp16.h>
template <typename T, int TM>
__global__ void __launch_bounds__(256) tiled(T* c) {
    T acc[TM * TM] = {};
    T a[TM], b[TM];
    for (int i = 0; i < TM * TM; ++i) acc[i] += a[i % TM] * b[i % TM];
    c[threadIdx.x] = acc[0];
}
template <typename T> void run(T* c) { tiled<T, 8><<<1000, 256>>>(c); }
template void run<__half>(__half*);
"""


def test_a_half_tile_holds_a_register_per_element_and_the_instantiation_names_its_type():
    # leimao/CUDA-GEMM-Optimization's gemm_v05<__half, ..., 8, 8> (102 registers at 256
    # threads): "38 fewer registers (64) would allow 50%", but its 8x8 __half accumulators and
    # two 8-element vectors hold 80 registers (scalar halves are not packed), and the launch,
    # in a template function, named the element type only as its own `T`
    def codes(args, regs, text=HALF_TILED):
        usage = [Usage(kernel="tiled", arch="sm_90", registers=regs, template_args=args)]
        return sorted(f.code for f in lint_source(text, "t.cu", usage, Config(arch=("sm_90",))))
    assert codes(("__half", "8"), 102) == []
    assert codes(("float", "8"), 130) == []
    # a 32-byte stack frame (the vectorized variants keep a[8], b[8] there): 80 - 16 = 64
    # registers of arrays still, and a cap of 64 would spill
    usage = [Usage(kernel="tiled", arch="sm_90", registers=74, stack_frame=32,
                   template_args=("__half", "8"))]
    assert [f.code for f in lint_source(HALF_TILED, "t.cu", usage, Config(arch=("sm_90",)))] == []
    # 4x4: 16 + 4 + 4 registers of arrays, a cap of 64 leaves room: a remedy
    assert codes(("__half", "4"), 102, HALF_TILED.replace("tiled<T, 8>", "tiled<T, 4>")) == \
        ["OCC001"]


# --- 8: the one safe fix never changes when code runs -------------------------------------------

OPT_IN = """\
__global__ void k(float* x) { extern __shared__ float s[]; x[threadIdx.x] = s[threadIdx.x]; }
#define LAUNCH(x) \\
    k<<<100, 256, 65536>>>(x); \\
    k<<<100, 256, 65536>>>(x)
void run(float* x, bool go) {
    if (go)
        k<<<100, 256, 65536>>>(x);
    if (go) {
        k<<<100, 256, 65536>>>(x);   // fixed
    } else
        k<<<100, 256, 65536>>>(x);
    for (int i = 0; i < 2; ++i)
        k<<<100, 256, 65536>>>(x);
    do
        k<<<100, 256, 65536>>>(x);
    while (0);
    switch (go) {
    case true:
        k<<<100, 256, 65536>>>(x);   // fixed
    }
#if 1
    // a comment
    k<<<100, 256, 65536>>>(x);   // fixed
#endif
    k<<<100, 256, 65536>>>(x), go = false;
}
"""


def test_occ022_opt_in_is_offered_only_where_it_runs_exactly_when_the_launch_does():
    usage = [Usage(kernel="k", arch="sm_90", registers=32)]
    findings = [f for f in lint_source(OPT_IN, "k.cu", usage, Config(arch=("sm_90",)))
                if f.code == "OCC022"]
    lines = OPT_IN.splitlines()
    assert len(findings) >= 9
    fixed = {f.span.line for f in findings if f.fix is not None}
    assert fixed == {n for n, line in enumerate(lines, 1) if line.endswith("// fixed")}
    assert all(f.fix.applicability == "safe" for f in findings if f.fix is not None)


# --- benchmark sweeps: advice for a minority of the sizes a harness tries is not kept ------------

SWEEP = """\
__global__ void k(float* x) { extern __shared__ float s[]; x[threadIdx.x] = s[threadIdx.x]; }
void run(float* x, int n, bool small) {
    int sizes[] = {32, 64, 128, 256, 512, 1024};
    for (int j = 0; j < 6; ++j) {
        int block = sizes[j];
        k<<<n / block, block, 12800>>>(x);
    }
    int bs = small ? 32 : 256;
    k<<<n / bs, bs, 12800>>>(x);
    for (int j = 0; j < 6; ++j)
        k<<<n / sizes[j], sizes[j], 65536>>>(x);
}
"""


def test_a_benchmark_sweep_keeps_errors_and_advice_for_most_sizes_only():
    usage = [Usage(kernel="k", arch="sm_90", registers=32)]
    found = {(f.span.line, f.code) for f in lint_source(SWEEP, "k.cu", usage, Config(arch=("sm_90",)))}
    # 12800 B at 32 threads is 25% (shared memory binds); every larger size reaches the target
    assert (6, "OCC002") not in found                 # 1 of the 6 sizes a sweep tries
    assert (9, "OCC002") in found                     # one of two sizes a condition picks
    assert (11, "OCC022") in found                    # 64 KiB without the opt-in fails at every size


def test_no_limiter_advice_where_every_block_is_resident_at_once():
    """A constant grid of at most SMs x blocks/SM runs in one wave, one or two blocks per SM:
    a higher occupancy limit adds no block there, so OCC002's advice (a smaller tile) would not
    change the launch (mrakgr/Spiral-s-ML-Library: 39 such findings on 24-block tensor-core
    GEMMs). The same kernel over a large grid keeps it."""
    text = """\
__global__ void gemm(float* out) {
    extern __shared__ float tile[];
    tile[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[255 - threadIdx.x];
}

void run(float* out) {
    cudaFuncSetAttribute(gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, 98304);
    gemm<<<GRID, 256, 98304>>>(out);
}
"""
    usage = [Usage(kernel="gemm", arch="sm_90", registers=32, barriers=1)]
    for grid, expected in ((24, 0), (264, 0), (265, 1), (4096, 1)):   # H100: 132 SMs x 2 blocks
        findings = lint_source(text.replace("GRID", str(grid)), "g.cu", usage, Config(arch=("sm_90",)))
        assert sum(f.code == "OCC002" for f in findings) == expected, (grid, [f.message for f in findings])


def test_occ011_below_255_registers_does_not_ask_for_more_registers():
    """No cap binds and ptxas used 32 of 255 registers: it spilled with registers to spare (a
    call it did not inline), so "raise the register cap" (the old advice) cannot help."""
    text = "__global__ void __launch_bounds__(256) conv(double* x) { x[0] = 1; }\n"
    usage = [Usage(kernel="conv", arch="sm_90", registers=32, spill_stores=12, spill_loads=12,
                   max_registers=255, max_threads=256)]
    [f] = [f for f in lint_source(text, "c.cu", usage, Config(arch=("sm_90",))) if f.code == "OCC011"]
    assert "at 32 registers/thread, with no register cap binding, so more registers would not " \
           "remove them" in f.message and "raise the register cap" not in f.message


TILE = """\
__global__ void tile(float* x) {
    __shared__ float a[8192];
    a[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = a[threadIdx.x ^ 1];
}

void run(float* x, int n) { tile<<<n, 128>>>(x); }
"""


def test_occupancy_without_compiler_figures_says_registers_were_not_measured():
    # SGEMM_CUDA's runner.cu without cuBLAS's headers: nvcc failed, so 37.5% "limited by shared
    # memory" assumed registers bind nothing (they bind first, at 12.5%, once it compiles)
    config = Config(arch=("sm_90",))
    unmeasured = [f for f in lint_source(TILE, "t.cu", [], config) if f.code == "OCC002"]
    assert len(unmeasured) == 1
    assert unmeasured[0].message.endswith(
        "[registers not measured (no compiler figures for this kernel): these figures hold only "
        "where registers do not limit it first]")
    assert unmeasured[0].data["measured"] is False
    measured = [f for f in lint_source(TILE, "t.cu", [Usage(kernel="tile", arch="sm_90", registers=32,
                                                             static_smem=32768)], config)
                if f.code == "OCC002"]
    assert len(measured) == 1 and "not measured" not in measured[0].message
    assert measured[0].data["measured"] is True


def test_a_small_grid_without_compiler_figures_says_registers_were_not_measured():
    # NVIDIA-developer-blog's longstaff sample: OCC033's "16 x 132 = 2112" blocks/SM came from
    # an occupancy without registers (its unit did not compile) and did not say so
    text = ("__global__ void spread(float* x, int n) {\n"
            "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
            "        x[i] *= 2.0f;\n}\n"
            "void run(float* x, int n) { spread<<<16, 128>>>(x, n); }\n")
    config = Config(arch=("sm_90",))
    (small,) = [f for f in lint_source(text, "s.cu", [], config) if f.code == "OCC033"]
    assert "registers not measured" in small.message and small.data["measured"] is False
    measured = lint_source(text, "s.cu", [Usage(kernel="spread", arch="sm_90", registers=16)], config)
    (small,) = [f for f in measured if f.code == "OCC033"]
    assert "not measured" not in small.message and small.data["measured"] is True


def test_a_compilers_errors_at_one_line_are_all_said_not_offered_as_alternatives():
    # NVIDIA-developer-blog's LICENSE.gups.cu: nvcc's three errors at line 1 read "... type
    # specifier or identifier "c" is undefined or expected a ;", as if one of them held
    from occlint.aggregate import _combine

    assert _combine("message", ["no type specifier", 'identifier "c" is undefined']) == \
        'no type specifier; identifier "c" is undefined'
    assert _combine("limiter", ["limited by registers", "limited by warps"]) == \
        "limited by registers or limited by warps"           # one per instance: which depends


PER_THREAD = """\
#define HIST_THREADS 64
#define TILE 64
__global__ void hist(const unsigned char* in, unsigned* out) {
    __shared__ unsigned char bins[HIST_THREADS * 256];     // 256 one-byte bins per thread
    __shared__ int flag;
    bins[threadIdx.x * 256 + in[threadIdx.x]]++;
    flag = 1;
    out[threadIdx.x] = bins[threadIdx.x * 256] + flag;
}
__global__ void tile(const float* in, float* out) {
    __shared__ float t[TILE * 64];                           // a 64 x 64 tile, not per thread
    t[threadIdx.x] = in[threadIdx.x];
    out[threadIdx.x] = t[threadIdx.x];
}
void run(const unsigned char* in, unsigned* out, const float* f, float* g) {
    unsigned nThreads = HIST_THREADS;
    dim3 threads(nThreads, 1, 1);
    hist<<<100000, threads>>>(in, out);
    tile<<<100000, 64>>>(f, g);
}
"""


def test_shared_memory_that_is_per_thread_storage_is_advised_per_thread_not_as_a_tile():
    # cudpp's compress kernels keep a 256-byte histogram per thread in shared memory, so shared
    # memory grows with the block and caps occupancy near 42% at any block size: OCC002's "use a
    # smaller tile" meant fewer bytes per thread (cuda-samples' generateTriangles2 is that fix:
    # 144 bytes per thread instead of generateTriangles' 288)
    usage = [Usage(kernel="hist", arch="sm_90", registers=16, static_smem=16388),
             Usage(kernel="tile", arch="sm_90", registers=16, static_smem=16384)]
    found = {f.kernel: f for f in lint_source(PER_THREAD, "p.cu", usage, Config(arch=("sm_90",)))
             if f.code in ("OCC002", "OCC020")}
    assert sorted((f.code, k) for k, f in found.items()) == [("OCC002", "hist"), ("OCC020", "tile")]
    msg = found["hist"].message
    assert msg.startswith("`hist` keeps 256 bytes of shared memory per thread (`bins`: 16388 bytes/block "
                          "at 64 threads), so at any block size its occupancy on sm_90 is at most 42.2%")
    # 219 bytes at 128 threads: 8 blocks of 219 x 128 + 4 (`flag`) + 1,024 reserved fit in 228 KB
    assert "at most 219 bytes per thread (37 fewer) would allow 50% (at 128 threads/block)" in msg
    assert "smaller tile" not in msg
    # `tile` at 64 threads: TILE is 64 too, but the launch's block is not written with it


def test_a_kernel_known_only_from_the_cubin_is_shown_within_its_max_threads():
    # moderngpu's instantiations bounded at 128 threads were shown at "best block size 1024"
    from occlint.report import best_evaluation

    u = Usage(kernel="mgpu::k", arch="sm_90", registers=48, template_args=("128",), max_threads=128)
    ev = best_evaluation("sm_90", u, None, "x.cu")
    assert ev.block <= 128 and ev.max_block == 128, ev
    free = best_evaluation("sm_90", Usage(kernel="k", arch="sm_90", registers=48), None, "x.cu")
    assert free.block > 128


def test_a_register_cap_without_a_launch_names_the_usual_block_sizes_it_serves():
    # nvdiffrast's texture kernels (no launch in the .cu; launched at 64 threads from .cpp):
    # "would reach 50% at 1024 threads/block (1 block/SM)" read as advice to launch 1024 threads
    text = "__global__ void heavy(float* x) { x[threadIdx.x] = 0.0f; }\n"
    usage = [Usage(kernel="heavy", arch="sm_90", registers=68)]
    (f,) = [f for f in lint_source(text, "h.cu", usage, Config(arch=("sm_90",))) if f.code == "OCC001"]
    assert "4 fewer registers/thread (64) would reach 50% at 32, 64, 128, 256, 512 or 1024 " \
           "threads/block" in f.message, f.message
    assert "1 block/SM" not in f.message


def test_spills_well_under_a_register_cap_are_not_the_caps():
    # apex's group_norm one-pass kernels: __launch_bounds__(512) caps registers at 128, but the
    # instantiations spilling at 32-64 registers were OCC012 "use the loosest cap ..."
    text = "__global__ void __launch_bounds__(512) norm(float* x) { x[threadIdx.x] = 0.0f; }\n"
    config = Config(arch=("sm_90",))

    def codes(regs):
        u = Usage(kernel="norm", arch="sm_90", registers=regs, spill_stores=1860, spill_loads=2520,
                  max_threads=512, max_registers=128)
        return [f.code for f in lint_source(text, "n.cu", [u], config) if f.code in ("OCC011", "OCC012")]

    assert codes(32) == ["OCC011"]
    assert codes(128) == ["OCC012"]
    # the block size alone sets the cap (ccminer's keccak256 at `__launch_bounds__(1024, 1)`:
    # 8 B of spills at 64 registers): no looser cap exists, a smaller block gives more
    big = text.replace("(512)", "(1024, 1)")
    u = Usage(kernel="norm", arch="sm_90", registers=64, spill_stores=8, spill_loads=4,
              max_threads=1024, max_registers=64)
    (f,) = [f for f in lint_source(big, "n.cu", [u], config) if f.code == "OCC012"]
    assert f.message.endswith("at 64 registers/thread, the most a 1024-thread block leaves each "
                              "thread; 512 threads/block would allow up to 128"), f.message
    u = Usage(kernel="norm", arch="sm_90", registers=128, spill_stores=8, spill_loads=4,
              max_threads=512, max_registers=128)
    (f,) = [f for f in lint_source(text, "n.cu", [u], config) if f.code == "OCC012"]
    assert "256 threads/block would allow up to 255" in f.message, f.message


def test_a_small_grid_with_no_occupancy_does_not_make_up_blocks_per_sm():
    # pytorch3d's rasterize_coarse.cu: dynamic shared memory of unknown size, so no occupancy;
    # OCC033 said "size the grid from blocks/SM x SMs (1 x 132 = 132)", the 1 a placeholder
    text = ("__global__ void k(float* out, int n) {\n"
            "    extern __shared__ char s[];\n"
            "    for (int i = blockIdx.x; i < n; i += gridDim.x) out[i] = s[threadIdx.x];\n}\n"
            "void run(float* out, int n, int bx) { k<<<64, 512, bx * 64>>>(out, n); }\n")
    (f,) = [f for f in lint_source(text, "r.cu", [Usage(kernel="k", arch="sm_90", registers=16)],
                                   Config(arch=("sm_90",))) if f.code == "OCC033"]
    assert "1 x 132" not in f.message and "the blocks each SM holds x 132 SMs" in f.message, f.message


DISPATCH = """\
template <unsigned N> __global__ void reduce(float* out) { out[threadIdx.x] = N; }
void run(float* out, int threads, int blocks) {
    switch (threads) {
    case 1024: reduce<1024><<<blocks, threads>>>(out); break;
    case 512: reduce<512><<<blocks, threads>>>(out); break;
    case 64: reduce<64><<<blocks, threads>>>(out); break;
    case 16: reduce<16><<<blocks, threads>>>(out); break;
    case 1: reduce<1><<<blocks, threads>>>(out); break;
    }
}
"""


def test_a_size_dispatch_has_block_sizes_but_no_block_size_advice():
    # cuda-samples' reduction and threadFenceReduction: reading `threads` in each `case` gave
    # 117 launches a block size, and 77 findings (OCC031 at 1..16 threads, OCC003 at small
    # cases, OCC030 at `case 1024`) about sizes the caller picks at run time
    from occlint.source import parse

    sf = parse(DISPATCH, "d.cu")
    assert [la.block.x for la in sf.launches] == [1024, 512, 64, 16, 1]
    assert all(la.dispatch for la in sf.launches)
    usage = [Usage(kernel="reduce", arch="sm_86", registers=16, template_args=(str(n),))
             for n in (1024, 512, 64, 16, 1)]
    findings = lint_source(DISPATCH, "d.cu", usage, Config(arch=("sm_86",)))
    assert not [f for f in findings if f.code in ("OCC003", "OCC030", "OCC031")], \
        [f.message for f in findings]
    plain = DISPATCH.replace("<<<blocks, threads>>>", "<<<blocks, 16>>>", 4)   # written sizes
    assert {f.code for f in lint_source(plain, "d.cu", usage, Config(arch=("sm_86",)))} >= \
        {"OCC031"}


OVERLOADS = """\
template <int N> __global__ void k(const float* in, float* out) { out[threadIdx.x] = in[0]; }
template <int N> __global__ void k(const float* in, float* out, int scale) { out[0] = scale; }
__global__ void init(int n, double* c) { c[n] = 0; }
__global__ void init(int n, double* a, double* b, double* c) { a[n] = b[n] = c[n]; }
void light(const float* in, float* out) { k<28><<<1000, 256>>>(in, out); }
void heavy(const float* in, float* out) { k<28><<<1000, 256>>>(in, out, 2); }
void fill(double* a, double* c) { init<<<1000, 1024>>>(8, c); init<<<1000, 1024>>>(8, a, a, c); }
"""


def test_overloaded_kernels_each_get_their_own_figures():
    # multi-gpu-programming-models' two jacobi_kernel<32, 32> overloads, ParRes/Kernels' two
    # `init`s: each definition listed both overloads' figures, a launch got the other's (OCC001
    # at the light launch, its fix on the light overload) or none ("could not be matched")
    usage = [Usage(kernel="k", arch="sm_90", registers=10, template_args=("28",),
                   mangled="_Z1kILi28EEvPKfPf"),
             Usage(kernel="k", arch="sm_90", registers=74, template_args=("28",),
                   mangled="_Z1kILi28EEvPKfPfi"),
             Usage(kernel="init", arch="sm_90", registers=8, mangled="_Z4initiPd"),
             Usage(kernel="init", arch="sm_90", registers=72, mangled="_Z4initiPdS_S_")]
    findings = lint_source(OVERLOADS, "o.cu", usage, Config(arch=("sm_90",)))
    got = sorted((f.code, f.span.line) for f in findings)
    assert ("OCC001", 6) in got and ("OCC001", 5) not in got, got
    fix = next(f for f in findings if f.code == "OCC001" and f.span.line == 6).fix
    assert fix is not None and all(e.span.line == 2 for e in fix.edits)
    # the 1024-thread launch of the 72-register `init` cannot launch; the 8-register one can
    fails = [f for f in findings if f.code == "OCC034"]
    assert [f.span.line for f in fails] == [7] and "72 registers" in fails[0].message


HOST_TEMPLATE = """\
template <typename T, int BLOCK> __global__ void heavy(const T* in, T* out) { out[0] = in[0]; }
template <typename T> void run(const T* in, T* out) { heavy<T, 4096><<<1000, 1024>>>(in, out); }
template void run<float>(const float*, float*);
template void run<int>(const int*, int*);
template <typename T> __global__ void fill(T* out) { out[threadIdx.x] = T(0); }
void zero(half* h) { fill<half><<<1000, 1024>>>(h); }
"""


def test_a_launch_with_unknown_template_arguments_runs_each_instantiation_they_allow():
    # bitsandbytes launches `kernel<T, 4096><<<b, 1024>>>` from its host templates and
    # `fill<half>` where ptxas names `__half`; BabelStream deduces `dot_kernel<<<...>>>(a, b)`:
    # every such launch said "could not be matched" and got a source-only OCC030 instead of
    # the OCC034 that 254 registers at 1024 threads earn
    usage = [Usage(kernel="heavy", arch="sm_90", registers=254, template_args=(t, "4096"),
                   mangled=f"_Z5heavyI{m}Li4096EEvPKT_PS0_") for t, m in (("float", "f"), ("int", "i"))]
    usage.append(Usage(kernel="fill", arch="sm_90", registers=80, template_args=("__half",),
                       mangled="_Z4fillI6__halfEvPT_"))
    findings = lint_source(HOST_TEMPLATE, "h.cu", usage, Config(arch=("sm_90",)))
    fails = {f.span.line: f for f in findings if f.code == "OCC034"}
    assert set(fails) == {2, 6}, [(f.code, f.span.line, f.message) for f in findings]
    assert len(fails[2].instances) == 2 and "(2 instantiations)" in fails[2].message
    assert not [f for f in findings if f.code == "OCC030"]


UNKNOWN_DYNAMIC = """\
template <int MT> __global__ void __launch_bounds__(256) tile(float* out) {
    extern __shared__ char smem[];
    smem[threadIdx.x] = 1;
    out[threadIdx.x] = smem[255 - threadIdx.x];
}
template <int MT> void launch(float* out, int bytes) { tile<MT><<<1000, 256, bytes>>>(out); }
template void launch<32>(float*, int);
"""


def test_no_register_advice_where_unknown_dynamic_shared_memory_may_limit_first():
    # bitsandbytes' gemm_4bit_sm80 tile<T, 32, 256, 128>: 156,672 B of dynamic shared memory
    # from a host template's constexpr; read at 0 B, OCC001 promised 50% from a register cap
    # where one block per SM fits whatever the registers
    usage = [Usage(kernel="tile", arch="sm_90", registers=76, template_args=("32",))]
    findings = lint_source(UNKNOWN_DYNAMIC, "t.cu", usage, Config(arch=("sm_90",)))
    assert not [f for f in findings if f.code in ("OCC001", "OCC003", "OCC010")], \
        [f.message for f in findings]
    known = UNKNOWN_DYNAMIC.replace("256, bytes>>>", "256, 156672>>>")
    codes = {f.code for f in lint_source(known, "t.cu", usage, Config(arch=("sm_90",)))}
    assert codes & {"OCC002", "OCC022"} and "OCC001" not in codes, codes


TWO_TILES = """\
template <int N> __global__ void __launch_bounds__(256) tile(float* out) { out[threadIdx.x] = N; }
void run(float* out) { tile<40><<<1000, 256>>>(out); tile<30><<<1000, 256>>>(out); }
"""


def test_a_bound_that_would_cut_another_instantiation_too_far_is_not_offered():
    # OCC001 on tile<30> (80 registers) offered __launch_bounds__(256, 4) on the template,
    # which caps tile<40> (128 registers) at 64 too: 172 B of spills after --fix
    def usage(regs40):
        return [Usage(kernel="tile", arch="sm_90", registers=80, template_args=("30",)),
                Usage(kernel="tile", arch="sm_90", registers=regs40, template_args=("40",))]
    findings = lint_source(TWO_TILES, "t.cu", usage(128), Config(arch=("sm_90",)))
    (f,) = [f for f in findings if f.code == "OCC001"]
    assert "tile<30>" in f.message and f.fix is None
    findings = lint_source(TWO_TILES, "t.cu", usage(72), Config(arch=("sm_90",)))
    assert [f.fix is not None for f in findings if f.code == "OCC001"] == [True]


def test_a_block_a_function_computes_from_the_data_gets_no_block_size_advice():
    # cuda-samples' shfl_scan: `int blockSize = iDivUp(w, 16); // each thread handles 16
    # values, use 1 block/row` is 120 threads for a 1920-wide image; OCC031 said "use 128"
    text = ("static unsigned iDivUp(unsigned a, unsigned b) { return (a + b - 1) / b; }\n"
            "__global__ void rows(int* d) { d[threadIdx.x] = 0; }\n"
            "void run(int* d) {\n  int w = 1920;\n  int blockSize = iDivUp(w, 16);\n"
            "  rows<<<1080, blockSize>>>(d);\n}\n")
    usage = [Usage(kernel="rows", arch="sm_90", registers=16)]
    from occlint.source import parse
    (la,) = parse(text, "r.cu").launches
    assert la.block.x == 120 and la.computed
    assert not [f.code for f in lint_source(text, "r.cu", usage, Config(arch=("sm_90",)))
                if f.code == "OCC031"]
    written = text.replace("<<<1080, blockSize>>>", "<<<1080, 120>>>")
    assert "OCC031" in {f.code for f in lint_source(written, "r.cu", usage, Config(arch=("sm_90",)))}


def test_a_template_launched_where_its_definition_is_not_seen_is_matched_by_its_arguments():
    # bitsandbytes' ops.cu launches kernels.cuh's declared templates, defined and instantiated
    # in kernels.cu: 21 launches said "could not be matched to one compiled instantiation"
    text = ("template <typename T> void run(const T* a, T* b) {\n"
            "  kQuantize<T, 4096, 4><<<1000, 1024>>>(a, b);\n  kSmall<T, 64><<<1000, 32>>>(a, b);\n}\n"
            "template void run<float>(const float*, float*);\n")
    usage = [Usage(kernel="kQuantize", arch="sm_90", registers=r, template_args=(t, "4096", "4"))
             for t, r in (("float", 80), ("__half", 90))]
    usage += [Usage(kernel="kSmall", arch="sm_90", registers=16, template_args=("float", "64"))]
    findings = lint_source(text, "ops.cu", usage, Config(arch=("sm_90",)))
    fails = [f for f in findings if f.code == "OCC034"]
    assert [f.span.line for f in fails] == [2] and "(2 instantiations)" in fails[0].message


def test_a_bounds_fix_that_would_cap_another_arch_checked_is_not_offered():
    # darknet's backward_shortcut_multilayer_kernel (-rdc): OCC010 on sm_90 (44 registers, 4
    # to shed) offered `__launch_bounds__(512, 3)`, which also took sm_80 from 55 to 40
    # registers (40 B of spills), unsaid. One arch checked: the fix stays
    text = ("__global__ void k(float* x) { x[threadIdx.x] *= 2.f; }\n"
            "void run(float* x) { k<<<1000, 512>>>(x); }\n")
    both = [Usage(kernel="k", arch="sm_90", registers=44), Usage(kernel="k", arch="sm_80", registers=55)]
    found = [f for f in lint_source(text, "k.cu", both, Config(arch=("sm_80", "sm_90")))
             if f.code == "OCC010" and f.arch == "sm_90"]
    assert found and all(f.fix is None for f in found)
    alone = [f for f in lint_source(text, "k.cu", both[:1], Config(arch=("sm_90",)))
             if f.code == "OCC010"]
    assert alone[0].fix is not None and "__launch_bounds__(512, 3)" in alone[0].fix.edits[0].content
