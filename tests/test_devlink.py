"""Relocatable device code (-rdc): the figures are the device link's, not ptxas's report.

The ground truth is the program nvcc itself builds and links (`nvcc -rdc=true -o exe`): its
embedded cubin is what the CUDA driver loads. On an H200 the driver agreed with the linked
figures for 639 -rdc kernels of cuda-samples, where ptxas's report missed the static shared
memory of 106 and the callees' registers of 2 (docs/validation.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

from occlint.config import Config
from occlint.toolchain import collect_usage
from occlint.toolchain.cubin import cubin_records, needs_link, object_cubins, relocatable
from occlint.toolchain.ptxas import parse_usage

RDC = """\
#include <cstdio>
__device__ __noinline__ float heavy(float x) {
    float v[24];
#pragma unroll
    for (int i = 0; i < 24; ++i) v[i] = x * (i + 1);
    float t = 0.f;
#pragma unroll
    for (int i = 0; i < 24; ++i) t += v[i] * v[(i * 7) % 24] + v[(i * 5) % 24];
    return t;
}
template <int N>
__global__ void tiled(float* out) {
    __shared__ float s[N];
    s[threadIdx.x % N] = out[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % N];
}
template __global__ void tiled<2048>(float*);
__global__ void calls(float* c) { c[threadIdx.x] = heavy(c[threadIdx.x]); printf("x\\n"); }
__global__ void plain(float* c) { c[threadIdx.x] += 1.f; }
int main() { return 0; }
"""
EXTERN = """\
extern __device__ float elsewhere(float);
template <int N>
__global__ void needs_other(float* out) {
    __shared__ float s[N];
    s[threadIdx.x % N] = elsewhere(out[threadIdx.x]);
    __syncthreads();
    out[threadIdx.x] = s[0];
}
template __global__ void needs_other<512>(float*);
"""


def _figures(usages):
    return {u.mangled: (u.registers, u.static_smem, u.barriers) for u in usages}


def test_rdc_figures_are_those_of_the_linked_program(tmp_path, nvcc_path):
    src = tmp_path / "rdc.cu"
    src.write_text(RDC)
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",),
                    nvcc_flags=("-rdc=true",), no_cache=True)
    report = collect_usage([str(src)], config)
    assert not report.errors, report.errors
    ours = _figures(report.usages[str(src)])

    exe = tmp_path / "exe"
    subprocess.run([nvcc_path, "-rdc=true", "-arch=sm_90", "-o", str(exe), str(src)],
                   check=True, capture_output=True)
    built = {r["mangled"]: (r["registers"], r["static_smem"], r["barriers"])
             for arch, cubin in object_cubins(exe.read_bytes()).cubins if arch == "sm_90"
             for r in cubin_records(cubin)}
    assert ours == {k: built[k] for k in ours}
    assert ours["_Z5tiledILi2048EEvPf"][1] == 8192

    # ptxas's own report of the same -rdc compile misses both: the test fails without the link
    out = subprocess.run([nvcc_path, "-cubin", "-arch=sm_90", "-rdc=true", "-Xptxas", "-v",
                          "-o", str(tmp_path / "x.cubin"), str(src)],
                         capture_output=True, text=True)
    ptxas = _figures(parse_usage(out.stdout + out.stderr, "sm_90"))
    assert ptxas["_Z5tiledILi2048EEvPf"][1] == 0
    assert ptxas["_Z5callsPf"][0] < ours["_Z5callsPf"][0]
    assert ptxas["_Z5plainPf"] == ours["_Z5plainPf"]
    cubin = (tmp_path / "x.cubin").read_bytes()
    assert relocatable(cubin) and needs_link(cubin)


def test_a_unit_that_links_only_with_others_keeps_ptxas_figures_with_a_warning(tmp_path,
                                                                                nvcc_path):
    src = tmp_path / "ext.cu"
    src.write_text(EXTERN)
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",),
                    nvcc_flags=("-rdc=true",), no_cache=True)
    report = collect_usage([str(src)], config)
    assert not report.errors
    assert [u.kernel for u in report.usages[str(src)]] == ["needs_other"]
    assert "does not link alone for sm_90" in report.notice
    assert "_Z9elsewheref" in report.notice and "x.cubin" not in report.notice


def test_a_warm_run_says_the_link_warning_again(tmp_path, nvcc_path):
    """The warning belongs to the compile's result: a run the cache answers says it too (it
    used to appear on the cold run only), and a unit without kernels (device functions for
    other units) is not linked and says nothing."""
    (tmp_path / "ext.cu").write_text(EXTERN)
    (tmp_path / "lib.cu").write_text("__device__ float helper(float x) { return x * 2.f; }\n"
                                     "extern __device__ float other(float);\n"
                                     "__device__ float both(float x) { return other(x); }\n")
    config = Config(root=str(tmp_path), nvcc=nvcc_path, arch=("sm_90",),
                    nvcc_flags=("-rdc=true",), cache_dir=str(tmp_path / "cache"))
    units = [str(tmp_path / "ext.cu"), str(tmp_path / "lib.cu")]
    cold = collect_usage(units, config)
    warm = collect_usage(units, config)
    assert cold.compiled == 2 and warm.cached == 2 and warm.compiled == 0
    for report in (cold, warm):
        assert report.notice is not None and report.notice.count("does not link alone") == 1
        assert "ext.cu" in report.notice and "lib.cu" not in report.notice


def test_the_launcher_records_rdc_objects_from_the_device_link(tmp_path, nvcc_path):
    src = tmp_path / "rdc.cu"
    src.write_text(RDC)
    obj = tmp_path / "rdc.o"
    subprocess.run([sys.executable, "-m", "occlint", "nvcc", "--", nvcc_path, "-c",
                    "-rdc=true", "-arch=sm_90", "-o", str(obj), str(src)],
                   check=True, capture_output=True, cwd=tmp_path)
    sidecar = json.loads((tmp_path / "rdc.o.occlint.json").read_text())
    records = {r["mangled"]: r for r in sidecar["kernels"]}
    assert records["_Z5tiledILi2048EEvPf"]["static_smem"] == 8192


def test_without_nvlink_the_figures_are_ptxas_and_the_warning_says_why(tmp_path):
    from occlint.toolchain.devlink import link

    cubin = tmp_path / "x.cubin"
    cubin.write_bytes(b"")
    path, why = link(str(cubin), "sm_90", str(tmp_path), 5)
    assert path is None and why == f"no nvlink beside nvcc in {tmp_path}"
