"""Template instantiations through name_expressions, with static and dynamic shared memory."""
import cupy as cp

SRC = r"""
template <typename T, int BLOCK>
__global__ void block_reduce(const T* x, T* out, int n) {
    __shared__ T s[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template <int K>
__global__ void histogram(const int* x, int* bins, int n) {
    extern __shared__ int local[];
    __shared__ int total[K];
    for (int b = threadIdx.x; b < K; b += blockDim.x) { local[b] = 0; total[b] = 0; }
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[x[i] % K], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < K; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}
"""

names = ["block_reduce<float, 256>", "block_reduce<double, 512>", "block_reduce<int, 1024>",
         "histogram<4096>"]
mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
r = mod.get_function("block_reduce<double, 512>")
r((1024,), (512,), (None, None, 1 << 19))
h = mod.get_function("histogram<4096>")
h((132,), (256,), (None, None, 1 << 20), shared_mem=4096 * 4)
