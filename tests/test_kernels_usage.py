"""`occlint kernels` with compiler figures: real nvcc, per arch, per instantiation."""

import json

from conftest import run_cli, run_main

SOURCE = """\
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) tile(float* out) {
    __shared__ float s[BLOCK];
    s[threadIdx.x] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[BLOCK - 1 - threadIdx.x];
}

void run(float* out) {
    tile<128><<<1000, 128>>>(out);
    tile<256><<<1000, 256>>>(out);
}
"""



def _listed(root, *args: str, arch: str = "sm_90") -> list[dict]:
    """The records of `occlint kernels --json --arch ARCH --no-cache ARGS...` run in `root`."""
    return json.loads(run_main("kernels", "--json", "--arch", arch, "--no-cache", *args,
                               cwd=root).stdout)

def _ptxas_figures(nvcc, path, arch):
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o",
                            f"{tmp}/x.cubin", str(path)], capture_output=True, text=True, check=True)
    return [(int(m.group(1)), int(m.group(2)))
            for m in re.finditer(r"Used (\d+) registers.*?(\d+) bytes smem", r.stderr)]


def test_kernels_json_carries_usage_and_launch_occupancy(tmp_path, nvcc_path):
    src = tmp_path / "tile.cu"
    src.write_text(SOURCE)
    r = run_cli("kernels", "--json", "--arch", "sm_80,sm_90", "--no-cache", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)
    kernel = next(x for x in recs if x["kind"] == "kernel")
    assert set(kernel["usage"]) == {"sm_80", "sm_90"}
    for arch in ("sm_80", "sm_90"):
        inst = sorted((i["static_smem"], i["registers"]) for i in kernel["instantiations"]
                      if i["arch"] == arch)
        ptxas = sorted((smem, regs) for regs, smem in _ptxas_figures(nvcc_path, src, arch))
        assert inst == ptxas                       # exactly what ptxas reports, both instantiations
        assert [s for s, _ in inst] == [512, 1024]
        assert kernel["usage"][arch]["static_smem"] == 1024   # the largest instantiation
    launches = [x for x in recs if x["kind"] == "launch"]
    assert [x["block"] for x in launches] == [128, 256]
    for la in launches:
        assert set(la["occupancy"]) == {"sm_80", "sm_90"}
        o = la["occupancy"]["sm_90"]
        assert 0 < o["occupancy"] <= 1 and o["active_blocks"] >= 1
        assert o["limiter_words"].startswith("limited by")


def test_kernels_no_compile_has_no_usage(tmp_path):
    src = tmp_path / "tile.cu"
    src.write_text(SOURCE)
    r = run_main("kernels", "--json", "--no-compile", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)
    assert all("usage" not in x and "occupancy" not in x for x in recs)
    assert [x["block"] for x in recs if x["kind"] == "launch"] == [128, 256]


