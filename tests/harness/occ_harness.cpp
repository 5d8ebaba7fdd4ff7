// Differential-test oracle: NVIDIA's cuda_occupancy.h, driven from stdin.
//
// One query per line, whitespace-separated integers:
//   mode  major minor maxThreadsPerBlock maxThreadsPerMultiprocessor regsPerBlock
//         regsPerMultiprocessor warpSize sharedMemPerBlock sharedMemPerMultiprocessor numSms
//         sharedMemPerBlockOptin reservedSharedMemPerBlock
//         numRegs sharedSizeBytes maxDynamicSharedSizeBytes numBlockBarriers maxThreadsPerBlock(attr)
//         cacheConfig carveoutConfig  blockSize  dynamicSmem  extra
// mode 0: cudaOccMaxActiveBlocksPerMultiprocessor(blockSize, dynamicSmem)
//   -> "status active limitingFactors regs smem warps blocks barriers allocRegs allocSmem"
// mode 1: cudaOccMaxPotentialOccupancyBlockSize with constant dynamicSmem
//   -> "status minGridSize blockSize"
// mode 2: cudaOccMaxPotentialOccupancyBlockSizeVariableSMem, smem = dynamicSmem + extra * block
//   -> "status minGridSize blockSize"
// mode 3: cudaOccAvailableDynamicSMemPerBlock(numBlocks = extra, blockSize)
//   -> "status bytes"
// The function is described as the header's conversion from cudaFuncAttributes does:
// FUNC_SHMEM_LIMIT_OPTIN, partitioned global caching off, no virtual resources.
#include <cstdio>
#include <cuda_occupancy.h>

struct LinearSmem {
    size_t base, per_thread;
    size_t operator()(int block) const { return base + per_thread * (size_t)block; }
};

int main() {
    long long v[24];
    while (true) {
        for (int i = 0; i < 24; ++i) {
            if (std::scanf("%lld", &v[i]) != 1) return 0;
        }
        cudaOccDeviceProp p;
        p.computeMajor = (int)v[1];
        p.computeMinor = (int)v[2];
        p.maxThreadsPerBlock = (int)v[3];
        p.maxThreadsPerMultiprocessor = (int)v[4];
        p.regsPerBlock = (int)v[5];
        p.regsPerMultiprocessor = (int)v[6];
        p.warpSize = (int)v[7];
        p.sharedMemPerBlock = (size_t)v[8];
        p.sharedMemPerMultiprocessor = (size_t)v[9];
        p.numSms = (int)v[10];
        p.sharedMemPerBlockOptin = (size_t)v[11];
        p.reservedSharedMemPerBlock = (size_t)v[12];
        cudaOccFuncAttributes a;
        a.numRegs = (int)v[13];
        a.sharedSizeBytes = (size_t)v[14];
        a.maxDynamicSharedSizeBytes = (size_t)v[15];
        a.numBlockBarriers = (int)v[16];
        a.maxThreadsPerBlock = (int)v[17];
        a.partitionedGCConfig = PARTITIONED_GC_OFF;
        a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        a.virtualResourceCount = 0;
        cudaOccDeviceState s;
        s.cacheConfig = (cudaOccCacheConfig)v[18];
        s.carveoutConfig = (int)v[19];
        int block = (int)v[20];
        size_t dyn = (size_t)v[21];
        long long extra = v[22];
        int mode = (int)v[0];
        (void)v[23];  // reserved
        if (mode == 0) {
            cudaOccResult r;
            cudaOccError st = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, block, dyn);
            if (st != CUDA_OCC_SUCCESS) { std::printf("%d\n", (int)st); continue; }
            std::printf("0 %d %u %d %d %d %d %d %d %zu\n", r.activeBlocksPerMultiprocessor,
                        r.limitingFactors, r.blockLimitRegs, r.blockLimitSharedMem,
                        r.blockLimitWarps, r.blockLimitBlocks, r.blockLimitBarriers,
                        r.allocatedRegistersPerBlock, r.allocatedSharedMemPerBlock);
        } else if (mode == 1 || mode == 2) {
            int minGrid = -1, best = -1;
            cudaOccError st = mode == 1
                ? cudaOccMaxPotentialOccupancyBlockSize(&minGrid, &best, &p, &a, &s, dyn)
                : cudaOccMaxPotentialOccupancyBlockSizeVariableSMem(
                      &minGrid, &best, &p, &a, &s, LinearSmem{dyn, (size_t)extra});
            if (st != CUDA_OCC_SUCCESS) { std::printf("%d\n", (int)st); continue; }
            std::printf("0 %d %d\n", minGrid, best);
        } else {
            size_t bytes = 0;
            cudaOccError st = cudaOccAvailableDynamicSMemPerBlock(&bytes, &p, &a, &s, (int)extra, block);
            if (st != CUDA_OCC_SUCCESS) { std::printf("%d\n", (int)st); continue; }
            std::printf("0 %lld\n", (long long)bytes);
        }
    }
}
