"""occlint's GPU database: per-compute-capability limits and named GPUs (`occlint.gpus` reads it).

A Python literal, not TOML, so a run loads it from its bytecode without a TOML parser (the
parser's import and this table's parse were ~20 ms of every run that needs the table)."""

# Two kinds of numbers live here, and the sources differ:
#
# 1. Device properties (what cudaGetDeviceProperties reports and what cuda_occupancy.h reads from
#    cudaOccDeviceProp): regs_per_block, regs_per_sm, smem_per_block, smem_per_sm,
#    smem_per_block_optin, smem_reserved_per_block, max_threads_per_sm, max_threads_per_block.
#    Sources: the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"
#    (https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#features-and-technical-specifications,
#    rows "Maximum number of resident threads per SM", "Number of 32-bit registers per SM",
#    "Maximum number of 32-bit registers per thread block", "Maximum amount of shared memory per
#    SM", "Maximum amount of shared memory per thread block"), the tuning guides' "Shared memory
#    capacity" sections (Volta: 96 KB, Turing: 64 KB, A100: 164 KB, GA10x: 100 KB, Ada: 100 KB,
#    Hopper: 228 KB, Blackwell: 228 KB (datacenter) / 100 KB (GeForce, GB10)), and published
#    deviceQuery outputs (cudaDeviceProp.sharedMemPerMultiprocessor = the largest carveout,
#    sharedMemPerBlockOptin = that minus reservedSharedMemPerBlock = 1024 on CC >= 8.0; e.g.
#    A100: 167936 / 166912, H100: 233472 / 232448, RTX 3090 and RTX 4090: 102400 / 101376,
#    V100: 98304 / 98304, T4: 65536 / 65536).
#
# 2. Constants hard-coded in cuda_occupancy.h (CUDA 13.5, __CUDA_OCC_MAJOR__ 12 / MINOR 1), copied
#    from the named function: max_blocks_per_sm (cudaOccMaxBlocksPerMultiprocessor),
#    reg_alloc_granularity (cudaOccRegAllocationGranularity), max_regs_per_thread
#    (cudaOccRegAllocationMaxPerThread: 256 in the header; ptxas itself stops at 255),
#    sub_partitions (cudaOccSubPartitionsPerMultiprocessor), smem_granularity
#    (cudaOccSMemAllocationGranularity), smem_configs (cudaOccAlignUpShmemSizeVoltaPlus, in KiB),
#    barriers_per_block_slot (cudaOccMaxBlocksPerSMBlockBarrierLimit, applied on CC >= 9 only;
#    0 = not applied; CUDA 13.0's header had 2 for CC 10.3), virtual_resources_per_sm
#    (cudaOccMaxVirtualResourceCountPerSM; only matters for kernels that declare virtual
#    resources, which occlint never sees).
#
# The differential test (tests/test_occupancy_differential.py) feeds exactly these numbers to the
# header through a C++ harness, so both sides always describe the same device.