def test_kernels_text_names_instantiations_launches_and_missing_occupancy(tmp_path, nvcc_path):
    src = tmp_path / "tile.cu"
    src.write_text(SOURCE + "void more(float* out, int bs) { tile<128><<<10, bs>>>(out); }\n")
    r = run_cli("kernels", "--arch", "sm_90", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    regs = {a: b for b, a in _ptxas_figures(nvcc_path, src, "sm_90")}
    assert (f"    sm_90 tile<128>: {regs[512]} registers, 0 B spill stores, 0 B spill loads, "
            "512 B static shared memory, 1 barrier") in lines
    assert (f"    sm_90 tile<256>: {regs[1024]} registers, 0 B spill stores, 0 B spill loads, "
            "1 KiB static shared memory, 1 barrier") in lines
    assert any(line.endswith(": launch tile<128><<<1000, 128>>> grid=1000 block=128 smem=0")
               for line in lines)
    assert "<<<>>>" not in r.stdout
    assert ("    no occupancy: the block size `bs` is a parameter of `more`, which this file does "
            "not call (another file's call is read only for a dim3 block, in a file beside this "
            "one that includes the header of its name)") in lines
    one = [line for line in lines if "occupancy 100.0%" in line or "occupancy" in line]
    assert all("(1 blocks/SM)" not in line for line in one)
    nocomp = run_cli("kernels", "--no-compile", str(src), cwd=tmp_path).stdout
    assert "no occupancy: not compiled" in nocomp


BASES = """\
__global__ void launched(float* x, int steps) { x[threadIdx.x] *= 2; }
constexpr int bound() { int b = 0; for (int i = 0; i < BOUND; ++i) ++b; return b; }
__global__ void __launch_bounds__(bound()) bounded(float* x, int steps) { x[threadIdx.x] *= 2; }
__global__ void runtime_only(float* x, int steps) {
    float acc[40];
#pragma unroll
    for (int j = 0; j < 40; ++j) acc[j] = x[j * blockDim.x + threadIdx.x];
    for (int i = 0; i < steps; ++i) {
#pragma unroll
        for (int j = 0; j < 40; ++j) acc[j] = acc[j] * acc[(j + 1) % 40] + x[i];
    }
#pragma unroll
    for (int j = 0; j < 40; ++j) x[j * blockDim.x + threadIdx.x] = acc[j];
}
void run(float* x, int threads) {
    launched<<<100, 128>>>(x, 1);
    runtime_only<<<100, threads>>>(x, 1);
}
"""


def test_every_compiled_kernel_has_an_occupancy_with_its_basis(tmp_path, nvcc_path):
    """launch: a constant launch; launch_bounds: bounds only the cubin knows (a constexpr
    function with a loop, which the parser does not evaluate); best: the best block size, which the engine
    confirms is the best."""
    from occlint import occupancy

    src = tmp_path / "b.cu"
    src.write_text(BASES)
    (tmp_path / "occlint.toml").write_text('nvcc-flags = ["-DBOUND=192"]\n')
    r = run_cli("kernels", "--json", "--arch", "sm_90", "--no-cache", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    kernels = {x["name"]: x for x in json.loads(r.stdout) if x["kind"] == "kernel"}
    occ = {name: k["occupancy"]["sm_90"] for name, k in kernels.items()}
    assert occ["launched"]["basis"] == "launch" and occ["launched"]["block_size"] == 128
    assert occ["bounded"]["basis"] == "launch_bounds" and occ["bounded"]["block_size"] == 192
    assert occ["bounded"]["bounds_from"] == "cubin"
    assert kernels["bounded"]["instantiations"][0]["max_threads"] == 192
    best = occ["runtime_only"]
    assert best["basis"] == "best" and best["limiter"] == "registers"
    regs = kernels["runtime_only"]["usage"]["sm_90"]["registers"]
    every = [occupancy.compute("sm_90", b, regs).occupancy for b in range(32, 1025, 32)]
    assert best["occupancy"] == round(max(every), 4) < 1
    assert occupancy.compute("sm_90", best["block_size"], regs).occupancy == max(every)
    r = run_cli("kernels", "--arch", "sm_90", "--no-cache", str(src), cwd=tmp_path)
    assert "best over block sizes" in r.stdout and "at its __launch_bounds__" in r.stdout


def test_kernels_measures_a_header_given_alone_through_its_includer(tmp_path, nvcc_path):
    """As `check` does: the header's kernel gets the includer's figures, and its launch the
    block size from the macros the includer defines before the #include."""
    (tmp_path / "sizes.h").write_text("#define BLOCKDIM_X 8\n#define BLOCKDIM_Y 8\n")
    (tmp_path / "k.cuh").write_text(
        "__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }\n"
        "void run(float* x) { dim3 threads(BLOCKDIM_X, BLOCKDIM_Y); k<<<100, threads>>>(x); }\n")
    (tmp_path / "a.cu").write_text('#include "sizes.h"\n#include "k.cuh"\n')
    r = run_main("kernels", "--json", "--arch", "sm_90", "--no-cache", "k.cuh", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    recs = json.loads(r.stdout)
    [kernel] = [x for x in recs if x["kind"] == "kernel"]
    [launch] = [x for x in recs if x["kind"] == "launch"]
    assert kernel["usage"]["sm_90"]["registers"] > 0
    assert launch["block"] == 64 and launch["occupancy"]["sm_90"]["active_blocks"] > 0


SAME_NAME_A = "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\nvoid run_a(float* x) { k<<<1000, 256>>>(x); }\n"
SAME_NAME_B = """\
__global__ void k(float* x) {
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = x[i * blockDim.x + threadIdx.x] * x[i];
    float s = 0;
#pragma unroll
    for (int i = 0; i < 64; i++) s += acc[i] * acc[63 - i] + acc[(i * 7) % 64];
    x[threadIdx.x] = s;
}
void run_b(float* x) { k<<<1000, 1024>>>(x); }
"""
USES_OTHER = "__global__ void other(float* x);\nvoid run_c(float* x) { other<<<1000, 128>>>(x); }\n"
DEFINES_OTHER = "__global__ void other(float* x) { x[threadIdx.x] *= 2.0f; }\n"
FAILS = '#include "missing_header.h"\n__global__ void f(float* x) { x[0] = 1.0f; }\nvoid run_f(float* x) { f<<<1000, 1024>>>(x); }\n'


def _ptxas_registers(nvcc, path):
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-o", f"{tmp}/x.cubin",
                            str(path)], capture_output=True, text=True, check=True)
    (regs,) = re.findall(r"Used (\d+) registers", r.stderr)
    return int(regs)


def test_kernels_gives_each_launch_its_own_units_figures(tmp_path, nvcc_path):
    # code-samples' dataElem*.cu and cuda-samples' dozen `testKernel`s: every unit's kernel of
    # that name was merged into every launch (registers null, and b.cu's 1024-thread launch of
    # an 80-register kernel got "100%", where check says it cannot launch); a failed unit's
    # launch got made-up figures beside a unit that compiled
    files = {"a.cu": SAME_NAME_A, "b.cu": SAME_NAME_B, "c.cu": USES_OTHER, "d.cu": DEFINES_OTHER,
             "m.cu": FAILS}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    r = run_main("kernels", "--json", "--arch", "sm_90", "--no-cache", *files, cwd=tmp_path)
    recs = json.loads(r.stdout)
    launch = {x["path"]: x for x in recs if x["kind"] == "launch"}
    regs = {name: _ptxas_registers(nvcc_path, tmp_path / name) for name in ("a.cu", "b.cu", "d.cu")}
    assert regs["a.cu"] != regs["b.cu"] and regs["b.cu"] > 64
    assert launch["a.cu"]["occupancy"]["sm_90"]["registers"] == regs["a.cu"]
    b = launch["b.cu"]["occupancy"]["sm_90"]             # 1024 threads x its registers > 64K
    assert (b["registers"], b["active_blocks"], b["limiter"]) == (regs["b.cu"], 0, "registers")
    kernel_b = next(x for x in recs if x["kind"] == "kernel" and x["path"] == "b.cu")
    assert {i["registers"] for i in kernel_b["instantiations"]} == {regs["b.cu"]}
    # a kernel another unit defines, its name that unit's alone (-rdc): that unit's figures
    assert launch["c.cu"]["occupancy"]["sm_90"]["registers"] == regs["d.cu"]
    assert not launch["m.cu"].get("occupancy")
    assert launch["m.cu"]["no_occupancy"].startswith("nvcc failed on this file")
    alone = _listed(tmp_path, "m.cu")
    assert next(x for x in alone if x["kind"] == "launch")["no_occupancy"].startswith(
        "nvcc failed on this file")


HEADER_TEMPLATE = """\
template <int BM, int TM>
__global__ void __launch_bounds__(BM / TM, 1) tile(float *a) {
  __shared__ float s[BM];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[(threadIdx.x + 1) % (BM / TM)];
}
"""

HEADER_RUNNER = """\
#include "tile.cuh"
void run(float *a, int m) {
  const int TM = 8;
  if (m >= 128) {
    const int BM = 1024;
    dim3 block(BM / TM);
    tile<BM, TM><<<1, block>>>(a);
  } else {
    const int BM = 512;
    dim3 block(BM / TM);
    tile<BM, TM><<<1, block>>>(a);
  }
}
"""


def test_kernels_matches_a_launch_to_its_instantiation_of_a_header_kernel(tmp_path, nvcc_path):
    # SGEMM_CUDA's runner.cu launches templates its headers define, two instantiations each,
    # with block sizes from `const` locals of each branch: every such launch said "could not be
    # matched to one compiled instantiation" (the listing did not see the header's definition)
    (tmp_path / "tile.cuh").write_text(HEADER_TEMPLATE)
    (tmp_path / "run.cu").write_text(HEADER_RUNNER)
    figures = {smem: regs for regs, smem in _ptxas_figures(nvcc_path, tmp_path / "run.cu", "sm_90")}
    assert set(figures) == {4096, 2048}
    recs = _listed(tmp_path, "run.cu")
    got = [(r["block"], r["occupancy"]["sm_90"]["static_smem"], r["occupancy"]["sm_90"]["registers"])
           for r in recs if r["kind"] == "launch"]
    assert got == [(128, 4096, figures[4096]), (64, 2048, figures[2048])]


def test_a_unit_whose_compile_failed_borrows_no_other_units_figures(tmp_path, nvcc_path):
    # ParRes/Kernels' transpose-*-nccl units (mpi.h missing) listed with units that compile:
    # a launch of a kernel the failed unit's own header defines took another unit's
    # same-named kernel's figures ("62.5%, limited by shared memory": that one has 40 KiB of
    # shared memory, this one none) or said "defined in a file not listed"
    (tmp_path / "kern.h").write_text(
        "__global__ void simple(const double *A, double *B) { B[threadIdx.x] = A[threadIdx.x]; }\n")
    (tmp_path / "fails.cu").write_text(
        '#include "missing_library_header.h"\n#include "kern.h"\n'
        "void run(const double *A, double *B) { simple<<<8, 256>>>(A, B); }\n")
    (tmp_path / "other.cu").write_text(
        "__global__ void simple(const double *A, double *B) {\n"
        "  __shared__ double big[32][160];\n  big[threadIdx.y][threadIdx.x] = A[threadIdx.x];\n"
        "  __syncthreads();\n  B[threadIdx.x] = big[31 - threadIdx.y][threadIdx.x];\n}\n"
        "void run3(const double *A, double *B) { simple<<<8, 256>>>(A, B); }\n")
    recs = json.loads(run_main("kernels", "--json", "--arch", "sm_90", "--no-cache", "fails.cu",
                               "other.cu", cwd=tmp_path).stdout)
    launch = {r["path"]: r for r in recs if r["kind"] == "launch"}
    assert not launch["fails.cu"].get("occupancy")
    assert launch["fails.cu"]["no_occupancy"].startswith("nvcc failed on this file")
    assert launch["other.cu"]["occupancy"]["sm_90"]["limiter"] == "shared_memory"


def test_a_header_whose_includers_all_failed_says_so(tmp_path, nvcc_path):
    # xgboost without dmlc-core: device_helpers.cuh's LaunchN launch said "nvcc reported no
    # figures for this file's kernels (defined in a file not listed, ...)", where nvcc stopped
    # at a missing header in every unit that includes it
    (tmp_path / "helpers.cuh").write_text(
        "template <typename L> __global__ void each(int n, L f) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) f(i); }\n"
        "template <typename L> void launch_n(int n, L f) { each<<<(n + 255) / 256, 256>>>(n, f); }\n")
    (tmp_path / "user.cu").write_text(
        '#include <dmlc/omp.h>\n#include "helpers.cuh"\n'
        "struct Fill { float* p; __device__ void operator()(int i) const { p[i] = 1.f; } };\n"
        "void run(float* p, int n) { launch_n(n, Fill{p}); }\n")
    for args in (("helpers.cuh", "user.cu"), ("helpers.cuh",)):
        recs = _listed(tmp_path, *args)
        launch = next(r for r in recs if r["kind"] == "launch" and r["path"] == "helpers.cuh")
        assert launch["no_occupancy"].startswith(
            "nvcc failed on `user.cu`, which includes this file (its warning above says why)"), args


def test_kernels_gives_a_launch_of_several_instantiations_the_lowest(tmp_path, nvcc_path):
    # BabelStream's `dot_kernel<<<nblocks, TBSIZE_DOT>>>(a, b, ...)` in a class template
    # instantiated for float and double: "could not be matched to one compiled instantiation"
    (tmp_path / "d.cu").write_text(
        "template <class T> __global__ void dot(const T* a, T* s) {\n"
        "  __shared__ T tile[1024];\n  tile[threadIdx.x] = a[threadIdx.x];\n  __syncthreads();\n"
        "  s[threadIdx.x] = tile[1023 - threadIdx.x];\n}\n"
        "template <class T> void run(const T* a, T* s) { dot<<<64, 1024>>>(a, s); }\n"
        "template void run<float>(const float*, float*);\n"
        "template void run<double>(const double*, double*);\n")
    recs = _listed(tmp_path, "d.cu")
    (launch,) = [r for r in recs if r["kind"] == "launch"]
    o = launch["occupancy"]["sm_90"]
    assert o["instantiations"] == 2 and o["occupancy"] == 1.0
    assert o["instantiation"] in ("dot<float>", "dot<double>")


def test_check_gives_a_launch_the_figures_of_the_unit_that_instantiates_its_kernel(tmp_path, nvcc_path):
    # bitsandbytes: kernels.cuh declares the templates, kernels.cu defines and instantiates
    # them, ops.cu launches them: check had no figures there (a source-only OCC030 at 1024)
    (tmp_path / "k.cuh").write_text("template <int N> __global__ void heavy(float* x);\n")
    (tmp_path / "kernels.cu").write_text(
        '#include "k.cuh"\ntemplate <int N> __global__ void heavy(float* x) {\n  float v[N];\n'
        "#pragma unroll\n  for (int i = 0; i < N; ++i) v[i] = x[threadIdx.x + i * 1024];\n"
        "  float s = 0;\n#pragma unroll\n  for (int i = 0; i < N; ++i) s += v[i] * v[(i * 7) % N];\n"
        "#pragma unroll\n  for (int i = 0; i < N; ++i) x[threadIdx.x + i * 1024] = v[i] * s;\n}\n"
        "template __global__ void heavy<96>(float*);\n")
    (tmp_path / "ops.cu").write_text('#include "k.cuh"\n'
                                     "void run(float* x) { heavy<96><<<1000, 1024>>>(x); }\n")
    r = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "json",
                 "kernels.cu", "ops.cu", cwd=tmp_path)
    found = {(f["filename"].rsplit("/", 1)[-1], f["code"]) for f in json.loads(r.stdout)}
    assert ("ops.cu", "OCC034") in found and ("ops.cu", "OCC030") not in found, found
    alone = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "json",
                     "ops.cu", cwd=tmp_path)          # the defining unit not in the run
    assert "OCC034" not in {f["code"] for f in json.loads(alone.stdout)}


