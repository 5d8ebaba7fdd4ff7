"""Properties the engine's searches rely on (cliffs, available_dynamic_smem): more registers or
more shared memory never give more resident blocks. Checked with hypothesis on every CC."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from occlint import gpus
from occlint.errors import OcclintError
from occlint.occupancy import active_blocks, compute, max_potential_block_size

ARCHS = gpus.all_archs()
arch_st = st.sampled_from(ARCHS)
carveout_st = st.one_of(st.none(), st.integers(0, 100))
cache_st = st.sampled_from(["none", "prefer_shared", "prefer_l1", "prefer_equal"])


@settings(max_examples=400, deadline=None)
@given(a=arch_st, block=st.integers(1, 1024), regs=st.integers(0, 255),
       static=st.integers(0, 48 * 1024), dyn=st.integers(0, 200_000), carveout=carveout_st,
       cache=cache_st, barriers=st.integers(0, 4), step=st.integers(1, 4096))
def test_more_resources_never_fit_more_blocks(a, block, regs, static, dyn, carveout, cache,
                                              barriers, step):
    kw = {"carveout": carveout, "cache_config": cache, "barriers": barriers}
    base = active_blocks(a, block, regs, static, dyn, **kw)
    assert active_blocks(a, block, min(regs + step % 64 + 1, 256), static, dyn, **kw) <= base
    assert active_blocks(a, block, regs, static, dyn + step, **kw) <= base
    occ = compute(a, block, regs, static, dyn, **kw)
    assert occ.active_blocks == base
    assert occ.active_warps <= occ.max_warps
    assert occ.binding <= occ.limiters


@settings(max_examples=100, deadline=None)
@given(a=arch_st, regs=st.integers(0, 255), static=st.integers(0, 48 * 1024),
       bounds=st.one_of(st.none(), st.integers(1, 1024)))
def test_suggested_block_size_is_the_best(a, regs, static, bounds):
    r = max_potential_block_size(a, regs, static, launch_bounds=bounds)
    limit = min(1024, bounds or 1024)
    best = max(b * active_blocks(a, b, regs, static) for b in
               {*range(32, limit + 1, 32), limit})
    assert r.block_size * r.active_blocks == best


def test_gpu_objects_are_accepted():
    h100 = gpus.gpu("h100")
    assert compute(h100, 256, 32) == compute("sm_90", 256, 32)
    assert max_potential_block_size(h100, 32).sm_count == 132
    with pytest.raises(OcclintError):
        compute(["sm_90"], 256, 32)
