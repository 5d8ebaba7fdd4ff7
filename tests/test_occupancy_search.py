"""The searches the rules use live in occupancy.py and agree with brute force over compute()."""

from __future__ import annotations

import random

from occlint import occupancy


def test_max_registers_is_the_last_register_count_that_fits():
    rnd = random.Random(9)
    for _ in range(60):
        arch = rnd.choice(["sm_75", "sm_80", "sm_86", "sm_90"])
        block = rnd.choice([64, 128, 192, 256, 512, 1024])
        smem = rnd.choice([0, 4096, 20000])
        blocks = rnd.randint(1, 6)
        limit = rnd.choice([64, 128, 255])
        fits = [r for r in range(1, limit + 1)
                if occupancy.compute(arch, block, r, smem).active_blocks >= blocks]
        assert occupancy.max_registers(arch, block, blocks, smem, limit=limit) == (max(fits) if fits else None)


def test_nearest_block_size_reaching_a_target():
    for arch, regs, block, bound in [("sm_90", 64, 96, None), ("sm_86", 80, 1024, None),
                                     ("sm_90", 128, 64, 256), ("sm_75", 255, 512, None)]:
        best = None
        for size in range(32, (bound or 1024) + 1, 32):
            occ = occupancy.compute(arch, size, regs)
            if occ.occupancy >= 0.5 and occ.active_blocks:
                key = (abs(size - block), -size)
                best = min(best or (key, size), (key, size))
        step = occupancy.nearest_block_size(arch, block, regs, target=0.5, max_block_size=bound)
        assert (step.value if step else None) == (best[1] if best else None)