def test_check_never_lends_a_file_the_figures_of_a_kernel_it_defines_itself(tmp_path, nvcc_path):
    # llm.c: llmc/matmul.cuh defines reduce_add_sum_kernel (its includers fail under CUDA 13);
    # dev/cuda/matmul_backward_bias.cu has its own copy: the header got that copy's figures
    (tmp_path / "h.cuh").write_text(
        "__global__ void simple(float* x) { x[threadIdx.x] = 0; }\n"
        "inline void go(float* x) { simple<<<1000, 1024>>>(x); }\n")
    (tmp_path / "a.cu").write_text('#include "missing_library_header.h"\n#include "h.cuh"\n')
    (tmp_path / "b.cu").write_text(
        "__global__ void simple(float* x) {\n  float v[96];\n#pragma unroll\n"
        "  for (int i = 0; i < 96; ++i) v[i] = x[threadIdx.x + i * 128];\n  float s = 0;\n"
        "#pragma unroll\n  for (int i = 0; i < 96; ++i) s += v[i] * v[(i * 7) % 96];\n"
        "#pragma unroll\n  for (int i = 0; i < 96; ++i) x[threadIdx.x + i * 128] = v[i] * s;\n}\n"
        "void run(float* x) { simple<<<1000, 128>>>(x); }\n")
    r = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "json",
                 "h.cuh", "a.cu", "b.cu", cwd=tmp_path)
    found = {(f["filename"].rsplit("/", 1)[-1], f["code"]) for f in json.loads(r.stdout)}
    assert ("h.cuh", "OCC034") not in found and ("a.cu", "OCC900") in found, found


