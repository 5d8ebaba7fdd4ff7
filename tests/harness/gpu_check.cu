// Ground truth on a real GPU: cudaOccupancyMaxActiveBlocksPerMultiprocessor and
// cudaOccupancyMaxPotentialBlockSize for kernels of varied register and shared memory use.
// Built and compared with occlint's engine by tests/harness/gpu_check.py (needs a GPU).
//
// Output lines:
//   D major minor smCount maxThreadsPerSM regsPerSM regsPerBlock smemPerSM smemPerBlock optin reserved
//   A kernel numRegs staticSmem maxDynAttr carveout blockSize dynamicSmem activeBlocks
//   P kernel numRegs staticSmem maxDynAttr minGridSize blockSize
// `gpu_check launch` instead launches each kernel at a few configurations (opted in to the
// device's dynamic shared memory maximum), for Nsight Compute (tests/harness/gpu_ncu.py):
//   L kernel numRegs staticSmem maxDynAttr blockSize dynamicSmem
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

template <int SMEM, int LIVE>
__global__ void k(float* out, int n) {
    constexpr int S = SMEM / 4 > 0 ? SMEM / 4 : 1;
    __shared__ float s[S];
    extern __shared__ float dyn[];
    float v[LIVE];
#pragma unroll
    for (int i = 0; i < LIVE; ++i) v[i] = out[i * blockDim.x + threadIdx.x];
    for (int it = 0; it < n; ++it) {
#pragma unroll
        for (int i = 0; i < LIVE; ++i) v[i] = v[i] * v[(i + 1) % LIVE] + v[(i + 7) % LIVE];
    }
    float t = 0.f;
#pragma unroll
    for (int i = 0; i < LIVE; ++i) t += v[i];
    s[threadIdx.x % S] = t;
    __syncthreads();
    if (n < 0) dyn[threadIdx.x] = t;
    out[threadIdx.x] = s[(threadIdx.x + 1) % S];
}

template <int SMEM, int LIVE>
int probe(const char* name, const cudaDeviceProp& p) {
    auto f = k<SMEM, LIVE>;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, f));
    const int block_sizes[] = {32, 64, 96, 100, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024};
    const int dyns[] = {0, 1024, 5000, 20000, 50000, 100000};
    const int carveouts[] = {-1, 0, 10, 25, 50, 75, 100};
    const int never = (int)p.sharedMemPerBlock - (int)a.sharedSizeBytes;
    const int optin = (int)p.sharedMemPerBlockOptin - (int)a.sharedSizeBytes;
    const int maxdyns[] = {never, optin};
    for (int maxdyn : maxdyns) {
        CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, maxdyn));
        for (int carveout : carveouts) {
            CHECK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
            for (int b : block_sizes) {
                for (int d : dyns) {
                    if (d > maxdyn) continue;
                    int blocks = -1;
                    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, b, d));
                    std::printf("A %s %d %zu %d %d %d %d %d\n", name, a.numRegs, a.sharedSizeBytes,
                                maxdyn, carveout, b, d, blocks);
                }
            }
        }
        CHECK(cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, -1));
        int grid = 0, block = 0;
        CHECK(cudaOccupancyMaxPotentialBlockSize(&grid, &block, f, 0, 0));
        std::printf("P %s %d %zu %d %d %d\n", name, a.numRegs, a.sharedSizeBytes, maxdyn, grid, block);
    }
    return 0;
}

template <int SMEM, int LIVE>
int launch(const char* name, const cudaDeviceProp& p, float* buf) {
    auto f = k<SMEM, LIVE>;
    cudaFuncAttributes a;
    CHECK(cudaFuncGetAttributes(&a, f));
    const int maxdyn = (int)p.sharedMemPerBlockOptin - (int)a.sharedSizeBytes;
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, maxdyn));
    const int configs[][2] = {{128, 0}, {256, 0}, {1024, 0}, {96, 20000}, {256, 50000},
                              {512, 100000}};
    for (const auto& c : configs) {
        if (c[0] > a.maxThreadsPerBlock || c[1] > maxdyn) continue;
        k<SMEM, LIVE><<<2, c[0], c[1]>>>(buf, 1);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::printf("L %s %d %zu %d %d %d\n", name, a.numRegs, a.sharedSizeBytes, maxdyn, c[0],
                    c[1]);
    }
    return 0;
}

#define PROBE(S, L) if (launching ? launch<S, L>("k_" #S "_" #L, p, buf) \
                                  : probe<S, L>("k_" #S "_" #L, p)) return 1;

int main(int argc, char** argv) {
    const bool launching = argc > 1 && std::strcmp(argv[1], "launch") == 0;
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    float* buf = nullptr;
    if (launching) {
        CHECK(cudaMalloc(&buf, 256 * 1024 * sizeof(float)));
        CHECK(cudaMemset(buf, 0, 256 * 1024 * sizeof(float)));
    }
    std::printf("D %d %d %d %d %d %d %zu %zu %zu %zu\n", p.major, p.minor, p.multiProcessorCount,
                p.maxThreadsPerMultiProcessor, p.regsPerMultiprocessor, p.regsPerBlock,
                p.sharedMemPerMultiprocessor, p.sharedMemPerBlock, p.sharedMemPerBlockOptin,
                p.reservedSharedMemPerBlock);
    PROBE(0, 8) PROBE(0, 24) PROBE(0, 40) PROBE(0, 56) PROBE(0, 72) PROBE(0, 100) PROBE(0, 140)
    PROBE(0, 200) PROBE(1000, 24) PROBE(1000, 72) PROBE(16384, 8) PROBE(16384, 40)
    PROBE(16384, 100) PROBE(40000, 24) PROBE(40000, 140) PROBE(48000, 8)
    return 0;
}
