"""The cubin's per-kernel launch attributes (EIATTR_MAX_THREADS, EIATTR_MAXREG_COUNT, cluster
dims) read from real nvcc output on several archs, carried through Usage, the cache and the
sidecars; and where the source also gives a figure, the two agree."""

from __future__ import annotations

import pytest
from conftest import run_main

from occlint import occupancy, record
from occlint.config import Config
from occlint.link import match_usage
from occlint.source import parse, specialize
from occlint.toolchain import collect_usage

ARCHS = ("sm_75", "sm_80", "sm_90", "sm_120")

UNIT = """\
#include "bounds.cuh"
__global__ void plain(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(1024, MAX_BLOCKS) capped(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(256) threads_only(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(1024) full_block(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(512, 3) ignored_on_small_sms(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(128, 4) four(float* x) { x[threadIdx.x] *= 2; }
__global__ void __maxnreg__(40) maxnreg(float* x) { x[threadIdx.x] *= 2; }
template <int D> struct tile_dims { static constexpr int blocks_sm = D == 1 ? 3 : 2; };
template <int D>
__global__ void __launch_bounds__(256, tile_dims<D>::blocks_sm) traits(float* x) { x[threadIdx.x] *= 2; }
template __global__ void traits<1>(float*);
template __global__ void traits<2>(float*);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__global__ void __cluster_dims__(2, 1, 1) clustered(float* x) { x[threadIdx.x] *= 2; }
__global__ void __launch_bounds__(128, 2, 8) cluster_bounds(float* x) { x[threadIdx.x] *= 2; }
#endif
"""
HEADER = """\
#pragma once
#if __CUDA_ARCH__ >= 900
#define MAX_BLOCKS 2
#else
#define MAX_BLOCKS 1
#endif
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, nvcc_path):
    root = tmp_path_factory.mktemp("attrs")
    (root / "bounds.cuh").write_text(HEADER)
    (root / "unit.cu").write_text(UNIT)
    config = Config(root=str(root), nvcc=nvcc_path, arch=ARCHS, cache_dir=str(root / "cache"))
    report = collect_usage([str(root / "unit.cu")], config)
    assert not report.errors, report.errors
    return root, config, report


def _by(usages):
    return {(u.arch, u.kernel, u.template_args): u for u in usages}


def test_cubin_attributes_from_real_nvcc(compiled):
    _root, _config, report = compiled
    got = _by(next(iter(report.usages.values())))
    for arch in ARCHS:
        plain = got[(arch, "plain", ())]
        assert (plain.max_threads, plain.max_registers) == (None, 255)
        assert got[(arch, "threads_only", ())].max_threads == 256
        assert got[(arch, "threads_only", ())].max_registers == 255
        assert got[(arch, "full_block", ())].max_registers == 64   # 64 K registers / 1024 threads
        assert got[(arch, "maxnreg", ())].max_registers == 40
        assert got[(arch, "capped", ())].max_threads == 1024
        assert got[(arch, "traits", ("2",))].max_threads == 256
    # __launch_bounds__(1024, 2) on sm_90: 32 registers (the example)
    assert got[("sm_90", "capped", ())].max_registers == 32
    assert got[("sm_80", "capped", ())].max_registers == 64
    assert got[("sm_90", "four", ())].max_registers == 128
    assert got[("sm_90", "traits", ("1",))].max_registers == 80
    assert got[("sm_90", "clustered", ())].cluster_dims == (2, 1, 1)
    assert got[("sm_90", "cluster_bounds", ())].max_cluster_blocks == 8
    assert got[("sm_90", "plain", ())].cluster_dims is None
    assert ("sm_80", "clustered", ()) not in got


def test_attributes_survive_the_cache(compiled):
    root, config, report = compiled
    again = collect_usage([str(root / "unit.cu")], config)
    assert again.cached == len(ARCHS) and again.compiled == 0
    assert _by(next(iter(again.usages.values()))) == _by(next(iter(report.usages.values())))


def test_source_and_cubin_agree(compiled):
    """Every kernel whose bounds the parser evaluates: the same max threads, and the register
    budget occupancy.register_cap derives from the source is the one ptxas recorded."""
    root, _config, report = compiled
    sf = parse((root / "unit.cu").read_text(), str(root / "unit.cu"))
    usages = next(iter(report.usages.values()))
    compared = 0
    for k in sf.kernels:
        for u in match_usage(k, usages):
            lb = k.launch_bounds
            if k.template_params:
                lb = specialize(sf, k, tuple(int(a) for a in u.template_args)).launch_bounds
            if lb is not None and lb.min_blocks is None and "," in lb.text:
                continue            # MAX_BLOCKS: from another header, per arch
            src_threads = lb.max_threads if lb else None
            assert src_threads == u.max_threads, (k.name, u.arch)
            want = occupancy.register_cap(u.arch, src_threads, lb.min_blocks if lb else None,
                                          k.maxnreg)
            assert want == u.max_registers, (k.name, u.template_args, u.arch)
            if k.cluster_dims:
                assert tuple(k.cluster_dims) == u.cluster_dims
            if lb is not None and lb.max_blocks_per_cluster:
                assert lb.max_blocks_per_cluster == u.max_cluster_blocks
            compared += 1
    # traits<1> and traits<2> too: `tile_dims<D>::blocks_sm`, a class template's constant, is
    # read with D bound (it was the cubin's alone); MAX_BLOCKS: only the cubin knows
    assert compared == 8 * len(ARCHS) + 2


def test_global_maxrregcount_is_the_cap(tmp_path, nvcc_path):
    (tmp_path / "g.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2; }\n"
                                   "__global__ void __launch_bounds__(1024, 2) c(float* x) { x[0] = 1; }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",), no_cache=True,
                    nvcc_flags=("-maxrregcount=48",))
    got = {u.kernel: u for us in collect_usage([str(tmp_path / "g.cu")], config).usages.values()
           for u in us}
    assert got["k"].max_registers == 48 == occupancy.register_cap("sm_90", maxrregcount=48)
    assert got["c"].max_registers == 32 == occupancy.register_cap("sm_90", 1024, 2, None, 48)


def test_old_cache_entries_and_sidecars_lack_attributes():
    from occlint.toolchain.compile import usage_from_json
    from occlint.toolchain.cubin import usage_from_record

    rec = {"mangled": "_Z1kPf", "arch": "sm_90", "registers": 8, "static_smem": 0,
           "barriers": 0, "stack_frame": 0}
    u = usage_from_record(rec)
    assert (u.max_threads, u.max_registers, u.cluster_dims) == (None, None, None)
    u = usage_from_record({**rec, "max_threads": 256, "max_registers": 40,
                           "cluster_dims": [2, 1, 1], "max_cluster_blocks": "x"})
    assert (u.max_threads, u.max_registers, u.cluster_dims, u.max_cluster_blocks) == \
        (256, 40, (2, 1, 1), None)
    d = record.asdict(u)
    d["cluster_dims"] = [2, 1, 1]
    assert usage_from_json(d, "a.cu") == record.replace(u, unit="a.cu")


CALLEE = """\
__device__ __noinline__ float work(const float *in, int t) {
  float acc[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) acc[i] = in[t * 48 + i];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = acc[i] * acc[(i + r + 1) % 48] + 1.f;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 48; ++i) s += acc[i];
  return s;
}
__global__ void __launch_bounds__(1024, 2) heavy_call(const float *in, float *out) {
  out[threadIdx.x] = work(in, threadIdx.x);
}
__global__ void light(float *out) { out[threadIdx.x] = 1.f; }
"""


@pytest.mark.parametrize("rdc", [False, True])
def test_spills_in_a_callee_ptxas_did_not_inline_are_the_kernels(tmp_path, nvcc_path, rdc):
    # flash-attention's flash_fwd_kernel (hdim32, sm_80): ptxas reports the kernel with 0 B of
    # spills and its non-inlined callee compute_attn_1rowblock with 1292 B of spill stores;
    # occlint said 0 and "All checks passed!". The callee's figures are ptxas's own lines (the
    # whole-program copy `$kernel$callee`, or -rdc's `.nv.callgraph` edge to a clone)
    import re
    import subprocess

    from occlint.toolchain.ptxas import function_frames

    (tmp_path / "c.cu").write_text(CALLEE)
    flags = ("-rdc=true",) if rdc else ()
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",), no_cache=True,
                    nvcc_flags=flags)
    got = {u.kernel: u for us in collect_usage([str(tmp_path / "c.cu")], config).usages.values()
           for u in us}
    report = subprocess.run([nvcc_path, "-arch=sm_90", *flags, "-cubin", "-Xptxas", "-v", "-o",
                             str(tmp_path / "c.cubin"), str(tmp_path / "c.cu")],
                            capture_output=True, text=True, check=True).stderr
    frames = function_frames(report)
    callee = next(name for name in frames if name.startswith("_Z4work") and frames[name][1])
    heavy = got["heavy_call"]
    assert (heavy.spill_stores, heavy.spill_loads) == frames["_Z10heavy_callPKfPf"][1:] == (0, 0)
    assert (heavy.callee_spill_stores, heavy.callee_spill_loads) == frames[callee][1:]
    assert heavy.callee_spill_stores > 0 and heavy.spilling_callee == "work"
    assert (got["light"].callee_spill_stores, got["light"].spilling_callee) == (0, "")
    assert re.search(r"Function properties for _Z4workPKfi", report)
    rdc_config = ("--config", 'nvcc-flags = ["-rdc=true"]') if rdc else ()
    r = run_main("check", "--arch", "sm_90", "--no-cache", *rdc_config, "c.cu", cwd=tmp_path)
    assert "OCC012 `heavy_call` spills registers on sm_90 under __launch_bounds__(1024, 2): " \
        f"{heavy.callee_spill_stores} bytes spill stores" in r.stdout
    assert f"[{heavy.callee_spill_stores} bytes of the stores are in functions it calls that " \
        "ptxas did not inline, most in `work`]" in r.stdout


def test_a_recursive_callees_spills_are_not_a_finding(tmp_path, nvcc_path):
    # cuda-samples' interval: `newton_interval_rec` (recursive by design) spills the registers
    # each call saves: 28 bytes, reported as OCC011 "inline such a call", which recursion
    # cannot. The figures stay listed; the finding is not made.
    (tmp_path / "rec.cu").write_text(
        "__device__ float walk(const float* p, int n, int depth) {\n"
        "  if (depth == 0) return p[n];\n"
        "  float a = p[n] * 2.f, b = p[n + 1] + 1.f, c = p[n + 2] - 3.f;\n"
        "  float r = walk(p, n + 1, depth - 1) + walk(p, n + 2, depth - 1);\n"
        "  return r * a + b * c;\n}\n"
        "__global__ void tree(const float* p, float* out, int depth) {\n"
        "  out[threadIdx.x] = walk(p, threadIdx.x, depth);\n}\n")
    (tmp_path / "flat.cu").write_text(CALLEE.replace("__launch_bounds__(1024, 2) ", ""))
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",), no_cache=True)
    got = {u.kernel: u for us in collect_usage([str(tmp_path / "rec.cu")], config).usages.values()
           for u in us}
    assert got["tree"].callee_spill_stores > 0 and got["tree"].spilling_callee == "walk"
    r = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "concise",
                 "rec.cu", "flat.cu", cwd=tmp_path)
    assert "rec.cu" not in r.stdout
    # (not recursive: a non-inlined call that spills at 255 registers or with registers to
    # spare is still reported)
    spilled = {u.kernel: u for us in collect_usage([str(tmp_path / "flat.cu")], config).usages.values()
               for u in us}["heavy_call"]
    assert ("flat.cu" in r.stdout) == bool(spilled.callee_spill_stores)