def test_a_header_included_inside_a_namespace_gets_its_kernels_figures():
    # xmrig's RandomX: `namespace RandomX_Monero { #include "hash.hpp" }` in five units, so
    # nvcc's kernels are `RandomX_Monero::init_vm<8>` while the header writes `init_vm`: every
    # launch was "not matched" and had no figure. Only a header's kernel matches that way
    from occlint.link import match_usage
    from occlint.model import Usage
    from occlint.source import parse

    usage = [Usage(kernel="A::k", mangled="_ZN1A1kEPf", arch="sm_80", registers=12,
                   spill_stores=0, spill_loads=0, static_smem=4096, barriers=1)]
    header = parse("__global__ void k(float* p) { p[0] = 1; }\n", "kern.cuh")
    unit = parse("__global__ void k(float* p) { p[0] = 1; }\n", "other.cu")
    assert [u.kernel for u in match_usage(header.kernels[0], usage)] == ["A::k"]
    assert match_usage(unit.kernels[0], usage) == []


SMEM_TILE = """\
template <typename T, int MT> constexpr int smem_bytes_for() { return 2 * MT * 72 * (int)sizeof(T); }
template <typename T, int MT>
__global__ void __launch_bounds__(256) k(T* out) {
  extern __shared__ char smem_raw[];
  T* s = reinterpret_cast<T*>(smem_raw);
  s[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[255 - threadIdx.x];
}
template <typename T, int MT>
static void launch_tile(T* out, cudaStream_t stream) {
  constexpr int smem = smem_bytes_for<T, MT>();
  k<T, MT><<<1, dim3(256), smem, stream>>>(out);
}
"""


