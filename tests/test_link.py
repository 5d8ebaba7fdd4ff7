"""occlint.link: one answer to "which kernel is this", with one template-argument form."""

from __future__ import annotations

from occlint import link, lock
from occlint.model import Usage
from occlint.source import parse

SRC = """\
namespace ns {
template <int B> __global__ void __launch_bounds__(B) k(float* x) { x[threadIdx.x] = 0; }
}
__global__ void plain(float* x) { x[0] = 1; }
void run(float* x) {
    cudaFuncSetAttribute((void*)ns::k<256u>, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
    cudaFuncSetAttribute(reinterpret_cast<const void*>(&plain), cudaFuncAttributePreferredSharedMemoryCarveout, 50);
    ns::k<256u><<<1, 256>>>(x);
    ns::k< 128 ><<<1, 128>>>(x);
    plain<<<1, 1>>>(x);
}
"""


def _u(kernel: str, args=(), arch="sm_90", regs=32) -> Usage:
    return Usage(kernel=kernel, arch=arch, registers=regs, template_args=tuple(args))


def test_launches_attributes_and_usages_link_to_one_kernel():
    sf = parse(SRC, "a.cu")
    k = link.find_kernel(sf, "ns::k")
    plain = link.find_kernel(sf, "plain")
    assert [link.find_kernel(sf, la) for la in sf.launches] == [k, k, plain]
    assert [a.attribute for a in link.attributes_of(sf, k)] == ["MaxDynamicSharedMemorySize"]
    assert [a.attribute for a in link.attributes_of(sf, plain)] == ["PreferredSharedMemoryCarveout"]
    usages = [_u("ns::k", ["256"]), _u("ns::k", ["128"]), _u("(anonymous namespace)::plain"), _u("other")]
    index = link.Usages(usages)
    assert index.of(k) == usages[:2] and index.of(plain) == [usages[2]]
    # the launch writes `256u` and `< 128 >`; nvcc says 256 and 128: one normaliser for all
    assert [link.instantiation(index.of(k), k, la) for la in sf.launches[:2]] == usages[:2]
    launches = link.Launches(sf.launches)
    assert launches.of_usage(usages[0]) == [sf.launches[0]]
    assert launches.of_usage(usages[1]) == [sf.launches[1]]


ALIASED = """\
template <int N, bool E> __global__ void fwd(float* x) { extern __shared__ float s[]; }
__global__ void other(float* x) {}
void run(float* x, int n, bool even) {
    constexpr int kThreads = 128;
    constexpr bool kEven = false;
    auto kernel = &fwd<kThreads, true>;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
    kernel<<<n, kThreads, 65536>>>(x);
    fwd<64, kEven><<<n, 64>>>(x);
    auto written = &fwd<32, true>;
    written = &fwd<32, false>;
    written<<<n, 32>>>(x);
    auto either = even ? &fwd<64, true> : &fwd<64, false>;
    either<<<n, 64>>>(x);
    void (*typed)(float*) = other;
    typed<<<n, 32>>>(x);
}
"""


def test_a_local_initialized_with_a_kernel_launches_that_kernel():
    """flash-attention's and causal-conv1d's `auto kernel = &k<Traits, ...>;` then
    `cudaFuncSetAttribute(kernel, ...)` and `kernel<<<...>>>`: the launch and the attribute
    are k's, with the template arguments of the initializer; a bool argument's value (1, 0)
    is nvcc's `true`/`false`. A local written again, or chosen at run time, is not followed."""
    sf = parse(ALIASED, "a.cu")
    fwd = link.find_kernel(sf, "fwd")
    got = [(la.callee, la.template_args, link.find_kernel(sf, la)) for la in sf.launches]
    assert got == [("fwd", ("kThreads", "true"), fwd), ("fwd", ("64", "kEven"), fwd),
                   ("written", (), None), ("either", (), None),
                   ("other", (), link.find_kernel(sf, "other"))]
    assert [(a.kernel, a.value) for a in link.attributes_of(sf, fwd)] == \
        [("fwd", 65536)]
    usages = [_u("fwd", ["128", "true"]), _u("fwd", ["64", "false"]), _u("fwd", ["64", "true"])]
    assert [link.instantiation(usages, fwd, la) for la in sf.launches[:2]] == usages[:2]


def test_lockfile_keys_use_the_same_normaliser():
    sf = parse(SRC, "a.cu")
    doc = lock.build([_u("ns::k", ["256"])], sf.launches)
    entry = doc["kernels"][0]
    assert [x["block"] for x in entry["launches"]] == [256]
    assert lock.entry_key(entry) == lock.usage_key(_u("ns::k", ["256u"])) == ("ns::k", ("256",), "sm_90")
    assert link.template_args([" 256u ", "float", "-1L"]) == ("256", "float", "-1")


CARVEOUT = """\
__global__ void stage(float* x) {
    __shared__ float tile[4096];
    tile[threadIdx.x] = x[threadIdx.x];
    x[threadIdx.x] = tile[4095 - threadIdx.x];
}
void run(float* x) {
    cudaFuncSetAttribute(stage, cudaFuncAttributePreferredSharedMemoryCarveout, 25);
    stage<<<1024, 256>>>(x);
}
"""


