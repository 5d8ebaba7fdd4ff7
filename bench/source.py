"""Throughput of occlint.source.parse (parse + extract) against tree-sitter's parse alone, one core.

    python bench/source.py [PATH ...] [--files 120] [--seed 1] [--repeat 3]

With PATHs (files or folders of real CUDA code: their .cu and .cuh files), parses those, each
with its project headers walked as a check would; else writes realistic generated .cu/.cuh files
(license headers, includes, macros, constexpr, templated and namespaced kernels, shared tiles,
reductions, host code with dim3 and <<<>>> launches, error checks, comments) to a temp dir.
Prints a table of MB/s with the ratio to tree-sitter's parse of the same bytes, measured in the
same run. (`bench/warm.py` measures the same with process start included.)
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HEADER = """/*
 * Copyright (c) {year}, Example Corp. All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or without modification, are
 * permitted provided that the conditions in the LICENSE file are met.
 */
#include <cuda_runtime.h>
#include <cstdio>
#include <string>
#include <vector>
#include "{name}.cuh"

#define CUDA_CHECK(call)                                                      \\
    do {{                                                                      \\
        cudaError_t err_ = (call);                                            \\
        if (err_ != cudaSuccess) {{                                            \\
            fprintf(stderr, "%s:%d: %s\\n", __FILE__, __LINE__,                \\
                    cudaGetErrorString(err_));                                \\
            exit(1);                                                          \\
        }}                                                                     \\
    }} while (0)
#define BLOCK_{i} {block}
#define TILE_{i} {tile}
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))
constexpr int kWarp{i} = 32;
"""

KERNELS = [
    """
// Tree reduction over one block; the classic shared-memory pattern.
__global__ void __launch_bounds__(BLOCK_{i}) reduce_{i}_{j}(const float* __restrict__ in,
                                                        float* __restrict__ out, int n) {{
    __shared__ float smem[BLOCK_{i}];
    unsigned int tid = threadIdx.x;
    unsigned int gid = blockIdx.x * blockDim.x + threadIdx.x;
    smem[tid] = (gid < n) ? in[gid] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (tid < s) {{
            smem[tid] += smem[tid + s];
        }}
        __syncthreads();
    }}
    if (tid == 0) out[blockIdx.x] = smem[0];
}}
""",
    """
namespace ops{i} {{
/// Tiled transpose with a padded tile to avoid bank conflicts.
template <typename T, int TILE>
__global__ void transpose_{j}(T* out, const T* in, int width, int height) {{
    __shared__ T tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}}
}}  // namespace ops{i}
""",
    """
__global__ void saxpy_{i}_{j}(int n, float a, const float* x, float* y) {{
    // grid-stride loop
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n;
         idx += blockDim.x * gridDim.x) {{
        y[idx] = a * x[idx] + y[idx];
    }}
}}
""",
    """