def test_a_constexpr_shared_size_of_a_template_launcher_is_read_per_call(tmp_path, nvcc_path):
    # bitsandbytes' gemm_4bit: `constexpr int smem = smem_bytes_for<T, MT, NT, KC>();` in
    # `launch_tile<T, MT, ...>`, called with constants: "the dynamic shared memory `smem` is not
    # a compile-time constant". A type template argument now reaches `sizeof(T)` in the
    # constexpr function; with no call, the reason names the template parameters; when nvcc
    # failed, that is the reason (no size would give a figure)
    (tmp_path / "called.cu").write_text(
        SMEM_TILE + "void dispatch(float* out, int mt, cudaStream_t s) {\n"
        "  if (mt == 32) launch_tile<float, 32>(out, s); else launch_tile<float, 128>(out, s);\n}\n")
    (tmp_path / "alone.cu").write_text(SMEM_TILE)
    # an explicit instantiation binds as a call does
    (tmp_path / "listed.cu").write_text(
        SMEM_TILE + "template void launch_tile<float, 32>(float*, cudaStream_t);\n")
    (tmp_path / "fails.cu").write_text('#include "not_there.h"\n' + SMEM_TILE)
    recs = json.loads(run_main("kernels", "--json", "--arch", "sm_80", "--no-cache", "called.cu",
                               "alone.cu", "listed.cu", "fails.cu", cwd=tmp_path).stdout)
    launch = {r["path"]: r for r in recs if r["kind"] == "launch"}
    assert sorted((b["template_values"], b["dynamic_smem"])
                  for b in launch["called.cu"]["bindings"]) == [
        (["float", 32], 2 * 32 * 72 * 4), (["float", 128], 2 * 128 * 72 * 4)]
    occ = launch["called.cu"]["occupancy"]["sm_80"]
    assert (occ["active_blocks"], occ["limiter"]) == (2, "shared_memory")  # 73728 B each
    assert launch["alone.cu"]["no_occupancy"].startswith(
        "the dynamic shared memory `smem` depends on template parameters of `launch_tile` "
        "(`MT`, `T`)")
    assert launch["listed.cu"]["dynamic_smem"] == 2 * 32 * 72 * 4
    assert launch["listed.cu"]["occupancy"]["sm_80"]["active_blocks"] == 8   # threads bind
    assert launch["fails.cu"]["no_occupancy"].startswith("nvcc failed on this file")


