"""occlint.source on the case files in tests/source_cases/ and small inline inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

import occlint.source.build as build
from occlint.link import find_kernel
from occlint.source import launch_template_args, parse, specialize

CASES = Path(__file__).parent / "source_cases"


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setattr(build, "STRICT", True)   # a bug shows as an exception here


def case(name: str):
    return parse((CASES / name).read_bytes(), name)


def line_of(sf, needle: str) -> int:
    return next(i for i, t in enumerate(sf.text.splitlines(), 1) if needle in t)


# --- kernels -------------------------------------------------------------------------------------


def test_kernels_everywhere():
    sf = case("kernels.cu")
    by = {k.qualname: k for k in sf.kernels}
    assert set(by) == {
        "plain", "proto", "outer::inner::nested", "outer::Ops::member",
        "(anonymous namespace)::hidden", "c_linkage", "c_block", "templated", "capped",
        "clustered", "branchy",
    }
    assert (by["plain"].launch_bounds.max_threads, by["plain"].launch_bounds.min_blocks) == (256, 2)
    assert by["outer::inner::nested"].launch_bounds.max_threads == 128
    assert by["outer::inner::nested"].scopes == ("outer", "inner")
    assert by["c_linkage"].extern_c and by["c_block"].extern_c and not by["plain"].extern_c
    assert by["templated"].template_params == ("THREADS", "T")
    assert by["templated"].launch_bounds.max_threads is None      # depends on THREADS
    assert by["templated"].launch_bounds.min_blocks == 2
    assert by["capped"].maxnreg == 40
    assert by["clustered"].cluster_dims == (2, 1, 1)
    assert by["proto"].is_definition                # the definition replaces the prototype
    assert by["proto"].span.line == line_of(sf, "__global__ void proto(int n) {")


def test_kernel_spans_point_at_name_and_insertion_point():
    sf = case("kernels.cu")
    k = next(k for k in sf.kernels if k.name == "capped")
    assert sf.text[k.span.start:k.span.end] == "capped"
    line = sf.text.splitlines()[k.span.line - 1]
    assert line[k.span.column - 1:].startswith("capped(")
    assert k.decl_span.start == k.span.start and k.decl_span.end == k.decl_span.start


def test_if_else_kernel_counted_once_first_branch_wins():
    sf = case("kernels.cu")
    branchy = [k for k in sf.kernels if k.name == "branchy"]
    assert len(branchy) == 1
    assert branchy[0].launch_bounds.max_threads == 512


def test_comments_and_strings_are_not_code():
    sf = case("kernels.cu")
    names = {k.name for k in sf.kernels}
    assert "in_a_comment" not in names and "in_a_string" not in names


# --- shared memory ---------------------------------------------------------------------------------


def shared(sf, name):
    return next(s for s in sf.shared if s.name == name)


def test_shared_sizes_and_owners():
    sf = case("shared.cu")
    expect = {
        "smem": (4096 * 4, "block_reduce_naive"), "tile": (32 * 33 * 4, "transpose"),
        "h": (16, "types_kernel"), "bf": (16, "types_kernel"), "f4": (64, "types_kernel"),
        "i4": (32, "types_kernel"), "d2": (32, "types_kernel"), "c": (3, "types_kernel"),
        "pairs": (80, "types_kernel"), "odd": (32, "types_kernel"), "raw": (48, "types_kernel"),
        "scalar": (4, "types_kernel"), "file_scope": (256, None),
    }
    for name, (size, owner) in expect.items():
        s = shared(sf, name)
        assert (s.size_bytes, s.kernel) == (size, owner), name
    tile = shared(sf, "tile")
    assert tile.dims == (32, 33)
    assert sf.text[tile.name_span.start:tile.name_span.end] == "tile"
    assert [sf.text[d.start:d.end] for d in tile.dim_spans] == ["TILE", "TILE + PAD"]
    dyn = shared(sf, "dynamic_smem")
    assert dyn.extern and dyn.size_bytes is None and dyn.dims == ()
    buf = shared(sf, "buf")
    assert buf.template_dependent and buf.size_bytes is None


def test_reduction_indices_are_thread_derived():
    s = shared(case("shared.cu"), "smem")
    by_text = {i.text: i for i in s.indices}
    assert by_text["tid"].thread_derived and by_text["tid"].axis == "x"
    assert by_text["tid + s"].thread_derived and by_text["tid + s"].axis == "x"
    assert not by_text["0"].thread_derived and by_text["0"].constant == 0
    assert s.other_uses == 0


def test_two_dimensional_and_flat_indices():
    sf = case("shared.cu")
    tile = shared(sf, "tile")
    assert {(i.text, i.dim, i.axis) for i in tile.indices} == {
        ("threadIdx.y", 0, "y"), ("threadIdx.x", 1, "x"),
        ("threadIdx.x", 0, "x"), ("threadIdx.y", 1, "y")}
    assert shared(sf, "h").indices[0].axis == "x"              # lane = threadIdx.x % 32
    assert shared(sf, "bf").indices[0].axis == "xyz"           # x + y * blockDim.x
    assert shared(sf, "file_scope").other_uses == 1            # &file_scope[0] escapes


@pytest.mark.parametrize(("code", "derived"), [
    ("if (tid < s) a[tid + s] = 0;", True),
    ("a[tid + s] = 0;", False),                                     # no guard: up to 1.5x block
    ("if (tid < s) a[tid + s + 1] = 0;", False),
    ("if (tid < 32) a[tid + 32] = 0;", False),                     # needs the block size
    ("a[blockIdx.x * blockDim.x + threadIdx.x] = 0;", False),       # a global index
    ("a[threadIdx.x / 2] = 0;", True),
    ("a[threadIdx.x & 31] = 0;", True),
    ("a[threadIdx.x - 1] = 0;", False),
])
def test_index_classification(code, derived):
    text = ("__global__ void k() { __shared__ float a[1024]; int tid = threadIdx.x;\n"
            "for (int s = blockDim.x / 2; s > 0; s >>= 1) { " + code + " } }")
    a = parse(text).shared[0]
    assert len(a.indices) == 1
    assert a.indices[0].thread_derived is derived


def test_loop_condition_bounds_offset():
    text = ("__global__ void k() { __shared__ float a[1024]; int tid = threadIdx.x;\n"
            "for (int s = 1; s < blockDim.x / 2; s *= 2) { if (tid < s) a[tid + s] = 0; } }")
    assert parse(text).shared[0].indices[0].thread_derived


def test_written_alias_is_not_thread_derived():
    text = ("__global__ void k(int n) { __shared__ float a[64]; int i = threadIdx.x; i += n;"
            " a[i] = 0; }")
    assert not parse(text).shared[0].indices[0].thread_derived


# --- specialization -------------------------------------------------------------------------------


def test_specialize_template_shared_and_bounds():
    sf = case("shared.cu")
    k = next(k for k in sf.kernels if k.name == "templated_reduce")
    launches = [la for la in sf.launches if la.callee == "templated_reduce"]
    assert [la.template_values for la in launches] == [(256, None), (64, None)]
    s256 = specialize(sf, k, launch_template_args(launches[0]))
    assert s256.launch_bounds.max_threads == 256
    assert s256.static_smem == 256 * 2 * 4
    assert s256.shared[0].dims == (512,)
    s64 = specialize(sf, k, {"BLOCK": 64, "T": "double"})
    assert s64.static_smem == 64 * 2 * 8
    unknown = specialize(sf, k, [None, None])
    assert unknown.static_smem is None and unknown.launch_bounds.max_threads is None


def test_specialize_uses_defaults():
    sf = parse("template <int B = 128, typename T = float> __global__ void "
               "__launch_bounds__(B) k() { __shared__ T s[B]; }")
    sp = specialize(sf, sf.kernels[0], [])
    assert sp.launch_bounds.max_threads == 128 and sp.static_smem == 512
    assert sp.bindings == (("B", 128), ("T", "float"))


def test_specialize_after_cache_eviction():
    sf = case("shared.cu")
    for i in range(40):
        parse(f"__global__ void k{i}() {{}}")
    k = next(k for k in sf.kernels if k.name == "templated_reduce")
    assert specialize(sf, k, [128, "float"]).static_smem == 1024


# --- launches and attributes ----------------------------------------------------------------------


def launch_at(sf, needle):
    line = line_of(sf, needle)
    return next(la for la in sf.launches if la.span.line == line)


@pytest.mark.parametrize(("needle", "grid", "block", "smem"), [
    ("k<<<DIV_UP(4096, THREADS), THREADS>>>", 16, 256, 0),
    ("k<<<n / THREADS, THREADS, SMEM_BYTES, stream>>>", None, 256, 1024),
    ("k<<<grid, block>>>", 128, 256, 0),
    ("k<<<1, same>>>", 1, 256, 0),
    ("k<<<kRows / threads, threads>>>", 8, 128, 0),
    ("k<<<1, local>>>", 1, 64, 0),
    ("k<<<1, changed>>>", 1, None, 0),                # written after its declaration
    ("k<<<1, cfg::block>>>", 1, 512, 0),
    ("k<<<1, kTile * 32>>>", 1, 33 * 32, 0),           # implicit enumerator value
    ("kt<kBlock><<<1, kBlock>>>", 1, 128, 0),
    ("k<<<dim3(n), dim3(THREADS)>>>", None, 256, 0),
    ("cudaLaunchKernel((void*)k", 8, 256, 0),
    ("cudaLaunchKernel(reinterpret_cast", 4, 64, 1024),
    ("cudaLaunchCooperativeKernel", 2, 128, 0),
    ("cudaLaunchKernelEx", 32, 128, 2048),
])
def test_launch_values(needle, grid, block, smem):
    la = launch_at(case("launches.cu"), needle)
    assert (la.grid.total, la.block.total, la.dynamic_smem) == (grid, block, smem)


def test_launch_details():
    sf = case("launches.cu")
    la = launch_at(sf, "k<<<grid, block>>>")
    assert (la.grid.x, la.grid.y, la.block.x, la.block.y) == (16, 8, 32, 8)
    assert la.function == "launches" and la.kind == "chevron"
    assert sf.text[la.config_span.start:la.config_span.end] == "<<<grid, block>>>"
    assert [sf.text[s.start:s.end] for s in la.arg_spans] == ["grid", "block"]
    t = launch_at(sf, "kt<kBlock>")
    assert (t.callee, t.template_args, t.template_values) == ("kt", ("kBlock",), (128,))
    api = launch_at(sf, "cudaLaunchKernel(reinterpret_cast")
    assert (api.callee, api.template_values, api.kind) == ("kt", (64,), "cudaLaunchKernel")
    assert launch_at(sf, "cudaLaunchCooperativeKernel").kind == "cooperative"
    smem = launch_at(sf, "SMEM_BYTES, stream>>>")
    assert (smem.dynamic_smem_text, smem.stream_text) == ("SMEM_BYTES", "stream")


def test_runtime_block_from_occupancy_api():
    la = launch_at(case("launches.cu"), "k<<<DIV_UP(n, best), best>>>")
    assert la.runtime_block and la.block.total is None
    assert not launch_at(case("launches.cu"), "k<<<1, local>>>").runtime_block


def test_attribute_calls():
    sf = case("launches.cu")
    got = [(a.kernel, a.attribute, a.value, a.template_values) for a in sf.attributes]
    assert got == [
        ("k", "MaxDynamicSharedMemorySize", 65536, ()),
        ("kt", "PreferredSharedMemoryCarveout", 100, (64,)),
        ("coop", "PreferredSharedMemoryCarveout", 50, ()),
        ("k", "CacheConfig", "cudaFuncCachePreferShared", ()),
    ]


def test_find_kernel():
    sf = case("kernels.cu")
    for la in sf.launches:
        k = find_kernel(sf, la)
        assert k is not None and k.qualname.endswith(la.callee), la.callee
    assert find_kernel(sf, "&outer::inner::nested").qualname == "outer::inner::nested"
    assert find_kernel(sf, "(void*)templated<256>").name == "templated"
    assert find_kernel(sf, "::plain").name == "plain"
    assert find_kernel(sf, "Ops::member").qualname == "outer::Ops::member"
    assert find_kernel(sf, "missing") is None
    two = parse("namespace a { __global__ void k() {} } namespace b { __global__ void k() {} }")
    assert find_kernel(two, "k") is None                      # ambiguous: no guess
    assert find_kernel(two.kernels, "b::k").qualname == "b::k"


# --- constant evaluation --------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "value"), [
    ("0x100", 256), ("0b1000", 8), ("010", 8), ("1'024", 1024), ("256u", 256), ("64ULL", 64),
    ("1 << 8", 256), ("(3 + 5) * 32", 256), ("1000 / 3", 333),
    ("-7 / 2 + 10", 7), ("-7 % 2 + 2", 1),     # C truncates toward zero: -3 and -1
    ("2 > 1 ? 128 : 64", 128), ("min(512, 256)", 256), ("std::max(32, 64)", 64),
    ("sizeof(float4)", 16), ("sizeof(double) * 4", 32), ("M2(3)", 6), ("M3", 96), ("E_B", 11),
    ("static_cast<int>(7)", 7), ("(int)9", 9), ("x / 0", None), ("1.5f", None), ("n", None),
    ("UNDEF", None), ("CYCLE", None), ("1e3", None), ("SELF(2)", None),
])
def test_constant_evaluation(expr, value):
    text = ("#define M2(x) ((x) * 2)\n#define M3 (M2(16) * 3)\n#define CYCLE CYCLE + 1\n"
            "#define SELF(x) SELF(x)\nconstexpr int x = 5;\nenum E { E_A = 10, E_B };\n"
            "__global__ void k(int n) {}\n"
            f"void h(int n) {{ k<<<1, {expr}>>>(n); }}\n")
    assert parse(text).launches[0].block.x == value


def test_conflicting_definitions_are_unknown():
    text = ("#ifdef WIDE\n#define B 512\n#else\n#define B 256\n#endif\n#define C 64\n"
            "#ifndef C\n#define C 64\n#endif\n#if 0\n#define D 1\n#endif\n#define D 2\n"
            "__global__ void k() {}\nvoid h() { k<<<1, B>>>(); k<<<1, C>>>(); k<<<1, D>>>(); }\n")
    assert [la.block.x for la in parse(text).launches] == [None, 64, 2]


def test_template_parameter_shadows_global():
    text = ("constexpr int B = 64;\ntemplate <int B> __global__ void __launch_bounds__(B) k() "
            "{ __shared__ float s[B]; }\n")
    sf = parse(text)
    assert sf.kernels[0].launch_bounds.max_threads is None
    assert sf.shared[0].size_bytes is None and sf.shared[0].template_dependent


def test_local_constant_shadows_global_of_same_name():
    text = ("constexpr int T = 64;\n__global__ void k() {}\n"
            "void h() { constexpr int T = 32; k<<<1, T>>>(); }\nvoid g() { k<<<1, T>>>(); }\n")
    assert [la.block.x for la in parse(text).launches] == [32, 64]


def test_a_local_declared_in_two_branches_is_read_where_each_is_visible():
    # SGEMM_CUDA's runner: `const uint BM = 128;` in the `if`, `= 64` in the `else`, a
    # `dim3 blockDim((BM * BN) / (TM * TN))` and a launch in each: both blocks were unknown
    text = ("template <int BM> __global__ void k() {}\n"
            "void run(int m) {\n  const int TM = 8;\n"
            "  if (m >= 128) {\n    const int BM = 128;\n    dim3 block(BM * BM / (TM * TM));\n"
            "    k<BM><<<1, block>>>();\n  } else {\n    const int BM = 64;\n"
            "    dim3 block(BM * BM / (TM * TM));\n    k<BM><<<1, block>>>();\n"
            "    for (int BM = 0; BM < 2; ++BM) k<BM><<<1, BM>>>();\n  }\n"
            "  k<8><<<1, BM>>>();\n}\n")
    got = [(la.block.x, la.template_values) for la in parse(text).launches]
    # the loop's BM is written (unknown); after the branches no BM is visible: unknown
    assert got == [(256, (128,)), (64, (64,)), (None, (None,)), (None, (8,))]


def test_a_launch_in_a_case_of_a_switch_on_its_block_size_has_that_size():
    # cuda-samples' reduction: `dim3 dimBlock(threads, 1, 1); switch (threads) { case 512:
    # reduce4<T, 512><<<dimGrid, dimBlock, smemSize>>>` (117 launches of cuda-samples and ggml
    # had no block); a local computed from it (`smem`) takes each case's value, not the first's
    text = ("template <int N> __global__ void k(float *p) {}\n"
            "void run(float *p, int threads, int which) {\n"
            "  dim3 block(threads, 1, 1);\n  int smem = threads * sizeof(float);\n"
            "  switch (which) {\n  case 4:\n    switch (threads) {\n    case 512:\n"
            "      k<512><<<1, block, smem>>>(p);\n      break;\n    case 256: {\n"
            "      k<256><<<1, block, smem>>>(p);\n      break;\n    }\n"
            "    case 128:\n    case 64:\n      k<64><<<1, threads>>>(p);\n      break;\n"
            "    default:\n      k<1><<<1, threads>>>(p);\n    }\n    break;\n  }\n"
            "  k<2><<<1, threads>>>(p);\n}\n"
            "void run2(float *p, int threads) {\n  switch (threads) {\n"
            "  case 32: threads = 64;\n  case 16: k<3><<<1, threads>>>(p);\n  }\n}\n")
    got = [(la.block.x, la.dynamic_smem) for la in parse(text).launches]
    # 128 falls through to 64 (either), default and after the switch: unknown; a written
    # `threads` is never narrowed
    assert got == [(512, 2048), (256, 1024), (None, 0), (None, 0), (None, 0), (None, 0)]


def test_a_call_of_a_function_the_file_defines_as_one_return_is_evaluated():
    # bitsandbytes: `const int ws = bnb_host_warp_size();` (a `static constexpr int ...() {
    # return 32; }`) and `constexpr int smem = smem_bytes();` were "not a compile-time
    # constant"; cuda-samples' `iDivUp`; ggml's `__launch_bounds__(..._get_nthreads_device())`
    text = ("static constexpr int warp() { return 32; }\n"
            "template <int A, int B> constexpr int prod() { return A * B; }\n"
            "static unsigned iDivUp(unsigned a, unsigned b) { return (a % b != 0) ? (a / b + 1)"
            " : (a / b); }\n"
            "constexpr int twice(int x) { return 2 * x; }\nint rec(int x) { return rec(x); }\n"
            "int two(int x) { int y = x; return y; }\n"
            "__global__ void __launch_bounds__(warp() * 4) k() {}\n"
            "void f(int n) {\n  const int ws = warp();\n  k<<<iDivUp(1000, ws), ws>>>();\n"
            "  k<<<1, prod<8, 16>(), twice(64)>>>();\n  k<<<rec(3), two(64)>>>();\n"
            "  k<<<iDivUp(n, 32), 32>>>();\n}\n")
    sf = parse(text)
    assert sf.kernels[0].launch_bounds.max_threads == 128
    got = [(la.grid.x, la.block.x, la.dynamic_smem) for la in sf.launches]
    assert got == [(32, 32, 0), (1, 128, 128), (None, 64, 0), (None, 32, 0)]


def test_a_straight_line_function_is_evaluated_when_its_guards_are_false():
    # cuda-samples' volumeRender/volumeFiltering `iDivUp`: a local, a guard that exits past
    # UINT_MAX (<climits>, not read), then the return
    text = ("#include <climits>\n"
            "static unsigned int iDivUp(size_t a, size_t b) {\n"
            "  size_t val = (a % b != 0) ? (a / b + 1) : (a / b);\n"
            "  if (val > UINT_MAX) {\n    fprintf(stderr, \"too big\");\n    exit(1);\n  }\n"
            "  return static_cast<unsigned int>(val);\n}\n"
            "int guarded(int x) { if (x > 4) return 0; return x * 2; }\n"
            "int floats(int x) { float h = x / 2.0f; return h; }\n"
            "int written(int x) { int y = x; y += 1; return y; }\n"
            "int chained(int x) { const int a = x + 1, b = a * 2; int c = b; return c; }\n"
            "int nested_if(int x) { if (x) { return 1; } else { return 2; } return 3; }\n"
            "__global__ void k() {}\n"
            "void f() {\n  k<<<iDivUp(1000, 32), 32>>>();\n  k<<<iDivUp(size_t(1) << 40, 1), 32>>>();\n"
            "  k<<<guarded(3), guarded(5)>>>();\n  k<<<floats(64), written(64)>>>();\n"
            "  k<<<chained(1), nested_if(1)>>>();\n}\n")
    got = [(la.grid.x, la.block.x) for la in parse(text).launches]
    # a true guard (2^40 > UINT_MAX, 5 > 4) or an unknown one: no value; float and written
    # locals, statements other than declarations and guards: none
    assert got == [(32, 32), (None, 32), (6, None), (None, None), (4, None)]


def test_members_of_a_local_cuda_aggregate():
    # cuda-samples' volumeFiltering: `cudaExtent extent = {N, 0, 0};` then
    # `gridSize(iDivUp(extent.width, blockSize.x))`: a 32-block grid, not "unknown"
    text = ("#define STEPS 1024\n__global__ void k() {}\n"
            "static unsigned iDivUp(unsigned a, unsigned b) { return (a + b - 1) / b; }\n"
            "void f(int n, cudaExtent p) {\n"
            "  cudaExtent extent = {STEPS, 0, 0};\n  dim3 blockSize(32, 1, 1);\n"
            "  dim3 gridSize(iDivUp(extent.width, blockSize.x), 1, 1);\n"
            "  k<<<gridSize, blockSize>>>();\n"
            "  const cudaExtent e2 = make_cudaExtent(64, 8, 2);\n  k<<<e2.height, e2.depth>>>();\n"
            "  int2 v{16};\n  k<<<v.y + 2, v.x>>>();\n"
            "  cudaExtent w = {16, 16, 1};\n  w.width = n;\n  k<<<w.width, w.height>>>();\n"
            "  cudaExtent d = {.width = 4};\n  k<<<d.width, p.width>>>();\n"
            "  uint3 m = make_int3(1, 2, 3);\n  k<<<m.x, extent.depth + 8>>>();\n}\n")
    got = [(la.grid.x, la.block.x) for la in parse(text).launches]
    # the missing member of `v{16}` is zero; a written aggregate, a designated initializer, a
    # parameter and a `make_` of another type: unknown
    assert got == [(32, 32), (8, 2), (2, 16), (None, None), (None, None), (None, 8)]


def test_a_branch_local_written_in_its_block_stays_unknown():
    text = ("__global__ void k() {}\nvoid run(int m) {\n  if (m) {\n    int t = 128;\n"
            "    t += m;\n    k<<<1, t>>>();\n  } else {\n    int t = 64;\n    k<<<1, t>>>();\n"
            "  }\n}\n")
    assert [la.block.x for la in parse(text).launches] == [None, 64]


def test_parameter_shadows_global_constant():
    text = ("constexpr int threads = 256;\n__global__ void k() {}\n"
            "void h(int threads) { k<<<1, threads>>>(); }\nvoid g() { k<<<1, threads>>>(); }\n")
    assert [la.block.x for la in parse(text).launches] == [None, 256]


def test_dim3_with_only_names_is_not_a_function_declaration():
    # `dim3 b(BX, BY);` parses as a function declaration in C++ grammars
    text = ("#define BX 16\nconstexpr int BY = 4;\n__global__ void k() {}\n"
            "void h(int n) { int sq = 8; dim3 b(BX, BY); dim3 c(sq, sq); dim3 g(n, BY);\n"
            "k<<<g, b>>>(); k<<<1, c>>>(); }\n")
    a, b = parse(text).launches
    assert (a.block.x, a.block.y, a.grid.x, a.grid.y) == (16, 4, None, 4)
    assert b.block.total == 64


def test_dim3_set_field_by_field():
    text = ("__global__ void k() {}\nvoid h(int n, dim3 pb) {\n"
            "dim3 b; b.x = 128; b.y = 2; k<<<1, b>>>();\n"
            "dim3 c; c.x = n; k<<<1, c>>>();\n"
            "dim3 d; d.x = 1; d.x = 2; k<<<1, d>>>();\n"
            "dim3 e; e.x = 4; e = dim3(8); k<<<1, e>>>();\n"
            "dim3 f; k<<<1, f>>>();\n"
            "k<<<1, pb>>>(); }\n")
    got = [(la.block.x, la.block.y, la.block.z) for la in parse(text).launches]
    # (`d.x = 1; d.x = 2;` straight before the launch: the last write, 2)
    assert got == [(128, 2, 1), (None, 1, 1), (2, 1, 1), (None, None, None), (1, 1, 1),
                   (None, None, None)]


def test_explicit_specialization_is_its_own_record():
    text = ("template <int B> __global__ void k(float* p) { __shared__ float t[B]; }\n"
            "template __global__ void k<256>(float*);\n"
            "template <> __global__ void k<64>(float* p) { __shared__ double u[64]; }\n")
    sf = parse(text)
    assert [(k.template_params, k.span.line) for k in sf.kernels] == [(("B",), 1), ((), 3)]
    assert [(s.name, s.size_bytes) for s in sf.shared] == [("t", None), ("u", 512)]
    assert find_kernel(sf, "k").span.line == 1            # the primary template


def test_launches_written_in_macro_bodies():
    text = ("#define THREADS 128\n__global__ void k(int* p) {}\n"
            "template <int B> __global__ void kt(int* p) {}\n"
            "#define LAUNCH(B, s)                 \\\n"
            "    do {                             \\\n"
            "        dim3 block(THREADS);         \\\n"
            "        kt<B><<<4, block, 0, s>>>(0);\\\n"
            "    } while (0)\n"
            "#define DEFINE_RUN(NAME)             \\\n"
            "    void run_##NAME(int n) {         \\\n"
            "        k<<<n, 256>>>(0);            \\\n"
            "    }\n"
            "DEFINE_RUN(a)\n")
    sf = parse(text)
    a, b = sf.launches
    assert (a.callee, a.block.x, a.grid.x, a.template_args, a.function) == \
        ("kt", 128, 4, ("B",), "LAUNCH")
    assert (b.callee, b.block.x, b.grid.x) == ("k", 256, None)
    assert sf.text[a.span.start:a.span.end] == "kt<B><<<4, block, 0, s>>>(0)"
    assert a.span.line == 7 and b.span.line == 11
    assert sf.text[b.span.start:b.span.end] == "k<<<n, 256>>>(0)"


def test_if_zero_is_dead_code():
    text = ("#if 0\n__global__ void dead() { __shared__ float s[8]; }\nvoid h() { dead<<<1, 1>>>(); }\n"
            "#elif 1\n__global__ void live1() {}\n#else\n__global__ void live2() {}\n#endif\n"
            "void g() { live1<<<1, 32>>>(); }\n")
    sf = parse(text)
    assert [k.name for k in sf.kernels] == ["live1"]      # `#elif 1` taken: the #else is dead
    assert sf.shared == () and [la.callee for la in sf.launches] == ["live1"]


def test_fields_of_a_local_dim3():
    text = ("__global__ void k() {}\nvoid h(int n) { dim3 block(256);\n"
            "dim3 grid((4096 + block.x - 1) / block.x);\n"
            "k<<<grid, block, block.x * sizeof(float)>>>();\n"
            "dim3 b2(n); k<<<1, b2, b2.x * 4>>>(); }\n")
    a, b = parse(text).launches
    assert (a.grid.x, a.block.x, a.dynamic_smem) == (16, 256, 1024)
    assert b.dynamic_smem is None


def test_unknown_names_may_be_dim3():
    text = ("__global__ void k() {}\n"
            "void h(const dim3 &dims, int n, dim3 g) { dim3 t(16, 16);\n"
            "dim3 grid(dims.x / t.x, dims.y / t.y); k<<<grid, t>>>();\n"
            "k<<<n, g>>>(); auto a = n; k<<<a, 32>>>(); }\n")
    a, b, c = parse(text).launches
    assert (a.grid.x, a.grid.y, a.grid.z) == (None, None, 1)    # not dims.y taken as 1
    assert (b.grid.x, b.grid.y, b.grid.z) == (None, 1, 1)       # an int parameter
    assert (b.block.x, b.block.y, b.block.z) == (None, None, None)
    assert (c.grid.x, c.grid.y) == (None, None)                 # `auto`: type unknown


def test_typedefs_and_aliases_have_sizes():
    text = ("typedef struct { float a; int b; } Pair;\ntypedef float real;\n"
            "using Vec = float4;\ntypedef struct Node { double d; char c; } NodeT;\n"
            "struct WithMethod { int x; int get() const { return x; } };\n"
            "__global__ void k() { __shared__ Pair a[4]; __shared__ real b[4];\n"
            "__shared__ Vec c[2]; __shared__ NodeT d[3]; __shared__ Node e[1];\n"
            "__shared__ WithMethod m[2]; }\n")
    got = {s.name: s.size_bytes for s in parse(text).shared}
    assert got == {"a": 32, "b": 16, "c": 32, "d": 48, "e": 16, "m": None}


def test_scoped_enums_and_class_constants():
    text = ("enum class Cfg : int { Block = 256, Grid = Block / 2 };\n"
            "struct P { static constexpr int kB = 64; enum { kW = 32 }; };\n"
            "__global__ void k() {}\n"
            "void h() { k<<<(int)Cfg::Grid, static_cast<int>(Cfg::Block)>>>();\n"
            "k<<<P::kW, P::kB>>>(); }\n")
    assert [(la.grid.x, la.block.x) for la in parse(text).launches] == [(128, 256), (32, 64)]


def test_template_parameters_of_host_code_shadow_constants():
    text = ("constexpr int B = 64;\nconstexpr int N = 7;\n"
            "template <typename T> __global__ void k() {}\n"
            "template <int B> void h() { k<float><<<1, B>>>(); }\n"
            "template <int N> struct R { void run() { k<float><<<1, N>>>(); } };\n"
            "void g() { k<float><<<B, N>>>(); }\n")
    assert [(la.grid.x, la.block.x) for la in parse(text).launches] == \
        [(1, None), (1, None), (64, 7)]


@pytest.mark.parametrize(("body", "derived"), [
    ("int s = blockDim.x / 2; while (s > 0) { if (tid < s) a[tid + s] = 0; s >>= 1; }", True),
    ("unsigned s = blockDim.x >> 1; do { if (tid < s) a[tid + s] = 0; s /= 2; } while (s);",
     True),
    ("int s = blockDim.x / 2; while (s > 0) { if (tid < s) a[tid + s] = 0; s += 1; }", False),
    ("int s = blockDim.x / 2; s = n; if (tid < s) a[tid + s] = 0;", False),
    ("int s = blockDim.y / 2; while (s) { if (tid < s) a[tid + s] = 0; s >>= 1; }", False),
])
def test_halving_variable_outside_a_for_loop(body, derived):
    text = ("__global__ void k(int n) { __shared__ float a[1024]; int tid = threadIdx.x; "
            + body + " }")
    assert [i.thread_derived for i in parse(text).shared[0].indices] == [derived]


OUT_PARAMS = """\
__global__ void __launch_bounds__(256) k(int* x) { x[threadIdx.x] = 0; }
void params(unsigned& t, unsigned& b);
void params(unsigned& t, unsigned& b) { t = 256; b = 100; }
void show(const unsigned& t, unsigned b) {}
void run(int* x) {
    unsigned threads = 1024, blocks = 0;
    params(threads, blocks);
    k<<<blocks, threads>>>(x);
}
void shown(int* x) {
    unsigned threads = 128, blocks = 4;
    show(threads, blocks);
    k<<<blocks, threads>>>(x);
}
void literal(int* x) {
    int none = 0;
    k<<<1, none>>>(x);
    k<<<dim3(4, 0), 64>>>(x);
}
"""


def test_a_local_passed_to_a_reference_parameter_is_written():
    # cudpp's compact_app.cu: `unsigned numThreads = 0; calculateCompactLaunchParams(n,
    # numThreads, numBlocks, ...)` then `<<<numBlocks, numThreads>>>`: the block was taken as 0
    # (the run ended with "block size must be at least 1"), or as 1024 (a false OCC032)
    sf = parse(OUT_PARAMS, "o.cu")
    run, shown, none, zero = sf.launches
    assert (run.grid.total, run.block.total) == (None, None)
    assert (shown.grid.total, shown.block.total) == (4, 128)     # const& and by value: read
    assert none.block.total is None and zero.grid.total is None  # no extent is below 1


def test_out_parameters_give_no_false_launch_bounds_error():
    from occlint.config import Config
    from occlint.engine import lint_source

    findings = lint_source(OUT_PARAMS, "o.cu", [], Config(arch=("sm_90",)))
    assert not [f for f in findings if f.code in ("OCC032", "OCC034")], findings


BOUNDS_MACROS = """\
#define LAUNCH_BOUNDS(x) __launch_bounds__((x))
#define LB2(t, b) __launch_bounds__(t, b)
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 1024)
#define C10_LAUNCH_BOUNDS_1(n) __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((n))))
__global__ void LAUNCH_BOUNDS(128) a(float* x) { x[0] = 0; }
__global__
LB2(256, 2)
void b(float* x) { x[0] = 0; }
template <int N>
__global__ void C10_LAUNCH_BOUNDS_1(N) c(float* x) { x[0] = 0; }
__global__ void UNKNOWN_BOUNDS(64) d(float* x) { x[0] = 0; }
__global__ void e(float* x) __attribute__((noinline));
__global__ void f(float* x) { g(x); }
void run(float* x) { c<2048><<<1, 256>>>(x); }
"""


def test_a_macro_around_a_kernels_void_is_read_as_its_launch_bounds():
    # cudpp's `__global__ void LAUNCH_BOUNDS(SORT_CTA_SIZE) k(`, PyTorch's C10_LAUNCH_BOUNDS_1:
    # tree-sitter read the macro call as a declaration and the kernel as a plain function, so
    # the kernel was not listed and its __shared__ arrays belonged to no kernel
    sf = parse(BOUNDS_MACROS, "m.cu")
    got = {k.name: k.launch_bounds for k in sf.kernels}
    assert list(got) == ["a", "b", "c", "d", "e", "f"]
    assert (got["a"].max_threads, got["a"].text) == (128, "LAUNCH_BOUNDS(128)")
    assert (got["b"].max_threads, got["b"].min_blocks) == (256, 2)
    assert got["c"].max_threads is None                  # unbound template parameter
    assert got["d"] is None and got["e"] is None and got["f"] is None
    assert specialize(sf, sf.kernels[2], [2048]).launch_bounds.max_threads == 1024   # capped
    assert sf.kernels[0].span.line == 5 and sf.text[got["a"].span.start:got["a"].span.end] == \
        "LAUNCH_BOUNDS(128)"


def test_a_local_passed_twice_is_written_when_either_parameter_is_a_reference():
    text = ("__global__ void k(int* x) { x[0] = 0; }\n"
            "void second(unsigned a, unsigned& b) { b = a * 2; }\n"
            "void run(int* x) { unsigned t = 64; second(t, t); k<<<1, t>>>(x); }\n")
    assert parse(text, "t.cu").launches[0].block.total is None


MACRO_NAMESPACE = """\
#define BEGIN_NS namespace lib {
#define END_NS }
// BEGIN_NS in a comment opens nothing
BEGIN_NS
template <int NT>
__global__ void __launch_bounds__(NT) k(float* p) { p[threadIdx.x] = 0; }
END_NS
__global__ void outside(float* p) { p[0] = 1; }
namespace real {
BEGIN_NS
__global__ void inner(float* p) { p[0] = 2; }
END_NS
}
"""


def test_a_namespace_opened_by_a_macro_scopes_its_kernels():
    # moderngpu's BEGIN_MGPU_NAMESPACE (`namespace mgpu {`): its kernels were `launch_box_cta_k`
    # while nvcc reports `mgpu::launch_box_cta_k`, so no kernel of the library got figures
    sf = parse(MACRO_NAMESPACE, "m.cu")
    assert [k.qualname for k in sf.kernels] == ["lib::k", "outside", "real::lib::inner"]


def test_a_braced_block_in_chevrons_is_a_dim3():
    # apex's index_mul_2d: `k<<<g, {BLOCK_THREADS_DIMX, BLOCK_THREADS_DIMY, 1}>>>` was "not a
    # compile-time constant" (tree-sitter reads a compound literal with an empty type)
    text = ("__global__ void k(float* p) { p[0] = 0; }\n"
            "void a(float* p) { const int DX = 16, DY = 16; k<<<4, {DX, DY, 1}>>>(p); }\n"
            "void b(float* p) { k<<<8, {10, 10, 1}>>>(p); }\n")
    got = [(la.grid.total, la.block.total) for la in parse(text, "b.cu").launches]
    assert got == [(4, 256), (8, 100)]


def test_a_kernel_written_with_a_macro_for_global_is_a_kernel(tmp_path):
    # pytorch3d's pulsar: `#define GLOBAL __global__` in global.h, `GLOBAL void f(...)` in the
    # .cu: tree-sitter reads GLOBAL as a type, and none of the 7 kernels was listed
    (tmp_path / "global.h").write_text("#define GLOBAL __global__\n")
    text = ('#include "global.h"\n'
            "GLOBAL void f(int* x) { __shared__ int s[64]; s[threadIdx.x] = 1; x[0] = s[0]; }\n"
            "void run(int* x) { f<<<1000, 100>>>(x); }\n")
    sf = parse(text, str(tmp_path / "g.cu"))
    assert [k.qualname for k in sf.kernels] == ["f"] and [d.kernel for d in sf.shared] == ["f"]


def test_a_local_declared_in_two_preprocessor_branches():
    # Rodinia's mergesort: `#ifdef MERGE_WG_SIZE_0 const int THREADS = ...; #else const int
    # THREADS = 256; #endif` read the first (dead) branch: a false OCC031 at 48 threads
    text = ("__global__ void k(float *p) {}\n"
            "void a(float *p) {\n#ifdef BAR\n  const int T = 48;\n#else\n  const int T = 256;\n"
            "#endif\n  k<<<64, T>>>(p);\n}\n"
            "void b(float *p) {\n#if 0\n  const int T = 48;\n  T = 2;\n#else\n  const int T = 256;\n"
            "#endif\n  k<<<64, T>>>(p);\n}\n")
    from occlint.source.preproc import View
    decided = parse(text, view=View(complete=True)).launches      # a unit's flags: BAR unset
    assert [la.block.x for la in decided] == [256, 256]
    # no flags known: `#ifdef BAR` undecided, both branches live, two declarations in one
    # block and neither is "the" one (`#if 0` is dead in any view)
    assert [la.block.x for la in parse(text).launches] == [None, 256]


def test_nvcc_never_defines_device_emulation():
    # Rodinia's hybridsort: `#ifndef __DEVICE_EMULATION__ #define WARP_LOG_SIZE 5 ...`
    text = ("#ifndef __DEVICE_EMULATION__\n#define WARP_LOG_SIZE 5\n#else\n#define WARP_LOG_SIZE 0\n"
            "#endif\n#define THREAD_N (3 << WARP_LOG_SIZE)\n__global__ void k(float *p) {}\n"
            "void h(float *p) { k<<<64, THREAD_N>>>(p); }\n")
    assert parse(text).launches[0].block.x == 96


def test_a_local_assigned_once_after_its_declaration():
    # Rodinia's gaussian: `int block_size; block_size = MAXBLOCKSIZE; dim3 dimBlock(block_size);`
    text = ("#define MAXBLOCKSIZE 512\n__global__ void k(float *p) {}\n"
            "void h(float *p, int n, bool c) {\n  int bs, other;\n  k<<<1, bs>>>(p);\n"
            "  bs = MAXBLOCKSIZE;\n  dim3 b(bs);\n  k<<<1, b>>>(p);\n"
            "  int twice;\n  twice = 64;\n  twice = 128;\n  k<<<1, twice>>>(p);\n"
            "  int branch;\n  if (c) branch = 32;\n  k<<<1, branch>>>(p);\n"
            "  int loop;\n  for (;;) { loop = 32; k<<<1, loop>>>(p); }\n"
            "  int plus;\n  plus += 32;\n  k<<<1, plus>>>(p);\n}\n")
    # before the assignment, in a branch without `else`, by `+=`: unknown; assigned twice by
    # statements of its block, or in the loop body just before the launch: the last write
    assert [la.block.x for la in parse(text).launches] == [None, 512, 128, None, 32, None]


def test_a_dim3_given_fields_by_statements_of_its_block():
    # Rodinia's bucketsort/mergesort: `dim3 threads(32); k<<<g, threads>>>(); threads.x = 128;
    # k2<<<g, threads>>>();` lost both blocks
    text = ("__global__ void k(float *p) {}\nvoid host(float *p, int n, bool c) {\n"
            "  dim3 t(32, 2);\n  k<<<64, t>>>(p);\n  t.x = 128;\n  k<<<64, t>>>(p);\n"
            "  t.y = n;\n  k<<<64, t>>>(p);\n"
            "  dim3 u(16);\n  if (c) u.x = 64;\n  k<<<64, u>>>(p);\n"
            "  dim3 v = dim3(8, 8);\n  k<<<1, v>>>(p);\n  v.x += 8;\n"
            "  dim3 w(4);\n  { w.x = 32; }\n  k<<<1, w>>>(p);\n}\n")
    # a field set in a branch or a nested block, or by `+=`: unknown
    assert [la.block.total for la in parse(text).launches] == [64, 256, None, None, None, None]


def test_a_block_that_is_a_template_parameter_of_the_launching_function():
    # Rodinia's dwt2d: `template <int WIN_SX> void launch(...) { k<<<g, WIN_SX>>>(); }`, called
    # as launch<192>, launch<128>, launch<64>: one of those three (each a launch to evaluate)
    from occlint.commands.kernels import records, why_no_occupancy

    text = ("template<int N> __global__ void k(float* p) { p[threadIdx.x] = 0.f; }\n"
            "template<int S> struct Traits { static constexpr int kNThreads = S; };\n"
            "template<int B> void nocall(float* p) { k<B><<<1000, B>>>(p); }\n"
            "template<int kNThreads> void viatype(float* p) {\n"
            "  using Ktraits = Traits<kNThreads>;\n"
            "  k<Ktraits::kNThreads><<<1000, Ktraits::kNThreads>>>(p);\n}\n"
            "template<int T> void called(float* p) { plain<<<10, T>>>(p); }\n"
            "template<int W> void paired(float* p) { k<W><<<10, W>>>(p); }\n"
            "template<int D> void deduced(float* p, int n) { k<D><<<10, D>>>(p); }\n"
            "__global__ void plain(float* p) {}\n"
            "void run(float* p, int n) { viatype<64>(p); called<32>(p); ::called<256>(p);\n"
            "  paired<64>(p); paired<128>(p);\n"
            "  deduced<64>(p, n); deduced(p, n); }\n")
    sf = parse(text)
    # `paired`: each block goes with its own instantiation (k<64> at 64, k<128> at 128), not
    # with both: no choices (Rodinia's dwt2d got a false OCC032, 128 threads with k<64, 8>)
    assert [la.choices for la in sf.launches] == [(), (), ((32, 0), (256, 0)), (), ()]
    recs = [r for r in records(sf) if r["kind"] == "launch"]
    why = [why_no_occupancy(r, True, {"k", "plain"}) for r in recs]
    assert why[0] == ("the block size `B` is a template parameter of `nocall`: one size per "
                      "instantiation of it, which occlint does not list")
    # `viatype`, called once as viatype<64>: its alias's class constant, 64, and k<64>
    assert (sf.launches[1].block.total, sf.launches[1].template_values) == (64, (64,))
    assert why[1] == "the launch could not be matched to one compiled instantiation"
    assert why[2] == "the launch could not be matched to one compiled instantiation"
    # `paired`: one block per binding, each with its own instantiation of k (OneFlow's
    # softmax, `lmha<E, GO_BACKWARD, 4|8|16>`): evaluated pair by pair, never crossed
    assert sf.launches[3].bindings == (((64,), 64, 0), ((128,), 128, 0))
    assert recs[3]["block_choices"] == [64, 128]
    assert why[3] == "the launch could not be matched to one compiled instantiation"
    assert why[4].startswith("the block size `D` is a template parameter of `deduced`")


def test_a_launch_after_an_empty_macro_statement_is_read():
    # Rodinia's dwt2d: `#define PERF_BEGIN` then `PERF_BEGIN` alone on the line before the
    # launch: tree-sitter read both as one declaration and the launch was not listed
    text = ("#define PERF_BEGIN\n#define PERF_END(name)\n#define TIMED // nothing\n"
            "#ifdef PROFILE\n#define MAYBE start()\n#else\n#define MAYBE\n#endif\n"
            "__global__ void k(float *p) {}\n"
            "void host(float *p) {\n  PERF_BEGIN\n  k<<<4, 128>>>(p);\n  PERF_END(\"k\")\n"
            "  TIMED\n  k<<<8, 64>>>(p);\n}\n"
            "void other(float *p) {\n  MAYBE\n  k<<<2, 32>>>(p);\n}\n")
    sf = parse(text)
    # MAYBE is not empty in every branch, but an all-capitals name alone before a launch is a
    # macro whatever it is defined as (Rodinia's PERF_BEGIN is defined in a header)
    assert [(la.grid.x, la.block.x) for la in sf.launches] == [(4, 128), (8, 64), (2, 32)]
    assert sf.text == text and sf.launches[0].span.line == 12
    lower = parse("__global__ void k(float *p) {}\nvoid h(float *p) {\n  maybe\n"
                  "  k<<<2, 32>>>(p);\n}\n")
    assert lower.launches == ()         # a lower-case name: left to the parser


def test_a_launch_macro_with_the_kernel_as_a_parameter_is_read_at_each_use(tmp_path):
    # CloverLeaf: `#define CUDALAUNCH(funcname, ...) funcname<<<num_blocks, BLOCK_SZ>>>(...)`
    # (30 uses) and `pack_##face` kernels were one launch of `funcname` matching no kernel
    text = ("#define BLOCK_SZ 256\n"
            "#define LAUNCH(funcname, ...) funcname<<<num_blocks, BLOCK_SZ>>>(__VA_ARGS__)\n"
            "#define PACK(face) pack_##face<<<n, BLOCK_SZ>>>(buf)\n"
            "#define TYPED(T, B) k<T><<<n, B>>>(buf)\n"
            "__global__ void heavy(double *a) {}\n__global__ void pack_left(double *b) {}\n"
            "__global__ void pack_right(double *b) {}\n"
            "template <typename T> __global__ void k(double *b) {}\n"
            "void run(double *a, double *buf, int num_blocks, int n) {\n"
            "  LAUNCH(heavy, a);\n  PACK(left);\n  PACK(right);\n"
            "  const int threads = 64;\n  TYPED(float, threads);\n}\n")
    got = [(la.callee, la.template_args, la.block.x, la.span.line, la.arg_spans)
           for la in parse(text).launches]
    # at each use, with the use's arguments; no argument spans (a fix would edit the shared body)
    assert got == [("heavy", (), 256, 10, ()), ("pack_left", (), 256, 11, ()),
                   ("pack_right", (), 256, 12, ()), ("k", ("float",), 64, 14, ())]
    # the same macro in a project header
    (tmp_path / "launch.hpp").write_text(
        "#define BLOCK_SZ 128\n"
        "#define LAUNCH(funcname, ...) funcname<<<num_blocks, BLOCK_SZ>>>(__VA_ARGS__)\n")
    unit = tmp_path / "u.cu"
    unit.write_text('#include "launch.hpp"\n__global__ void heavy(double *a) {}\n'
                    "void run(double *a, int num_blocks) {\n  LAUNCH(heavy, a);\n}\n")
    from occlint.source.preproc import View
    sf = parse(unit.read_text(), str(unit), View(include_dirs=(str(tmp_path),), complete=True))
    assert [(la.callee, la.block.x, la.span.line) for la in sf.launches] == [("heavy", 128, 4)]


def test_template_arguments_one_per_line_before_the_chevrons(tmp_path):
    # gsplat: `kern<A,\n B,\n SAFE\n ><<<1, 128>>>` - the last argument, an all-capitals name
    # alone on the line before the launch's, was blanked as a macro statement; its empty name
    # then made a header lookup loop forever (`check` never finished)
    (tmp_path / "Config.h").write_text("#pragma once\n#define PROJECT_FLAG 1\n")
    unit = tmp_path / "hang.cu"
    unit.write_text('#include "Config.h"\n'
                    "template <int A, int B, bool S> __global__ void kern(float* out) {}\n"
                    "void run(float* out) {\n  constexpr int A = 1;\n  constexpr int B = 2;\n"
                    "  constexpr bool SAFE = true;\n  kern<A,\n       B,\n       SAFE\n"
                    "  ><<<1, 128>>>(out);\n}\n")
    from occlint.source.preproc import View
    sf = parse(unit.read_text(), str(unit), View(include_dirs=(str(tmp_path),), complete=True))
    (la,) = sf.launches
    assert la.template_args == ("A", "B", "SAFE") and la.template_values == (1, 2, 1)
    from occlint.source.context import _header_test, has_word
    assert _header_test("", 0)(b"int x = 1;") is False and has_word(b"abc", b"") is False


def test_visual_studio_spaced_chevrons_are_a_launch():
    # diff-gaussian-rasterization: `k << <(P + 255) / 256, 256 >> > (...)` (nvcc compiles it);
    # its 8 launches were not seen. A template's `>> >` elsewhere is left alone.
    text = ("__global__ void heavy(int n) {}\ntemplate <class T> struct W {};\n"
            "void f(int P) {\n  heavy << <(P + 255) / 256, 256 >> > (P);\n"
            "  W<W<W<int>> > w;\n  heavy<<<1, 32 >> > (P);\n}\n")
    sf = parse(text)
    assert [(la.callee, la.block.x, la.span.line) for la in sf.launches] == \
        [("heavy", 256, 4), ("heavy", 32, 6)]


def test_an_if_on_the_block_size_narrows_it_in_its_branch():
    # DeepSpeed's swizzled_quantize: `dim3 block(threads); if (threads == 32) { k<32><<<n,
    # block>>> } else if (threads == 512) ...` (18 launches); cuda-samples' matrixMul
    # `if (block_size == 16) MatrixMulCUDA<16><<<grid, threads>>>` with dim3 threads(bs, bs)
    text = ("template <int T> __global__ void k(float* p) {}\n"
            "void launch(float* p, int n, int want) {\n"
            "  const int threads = (want < 512) ? want : 512;\n  dim3 block(threads);\n"
            "  if (threads == 32) {\n    k<32><<<n, block>>>(p);\n"
            "  } else if (512 == threads) {\n    k<512><<<n, block>>>(p);\n"
            "  } else {\n    k<0><<<n, block>>>(p);\n  }\n"
            "  if (threads == 64 && n) k<64><<<n, block>>>(p);\n"
            "  int w = want;\n  w += 1;\n  if (w == 128) k<128><<<n, w>>>(p);\n}\n")
    got = [(la.block.x, la.dispatch) for la in parse(text).launches]
    # the else, a compound condition and a written name: not narrowed
    assert got == [(32, True), (512, True), (None, False), (None, False), (None, False)]


def test_a_block_that_is_a_parameter_every_call_passes_the_same_constant():
    # DeepSpeed's multi_tensor_apply(block_size, ...) called with BLOCK_SIZE; llm.c's
    # attention_forward(..., block_size) called with 256; one value is the block, more are
    # choices, and an unknown caller leaves it a parameter, which the reason now says
    from occlint.commands.kernels import records, why_no_occupancy

    text = ("#define BLOCK_SIZE 512\n__global__ void k(float* p) {}\n"
            "void one(long block_size, float* p, int n) { k<<<n, block_size>>>(p); }\n"
            "void two(int b, float* p) { k<<<1, b>>>(p); }\n"
            "void open_(int t, float* p) { k<<<1, t>>>(p); }\n"
            "void run(float* p, int n, int m) {\n  one((long)BLOCK_SIZE, p, n);\n"
            "  two(64, p); two(128, p);\n  open_(m, p);\n}\n")
    sf = parse(text)
    assert [(la.block.x, la.choices, la.block_parameter) for la in sf.launches] == [
        (512, (), False), (None, ((64, 0), (128, 0)), False), (None, (), True)]
    (rec,) = [r for r in records(sf) if r["kind"] == "launch" and r["block_text"] == "t"]
    assert why_no_occupancy(rec, True, {"k"}) == (
        "the block size `t` is a parameter of `open_`, and not every call of it in this file "
        "passes a constant (a call from another file is not read)")


def test_class_template_constants_through_aliases_and_the_launching_functions_calls():
    # causal-conv1d / mamba: `using Ktraits = Conv_traits<kNThreads, kWidth>;` in a template
    # launcher called as `launch<128, 4>(...)`, then `k<Ktraits><<<g, Ktraits::kNThreads,
    # kSmemSize>>>` with `constexpr int kSmemSize = Ktraits::kSmemSize;`
    text = (
        "template<int kNThreads_, int kWidth_, bool kVec_=true> struct Tr {\n"
        "  static constexpr int kNThreads = kNThreads_;\n"
        "  static constexpr int kWidth = kWidth_;\n"
        "  static constexpr int kSmemSize = kNThreads * 4 * (kVec_ ? 2 : 1);\n"
        "  enum { kRows = 2 };\n};\n"
        "template<typename K> __global__ void k(float* p) { p[threadIdx.x] = K::kWidth; }\n"
        "template<int kNThreads, int kWidth> void same(float* p) {\n"
        "  using Ktraits = Tr<kNThreads, kWidth>;\n"
        "  constexpr int kSmemSize = Ktraits::kSmemSize;\n"
        "  k<Ktraits><<<10, Ktraits::kNThreads, kSmemSize>>>(p);\n}\n"
        "template<int kNThreads> void differ(float* p) {\n"
        "  typedef Tr<kNThreads, 2, false> Ktraits;\n"
        "  k<Ktraits><<<10, Ktraits::kNThreads>>>(p);\n}\n"
        "using Fixed = Tr<96, 1>;\n"
        "void plain(float* p) { k<Fixed><<<10, Fixed::kNThreads, Fixed::kRows * 8>>>(p);\n"
        "  k<Fixed><<<10, Tr<160, 1>::kNThreads, Tr<160, 1, false>::kSmemSize>>>(p); }\n"
        "void run(float* p) { same<128, 2>(p); same<128, 4>(p); differ<64>(p); differ<32>(p); }\n")
    sf = parse(text)
    got = [(la.block.total, la.dynamic_smem, la.choices) for la in sf.launches]
    # `same`: 128 threads and 1 KB for both calls; `differ`: 64 or 32 threads, each with its
    # own instantiation, so neither alone (no choices: they would pair with either kernel)
    assert got == [(128, 1024, ()), (None, 0, ()), (96, 16, ()), (160, 640, ())]
    from occlint.commands.kernels import records, why_no_occupancy

    why = why_no_occupancy([r for r in records(sf) if r["kind"] == "launch"][1], True, {"k"})
    assert why == ("the block size `Ktraits::kNThreads` depends on template parameters of "
                   "`differ` (`kNThreads`), and the calls of `differ` in this file do not give "
                   "it one value (each instantiation has its own; a call from another file is "
                   "not read)")


def test_a_specialized_class_template_is_not_read_for_its_constants():
    # `Tr<128>` specialized: the specialization's own constant (64), never the primary
    # template's (128); any other argument: unknown (a partial specialization may match it)
    text = ("template<int N> struct Tr { static constexpr int kThreads = N; };\n"
            "template<> struct Tr<128> { static constexpr int kThreads = 64; };\n"
            "__global__ void k(float* p) {}\n"
            "void run(float* p) { k<<<10, Tr<128>::kThreads>>>(p); k<<<10, Tr<256>::kThreads>>>(p); }\n")
    assert [la.block.total for la in parse(text).launches] == [64, None]


def _blocks_and_choices(text: str) -> list:
    """(launching function, block size, the distinct block sizes of its choices) per launch."""
    return [(la.function, la.block.total, tuple(sorted({c[0] for c in la.choices})))
            for la in parse(text).launches]


def test_a_local_assigned_in_every_arm_of_an_if_else_takes_those_values():
    # NVIDIA-developer-blog's gups.cu: `size_t thread; if (!shm) { thread = GMEM; ... } else {
    # thread = SHMEM; ... }` then 13 launches at `thread` (both 1024): "not a constant"
    text = ("#define GMEM 1024\n#define SHMEM 1024\n__global__ void k(float *x) {}\n"
            "void same(float *x, bool shm) {\n  size_t thread, grid;\n"
            "  if (!shm) { thread = GMEM; grid = 8; } else { thread = SHMEM; grid = 4; }\n"
            "  k<<<grid, thread>>>(x);\n}\n"
            "void two(float *x, bool c) { int t; if (c) { t = 256; } else { t = 128; } k<<<1, t>>>(x); }\n"
            "void chain(float *x, int c) { int t; if (c == 1) t = 256; else if (c == 2) t = 512;"
            " else t = 64; k<<<1, t>>>(x); }\n"
            "void no_else(float *x, bool c) { int t; if (c) t = 256; k<<<1, t>>>(x); }\n"
            "void twice(float *x, bool c) { int t; if (c) { t = 256; t = 32; } else { t = 128; }"
            " k<<<1, t>>>(x); }\n"
            "void after(float *x, bool c) { int t; if (c) t = 256; else t = 128; t = 64;"
            " k<<<1, t>>>(x); }\n"
            "void looped(float *x, bool c) { int t; if (c) { for (;;) t = 256; } else t = 128;"
            " k<<<1, t>>>(x); }\n"
            "void before(float *x, bool c) { int t; k<<<1, t>>>(x); if (c) t = 1; else t = 2; }\n")
    got = _blocks_and_choices(text)
    # two values: unknown, not a choice of two (ccminer's lyra2 below); `t = 64;` after the
    # if/else, straight before the launch: 64
    assert got == [("same", 1024, ()), ("two", None, ()), ("chain", None, ()),
                   ("no_else", None, ()), ("twice", None, ()), ("after", 64, ()),
                   ("looped", None, ()), ("before", None, ())]
    # ccminer's lyra2: `tpb = 32; if (arch >= 520) tpb = 32; else if (arch >= 500) tpb = 32;
    # else if (arch >= 200) tpb = 160;` and the launch under `if (arch >= 520)`: 160 never
    # reaches it (it gave a false OCC032, "the launch fails")
    lyra = ("__global__ void __launch_bounds__(32, 1) k(float *x) {}\n"
            "void host(float *x, int arch) {\n  unsigned tpb = 32;\n  if (arch >= 520) tpb = 32;\n"
            "  else if (arch >= 500) tpb = 32;\n  else if (arch >= 200) tpb = 160;\n"
            "  dim3 block(4, tpb >> 2);\n  if (arch >= 520) k<<<1, block>>>(x);\n"
            "  else k<<<1, tpb>>>(x);\n}\n")
    assert [(la.block.total, la.choices) for la in parse(lyra).launches] == [(None, ()), (None, ())]


def test_a_reassigned_local_is_read_at_each_use_and_dim3_locals_carry_few_values():
    # ccminer: lbry's `tpb = 1024; dim3 block1(tpb); tpb = 768; dim3 block2(tpb);` (straight
    # line: each use reads the last write before it); cubehash's `uint32_t tpb = TPB35; if
    # (arch >= 500) tpb = TPB50; dim3 block(tpb);` is unknown (which one depends on the device)
    text = ("__global__ void k(float *x) {}\n"
            "void seq(float *x) {\n  int tpb;\n  tpb = 1024;\n  dim3 b1(tpb);\n  tpb = 768;\n"
            "  dim3 b2(tpb);\n  k<<<1, b1>>>(x);\n  k<<<1, b2>>>(x);\n  k<<<1, tpb>>>(x);\n}\n"
            "void init(float *x) { int t = 64; t = 96; k<<<1, t>>>(x); }\n"
            "void maybe(float *x, int arch) {\n  unsigned tpb = 576;\n  if (arch >= 500) tpb = 1024;\n"
            "  dim3 block(tpb, 2);\n  k<<<1, block>>>(x);\n  const dim3 b = dim3(tpb);\n"
            "  k<<<1, b>>>(x);\n}\n"
            "void square(float *x, bool c) { int s = c ? 4 : 32; dim3 b(s, s); k<<<1, b>>>(x); }\n"
            "void walk(float *x, int i) { const int sizes[] = {64, 128}; int t = sizes[i];"
            " dim3 b(t, 2); k<<<1, b>>>(x); }\n"
            "void looped(float *x, int n) { int t = 32; for (int i = 0; i < n; i++) t = 64;"
            " k<<<1, t>>>(x); }\n"
            "void nested(float *x, bool c) { int t = 32; if (c) { t = 64; } k<<<1, t>>>(x); t = 128; }\n")
    got = _blocks_and_choices(text)
    assert got == [("seq", 1024, ()), ("seq", 768, ()), ("seq", 768, ()), ("init", 96, ()),
                   ("maybe", None, ()), ("maybe", None, ()),
                   ("square", None, ()), ("walk", None, (128, 256)), ("looped", None, ()),
                   ("nested", None, ())]


def test_conditionals_that_split_a_kernels_head_or_its_braces_keep_one_branch():
    # ccminer: `__global__` `#if __CUDA_ARCH__ >= 500` `__launch_bounds__(512, 3)` `#endif`
    # `void k(...)` (6 kernels), `#if __CUDA_ARCH__ <= 500` `__global__ __launch_bounds__(384,
    # 2)` `#else` `... (1024, 1)` `#endif`, and a body opening `for (...) {` in `#if` and `if (...)
    # {` in `#else` before one shared `}` (keccak256_gpu_hash_80): none of these kernels was
    # found. The branch kept is the first live in nvcc's sm_90 pass; an undecided one is kept
    # (ggml's lightning-indexer: `#if !defined(GGML_USE_HIP)` `if (...) { ... } else {`
    # `#else` `{` `#endif`: its launches had no function and no block)
    text = ("__global__\n#if __CUDA_ARCH__ >= 500\n__launch_bounds__(512, 3) /* 40 regs */\n"
            "#endif\nvoid a(float *x) { x[0] = 1; }\n"
            "#if __CUDA_ARCH__ <= 500\n__global__ __launch_bounds__(384, 2)\n#else\n"
            "__global__ __launch_bounds__(1024, 1)\n#endif\nvoid b(float *x) { x[0] = 2; }\n"
            "__global__ void c(unsigned n, float *x) {\n  unsigned t = threadIdx.x;\n"
            "#if __CUDA_ARCH__ > 500\n  for (unsigned i = t; i < n; i += gridDim.x * blockDim.x) {\n"
            "#else\n  if (t < n) {\n#endif\n    x[t] = 3;\n  }\n}\n"
            "void host(float *x, bool nv) {\n  dim3 block(32, 8);\n"
            "#if !defined(USE_HIP)\n  if (nv) {\n    a<<<1, block>>>(x);\n  } else {\n"
            "#else\n  {\n#endif\n    b<<<1, 256>>>(x);\n  }\n}\n"
            "#if A\n__global__ void d(float *x) {}\n#else\n__global__ void d2(float *x) {}\n#endif\n")
    sf = parse(text)
    got = {k.name: (k.launch_bounds.max_threads, k.launch_bounds.min_blocks)
           if k.launch_bounds else None for k in sf.kernels}
    assert got == {"a": (512, 3), "b": (1024, 1), "c": None, "d": None, "d2": None}
    assert next(k for k in sf.kernels if k.name == "c").grid_stride     # the sm_90 branch
    assert [(la.callee, la.function, la.block.total) for la in sf.launches] == \
        [("a", "host", 256), ("b", "host", 256)]


def test_launches_in_macros_after_non_ascii_text_keep_their_positions():
    # LeetCUDA's hgemm_wmma_stage.cu: Chinese comments before the launch macros dropped all 39
    # launches (a macro's range in bytes was compared with spans in characters), and a macro
    # whose kernel is a parameter sliced its callee from the wrong offset ("dim3 block(256); k")
    text = ("template <int S> __global__ void k(float *x) {\n  // 索索索索索索索索索索索索索索索索\n"
            "  x[threadIdx.x] = S;\n}\n"
            "#define LAUNCH_K(stages) { dim3 block(256); k<(stages)><<<1024, block>>>(x); }\n"
            "#define LAUNCH_F(f, n) f<<<n, 128>>>(x)\n"
            "__global__ void g(float *x) {}\n"
            "void run(float *x, int s) {\n  // é\n  switch (s) { case 2: LAUNCH_K(2); break; }\n"
            "  LAUNCH_F(g, 64);\n}\n")
    got = [(la.callee, la.template_args, la.block.total) for la in parse(text).launches]
    assert got == [("k", ("(2)",), 256), ("g", (), 128)]


def test_a_whole_function_macro_reads_its_locals_with_each_uses_arguments():
    # LeetCUDA's TORCH_BINDING_* macros define a host function per use, at file scope:
    # `dim3 block(256 / (n_elements));` then `k_##t<...><<<grid, block>>>` (114 launches were
    # "not a compile-time constant"); a local written again in the body stays unknown
    text = ("template <int NT> __global__ void k_a(float *x) {}\n"
            "template <int NT> __global__ void k_b(float *x) {}\n"
            "template <int NT> __global__ void k_c(float *x) {}\n"
            "template <int NT> __global__ void k_d(float *x) {}\n"
            "#define DIRECT(t, n) void run_##t(float *x, int N) { k_##t<256 / (n)><<<N, 256 / (n)>>>(x); }\n"
            "#define LOCAL(t, n) void run_##t(float *x, int N) { \\\n"
            "    static const int T = 256 / (n); dim3 block(T); k_##t<T><<<N, block>>>(x); }\n"
            "#define WRITTEN(t, n) void run_##t(float *x, int N) { \\\n"
            "    int b = 256 / (n); if (N > 4) b = 32; k_##t<1><<<N, b>>>(x); }\n"
            "DIRECT(a, 4)\nLOCAL(b, 2)\nLOCAL(c, 8)\nWRITTEN(d, 4)\n")
    got = [(la.callee, la.block.total) for la in parse(text).launches]
    assert got == [("k_a", 64), ("k_b", 128), ("k_c", 32), ("k_d", None)]


def test_a_launch_macro_whose_sizes_or_kernel_local_are_parameters_is_read_at_each_use():
    # llm-awq's MMHA_LAUNCH_KERNEL(..., THDS_PER_BLOCK, ...): `auto kernel = k<T, ...,
    # THDS_PER_BLOCK>; kernel<<<grid, THDS_PER_BLOCK, smem>>>(params)`, used with 64, 128 and
    # 256: one launch at the definition, "`THDS_PER_BLOCK` is not a compile-time constant";
    # a macro whose parameter is only the block (`k<<<1, n>>>`) was read the same way
    text = ("template <typename T, int B> __global__ void kk(T* p) {}\n"
            "__global__ void k(float* p) {}\n"
            "#define LAUNCH(T, THDS_PER_BLOCK, stream) \\\n"
            "    auto kernel = kk<T, THDS_PER_BLOCK>; \\\n"
            "    kernel<<<dim3(4, 2), THDS_PER_BLOCK, 0, stream>>>(p)\n"
            "#define L(n) k<<<1, n>>>(q)\n"
            "template <typename T> void run(T* p, float* q, int n, cudaStream_t stream) {\n"
            "  if (n < 32) { LAUNCH(T, 64, stream); } else { LAUNCH(T, 128, stream); }\n"
            "  L(96); }\n")
    got = [(la.callee, la.template_args, la.block.total, la.span.line)
           for la in parse(text).launches]
    assert got == [("kk", ("T", "64"), 64, 8), ("kk", ("T", "128"), 128, 8), ("k", (), 96, 9)]


def test_a_launch_macro_used_inside_other_macros_is_read_at_the_outer_uses():
    # LeetCUDA's block_all_reduce.cu: TORCH_BINDING_REDUCE(f32, ...) -> DISPATCH_REDUCE_KERNEL
    # -> LANUCH_REDUCE_KERNEL(32, f32, ...) `block_all_reduce_sum_##t##_kernel<(NT)><<<grid,
    # block>>>`: 120 launches were not listed; the outer bodies' locals (`dim3 grid(1024)`) count
    text = ("template <int NT> __global__ void sum_f32_kernel(float *x) {}\n"
            "#define LAUNCH(NT, t) sum_##t##_kernel<(NT)><<<grid, block>>>(x);\n"
            "#define DISPATCH(t) switch (K) { case 128: LAUNCH(128, t) break; }\n"
            "#define BIND(t) void run_##t(float *x, int K) { dim3 grid(1024); dim3 block(K); \\\n"
            "    DISPATCH(t) }\n"
            "BIND(f32)\n")
    got = [(la.callee, la.template_args, la.grid.total, la.block.total, la.span.line)
           for la in parse(text).launches]
    assert got == [("sum_f32_kernel", ("(128)",), 1024, None, 6)]


def test_macros_that_name_each_other_are_read_once_per_use():
    # `A` expands to `B`, whose body uses `A` again (the preprocessor does not expand it twice):
    # the reading of outer uses recursed without end and the file's whole model was lost
    text = ("template <int N> __global__ void k(int n) {}\n"
            "#define A(x) B(x)\n"
            "#define B(x) A(x) k<x><<<1, x>>>(0);\n"
            "void f() { A(128); }\n")
    got = [(la.callee, la.template_args, la.block.total, la.span.line)
           for la in parse(text).launches]
    assert got == [("k", ("128",), 128, 4)]


def test_a_comment_inside_a_macro_body_keeps_its_token_paste():
    # LeetCUDA: a `/* */` inside a whole-function macro makes tree-sitter's define an ERROR, so
    # the body is read from its text; there `k_##t` bound `#t` (a stringified name) and pasted
    # `k_t`, a kernel nobody defines
    text = ("template <int NT> __global__ void k_a(float *x) { x[threadIdx.x] = NT; }\n"
            "#define BIND(t, n)                              \\\n"
            "  void run_##t(float *x, int N) {               \\\n"
            "    k_##t<256 / (n)><<<N, 256 / (n)>>>(x);  /* direct */  \\\n"
            "  }\n"
            "BIND(a, 4)\n")
    got = [(la.callee, la.template_args, la.block.total) for la in parse(text).launches]
    assert got == [("k_a", ("256 / (4)",), 64)]


def test_a_typedef_in_a_dead_branch_does_not_size_an_array():
    # xmrig's hash.hpp: `#if ... typedef unsigned char exec_t; #else typedef unsigned short
    # exec_t; #endif` sized a __shared__ array from the dead branch (16 KiB, ptxas 8 KiB); two
    # live typedefs of one name with different sizes leave it unknown
    text = ("__global__ void k(unsigned *out) {\n#if 1\n  typedef unsigned char exec_t;\n#else\n"
            "  typedef unsigned short exec_t;\n#endif\n"
            "  __shared__ unsigned buf[256 * 32 * sizeof(exec_t) / sizeof(unsigned)];\n"
            "  out[0] = buf[threadIdx.x];\n}\n"
            "typedef short two_t;\ntypedef int two_t;\n"
            "__global__ void g(unsigned *out) { __shared__ two_t t[64]; out[0] = t[threadIdx.x]; }\n")
    from occlint.source.preproc import View

    sf = parse(text, "x.cu", View(host=True, complete=True))
    assert [(d.name, d.size_bytes) for d in sf.shared] == [("buf", 8192), ("t", None)]


def test_a_redefined_launch_macro_is_read_with_the_definition_in_force_at_each_use():
    # PyTorch's indexing code (how-to-optim-algorithm-in-cuda): LAUNCH is #undef'd and defined
    # again for another kernel; each use was read with every definition (66 phantom launches,
    # one of them taking the wrong kernel's figures and an OCC031 at the wrong line)
    text = ("template <int D> __global__ void first(float *x) {}\n"
            "template <int D> __global__ void second(float *x) {}\n"
            "#define LAUNCH(D) first<D><<<4096, 256>>>(p);\n"
            "void a(float *p) { LAUNCH(1); }\n#undef LAUNCH\n"
            "#define LAUNCH(D) second<D><<<4096, 100>>>(p);\n"
            "void b(float *p) { LAUNCH(2); }\n#undef LAUNCH\n")
    got = [(la.callee, la.template_args, la.block.total, la.span.line)
           for la in parse(text).launches]
    assert got == [("first", ("1",), 256, 4), ("second", ("2",), 100, 7)]


def test_a_kernel_named_through_a_macro_alias_is_that_kernel():
    # xmrig: `#define fillAes4Rx4 fillAes4Rx4_v104` in each coin's .cu, then
    # `fillAes4Rx4<64><<<...>>>`: the launch matched no kernel and had no figure
    text = ("template <int N> __global__ void fill_v104(unsigned *p) {}\n"
            "#define fill fill_v104\n#define FILL fill\n#define NOT_A_NAME (1 + 2)\n"
            "void entry(unsigned *p) { fill<64><<<1, 128>>>(p); FILL<8><<<1, 64>>>(p); }\n")
    assert [(la.callee, la.template_args) for la in parse(text).launches] == \
        [("fill_v104", ("64",)), ("fill_v104", ("8",))]


def test_a_dim3_of_the_launching_templates_parameters_is_read_per_call():
    # OneFlow's softmax (how-to-optim): `dim3 block_dim(W, 128 / W)` in a template called with
    # W = 8, 16, 32: 128 threads at every call, so the launch's block is 128
    text = ("template <int W> __global__ void k(float *x) { x[threadIdx.x] = W; }\n"
            "template <int W> void launch(float *x, int g) {\n"
            "  constexpr int block_size = 128;\n"
            "  constexpr int groups = block_size / W;\n"
            "  dim3 block_dim(W, groups);\n  k<W><<<g, block_dim>>>(x);\n}\n"
            "void run(float *x, int g, int c) {\n"
            "  if (c <= 8) launch<8>(x, g); else if (c <= 16) launch<16>(x, g);\n"
            "  else launch<32>(x, g);\n}\n")
    [la] = parse(text).launches
    assert (la.block.total, la.bindings, la.choices) == (128, (), ())


def test_a_constant_arrays_element_at_a_constant_index_is_that_element():
    # gpu-mode lectures (reduced): `k<<<g, SIZES[1]>>>` of `const int SIZES[] = {1024, 256}`
    # was "one of 256, 1024", and a kernel bounded at 256 got a false OCC032 ("the launch
    # fails"); a local copy and a sweep over the array keep their meaning
    text = ("__global__ void __launch_bounds__(256) k(float *x) {}\n"
            "const int SIZES[] = {1024, 256};\n"
            "void a(float *x, int g) { k<<<g, SIZES[1]>>>(x); }\n"
            "void b(float *x, int g) { int bs = SIZES[1]; k<<<g, bs>>>(x); }\n"
            "void c(float *x, int g) { constexpr int s[] = {64, 32 * 4}; k<<<g, s[1]>>>(x); }\n"
            "void d(float *x, int g) { for (int i = 0; i < 2; ++i) k<<<g, SIZES[i]>>>(x); }\n"
            "void e(float *x, int g) { int s[] = {64, 128}; k<<<g, s[1]>>>(x); }\n"
            "void f(float *x, int g) { k<<<g, SIZES[2]>>>(x); }\n")
    got = [(la.block.total, la.choices) for la in parse(text).launches]
    # (`e`: a local array that is not const may have its elements written: not a constant)
    assert got == [(256, ()), (256, ()), (128, ()), (None, ((256, 0), (1024, 0))), (None, ()),
                   (None, ())]


def test_a_launch_macro_redefined_in_a_dead_branch_stays_in_force():
    # pytorch3d's pulsar pattern in one file: `#ifdef __CUDACC__` a `<<<` launch macro `#else`
    # a host loop of the same name: the dead definition ended the live one's reach, and the
    # launch was lost
    text = ("#ifdef __CUDACC__\n#define LAUNCH_1D(F, N, ...) F<<<((N) + 255) / 256, 256>>>(__VA_ARGS__)\n"
            "#else\n#define LAUNCH_1D(F, N, ...) for (int i = 0; i < (N); ++i) F(__VA_ARGS__)\n"
            "#endif\n__global__ void k(float* x, int n) { x[threadIdx.x] = 0.f; }\n"
            "void run(float* x, int n) { LAUNCH_1D(k, n, x, n); }\n")
    assert [(la.callee, la.block.total, la.span.line) for la in parse(text).launches] == \
        [("k", 256, 7)]


def test_a_kernel_after_uses_of_a_macro_that_ends_its_own_statement_is_read():
    # bitsandbytes: `#define MAKE_X(n, T) template __global__ void k<T, n>(...);` then
    # `MAKE_X(1, float)` lines with no `;`: the parser merged them with the next kernel, which
    # was lost (and with it its __launch_bounds__ and its OCC020)
    text = ("#define MAKE_ARR(n, T) __device__ T arr_##n;\n\n"
            "MAKE_ARR(1, float)\nMAKE_ARR(2, float)\n\n"
            "__global__ void __launch_bounds__(128) kC(float* g) { g[threadIdx.x] = arr_1; }\n"
            "#define CHECK(x) if ((x) != 0) return;\n"
            "void launch(float* g) {\n  CHECK(g == 0)\n  kC<<<1, 128>>>(g);\n}\n")
    sf = parse(text)
    assert [(k.name, k.launch_bounds.max_threads) for k in sf.kernels] == [("kC", 128)]
    assert [(la.callee, la.block.total) for la in sf.launches] == [("kC", 128)]


def test_a_switch_on_a_dim3_field_gives_each_case_its_block():
    # cudpp's reduce: `switch (dimBlock.x) { case 512: reduce<512><<<grid, dimBlock>>>` (20
    # launches whose block a reader knows from the case); a size dispatch, as a `switch (n)` is
    text = ("template <int BS> __global__ void r(float* o) {}\n"
            "void run(float* o, unsigned t, int g) {\n  dim3 dimBlock(t, 1, 1);\n"
            "  switch (dimBlock.x) {\n  case 512: r<512><<<g, dimBlock>>>(o); break;\n"
            "  case 128: r<128><<<g, dimBlock>>>(o); break;\n  default: r<1><<<g, dimBlock>>>(o);\n  }\n"
            "  r<2><<<g, dimBlock>>>(o);\n}\n")
    got = [(la.block.total, la.dispatch) for la in parse(text).launches]
    assert got == [(512, True), (128, True), (None, False), (None, False)]


def test_a_subscript_guarded_below_the_block_size_is_thread_derived():
    # GPU MODE's privatization2.cu: `if (accessIdx >= 0 && accessIdx < blockDim.x)` around
    # `sharedData[accessIdx]` (accessIdx = threadIdx.x + i) proves the subscript below the
    # block's threads, as `sharedData[threadIdx.x]` is; a name written after the test does not
    text = ("__global__ void w(const float* in, float* out, int h) {\n"
            "  __shared__ float d[1024];\n  d[threadIdx.x] = in[threadIdx.x];\n"
            "  for (int i = -h; i <= h; ++i) {\n    int a = threadIdx.x + i;\n"
            "    if (a >= 0 && a < blockDim.x) out[0] += d[a];\n  }\n"
            "  int b = threadIdx.x;\n  if (b < blockDim.x) { b += 4; out[1] = d[b]; }\n}\n")
    [decl] = parse(text).shared
    assert [(i.text, i.thread_derived, i.axis) for i in decl.indices] == [
        ("threadIdx.x", True, "x"), ("a", True, "x"), ("b", False, None)]


def test_a_traits_class_template_argument_gives_the_launch_its_block():
    # flash-attention: `k<Kernel_traits><<<g, Kernel_traits::kNThreads>>>` in run_k<Kernel_traits>,
    # called as run_k<Traits<4>> (one call: 128), run_k<Traits<8>> too (each at its own), and
    # through one more template (run_flash_bwd -> run_flash_bwd_seqk_parallel); a type the
    # caller leaves unbound stays unbound (every instantiation it may run, as before)
    text = ("template <int W> struct Traits { static constexpr int kNThreads = W * 32; };\n"
            "template <typename KT> __global__ void k(float* o) {}\n"
            "template <typename KT> void run_k(float* o) { k<KT><<<1, KT::kNThreads>>>(o); }\n"
            "template <typename KT> void one(float* o) { k<KT><<<2, KT::kNThreads>>>(o); }\n"
            "template <typename KT> void inner(float* o) { k<KT><<<3, KT::kNThreads>>>(o); }\n"
            "template <int W> void outer(float* o) { inner<Traits<W>>(o); }\n"
            "template <typename T> __global__ void g(T* o) {}\n"
            "template <typename T> void gl(T* o) { g<T><<<4, 256>>>(o); }\n"
            "template <typename T> void gout(T* o) { gl<T>(o); }\n"
            "void run(float* o) { run_k<Traits<4>>(o); run_k<Traits<8>>(o); one<Traits<2>>(o);\n"
            "  outer<8>(o); }\n")
    got = [(la.block.total, la.template_values, la.bindings) for la in parse(text).launches]
    assert got == [(None, (None,), ((("Traits<4>",), 128, 0), (("Traits<8>",), 256, 0))),
                   (64, ("Traits<2>",), ()), (256, ("Traits<8>",), ()), (256, (None,), ())]


def test_an_aggregate_initialized_launch_config_is_read():
    # NCCL's ubx: `cudaLaunchConfig_t cfg = {sms, threads, 0, stream, NULL, 0};` gave block=?
    # and "not a compile-time constant"; `= {}` then field writes left the shared memory
    # unknown, though value-initialization makes it 0
    text = ("__global__ void k(float* p) {}\n"
            "void a(float* p, cudaStream_t s) {\n  cudaLaunchConfig_t cfg = {16, 256, 0, s, NULL, 0};\n"
            "  cudaLaunchKernelEx(&cfg, k, p);\n}\n"
            "void b(float* p) {\n  cudaLaunchConfig_t cfg = {};\n  cfg.gridDim = dim3(8);\n"
            "  cfg.blockDim = dim3(128);\n  cudaLaunchKernelEx(&cfg, k, p);\n}\n"
            "void c(float* p) {\n  cudaLaunchConfig_t cfg = {.gridDim = 4, .blockDim = 64};\n"
            "  cudaLaunchKernelEx(&cfg, k, p);\n}\n"
            "void d(float* p, cudaLaunchConfig_t cfg) { cudaLaunchKernelEx(&cfg, k, p); }\n")
    got = [(la.grid.total, la.block.total, la.dynamic_smem) for la in parse(text).launches]
    assert got == [(16, 256, 0), (8, 128, 0), (4, 64, 0), (None, None, None)]


def test_a_launch_api_macro_whose_kernel_is_a_parameter_launches_at_each_use():
    # NCCL's nccl_ep: `#define LAUNCH_KERNEL(config, kernel, ...) cudaLaunchKernelEx(config,
    # kernel, ...)`: a phantom launch of `kernel` at the macro's line, none at the 4 uses
    text = ("#define LAUNCH_KERNEL(config, kernel, ...) cudaLaunchKernelEx(config, kernel, ##__VA_ARGS__)\n"
            "template <int N> __global__ void clean(int* p) {}\n"
            "void run(int* p, cudaLaunchConfig_t cfg) {\n  constexpr int kNumThreads = 256;\n"
            "  LAUNCH_KERNEL(&cfg, clean<kNumThreads>, p);\n  LAUNCH_KERNEL(&cfg, &clean<64>, p);\n}\n")
    got = [(la.callee, la.template_args, la.template_values, la.span.line, la.kind)
           for la in parse(text).launches]
    assert got == [("clean", ("kNumThreads",), (256,), 5, "cudaLaunchKernelEx"),
                   ("clean", ("64",), (64,), 6, "cudaLaunchKernelEx")]


def test_a_kernel_a_macro_defines_is_read_at_each_use():
    # NCCL's DEFINE_ncclDevKernel: `#define DEFINE_K(s, T) __global__ void k_##s(T* p) {...}` then
    # `DEFINE_K(f32, float)`: nvcc reported the kernels (one spilled 1376 B under its bounds)
    # and occlint listed none; at the use, in the use's namespace, with no fix on the shared text
    text = ("#define DEFINE_K(s, T) \\\\\n  __global__ void __launch_bounds__(256) k_##s(T* p) "
            "{ p[threadIdx.x] = T(0); }\n"
            "namespace ops {\nDEFINE_K(f32, float)\n}\nDEFINE_K(f64, double)\n"
            "void run(float* p) { ops::k_f32<<<4, 256>>>(p); }\n")
    sf = parse(text, "k.cu")
    got = [(k.qualname, k.span.line, k.launch_bounds.max_threads, k.launch_bounds.span, k.in_macro)
           for k in sf.kernels]
    assert got == [("ops::k_f32", 4, 256, None, "DEFINE_K"), ("k_f64", 6, 256, None, "DEFINE_K")]
    from occlint.link import find_kernel
    assert find_kernel(sf, sf.launches[0]).qualname == "ops::k_f32"


def test_a_namespace_named_by_a_macro_and_a_kernel_head_a_macro_writes():
    # flash-attention: `namespace FLASH_NAMESPACE {` (`#define FLASH_NAMESPACE flash`: nvcc's
    # `flash::k`, occlint's `FLASH_NAMESPACE::k` matched no figures) and
    # DEFINE_FLASH_FORWARD_KERNEL, a macro that writes a kernel's head, its body after the use;
    # the head's `void kernelName(...)` was blanked as a bounds macro inside the #define
    text = ("#define FLASH_NAMESPACE flash\n"
            "#define DEFINE_KERNEL(kernelName, ...) \\\\\ntemplate<int N, __VA_ARGS__> \\\\\n"
            "__global__ void kernelName(float *out)\n"
            "namespace FLASH_NAMESPACE {\n__global__ void k(float* o) {}\n"
            "DEFINE_KERNEL(fwd_kernel, bool Flag) {\n  out[threadIdx.x] = Flag ? N : 0;\n}\n}\n")
    got = [(k.qualname, k.template_params, k.span.line, k.in_macro) for k in parse(text).kernels]
    assert got == [("flash::k", (), 6, None),
                   ("flash::fwd_kernel", ("N", "Flag"), 7, "DEFINE_KERNEL")]


def test_a_defaulted_template_block_and_an_alias_of_an_alias_are_read():
    # xgboost's dh::LaunchN<ITEMS = 8, BLOCK_THREADS = 256, L>(n, stream, f): no call writes the
    # block, its default is the block; histogram.cu's __launch_bounds__(StHistBound::
    # kBlockThreads, ...) through `using StHistBound = HistSm75; using HistSm75 =
    # HistTuning<1024, 1>;`
    text = ("template <typename L> __global__ void K(L f) {}\n"
            "template <int ITEMS = 8, int BLOCK = 256, typename L>\n"
            "void LaunchN(int n, L f) { K<<<(n + ITEMS * BLOCK - 1) / (ITEMS * BLOCK), BLOCK>>>(f); }\n"
            "struct Fill { __device__ void operator()(int) const {} };\n"
            "void run(int n) { LaunchN(n, Fill{}); LaunchN<4>(n, Fill{}); }\n"
            "template <int B, int M> struct Tuning { static constexpr int kB = B; "
            "static constexpr int kM = M; };\n"
            "using Sm75 = Tuning<1024, 1>;\nusing Bound = Sm75;\n"
            "__global__ void __launch_bounds__(Bound::kB, Bound::kM) H(float* x) {}\n")
    sf = parse(text)
    assert [la.block.total for la in sf.launches] == [256]
    h = next(k for k in sf.kernels if k.name == "H")
    assert (h.launch_bounds.max_threads, h.launch_bounds.min_blocks) == (1024, 1)


def test_system_scope_ordering_in_a_called_function_is_not_a_grid_knob(tmp_path):
    # NCCL's device-API examples: `peer_barrier(...)` (a header's `__device__` function with
    # `__threadfence_system`, or PTX `red.release.sys`) in a grid-stride kernel: 16 CTAs must
    # equal the barrier count, and OCC033's exemption read only the kernel's own body
    (tmp_path / "peer.cuh").write_text(
        "__device__ inline void peer_barrier(unsigned* f) { __threadfence_system(); }\n"
        '__device__ inline void ptx_barrier(unsigned* f) { asm volatile("red.release.sys.global.add.u32 [%0], 1;" :: "l"(f)); }\n')
    text = ('#include "peer.cuh"\n'
            "__global__ void a(float* p, int n, unsigned* f) {\n"
            "  for (int i = threadIdx.x; i < n; i += blockDim.x * gridDim.x) p[i] = 0;\n"
            "  peer_barrier(f);\n}\n"
            "__global__ void b(float* p, int n, unsigned* f) {\n"
            "  for (int i = threadIdx.x; i < n; i += blockDim.x * gridDim.x) p[i] = 0;\n"
            "  ptx_barrier(f);\n}\n"
            "__global__ void c(float* p, int n) {\n"
            "  for (int i = threadIdx.x; i < n; i += blockDim.x * gridDim.x) p[i] = 0;\n}\n")
    path = tmp_path / "k.cu"
    path.write_text(text)
    assert [(k.name, k.grid_stride) for k in parse(text, str(path)).kernels] == [
        ("a", False), ("b", False), ("c", True)]


def test_a_forwarding_overload_passes_its_own_defaults():
    # xgboost's dh::LaunchN: the default-stream overload forwards its defaulted parameters,
    # `LaunchN<ITEMS, BLOCK>(n, nullptr, f)`, and no call writes them: the block is 256
    text = ("template <typename L> __global__ void K(L f) {}\n"
            "template <int ITEMS = 8, int BLOCK = 256, typename L>\n"
            "void LaunchN(int n, void* s, L f) { K<<<n / (ITEMS * BLOCK) + 1, BLOCK>>>(f); }\n"
            "template <int ITEMS = 8, int BLOCK = 256, typename L>\n"
            "void LaunchN(int n, L f) { LaunchN<ITEMS, BLOCK>(n, nullptr, f); }\n")
    assert [la.block.total for la in parse(text).launches] == [256]


def test_a_launch_through_a_function_whose_kernel_is_a_parameter_is_read_at_each_call():
    """`template <typename K> void run(K kernel, int g, int threads) { kernel<<<g, threads>>>(); }`
    (cudpp's seg-reduce `Dispatch`, test helpers taking the kernel under test): the launch was
    "`kernel` is a variable of `run` (a function pointer)". Now one launch per call in the
    file, of the kernel it passes, its sizes read with the call's arguments; no fix edits the
    shared text."""
    sf = parse(
        "template <typename K, typename... Args>\n"
        "void run(K kernel, int grid, int threads, Args... args) {\n"
        "  kernel<<<grid, threads>>>(args...);\n}\n"
        "void run2(void (*kernel)(float*), dim3 block, float* x) { kernel<<<1, block>>>(x); }\n"
        "template <int N> __global__ void heavy(float* x) { x[threadIdx.x * N] = 1.f; }\n"
        "__global__ void light(float* x) { x[threadIdx.x] = 2.f; }\n"
        "void host(float* x) {\n"
        "  const int kThreads = 128;\n"
        "  run(heavy<4>, 10, 256, x);\n"
        "  run(&light, 10, kThreads * 2, x);\n"
        "  run2(light, dim3(32, 4), x);\n"
        "  auto k = light;\n"
        "  run(k, 1, 64, x);\n}\n")
    got = [(la.callee, la.template_args, la.span.line, la.grid.total, la.block.total,
            la.block.x, la.block.y, la.arg_spans, la.config_span, la.function)
           for la in sf.launches]
    assert got == [
        ("heavy", ("4",), 10, 10, 256, 256, 1, (), None, "host"),
        ("light", (), 11, 10, 256, 256, 1, (), None, "host"),
        ("light", (), 12, 1, 128, 32, 4, (), None, "host"),
        ("light", (), 14, 1, 64, 64, 1, (), None, "host")]     # `auto k = light;` is `light`
    assert all(find_kernel(sf, la) is not None for la in sf.launches)
    # with no call in the file, the function's own launch stays (and says why it has no kernel)
    alone = parse("void run(void (*kernel)(int*), int* p) { kernel<<<1, 32>>>(p); }\n")
    assert [la.callee for la in alone.launches] == ["kernel"]


def test_a_launch_through_a_function_taking_a_launch_parameters_object_reads_its_construction():
    """ggml's `ggml_cuda_kernel_launch(kernel, launch_params, ...)` (82 calls) launches
    `kernel<<<launch_params.block_nums, launch_params.block_dims, launch_params.shmem, ...>>>`;
    each caller builds `launch_params` with the struct's constructor. The members are what the
    constructor makes of the construction's arguments; a `const dim3&` parameter is read too."""
    sf = parse(
        "struct launch_params_t {\n"
        "  dim3 block_nums; dim3 block_dims; size_t shmem;\n"
        "  launch_params_t(const dim3& nums_, const dim3& dims_, const size_t shmem_)\n"
        "      : block_nums(nums_), block_dims(dims_), shmem(shmem_) {}\n};\n"
        "template <typename Kernel, typename... Args>\n"
        "static void kernel_launch(Kernel kernel, const launch_params_t & launch_params, "
        "Args&&... args) {\n"
        "  kernel<<<launch_params.block_nums, launch_params.block_dims, launch_params.shmem>>>("
        "args...);\n}\n"
        "__global__ void concat(float* x) { x[threadIdx.x] = 0.f; }\n"
        "#define CONCAT_BLOCK_SIZE 256\n"
        "void run(float* x, int n, bool wide) {\n"
        "  if (wide) {\n"
        "    const launch_params_t launch_params = launch_params_t((dim3)n, CONCAT_BLOCK_SIZE, 0);\n"
        "    kernel_launch(concat, launch_params, x);\n"
        "  } else {\n"
        "    const dim3 block_dims(32, 4, 1);\n"
        "    const launch_params_t launch_params = launch_params_t(dim3(n), block_dims, 1024);\n"
        "    kernel_launch(concat, launch_params, x);\n"
        "  }\n}\n")
    got = [(la.callee, la.span.line, la.block.total, la.block.text, la.dynamic_smem)
           for la in sf.launches]
    assert got == [("concat", 15, 256, "CONCAT_BLOCK_SIZE", 0),
                   ("concat", 19, 128, "block_dims", 1024)]
    # a member the caller sets after the construction is not the constructor's
    sf = parse(
        "struct launch_params_t {\n  dim3 block_nums; dim3 block_dims; size_t shmem;\n"
        "  launch_params_t(const dim3& nums_, const dim3& dims_, const size_t shmem_)\n"
        "      : block_nums(nums_), block_dims(dims_), shmem(shmem_) {}\n};\n"
        "template <typename Kernel> void kernel_launch(Kernel kernel, launch_params_t lp) {\n"
        "  kernel<<<lp.block_nums, lp.block_dims, lp.shmem>>>();\n}\n"
        "__global__ void k() {}\n"
        "void run(int n, int t) {\n  launch_params_t p = launch_params_t(dim3(n), 256, 0);\n"
        "  p.block_dims = dim3(t);\n  kernel_launch(k, p);\n}\n")
    assert [(la.callee, la.block.total) for la in sf.launches] == [("k", None)]


def test_a_dim3_parameter_is_the_one_value_every_call_passes():
    """diff-gaussian-rasterization's `render(const dim3 grid, const dim3 block, ...)` launching
    `renderCUDA<<<grid, block>>>`, called with `dim3 block(BLOCK_X, BLOCK_Y, 1)`: the block was
    unknown (an `int` parameter was followed), so a 48x24 block through such a helper passed as
    fine. Two calls passing different blocks, or a call passing an unknown, leave it unknown."""
    sf = parse(
        "#define BLOCK_X 16\n#define BLOCK_Y 16\n"
        "__global__ void k(float* out) { out[threadIdx.x] = 1.f; }\n"
        "void render(const dim3 grid, const dim3 block, float* out) { k<<<grid, block>>>(out); }\n"
        "void forward(float* out, int w) {\n"
        "  dim3 tile_grid((w + BLOCK_X - 1) / BLOCK_X, 4, 1);\n"
        "  dim3 block(BLOCK_X, BLOCK_Y, 1);\n  render(tile_grid, block, out);\n}\n"
        "void big(const dim3 g, dim3 b, float* out) { k<<<g, b>>>(out); }\n"
        "void run(float* out) { big(dim3(2), dim3(48, 24, 1), out); }\n"
        "void two(dim3 b, float* out) { k<<<1, b>>>(out); }\n"
        "void run2(float* out, int n) { two(dim3(32), out); two(dim3(64), out); two(dim3(n), out); }\n")
    got = [(la.function, la.block.x, la.block.y, la.block.z, la.grid.total) for la in sf.launches]
    assert got == [("render", 16, 16, 1, None), ("big", 48, 24, 1, 2), ("two", None, None, None, 1)]


def test_a_launch_in_a_lambda_whose_kernel_is_its_parameter_is_read_at_each_call():
    """gsplat's `auto launch = [&](auto kernel_fn) { kernel_fn<<<grid, 256, 0, s>>>(p); };`
    then `launch(blend<16>)`, and SegmentedSort.cu's `launchPdl(kernel, CTA_SIZE)` lambda over
    `cudaLaunchKernelEx`: "`kernel_fn` is a variable of `run` (a function pointer)", and a
    256-thread launch of a `__launch_bounds__(128)` kernel went unreported."""
    sf = parse(
        "template <int TILE> __global__ void __launch_bounds__(128) blend(float *p) {}\n"
        "__global__ void __launch_bounds__(128) small_tier(int *p) {}\n"
        "void run_lambda(float *p, int tile, int grid, cudaStream_t s) {\n"
        "  auto launch = [&](auto kernel_fn) { kernel_fn<<<grid, 256, 0, s>>>(p); };\n"
        "  switch (tile) { case 16: launch(blend<16>); break; case 8: launch(blend<8>); break; }\n}\n"
        "void run(int *p, int n, cudaStream_t s) {\n"
        "  auto launchPdl = [&](auto kernel_fn, int block_threads) {\n"
        "    cudaLaunchConfig_t config = {};\n"
        "    config.gridDim = dim3(n);\n    config.blockDim = dim3(block_threads);\n"
        "    cudaLaunchKernelEx(&config, kernel_fn, p);\n  };\n"
        "  launchPdl(small_tier, 256);\n  launchPdl(blend<4>, 64);\n}\n")
    got = [(la.callee, la.template_args, la.span.line, la.block.total, la.function)
           for la in sf.launches]
    assert got == [("blend", ("16",), 5, 256, "run_lambda"), ("blend", ("8",), 5, 256, "run_lambda"),
                   ("small_tier", (), 14, 256, "run"), ("blend", ("4",), 15, 64, "run")]


def test_a_launch_in_a_template_lambda_takes_each_calls_template_arguments():
    """gsplat's `auto launch_variant = [&]<uint32_t TILE_SIZE, uint32_t CTA_SIZE>() { const dim3
    threads = dim3{CTA_SIZE, 1, 1}; k<TILE_SIZE, CTA_SIZE><<<grid, threads, 0, s>>>(...); };`
    called as `launch_variant.template operator()<16, 256>()`: "`threads` is not a
    compile-time constant" (five launches, 16- and 64-thread blocks among them)."""
    sf = parse(
        "template <int TILE, int CTA> __global__ void __launch_bounds__(128) raster(float *p) {}\n"
        "void run(float *p, int tile_size, int grid, cudaStream_t s) {\n"
        "  auto launch_variant = [&]<int TILE_SIZE, int CTA_SIZE>() {\n"
        "    const dim3 threads = dim3{CTA_SIZE, 1, 1};\n"
        "    raster<TILE_SIZE, CTA_SIZE><<<grid, threads, 0, s>>>(p);\n  };\n"
        "  if (tile_size == 16) launch_variant.template operator()<16, 256>();\n"
        "  else launch_variant.template operator()<8, 64>();\n}\n")
    [la] = sf.launches
    assert sorted((values, block) for values, block, _smem in la.bindings) == [
        ((8, 64), 64), ((16, 256), 256)]


def test_the_shared_arrays_after_a_kernel_head_a_macro_writes_are_that_kernels():
    """flash-attention's DEFINE_FLASH_FORWARD_KERNEL(name, ...) { __shared__ ... }: the body's
    `__shared__` arrays were listed at file scope (and OCC020's reading of them lost)."""
    text = ("#define DEFINE_KERNEL(kernelName, ...) \\\\\ntemplate<int N, __VA_ARGS__> \\\\\n"
            "__global__ void kernelName(float *out)\n"
            "DEFINE_KERNEL(macro_kernel, bool Flag) {\n  __shared__ float buf[N * 1024];\n"
            "  buf[threadIdx.x] = N;\n  __syncthreads();\n  out[threadIdx.x] = buf[0];\n}\n")
    sf = parse(text)
    [decl] = sf.shared
    assert (decl.kernel, decl.dims, decl.template_dependent) == ("macro_kernel", (None,), True)
    assert [i.thread_derived for i in decl.indices] == [True, False]
    sp = specialize(sf, sf.kernels[0], [4, 1])
    assert [s.size_bytes for s in sp.shared] == [4 * 1024 * 4]


def test_launch_sizes_through_an_overload_a_class_instantiation_and_a_shape():
    """tiny-cuda-nn: `parallel_for_gpu(0, stream, n, f)` forwarded by its 3-argument overload
    (the 3-argument call of the other overload made the shared size unknown; an int block
    parameter was followed, the shared size not); the fully fused MLP's `threads = {32u,
    WIDTH / 16, 1}` in a member of a class template instantiated explicitly (`template class
    FullyFusedMLP<T, 128>;`: no figure); and a followed template's block kept its shape
    (block_dims [32, 8, 1] was reported [256, 1, 1])."""
    sf = parse(
        "constexpr unsigned N_THREADS_LINEAR = 128;\n"
        "template <typename F> __global__ void pfor(size_t n, F fun) {}\n"
        "template <typename F>\n"
        "void parallel_for_gpu(unsigned shmem_size, cudaStream_t stream, size_t n, F&& fun) {\n"
        "  pfor<F><<<(n + 127) / 128, N_THREADS_LINEAR, shmem_size, stream>>>(n, fun);\n}\n"
        "template <typename F> void parallel_for_gpu(cudaStream_t stream, size_t n, F&& fun) {\n"
        "  parallel_for_gpu(0, stream, n, fun);\n}\n"
        "void scale(float* x, size_t n, cudaStream_t s) { parallel_for_gpu(s, n, x); }\n"
        "template <unsigned WIDTH, unsigned N_ITERS> __global__ void mlp_kernel(float* x) {}\n"
        "template <unsigned WIDTH> void mlp_forward(float* x, cudaStream_t stream) {\n"
        "  const dim3 threads = { 32u, WIDTH / 16, 1 };\n"
        "  mlp_kernel<WIDTH, 8><<<1, threads, 0, stream>>>(x);\n}\n"
        "template <typename T, unsigned WIDTH> struct FusedMLP {\n"
        "  void forward(float* x, cudaStream_t s) { mlp_forward<WIDTH>(x, s); }\n};\n"
        "template struct FusedMLP<float, 128>;\ntemplate class FusedMLP<float, 64>;\n"
        "template <unsigned W> void one(float* x) {\n"
        "  const dim3 t = { 32u, W / 16, 1 };\n  mlp_kernel<W, 2><<<1, t>>>(x);\n}\n"
        "void run(float* x) { one<128>(x); }\n")
    pfor, mlp, shaped = sf.launches
    assert (pfor.block.total, pfor.dynamic_smem) == (128, 0)
    assert sorted((v, b, d) for v, b, d in mlp.bindings) == [((64, 8), 128, 0), ((128, 8), 256, 0)]
    assert (shaped.block.x, shaped.block.y, shaped.block.z) == (32, 8, 1)


def test_a_kernel_a_conditional_passes_to_a_launcher_is_each_branch():
    """nccl-tests' `testLaunchDeviceKernel(op == sum ? k<sum> : ... : nullptr, ...)`: the call
    was not followed ("with no constant launch ... at 768 threads"); now one launch per kernel
    a branch passes, a null left out."""
    sf = parse(
        "template <typename F, typename... Args> void launch512(F kernel, int ctas, Args... args) {\n"
        "  kernel<<<ctas, 512>>>(args...);\n}\n"
        "template <typename T> __global__ void accum(T* x) {}\n"
        "__global__ void other(float* x) {}\n"
        "void run(float* x, int m, int c) {\n"
        "  launch512(m > 0 ? accum<float> : m < 0 ? other : nullptr, c, x);\n}\n")
    assert [(la.callee, la.template_args, la.block.total, la.span.line) for la in sf.launches] == [
        ("accum", ("float",), 512, 7), ("other", (), 512, 7)]
    # through a macro that writes the conditional, defined in both branches of an #if
    sf = parse(
        "template <typename F, typename... Args> void launch512(F kernel, int ctas, Args... args) {\n"
        "  kernel<<<ctas, 512>>>(args...);\n}\n"
        "template <typename T> __global__ void accum(T* x) {}\n"
        "#if NCCL_VERSION_CODE >= NCCL_VERSION(2,28,0)\n"
        "#define SPECIALIZE_KERNEL(kernel, type, op) \\\n"
        "  ( op != 0 ? nullptr : type == 1 ? kernel<int8_t> : type == 2 ? kernel<float> : \\\n"
        "    nullptr )\n#else\n#define SPECIALIZE_KERNEL(kernel, type, op) nullptr\n#endif\n"
        "void run(float* x, int type, int op, int c) {\n"
        "  launch512(SPECIALIZE_KERNEL(accum, type, op), c, x);\n}\n")
    assert [(la.callee, la.template_args, la.block.total) for la in sf.launches] == [
        ("accum", ("int8_t",), 512), ("accum", ("float",), 512)]


def test_a_qualified_call_of_a_one_return_function_is_its_value():
    """xgboost's `std::uint32_t constexpr kBlockThreads = dh::WarpThreads();` (`constexpr
    int32_t WarpThreads() { return 32; }` in namespace dh): the block was unknown."""
    sf = parse(
        "namespace dh { constexpr int WarpThreads() { return 32; } }\n"
        "__global__ void k(float* x) {}\n"
        "void run(float* x) {\n  unsigned constexpr kBlockThreads = dh::WarpThreads();\n"
        "  k<<<1, kBlockThreads>>>(x);\n  k<<<1, ::dh::WarpThreads() * 4>>>(x);\n}\n")
    assert [la.block.total for la in sf.launches] == [32, 128]


def test_kernel_references_of_an_expansion_that_does_not_parse_are_read_from_its_text():
    # a macro's expansion the expression grammar cannot read whole: the kernel references
    # written with template arguments are taken from its text, bare names (`type`) are not
    from occlint.source.context import Context
    from occlint.source.forwarded import _named_in

    ctx = Context("int x;\n", "x.cu")
    text = b"op != 0 ? nullptr : type == 1 ? acc<int8_t> : type == 2 ? acc<Pair<int, 2>> : ; ;"
    assert [n.text for n in _named_in(ctx, text, [b"acc", b"type", b"op"])] == [
        b"acc<int8_t>", b"acc<Pair<int, 2>>"]


def test_declarator_name_sees_through_references_and_packs():
    # one reading of a declarator's name: forwarded's parameter names used their own loop
    # because this one stopped at `&b` (a reference_declarator has no `declarator` field)
    from occlint.source.consteval import declarator_name
    from occlint.source.grammar import parser

    tree = parser().parse(b"template <class... A> void f(const dim3& b, int (*k)(int), "
                          b"float* __restrict__ p, A&&... rest, int n = 4);")
    decl = next(c for c in tree.root_node.children[0].children if c.type == "declaration")
    fdecl = decl.child_by_field_name("declarator")
    params = [p for p in fdecl.child_by_field_name("parameters").named_children]
    names = [getattr(declarator_name(p.child_by_field_name("declarator")), "text", None)
             for p in params]
    assert names == [b"b", b"k", b"p", b"rest", b"n"]


def test_a_dim3_local_of_parameters_takes_the_one_value_every_call_passes():
    # cuda-samples' matrixMul and matrixMul_nvrtc: `dim3 threads(block_size, block_size)` in
    # MatrixMultiply(..., int block_size, ...), called once with `int block_size = 32;` (the
    # block was unknown while `k<<<g, block_size>>>` was read). Two calls that disagree, or
    # none: unknown. Not a grid: its size is the problem's, which a benchmark's main fixes for
    # itself (llm.c's dev/cuda `int B = 8;` made a 96-block grid and a small-grid finding)
    text = ("__global__ void k(float *x) {}\n"
            "void run(float *x, int bs) { dim3 t(bs, bs); k<<<1, t>>>(x); }\n"
            "void two(float *x, int bs) { dim3 t(bs, 2); k<<<1, t>>>(x); }\n"
            "void none(float *x, int bs) { dim3 t(bs); k<<<1, t>>>(x); }\n"
            "void grid(float *x, unsigned w) { dim3 b(8, 8, 1); dim3 g(w / b.x, w / b.y, 1);\n"
            "  k<<<g, b>>>(x); }\n"
            "int main() { int block_size = 32; run(0, block_size); two(0, 64); two(0, 128);\n"
            "  grid(0, 256); return 0; }\n")
    sf = parse(text)
    got = [(la.function, la.block.x, la.block.y, la.grid.total) for la in sf.launches]
    assert got == [("run", 32, 32, 1), ("two", None, 2, 1), ("none", None, 1, 1),
                   ("grid", 8, 8, None)]


def test_lone_branches_whose_braces_pair_across_groups_are_read_as_sm_90_reads_them():
    # vllm's fused_qknorm_rope_kernel.cu: `#if ... __CUDA_ARCH__ < 800` `if constexpr (...) {
    # return; } else {` `#endif` ... `#if ...` `}` `#endif` in two kernels: the parser, reading
    # both groups, lost the first kernel (its 3 launches matched no instantiation). A lone
    # branch dead for sm_90 is blanked; one the file does not decide is read as before
    guard = "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800\n"
    body = (guard + "  if constexpr (sizeof(T) == 8) {\n    return;\n  } else {\n#endif\n"
            "    out[threadIdx.x] = D;\n" + guard + "  }\n#endif\n}\n")
    text = "".join(f"template <typename T, int D>\n__global__ void rope{i}(float* out) {{\n" + body
                   for i in (1, 2)) + \
        "void launch(float* p) { rope1<float, 4><<<1, 128>>>(p); rope2<float, 4><<<1, 64>>>(p); }\n"
    sf = parse(text)
    assert [k.name for k in sf.kernels] == ["rope1", "rope2"]
    assert [(la.callee, la.block.total) for la in sf.launches] == [("rope1", 128), ("rope2", 64)]
    assert sf.text == text                  # positions are the file's own


def test_a_constant_named_through_a_namespace_alias_is_read():
    # vllm's moe_align_sum_kernels.cu: `namespace batched_kernel = vllm::moe::batched...;`
    # then `<<<batched_kernel::num_blocks, batched_kernel::num_threads>>>` (1024) was "not a
    # compile-time constant". An alias the file defines two ways stays unknown
    text = ("namespace cfg { constexpr int kThreads = 1024; namespace in { constexpr int k = 64; } }\n"
            "namespace other { constexpr int kThreads = 256; }\n"
            "namespace I = ::cfg :: in;\n"
            "__global__ void k(float* p) {}\n"
            "void a(float* p) { namespace C = cfg; k<<<1, C::kThreads>>>(p); }\n"
            "void b(float* p) { k<<<1, I::k>>>(p); }\n"
            "void c(float* p) { namespace D = cfg; k<<<1, D::kThreads>>>(p); }\n"
            "void d(float* p) { namespace D = other; k<<<1, D::kThreads>>>(p); }\n"
            "// namespace E = cfg;\n"
            "void e(float* p) { k<<<1, E::kThreads>>>(p); }\n")
    assert [la.block.total for la in parse(text).launches] == [1024, 64, None, None, None]


def test_brace_initialized_constants_are_read():
    # ThunderKittens' util.cuh: `constexpr int WARP_THREADS{32};`, `WARPGROUP_WARPS{4};`; its
    # kernels launch with `(32*NUM_WORKERS)` where NUM_WORKERS = NUM_WARPGROUPS*WARPGROUP_WARPS:
    # "not a compile-time constant". A class's brace-initialized member too; a list of two
    # values, or a designated one, is no scalar's value
    text = ("namespace kittens { constexpr int WARP_THREADS{32}; constexpr int WARPGROUP_WARPS{4}; }\n"
            "constexpr int NUM_WORKERS = (3*kittens::WARPGROUP_WARPS);\n"
            "struct Cfg { static constexpr int kThreads{128}; static constexpr int kSmem{kThreads * 4}; };\n"
            "constexpr int TWO{1, 2};\n"
            "__global__ void k(float* p) { __shared__ float s[Cfg::kSmem]; s[threadIdx.x] = p[0]; }\n"
            "void run(float* p) { auto threads = 4 * kittens::WARP_THREADS;\n"
            "  k<<<1, (32*NUM_WORKERS)>>>(p); k<<<1, threads>>>(p); k<<<1, Cfg::kThreads>>>(p);\n"
            "  k<<<1, TWO>>>(p); }\n")
    sf = parse(text)
    assert [la.block.total for la in sf.launches] == [384, 128, 128, None]
    assert sf.shared[0].size_bytes == 2048


def test_a_plain_classs_constants_read_its_own_members_first():
    # ThunderKittens' nvfp4 gemm: `absmax_config::NUM_THREADS = NUM_WARPS * WARP_THREADS`, where
    # NUM_WARPS is the class's own and other configs of the file have theirs: "not a
    # compile-time constant"
    text = ("namespace kittens { constexpr int WARP_THREADS{32}; constexpr int WARPGROUP_WARPS{4}; }\n"
            "using namespace kittens;\n"
            "namespace q {\n"
            "struct absmax_config { static constexpr int NUM_WARPGROUPS = 4;\n"
            "  static constexpr int NUM_WARPS = NUM_WARPGROUPS * WARPGROUP_WARPS;\n"
            "  static constexpr int NUM_THREADS = NUM_WARPS * WARP_THREADS; };\n"
            "struct other_config { static constexpr int NUM_WARPS = 4;\n"
            "  static constexpr int NUM_THREADS = NUM_WARPS * WARP_THREADS; };\n"
            "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n"
            "}\n"
            "void run(float* x) { q::k<<<1, q::absmax_config::NUM_THREADS>>>(x);\n"
            "  q::k<<<1, q::other_config::NUM_THREADS>>>(x); }\n"
            "void run2(float* x) { using namespace q; k<<<1, absmax_config::NUM_THREADS>>>(x); }\n")
    assert [la.block.total for la in parse(text).launches] == [512, 128, 512]


def test_dim3_fields_set_in_the_arms_of_a_switch_the_launch_is_under():
    # flash-fft-conv's butterfly launchers: `dim3 blockDim; switch (N) { case 128: blockDim.x
    # = 32; blockDim.y = 8; break; default: blockDim.x = 32; blockDim.y = 4; break; }`, then
    # each kernel launched in a `case` of another `switch (N)`: "not a compile-time constant"
    text = ("__global__ void k16(float* p) {}\n__global__ void k128(float* p) {}\n"
            "void run(float* p, unsigned N, int q) {\n"
            "  dim3 blockDim;\n"
            "  switch (N) { case 128: blockDim.x = 32; blockDim.y = 8; break;\n"
            "               default: blockDim.x = 32; blockDim.y = 4; break; }\n"
            "  switch (N) {\n"
            "  case 16: k16<<<1, blockDim>>>(p); break;\n"
            "  case 128: k128<<<1, blockDim>>>(p); break;\n"
            "  }\n"
            "  k16<<<1, blockDim>>>(p);\n"          # outside: N unknown, y is 8 or 4
            "  dim3 other; if (q) other.y = 2; else other.y = 4; k16<<<1, other>>>(p);\n"
            "}\n"
            "void ifft(float* p, unsigned N) {\n"     # a first value the switch overwrites
            "  dim3 b; b.x = 32; b.y = 4;\n"
            "  switch (N) { case 128: b.x = 32; b.y = 8; break; default: b.x = 32; b.y = 4; }\n"
            "  switch (N) { case 128: k128<<<1, b>>>(p); break; }\n"
            "}\n"
            "void late(float* p, unsigned N) {\n"      # the launch before the switch that sets it
            "  dim3 b;\n"
            "  switch (N) { case 128: k128<<<1, b>>>(p); break; }\n"
            "  switch (N) { case 128: b.y = 8; break; default: b.y = 4; }\n"
            "}\n")
    got = [(la.callee, la.block.total, la.block.x) for la in parse(text).launches]
    assert got == [("k16", 128, 32), ("k128", 256, 32), ("k16", None, 32), ("k16", None, 1),
                   ("k128", 256, 32), ("k128", None, 1)]


def test_a_local_written_in_nested_blocks_takes_the_last_write_that_runs_before_the_use():
    # ThunderKittens' mha_h100: `auto threads = 4 * WARP_THREADS;` launched with in an `if`
    # block, which later writes `threads = WARP_THREADS * BWD_NUM_WORKERS;` for the next
    # launch: both "not a compile-time constant"
    text = ("__global__ void k(float* p) {}\n"
            "__global__ void t(float* p) { __shared__ float s[2][32];\n"
            "  int buf = 0;\n"                    # ggml's cpy: flipped later in the outer loop
            "  for (int i = 0; i < 4; ++i) { for (int j = 0; j < 2; ++j) s[buf][j] = p[j];\n"
            "    buf = (buf + 1) % 2; } }\n"
            "void run(float* p, int d, int q) {\n"
            "  auto threads = 4 * 32;\n"
            "  if (d == 64) {\n"
            "    k<<<1, threads>>>(p);\n"
            "    threads = 32 * 12;\n"
            "    k<<<1, threads>>>(p);\n"
            "  }\n"
            "  if (q) threads = 64;\n"
            "  k<<<1, threads>>>(p);\n"            # after a write that may not run
            "}\n")
    sf = parse(text)
    assert [la.block.total for la in sf.launches] == [128, 384, None]
    assert [i.constant for i in sf.shared[0].indices if i.dim == 0] == [None]


def test_a_dim3_field_takes_the_last_write_that_runs_whenever_the_launch_does():
    # flash-fft-conv's padded launchers: `b.y = 4;` at the top, `b.y = 8;` at the start of the
    # `case 128:` that launches: each launch the value its own path gives
    text = ("__global__ void k(float* p) {}\n"
            "void run(float* p, int n, int q) {\n"
            "  dim3 b; b.x = 32; b.y = 4;\n"
            "  switch (n) {\n"
            "  case 32: k<<<1, b>>>(p); break;\n"
            "  case 128: b.y = 8; k<<<1, b>>>(p); break;\n"
            "  }\n"
            "  if (q) b.y = 2;\n"
            "  k<<<1, b>>>(p);\n"              # after a write that may not run: unknown
            "}\n"
            "void loop(float* p) {\n"
            "  dim3 b; b.y = 4;\n"
            "  for (int i = 0; i < 2; ++i) { k<<<1, b>>>(p); b.y = 8; }\n"   # 4, then 8
            "  dim3 c; c.y = 4;\n"
            "  for (int i = 0; i < 2; ++i) { for (int j = 0; j < 2; ++j) k<<<1, c>>>(p);\n"
            "    c.y = 8; }\n"                        # the outer loop's next turn: 8
            "}\n")
    got = [la.block.total for la in parse(text).launches]
    assert got == [128, 256, None, None, None]


def test_a_dim3_local_of_template_parameters_names_them():
    # vllm's paged_attention and tiny-cuda-nn's grid.h: `dim3 block(NUM_THREADS);` in a
    # template function no call of the file instantiates: the block was "not a compile-time
    # constant"; it depends on the template parameter, which is what the listing now says
    text = ("__global__ void k(float* p) {}\n"
            "template <int NUM_THREADS = 128, int W>\n"
            "void launch(float* p) { dim3 block(NUM_THREADS); k<<<1, block>>>(p);\n"
            "  const dim3 t = {W * 4, 2}; k<<<1, t>>>(p); dim3 n(64); k<<<1, n>>>(p); }\n")
    got = [(la.block.total, la.block_template) for la in parse(text).launches]
    assert got == [(None, ("NUM_THREADS",)), (None, ("W",)), (64, ())]


def test_an_explicit_instantiation_binds_a_launchers_template_parameters():
    # `template void launch<128>(float*);` (a library's instantiation list) and `launch<>`
    # (its default) are instantiations as a call `launch<128>(p)` is: the block they give
    text = ("__global__ void k(float* p) {}\n"
            "template <int NUM_THREADS>\nvoid a(float* p) { dim3 b(NUM_THREADS); k<<<1, b>>>(p); }\n"
            "template void a<128>(float*);\n"
            "namespace n {\ntemplate <int T = 64>\nvoid d(float* p) { k<<<1, T>>>(p); }\n"
            "template void d<>(float*);\n}\n"
            "template <int T>\nvoid two(float* p) { k<<<1, T * 2>>>(p); }\n"
            "template void two<32>(float*);\ntemplate void two<64>(float*);\n"
            "template <int T>\nvoid none(float* p) { k<<<1, T>>>(p); }\n")
    got = [(la.function, la.block.total, tuple(c[0] for c in la.choices))
           for la in parse(text).launches]
    assert got == [("a", 128, ()), ("d", 64, ()), ("two", None, (64, 128)),
                   ("none", None, ())]


def test_a_parameter_callee_is_found_as_the_pattern_finds_it():
    # forwarded._written_as_parameter reads each name's occurrence backwards instead of
    # searching the pattern through the header: the same answer on random texts of the tokens
    # that matter, and on the shapes launchers write
    import random
    import re

    from occlint.source.forwarded import _written_as_parameter

    def pattern(data, names):
        return re.search(rb"[\w*&)]\s+\(?\*?\s*(?:" + b"|".join(sorted(names)) + rb")\s*[,)]",
                         data) is not None

    for text in (b"void f(K  kernel, int)", b"void f(int* kernel)", b"(void (*kernel)(int*))",
                 b"int\n\tkernel  ,", b"xkernel,", b"foo( kernel)", b"k<<<1, 2>>>(kernel);"):
        assert _written_as_parameter(text, {b"kernel"}) == pattern(text, {b"kernel"}), text
    rng = random.Random(3)
    tokens = [b" ", b"\n", b"\t", b"*", b"(", b")", b",", b"&", b"k", b"kk", b"x", b"_", b"1", b";"]
    for _ in range(20000):
        text = b"".join(rng.choice(tokens) for _ in range(rng.randrange(1, 14)))
        names = rng.choice([{b"k"}, {b"kk"}, {b"k", b"kk"}, {b"x"}])
        assert _written_as_parameter(text, names) == pattern(text, names), (text, names)
