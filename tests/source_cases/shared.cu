// Shared memory declarations: sizes, owners, indices. Compiles with nvcc -arch=sm_90.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define TILE 32
#define PAD 1
constexpr int kElems = 4096;

struct Pair { float a; int b; };
struct Odd { char c; double d; };

__shared__ int file_scope[64];

__global__ void block_reduce_naive(const float* in, float* out, int n) {
    __shared__ float smem[kElems];
    unsigned int tid = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    smem[tid] = gid < n ? in[gid] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) smem[tid] += smem[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = smem[0];
}

__global__ void transpose(float* out, const float* in) {
    __shared__ float tile[TILE][TILE + PAD];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * TILE + threadIdx.x];
    __syncthreads();
    out[threadIdx.x * TILE + threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}

__global__ void types_kernel(int* out) {
    __shared__ __half h[8];
    __shared__ __nv_bfloat16 bf[8];
    __shared__ float4 f4[4];
    __shared__ int4 i4[2];
    __shared__ double2 d2[2];
    __shared__ char c[3];
    __shared__ Pair pairs[10];
    __shared__ Odd odd[2];
    __shared__ __align__(16) unsigned char raw[48];
    __shared__ int scalar;
    extern __shared__ float dynamic_smem[];
    scalar = 0;
    int lane = threadIdx.x % 32;
    int flat = threadIdx.x + threadIdx.y * blockDim.x;
    int* alias = &file_scope[0];
    out[0] = (int)__half2float(h[lane]) + (int)__bfloat162float(bf[flat]) + f4[0].x + i4[0].x + d2[0].x + c[0] + pairs[0].b + odd[0].c +
             raw[0] + scalar + dynamic_smem[threadIdx.x] + file_scope[threadIdx.x] + *alias;
}

template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) templated_reduce(const T* in, T* out) {
    __shared__ T buf[BLOCK * 2];
    buf[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[0] = buf[0];
}

void host(float* f, int* p) {
    templated_reduce<256, float><<<1, 256>>>(f, f);
    templated_reduce<64, double><<<1, 64>>>(nullptr, nullptr);
}