DRIVER_HOST = """\
#include <cuda.h>
void run(CUmodule cuModule, CUdeviceptr a, int N) {
  CUfunction vecAdd_kernel;
  checkCudaErrors(cuModuleGetFunction(&vecAdd_kernel, cuModule, "VecAdd_kernel"));
  int threadsPerBlock = 256;
  int blocksPerGrid = (N + threadsPerBlock - 1) / threadsPerBlock;
  void *args[] = {&a, &N};
  checkCudaErrors(cuLaunchKernel(vecAdd_kernel, blocksPerGrid, 1, 1, threadsPerBlock, 1, 1,
                                 0, NULL, args, NULL));
}
void run2(CUfunction f) { cuLaunchKernel(f, 1, 1, 1, 32, 8, 1, 1024, 0, 0, 0); }
"""


def test_driver_api_launches_of_a_host_source_take_their_folders_kernel(tmp_path, nvcc_path):
    # cuda-samples' vectorAddDrv.cpp (and 24 more driver-API launches, NCCL's enqueue.cc): a
    # host .cpp's `cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, ...)` was not listed, so
    # VecAdd_kernel was evaluated "best over block sizes". The kernel is the name
    # `cuModuleGetFunction(&f, module, "name")` gives f, defined by a CUDA file of the same
    # folder (another folder's same-named kernel is not it; a string NVRTC compiles is not
    # measured); a .cpp with no driver launch is not discovered
    for name in ("drv", "other", "jit"):
        (tmp_path / name).mkdir()
    kernel = 'extern "C" __global__ void VecAdd_kernel(float* a, int n) { a[threadIdx.x] = n; }\n'
    (tmp_path / "drv" / "vectorAdd_kernel.cu").write_text(kernel)
    (tmp_path / "drv" / "vectorAddDrv.cpp").write_text(DRIVER_HOST)
    (tmp_path / "other" / "vectorAdd_kernel.cu").write_text(kernel.replace(
        "a[threadIdx.x] = n;", "__shared__ float s[8192]; s[threadIdx.x] = n; a[0] = s[n];"))
    (tmp_path / "jit" / "jit.cpp").write_text(DRIVER_HOST)      # no kernel of its own folder
    (tmp_path / "jit" / "plain.cpp").write_text("int main() { return 0; }\n")
    recs = _listed(tmp_path, ".")
    assert sorted({r["path"] for r in recs}) == [
        "drv/vectorAddDrv.cpp", "drv/vectorAdd_kernel.cu", "jit/jit.cpp",
        "other/vectorAdd_kernel.cu"]
    launches = [(r["path"], r["line"], r["name"], r["grid"], r["block"], r["dynamic_smem"])
                for r in recs if r["kind"] == "launch"]
    assert launches == [("drv/vectorAddDrv.cpp", 8, "VecAdd_kernel", None, 256, 0),
                        ("drv/vectorAddDrv.cpp", 11, "f", 1, 256, 1024),
                        ("jit/jit.cpp", 8, "vecAdd_kernel", None, 256, 0),
                        ("jit/jit.cpp", 11, "f", 1, 256, 1024)]
    by = {(r["path"], r["line"]): r for r in recs if r["kind"] == "launch"}
    occ = by[("drv/vectorAddDrv.cpp", 8)]["occupancy"]["sm_90"]
    assert occ["static_smem"] == 0 and occ["active_blocks"] == 8    # this folder's kernel
    assert by[("jit/jit.cpp", 8)]["no_occupancy"].startswith(
        "`vecAdd_kernel` is the kernel `VecAdd_kernel` (cuModuleGetFunction), which no CUDA file "
        "of this folder defines")
    assert by[("drv/vectorAddDrv.cpp", 11)]["no_occupancy"].startswith(
        "`f` is a CUfunction whose kernel occlint reads only from `cuModuleGetFunction(&f, ")