DATA = {
    "defaults": {
        "warp_size": 32,
        "max_threads_per_block": 1024,
        "regs_per_block": 65536,
        "regs_per_sm": 65536,
        "smem_per_block": 49152,
        "reg_alloc_granularity": 256,
        "max_regs_per_thread": 256,
        "sub_partitions": 4,
        "virtual_resources_per_sm": 0,
    },

    "arch": {
        "7.0": {
            "family": "Volta",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 98304,
            "smem_per_block_optin": 98304,
            "smem_reserved_per_block": 0,
            "smem_granularity": 256,
            "smem_configs": [0, 8, 16, 32, 64, 96],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 0,
            "default_gpu": "v100",
        },

        "7.2": {
            "family": "Volta (Xavier)",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 98304,
            "smem_per_block_optin": 98304,
            "smem_reserved_per_block": 0,
            "smem_granularity": 256,
            "smem_configs": [0, 8, 16, 32, 64, 96],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 0,
            "default_gpu": "xavier",
        },

        "7.5": {
            "family": "Turing",
            "max_threads_per_sm": 1024,
            "smem_per_sm": 65536,
            "smem_per_block_optin": 65536,
            "smem_reserved_per_block": 0,
            "smem_granularity": 256,
            "smem_configs": [32, 64],
            "max_blocks_per_sm": 16,
            "barriers_per_block_slot": 0,
            "default_gpu": "t4",
        },

        "8.0": {
            "family": "Ampere (GA100)",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 167936,
            "smem_per_block_optin": 166912,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 0,
            "default_gpu": "a100",
        },

        "8.6": {
            "family": "Ampere (GA10x)",
            "max_threads_per_sm": 1536,
            "smem_per_sm": 102400,
            "smem_per_block_optin": 101376,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100],
            "max_blocks_per_sm": 16,
            "barriers_per_block_slot": 0,
            "default_gpu": "rtx3090",
        },

        "8.7": {
            "family": "Ampere (Orin)",
            "max_threads_per_sm": 1536,
            "smem_per_sm": 167936,
            "smem_per_block_optin": 166912,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164],
            "max_blocks_per_sm": 16,
            "barriers_per_block_slot": 0,
            "default_gpu": "orin",
        },

        "8.9": {
            "family": "Ada Lovelace",
            "max_threads_per_sm": 1536,
            "smem_per_sm": 102400,
            "smem_per_block_optin": 101376,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100],
            "max_blocks_per_sm": 24,
            "barriers_per_block_slot": 0,
            "default_gpu": "rtx4090",
        },

        "9.0": {
            "family": "Hopper",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 233472,
            "smem_per_block_optin": 232448,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 2,
            "default_gpu": "h100",
        },

        "10.0": {
            "family": "Blackwell (B200)",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 233472,
            "smem_per_block_optin": 232448,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 2,
            "virtual_resources_per_sm": 128,
            "default_gpu": "b200",
        },

        "10.3": {
            "family": "Blackwell Ultra (B300)",
            "max_threads_per_sm": 2048,
            "smem_per_sm": 233472,
            "smem_per_block_optin": 232448,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
            "max_blocks_per_sm": 32,
            "barriers_per_block_slot": 1,
            "virtual_resources_per_sm": 128,
            "default_gpu": "b300",
        },

        # Thor was sm_101 before CUDA 13. 228 KB per SM / 227 KB opt-in: the header's config list
        # for 11.0 and TVM's jetson-agx-thor target (232448 B per block). 1536 threads per SM is NOT
        # verified (the header's 24 blocks per SM matches the 48-warp parts); run
        # tests/harness/gpu_check.py on a Thor.
        "11.0": {
            "family": "Blackwell (Thor)",
            # sm_101: Thor's name before CUDA 13; the header treats both alike
            "aliases": ["10.1"],
            "max_threads_per_sm": 1536,
            "smem_per_sm": 233472,
            "smem_per_block_optin": 232448,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100, 132, 164, 196, 228],
            "max_blocks_per_sm": 24,
            "barriers_per_block_slot": 1,
            "virtual_resources_per_sm": 128,
            "default_gpu": "thor",
        },

        "12.0": {
            "family": "Blackwell (GeForce)",
            "max_threads_per_sm": 1536,
            "smem_per_sm": 102400,
            "smem_per_block_optin": 101376,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100],
            "max_blocks_per_sm": 24,
            "barriers_per_block_slot": 1,
            "virtual_resources_per_sm": 128,
            "default_gpu": "rtx5090",
        },

        "12.1": {
            "family": "Blackwell (GB10)",
            "max_threads_per_sm": 1536,
            "smem_per_sm": 102400,
            "smem_per_block_optin": 101376,
            "smem_reserved_per_block": 1024,
            "smem_granularity": 128,
            "smem_configs": [0, 8, 16, 32, 64, 100],
            "max_blocks_per_sm": 24,
            "barriers_per_block_slot": 1,
            "virtual_resources_per_sm": 128,
            "default_gpu": "gb10",
        },
    },

    # Named GPUs. SM counts: NVIDIA's product pages and architecture whitepapers (V100: 80, T4: 40,
    # A100: 108, A10: 72, RTX 3090: 82, Jetson AGX Orin 64GB: 16 (2048 CUDA cores / 128), L4: 58,
    # L40S: 142, RTX 4090: 128, H100 SXM5: 132 (PCIe: 114), H200: 132, B200: 148, B300: 148 (NOT
    # verified: the full GB300 die has 160 SMs; run tests/harness/gpu_check.py on one), Jetson AGX
    # Thor: 20 (2560 CUDA cores / 128), RTX 5090: 170, GB10 (DGX Spark): 48 (6144 CUDA cores / 128),
    # Jetson AGX Xavier: 8). Aliases are matched after lower-casing and dropping spaces, '-', '_'
    # and a leading "nvidia"/"geforce"/"jetson"/"tesla".

    "gpu": {
        "v100": {
            "cc": "7.0",
            "sm_count": 80,
            "label": "Tesla V100",
        },

        "xavier": {
            "cc": "7.2",
            "sm_count": 8,
            "label": "Jetson AGX Xavier",
            "aliases": ["agxxavier"],
        },

        "t4": {
            "cc": "7.5",
            "sm_count": 40,
            "label": "Tesla T4",
        },

        "a100": {
            "cc": "8.0",
            "sm_count": 108,
            "label": "A100",
        },

        "a10": {
            "cc": "8.6",
            "sm_count": 72,
            "label": "A10",
        },

        "rtx3090": {
            "cc": "8.6",
            "sm_count": 82,
            "label": "GeForce RTX 3090",
        },

        "orin": {
            "cc": "8.7",
            "sm_count": 16,
            "label": "Jetson AGX Orin 64GB",
            "aliases": ["agxorin"],
        },

        "l4": {
            "cc": "8.9",
            "sm_count": 58,
            "label": "L4",
        },

        "l40s": {
            "cc": "8.9",
            "sm_count": 142,
            "label": "L40S",
        },

        "rtx4090": {
            "cc": "8.9",
            "sm_count": 128,
            "label": "GeForce RTX 4090",
        },

        "h100": {
            "cc": "9.0",
            "sm_count": 132,
            "label": "H100 SXM5",
            "aliases": ["h100sxm", "h100sxm5"],
        },

        "h100pcie": {
            "cc": "9.0",
            "sm_count": 114,
            "label": "H100 PCIe",
        },

        "h200": {
            "cc": "9.0",
            "sm_count": 132,
            "label": "H200",
        },

        "b200": {
            "cc": "10.0",
            "sm_count": 148,
            "label": "B200",
        },

        "b300": {
            "cc": "10.3",
            "sm_count": 148,
            "label": "B300",
        },

        "thor": {
            "cc": "11.0",
            "sm_count": 20,
            "label": "Jetson AGX Thor",
            "aliases": ["agxthor"],
        },

        "rtx5090": {
            "cc": "12.0",
            "sm_count": 170,
            "label": "GeForce RTX 5090",
        },

        "gb10": {
            "cc": "12.1",
            "sm_count": 48,
            "label": "GB10 (DGX Spark)",
            "aliases": ["dgxspark"],
        },
    },
}