extern "C" __global__ void histogram_{i}_{j}(const unsigned char* data, unsigned int* bins,
                                             size_t n) {{
    extern __shared__ unsigned int local_bins[];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local_bins[b] = 0;
    __syncthreads();
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x)
        atomicAdd(&local_bins[data[k]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local_bins[b]);
}}
""",
]

HOST = """
void run_{i}(float* d_in, float* d_out, int n, cudaStream_t stream) {{
    const int threads = BLOCK_{i};
    int blocks = DIV_UP(n, threads);
    reduce_{i}_0<<<blocks, threads, 0, stream>>>(d_in, d_out, n);
    CUDA_CHECK(cudaGetLastError());
    dim3 block(TILE_{i}, TILE_{i});
    dim3 grid(DIV_UP(n, TILE_{i}), DIV_UP(n, TILE_{i}));
    ops{i}::transpose_1<float, TILE_{i}><<<grid, block>>>(d_out, d_in, n, n);
    saxpy_{i}_2<<<DIV_UP(n, 256), 256>>>(n, 2.0f, d_in, d_out);
    histogram_{i}_3<<<64, 256, 256 * sizeof(unsigned int)>>>(nullptr, nullptr, n);
    CUDA_CHECK(cudaFuncSetAttribute(reduce_{i}_0, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    48 * 1024));
    std::vector<float> host(n);
    CUDA_CHECK(cudaMemcpy(host.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int k = 0; k < n; ++k) {{
        if (host[k] != host[k]) {{ printf("NaN at %d\\n", k); break; }}
    }}
}}
"""


DEVICE = """
// Warp-level helpers used by the kernels below.
__device__ __forceinline__ float warp_sum_{i}_{j}(float v) {{
#pragma unroll
    for (int offset = kWarp{i} / 2; offset > 0; offset /= 2) {{
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }}
    return v;
}}

__host__ __device__ inline int clamp_{i}_{j}(int v, int lo, int hi) {{
    return v < lo ? lo : (v > hi ? hi : v);
}}
"""

MAIN = """
struct Options{i} {{
    int n = 1 << 20;
    int iterations = 10;
    bool verify = true;
}};

static Options{i} parse_args_{i}(int argc, char** argv) {{
    Options{i} opt;
    for (int a = 1; a < argc; ++a) {{
        std::string arg = argv[a];
        if (arg == "--n" && a + 1 < argc) {{
            opt.n = std::atoi(argv[++a]);
        }} else if (arg == "--iterations" && a + 1 < argc) {{
            opt.iterations = std::atoi(argv[++a]);
        }} else if (arg == "--no-verify") {{
            opt.verify = false;
        }} else {{
            fprintf(stderr, "unknown option %s\\n", arg.c_str());
        }}
    }}
    return opt;
}}

int main_{i}(int argc, char** argv) {{
    Options{i} opt = parse_args_{i}(argc, argv);
    float *d_in = nullptr, *d_out = nullptr;
    CUDA_CHECK(cudaMalloc(&d_in, opt.n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, opt.n * sizeof(float)));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start));
    for (int it = 0; it < opt.iterations; ++it) {{
        run_{i}(d_in, d_out, opt.n, 0);
    }}
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    printf("%d iterations: %.3f ms each\\n", opt.iterations, ms / opt.iterations);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    return 0;
}}
"""


def make_file(i: int, rng: random.Random) -> str:
    parts = [HEADER.format(year=2015 + i % 10, name=f"util_{i}", i=i,
                           block=rng.choice((128, 256, 512)), tile=rng.choice((16, 32)))]
    for j in range(rng.randint(1, 3)):
        parts.append(DEVICE.format(i=i, j=j))
    for j, k in enumerate(KERNELS):
        parts.append(k.format(i=i, j=j))
    parts.append(HOST.format(i=i))
    if rng.random() < 0.5:                      # half the files carry a driver program
        parts.append(MAIN.format(i=i))
    return "".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", help="real CUDA files or folders (default: generated)")
    ap.add_argument("--files", type=int, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from occlint.source import parse

    rng = random.Random(args.seed)
    if args.paths:
        found = sorted({str(f) for p in args.paths
                        for f in ([Path(p)] if Path(p).is_file() else Path(p).rglob("*"))
                        if f.suffix in (".cu", ".cuh") and f.is_file()})
        datas = [(os.path.abspath(f), Path(f).read_bytes()) for f in found]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i in range(args.files):
                p = Path(tmp) / (f"k{i}.cu" if i % 4 else f"k{i}.cuh")
                p.write_text(make_file(i, rng))
                paths.append(p)
            datas = [(str(p), p.read_bytes()) for p in paths]
    total = sum(len(d) for _, d in datas)
    parse("__global__ void warm() {}")

    def timed(fn) -> tuple[float, float]:
        """Best (wall, cpu) seconds over the repeats."""
        best = (float("inf"), float("inf"))
        for _ in range(args.repeat):
            w, c = time.perf_counter(), time.process_time()
            fn()
            best = min(best[0], time.perf_counter() - w), min(best[1], time.process_time() - c)
        return best

    counts = [0, 0, 0]

    def full():
        counts[:] = [0, 0, 0]
        for path, data in datas:
            sf = parse(data, path)
            counts[0] += len(sf.kernels)
            counts[1] += len(sf.shared)
            counts[2] += len(sf.launches)

    from occlint.source.grammar import parser
    p = parser()
    rows = [("tree-sitter parse only", timed(lambda: [p.parse(d) for _, d in datas])),
            ("parse + extract", timed(full))]
    mb = total / 1e6
    print(f"corpus: {len(datas)} files, {mb:.2f} MB; found {counts[0]} kernels, "
          f"{counts[1]} shared declarations, {counts[2]} launches")
    print(f"{'step':<24} {'wall s':>8} {'cpu s':>8} {'MB/s wall':>10} {'MB/s cpu':>9} "
          f"{'cpu vs tree-sitter':>18}")
    base = rows[0][1][1]
    for name, (w, c) in rows:
        print(f"{name:<24} {w:>8.3f} {c:>8.3f} {mb / w:>10.2f} {mb / c:>9.2f} {c / base:>17.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
