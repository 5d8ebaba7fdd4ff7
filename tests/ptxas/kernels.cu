// Kernels whose ptxas reports are recorded by record.py (see README there).
namespace ns {
// a non-entry function: its "Function properties" block must not attach to a kernel
__device__ __noinline__ float helper(float x) {
    float a[32];
    for (int i = 0; i < 32; i++) a[i] = x * i;
    return a[static_cast<int>(x) & 31];
}

template <int BLOCK, typename T>
__global__ void reduce(const T* in, T* out) {
    __shared__ T smem[BLOCK];
    smem[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) out[0] = smem[0] + helper(smem[1]);
}
template __global__ void reduce<256, float>(const float*, float*);
template __global__ void reduce<128, double>(const double*, double*);
}  // namespace ns

extern "C" __global__ void plain(float* p) {
    __shared__ float s[1024];
    s[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = s[1023 - threadIdx.x];
}

__global__ void __launch_bounds__(1024) spilly(float* p) {
    float a[64];
#pragma unroll
    for (int i = 0; i < 64; i++) a[i] = p[i * threadIdx.x];
    float s = 0;
#pragma unroll
    for (int i = 0; i < 64; i++) s += a[i] * a[(i * 7) % 64];
    p[threadIdx.x] = s;
}
