// A block reduction with the occupancy mistakes occlint is built to catch.
#include <cuda_runtime.h>

#define N_ELEMS (1 << 24)

// Sized for the worst case: 4096 floats = 16 KB per block, but a 256-thread
// launch only ever touches the first 256 elements.
__global__ void block_reduce_naive(const float* in, float* out, int n) {
    __shared__ float smem[4096];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    smem[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) smem[tid] += smem[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = smem[0];
}

__global__ void __launch_bounds__(256) scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(const float* in, float* out, float* x) {
    block_reduce_naive<<<N_ELEMS / 256, 256>>>(in, out, N_ELEMS);
    scale<<<N_ELEMS / 1024, 1024>>>(x, 2.0f, N_ELEMS);   // exceeds __launch_bounds__(256)
    scale<<<64, 100>>>(x, 2.0f, 6400);                    // 100 is not a multiple of 32
}
