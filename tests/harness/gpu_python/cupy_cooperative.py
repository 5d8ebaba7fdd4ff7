"""A cooperative CuPy module (enable_cooperative_groups=True): NVRTC compiles it with --device-c
and CuPy device-links it with cudadevrt. A grid-wide sync, and a template kernel whose static
__shared__ tile ptxas reports as 0 B before the link. <cooperative_groups.h> under NVRTC needs
CUDA 13's include/cccl, which occlint puts on the path as CuPy's bundled CCCL would be."""
import cupy as cp

SRC = r"""
#include <cooperative_groups.h>

extern "C" __global__ void grid_sum(const float* x, float* partial, float* out, int n) {
    __shared__ float s[256];
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    int rank = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    for (int i = rank; i < n; i += gridDim.x * blockDim.x) v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (rank == 0) {
        float t = 0.0f;
        for (int b = 0; b < gridDim.x; ++b) t += partial[b];
        *out = t;
    }
}

template <int TILE>
__global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
"""

mod = cp.RawModule(code=SRC, options=("-std=c++17",), enable_cooperative_groups=True,
                   name_expressions=["transpose<16>", "transpose<32>"])
grid_sum = mod.get_function("grid_sum")
t32 = mod.get_function("transpose<32>")
t32((64, 64), (32, 32), (None, None, 2048))