def test_lock_entries_use_the_rules_occupancy_inputs():
    """The lockfile records occupancy as the rules compute it (here with the carveout), so
    OCC050 does not report a drop that is only a difference of inputs."""
    from occlint.config import Config
    from occlint.engine import lint_source
    from occlint.facts import build_facts

    u = Usage(kernel="stage", arch="sm_90", registers=32, static_smem=16384, barriers=1)
    sf = parse(CARVEOUT, "s.cu")
    config = Config(arch=("sm_90",), select=("OCC050",))
    sites = build_facts(sf, [u], config, ("sm_90",)).sites
    locked = lock.build([u], occupancy=lock.site_occupancy(sites))["kernels"]
    recomputed = lock.build([u], sf.launches)["kernels"]
    assert locked[0]["launches"][0]["occupancy"] == round(sites[0].occ.occupancy, 4)
    assert locked[0]["launches"] != recomputed[0]["launches"]      # the carveout matters here
    with_lock = Config(arch=("sm_90",), select=("OCC050",),
                       extra={"lock": {lock.entry_key(e): e for e in locked}})
    assert lint_source(CARVEOUT, "s.cu", [u], with_lock) == []


def test_an_enumerator_template_argument_matches_nvccs_cast_form():
    # CloverLeaf's reduction<double, RED_SUM>: nvcc names the instantiation
    # `reduction<double, (RED)0>`; the launch matched none ("registers not measured")
    sf = parse("enum RED { RED_SUM, RED_MAX };\n"
               "template <typename T, RED r> __global__ void reduction(int n, T *b) {}\n"
               "void f(double *b, int n) {\n  reduction<double, RED_SUM><<<n, 256>>>(n, b);\n"
               "  reduction<double, RED_MAX><<<n, 256>>>(n, b);\n}\n", "r.cu")
    k = link.find_kernel(sf, "reduction")
    usages = [_u("reduction", ["double", "(RED)0"]), _u("reduction", ["double", "(RED)1"])]
    assert [link.instantiation(usages, k, la) for la in sf.launches] == usages


def test_a_launch_that_writes_no_template_arguments_runs_the_one_its_argument_types_deduce():
    # ggml's col2im: `col2im_1d_kernel<<<g, b>>>((const half *)src, (half *)dst, ...)` at three
    # launches (float, half, bf16) was each evaluated with every instantiation, the lowest
    # figure told at all three; cudpp's `k<<<...>>>(Functions<2>)` the same
    from occlint.link import deduced, instantiations
    from occlint.source import parse

    text = ("template <typename T> __global__ void k(const T * __restrict__ col, T * dst, int n) {}\n"
            "void run(void* a, void* b, int n, float* f) {\n"
            "  k<<<1, 256>>>((const float *)a, (float *)b, n);\n"
            "  k<<<1, 256>>>(static_cast<const half *>(a), (half *)b, n);\n"
            "  k<<<1, 256>>>(f, (float *)b, n);\n"
            "  k<<<1, 256>>>((const my_t *)a, (my_t *)b, n);\n"
            "  k<<<1, 256>>>((const float *)a, (half *)b, n);\n}\n")
    sf = parse(text, "k.cu")
    [kernel] = sf.kernels
    got = [deduced(kernel, la) for la in sf.launches]
    assert got == [("float",), ("half",), ("float",), ("my_t",), (None,)]
    usages = [_u("k", ("float",), regs=20), _u("k", ("__half",), regs=40)]
    picked = [[u.registers for u in instantiations(usages, kernel, la)] for la in sf.launches]
    # (my_t: a typedef nvcc spells otherwise matches none: every instantiation, never none)
    assert picked == [[20], [40], [20], [20, 40], [20, 40]]


def test_a_launch_that_expands_a_template_pack_may_run_each_instantiation_of_the_rest():
    # OneFlow's elementwise (how-to-optim): `apply<pack_size, R, IN...><<<g, kBlockSize>>>` in
    # a variadic launcher matched no instantiation (`IN...` against nvcc's `float`): no figure
    from occlint.link import instantiations
    from occlint.source import parse

    text = ("template <int N, typename R, typename... IN> __global__ void apply(R* r) {}\n"
            "template <int N, typename R, typename... IN> void launch(R* r) {\n"
            "  apply<N, R, IN...><<<1, 256>>>(r);\n}\n")
    sf = parse(text, "a.cu")
    [kernel], [la] = sf.kernels, sf.launches
    usages = [_u("apply", ("4", "float", "float", "float")), _u("apply", ("1", "float", "float"))]
    assert [u.template_args[0] for u in instantiations(usages, kernel, la)] == ["4", "1"]


def test_a_decltype_template_argument_may_be_any_instantiation_the_others_agree_with():
    # xgboost's `EvaluateSplitsKernel<kBlockThreads, decltype(d_scans)>` (512 known, the type
    # not): "could not be matched to one compiled instantiation", where nvcc compiled one with
    # 512; a written type still has to agree
    from occlint.link import instantiations
    from occlint.source import parse

    text = ("template <int B, typename S> __global__ void k(S s) {}\n"
            "void run(int n) {\n  auto d_scans = make(n);\n  constexpr int kB = 512;\n"
            "  k<kB, decltype(d_scans)><<<1, kB>>>(d_scans);\n"
            "  k<256, decltype(d_scans)><<<1, 256>>>(d_scans);\n"
            "  k<kB, float><<<1, kB>>>(1.f);\n}\n")
    sf = parse(text, "k.cu")
    [kernel] = sf.kernels
    usages = [_u("k", ("512", "IterSpan<thrust::transform_iterator<F, I> >"), regs=98)]
    assert [[u.registers for u in instantiations(usages, kernel, la)] for la in sf.launches] == \
        [[98], [], []]
