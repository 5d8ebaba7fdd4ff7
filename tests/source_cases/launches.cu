// Launch sites in the styles real code uses. Compiles with nvcc -arch=sm_90.
#include <cuda_runtime.h>
#include <algorithm>

#define THREADS 256
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))
#define SMEM_BYTES (THREADS * sizeof(float))
constexpr int kBlock = 0x80;           // 128
static const unsigned kRows = 1'024u;
enum { kWarps = 4, kWarpSize = 32, kTile };

namespace cfg { constexpr int block = 512; }

__global__ void k(float* p) { p[threadIdx.x] = 0.0f; }
template <int B> __global__ void kt(float* p) { p[threadIdx.x] = B; }
__global__ void coop(float* p) { p[0] = 1.0f; }

void launches(float* p, int n, cudaStream_t stream) {
    k<<<DIV_UP(4096, THREADS), THREADS>>>(p);
    k<<<n / THREADS, THREADS, SMEM_BYTES, stream>>>(p);
    dim3 grid(16, 8);
    dim3 block{32, 8};
    k<<<grid, block>>>(p);
    dim3 same = dim3(kWarps * kWarpSize, 2, 1);
    k<<<1, same>>>(p);
    const int threads = std::min(kBlock, 1024);
    k<<<kRows / threads, threads>>>(p);
    int local = 64;
    k<<<1, local>>>(p);
    int changed = 64;
    changed *= 2;
    k<<<1, changed>>>(p);
    k<<<1, cfg::block>>>(p);
    k<<<1, kTile * 32>>>(p);
    kt<kBlock><<<1, kBlock>>>(p);
    k<<<dim3(n), dim3(THREADS)>>>(p);
}

void api_launches(float* p, int n) {
    void* args[] = {&p};
    cudaLaunchKernel((void*)k, dim3(8), dim3(THREADS), args, 0, 0);
    cudaLaunchKernel(reinterpret_cast<const void*>(&kt<64>), 4, 64, args, 1024, 0);
    cudaLaunchCooperativeKernel((void*)coop, 2, 128, args, 0, 0);

    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(32);
    config.blockDim = dim3(kBlock);
    config.dynamicSmemBytes = 2048;
    cudaLaunchKernelEx(&config, k, p);

    int min_grid = 0, best = 0;
    cudaOccupancyMaxPotentialBlockSize(&min_grid, &best, k, 0, 0);
    k<<<DIV_UP(n, best), best>>>(p);
}

void attributes() {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
    cudaFuncSetAttribute(kt<64>, cudaFuncAttributePreferredSharedMemoryCarveout,
                         cudaSharedmemCarveoutMaxShared);
    cudaFuncSetAttribute((const void*)coop, cudaFuncAttributePreferredSharedMemoryCarveout, 50);
    cudaFuncSetCacheConfig(k, cudaFuncCachePreferShared);
}
