"""CuPy modules compiled with nvcc (backend='nvcc'); the cooperative one with -rdc=true, device-linked
with cudadevrt: cooperative_groups' grid.sync() and a template's static __shared__ tile. CuPy
takes name_expressions with NVRTC only, so templates are instantiated explicitly here."""
import cupy

SRC = r"""
template <typename T, int ITEMS>
__global__ void scale_items(T* x, T a, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
        if (base + i < n) x[base + i] *= a;
}
template __global__ void scale_items<float, 4>(float*, float, int);
template __global__ void scale_items<double, 8>(double*, double, int);

extern "C" __global__ void __launch_bounds__(256, 4) stencil(const float* in, float* out, int n) {
    __shared__ float s[256 + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x + 1] = i < n ? in[i] : 0.0f;
    if (threadIdx.x == 0) s[0] = i > 0 ? in[i - 1] : 0.0f;
    if (threadIdx.x == blockDim.x - 1) s[blockDim.x + 1] = i + 1 < n ? in[i + 1] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = 0.25f * s[threadIdx.x] + 0.5f * s[threadIdx.x + 1] + 0.25f * s[threadIdx.x + 2];
}
"""

plain = cupy.RawModule(code=SRC, backend="nvcc", options=("-O3",))

COOP = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <int N>
__global__ void ping(int* flags, int rounds) {
    __shared__ int seen[N];
    cg::grid_group g = cg::this_grid();
    for (int r = 0; r < rounds; ++r) {
        seen[threadIdx.x % N] = flags[(blockIdx.x + r) % gridDim.x];
        g.sync();
        if (threadIdx.x == 0) flags[blockIdx.x] = seen[(r * 7) % N] + 1;
        g.sync();
    }
}
template __global__ void ping<128>(int*, int);
template __global__ void ping<1024>(int*, int);
"""

coop = cupy.RawModule(code=COOP, backend="nvcc", enable_cooperative_groups=True)
ping = coop.get_function("_Z4pingILi128EEvPii")