RUNTIME_HOST = """\
#include <cuda_runtime.h>
#include "../common/aa.h"
void AntialiasFwdMeshKernel(const float* p, int n);   // the host's view of the kernel
void run(const float* p, int n, cudaStream_t stream) {
    void* args[] = {&p, &n};
    cudaLaunchKernel((void*)AntialiasFwdMeshKernel, (n - 1) / AA_THREADS + 1, AA_THREADS, args,
                     0, stream);
}
"""


def test_runtime_api_launches_of_a_host_source_are_listed(tmp_path, nvcc_path):
    # nvdiffrast's csrc/torch/*.cpp launch the kernels of csrc/common/*.cu with
    # `cudaLaunchKernel((void*)K, grid, AA_..._THREADS_PER_BLOCK, args, 0, stream)`: such a
    # host source was not discovered (only the driver API's `cuLaunchKernel` was), so its
    # kernels had no launch (0 -> 8 of nvdiffrast's launches with a figure). A host source
    # that only names the call in a comment is not a CUDA file
    (tmp_path / "common").mkdir()
    (tmp_path / "torch").mkdir()
    (tmp_path / "common" / "aa.h").write_text("#define AA_THREADS 128\n")
    (tmp_path / "common" / "aa.cu").write_text(
        '#include "aa.h"\n__global__ void AntialiasFwdMeshKernel(const float* p, int n) {}\n')
    (tmp_path / "torch" / "aa.cpp").write_text(RUNTIME_HOST)
    (tmp_path / "torch" / "other.cpp").write_text("// cudaLaunchKernel(k, 1, 1, 0, 0, 0)\n")
    recs = _listed(tmp_path, ".")
    assert sorted({r["path"] for r in recs}) == ["common/aa.cu", "torch/aa.cpp"]
    [launch] = [r for r in recs if r["kind"] == "launch"]
    assert (launch["path"], launch["name"], launch["block"]) == \
        ("torch/aa.cpp", "AntialiasFwdMeshKernel", 128)
    assert launch["occupancy"]["sm_90"]["active_blocks"] == 16


OUT_PARAMETER_HOST = """\
#include <cuda.h>
static CUresult initCUDA(int argc, char **argv, CUfunction *);
static CUresult direct(CUmodule m, CUfunction *f) { return cuModuleGetFunction(f, m, "other_k"); }
int main(int argc, char **argv) {
  CUfunction transform = NULL, second = NULL, third;
  if (initCUDA(argc, argv, &transform) != CUDA_SUCCESS) return 1;
  direct(0, &second);
  helper(&third);   // a function this file does not define: unknown
  int block_size = 8;
  cuLaunchKernel(transform, 4, 4, 1, block_size, block_size, 1, 0, NULL, NULL, NULL);
  cuLaunchKernel(second, 4, 4, 1, 128, 1, 1, 0, NULL, NULL, NULL);
  cuLaunchKernel(third, 4, 4, 1, 128, 1, 1, 0, NULL, NULL, NULL);
  return 0;
}
static CUresult initCUDA(int argc, char **argv, CUfunction *transform) {
  CUfunction cuFunction = 0;
  checkCudaErrors(cuModuleGetFunction(&cuFunction, cuModule, "transformKernel"));
  *transform = cuFunction;
  return CUDA_SUCCESS;
}
"""


def test_a_cufunction_filled_through_an_output_parameter_names_its_kernel(tmp_path):
    # cuda-samples' simpleTextureDrv: `initCUDA(argc, argv, &transform)` fills the CUfunction
    # (`*transform = cuFunction;` after cuModuleGetFunction): its 4 launches named no kernel
    (tmp_path / "k.cu").write_text('extern "C" __global__ void transformKernel(float* o) {}\n'
                                   'extern "C" __global__ void other_k(float* o) {}\n')
    (tmp_path / "drv.cpp").write_text(OUT_PARAMETER_HOST)
    recs = _listed(tmp_path, "--no-compile", ".")
    assert [(r["line"], r["name"], r["block"]) for r in recs if r["kind"] == "launch"] == [
        (10, "transformKernel", 64), (11, "other_k", 128), (12, "third", 128)]


def test_a_launch_of_a_template_no_unit_instantiates_says_so(tmp_path, nvcc_path):
    # tiny-cuda-nn's reduce_sum.h: block_reduce0 is launched only in reduce_sum_old, which
    # nothing calls: "nvcc reported no figures ... (defined in a file not listed, ...)"
    (tmp_path / "k.cu").write_text(
        "template <typename T> __global__ void block_reduce0(const T* in, float* out) {}\n"
        "template <typename T> void reduce_sum_old(const T* in, float* out, int n) {\n"
        "  block_reduce0<T><<<(n + 127) / 128, 128>>>(in, out);\n}\n"
        "__global__ void used(float* out) { out[threadIdx.x] = 1.f; }\n"
        "void run(float* out) { used<<<1, 128>>>(out); }\n")
    recs = _listed(tmp_path, "k.cu")
    launch = {r["name"]: r for r in recs if r["kind"] == "launch"}
    assert launch["block_reduce0"]["no_occupancy"] == (
        "`block_reduce0` is a template that no compiled unit instantiates (the launch is in "
        "`reduce_sum_old`): nvcc made no code for it, so there are no figures")
    assert launch["used"]["occupancy"]["sm_90"]["active_blocks"] == 16


def test_a_dim3_block_parameter_is_read_at_the_calls_of_the_files_beside_that_include_its_header(
        tmp_path):
    # diff-gaussian-rasterization: forward.cu's `FORWARD::render(const dim3 grid, dim3 block)`
    # launches renderCUDA<<<grid, block>>>; rasterizer_impl.cu (which includes forward.h) calls
    # it with `dim3 block(BLOCK_X, BLOCK_Y, 1)`: the block was "a parameter ... a call from
    # another file is not read". BACKWARD::render's call (another namespace) is its own; a file
    # that does not include the header is not read; a grid is not read this way
    (tmp_path / "config.h").write_text("#define BLOCK_X 16\n#define BLOCK_Y 16\n")
    for ns, header in (("FORWARD", "forward"), ("BACKWARD", "backward")):
        (tmp_path / f"{header}.h").write_text(
            f"namespace {ns} {{ void render(const dim3 grid, dim3 block, float* o); }}\n")
        (tmp_path / f"{header}.cu").write_text(
            f'#include "{header}.h"\n__global__ void k_{header}(float* o) {{ o[0] = 1; }}\n'
            f"void {ns}::render(const dim3 grid, dim3 block, float* o) {{\n"
            f"  k_{header}<<<grid, block>>>(o);\n}}\n")
    (tmp_path / "impl.cu").write_text(
        '#include "config.h"\n#include "forward.h"\n#include "backward.h"\n'
        "void run(float* o, int w) {\n  dim3 tiles(w / BLOCK_X, 4, 1);\n"
        "  dim3 block(BLOCK_X, BLOCK_Y, 1);\n  FORWARD::render(tiles, block, o);\n"
        "  BACKWARD::render(tiles, dim3(32, 4, 1), o);\n}\n")
    (tmp_path / "lone.cu").write_text(
        "__global__ void k_lone(float* o) {}\n"
        "void go(dim3 block, float* o) { k_lone<<<1, block>>>(o); }\n")
    (tmp_path / "other.cu").write_text("void go(dim3 block, float* o);\n"
                                       "void call(float* o) { go(dim3(64), o); }\n")
    recs = _listed(tmp_path, "--no-compile", ".")
    got = {r["name"]: (r["block"], r["block_dims"], r["grid"]) for r in recs
           if r["kind"] == "launch"}
    assert got == {"k_forward": (256, [16, 16, 1], None), "k_backward": (128, [32, 4, 1], None),
                   "k_lone": (None, [None, None, None], 1)}
