"""Named cases (the header's answers, not the articles') and the engine's public API."""

from __future__ import annotations

import pytest

from occlint import gpus, occupancy
from occlint.errors import OcclintError
from occlint.occupancy import (
    LIMITER_WORDS,
    available_dynamic_smem,
    cliffs,
    compute,
    launch_bounds_register_cap,
    max_potential_block_size,
    registers_for_blocks,
    sweep,
)
from occlint.units import format_size, parse_size

# --- cases from the literature ------------------------------------------------------------------


def test_cc86_static_smem_limits_to_five_blocks():
    occ = compute("sm_86", 256, 16, static_smem=16384)
    assert (occ.active_blocks, occ.active_warps, occ.max_warps) == (5, 40, 48)
    assert occ.occupancy == pytest.approx(40 / 48)
    assert occ.limiters == {"shared_memory"}
    assert occ.allocated_smem_per_block == 16384 + 1024   # the 1 KB the driver reserves


def test_cc86_one_kb_dynamic_is_full_occupancy_limited_by_warps():
    occ = compute("sm_86", 256, 16, dynamic_smem=1024)
    assert occ.occupancy == 1.0
    assert occ.limiters == {"warps"}


def test_cc90_sub_partitions_round_registers_down():
    occ = compute("sm_90", 256, 48, static_smem=16 * 1024)
    # 65536 / 1536 = 42 warps is wrong: 4 sub-partitions x floor(16384 / 1536) = 40
    assert occ.active_blocks == 5
    assert occ.active_warps == 40
    assert occ.occupancy == 0.625
    assert occ.limiters == {"registers"}


def test_cc90_33_registers_is_48_warps_not_51():
    occ = compute("sm_90", 256, 33)
    assert occ.active_warps == 48
    assert occ.occupancy == 0.75


@pytest.mark.parametrize(("block", "expected"), [(128, 0.75), (320, 0.625)])
def test_cc70_37_registers(block, expected):
    assert compute("sm_70", block, 37).occupancy == expected


def test_carveout_zero_caps_at_eight_blocks_on_cc8_and_later():
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"):
        occ = compute(arch, 32, 16, carveout=0)
        assert occ.active_blocks == 8, arch          # 8 KB config / 1 KB reserved per block
        assert occ.limiters == {"shared_memory"}
        assert compute(arch, 32, 16).active_blocks > 8


def test_default_carveout_is_the_largest_config():
    assert compute("sm_90", 128, 32, 50_000).smem_config == 228 * 1024
    assert compute("sm_90", 128, 32, 50_000, carveout=50).smem_config == 132 * 1024


def test_hard_coded_blocks_per_sm():
    expected = {"7.0": 32, "7.2": 32, "7.5": 16, "8.0": 32, "8.6": 16, "8.7": 16, "8.9": 24,
                "9.0": 32, "10.0": 32, "10.3": 32, "11.0": 24, "12.0": 24, "12.1": 24}
    for a in gpus.all_archs():
        occ = compute(a, 32, 8, barriers=0)
        assert occ.active_blocks == expected[a.cc], a.cc
        assert "blocks" in occ.limiters


def test_barriers_limit_on_cc9_only():
    # 4 barriers: 32 blocks x 2 barrier slots / 4 = 16 blocks on CC 9.0
    occ = compute("sm_90", 32, 8, barriers=4)
    assert occ.active_blocks == 16
    assert "barriers" in occ.limiters and occ.binding == {"barriers"}
    # the header keeps the flags it set before applying the barrier limit
    assert "blocks" in occ.limiters
    assert compute("sm_80", 32, 8, barriers=4).active_blocks == 32
    assert compute("sm_90", 32, 8, barriers=0).block_limits["barriers"] is None


def test_block_larger_than_device_limit_runs_nowhere():
    occ = compute("sm_90", 1025, 16)
    assert occ.active_blocks == 0 and "warps" in occ.limiters


def test_opt_in_decides_whether_large_dynamic_smem_fits():
    assert compute("sm_90", 128, 32, dynamic_smem=100_000).active_blocks == 2
    never_set = 48 * 1024
    assert compute("sm_90", 128, 32, dynamic_smem=100_000,
                   max_dynamic_smem=never_set).active_blocks == 0


def test_limiter_words_are_nsight_computes():
    assert LIMITER_WORDS["registers"] == "limited by the number of required registers"
    assert set(LIMITER_WORDS) == set(occupancy.LIMITERS)
    assert compute("sm_90", 256, 48, 16384).words == LIMITER_WORDS["registers"]


@pytest.mark.parametrize("bad", [
    {"block_size": 0}, {"regs_per_thread": -1}, {"static_smem": -5}, {"carveout": 101},
    {"cache_config": "prefer_everything"}, {"block_size": 2.5}, {"max_dynamic_smem": -1},
])
def test_bad_input_is_an_occlint_error(bad):
    args = {"block_size": 128, "regs_per_thread": 32, **bad}
    with pytest.raises(OcclintError):
        compute("sm_90", **args)


# --- launch configuration and budgets -----------------------------------------------------------


def test_max_potential_block_size_uses_gpu_sm_count():
    r = max_potential_block_size("h100", 32)
    assert (r.block_size, r.active_blocks, r.min_grid_size) == (1024, 2, 264)
    r = max_potential_block_size("sm_86", 32, sm_count=10)
    assert r.block_size * r.active_blocks == 1536 and r.min_grid_size == 10 * r.active_blocks


def test_max_potential_block_size_with_launch_bounds_and_smem_function():
    r = max_potential_block_size("sm_90", 32, launch_bounds=100)
    assert (r.block_size, r.occupancy) == (64, 1.0)
    r = max_potential_block_size("sm_90", 255, launch_bounds=100)
    assert (r.block_size, r.active_blocks) == (64, 4)    # 100 -> 2 blocks, 64 -> 4
    r = max_potential_block_size("sm_90", 16, dynamic_smem=lambda b: 64 * b)
    assert r.active_blocks * r.block_size == max(
        compute("sm_90", b, 16, 0, 64 * b).active_blocks * b for b in range(32, 1025, 32))


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_90", "sm_120"])
@pytest.mark.parametrize(("block", "blocks"), [(256, 1), (256, 2), (128, 5), (96, 7), (64, 3)])
def test_available_dynamic_smem_is_the_edge(arch, block, blocks):
    avail = available_dynamic_smem(arch, block, blocks, 32, static_smem=2000)
    assert avail is not None
    assert compute(arch, block, 32, 2000, avail).active_blocks >= blocks
    a = gpus.arch(arch)
    at_limit = avail == a.smem_per_block_optin - 2000
    assert at_limit or compute(arch, block, 32, 2000, avail + 1).active_blocks < blocks


def test_available_dynamic_smem_none_when_blocks_never_fit():
    assert available_dynamic_smem("sm_90", 1024, 3, 32) is None


def test_registers_for_blocks_counts_sub_partitions():
    # 160 threads = 5 warps; 3 blocks need 4 warps in a sub-partition: 16384 / 4 / 32 = 128
    assert registers_for_blocks("sm_90", 160, 3) == 128
    assert compute("sm_90", 160, 128).active_blocks >= 3
    assert compute("sm_90", 160, 129).block_limits["registers"] < 3
    assert registers_for_blocks("sm_90", 256, 1) == 255


def test_launch_bounds_register_cap():
    assert launch_bounds_register_cap("sm_90", 1024) == 64
    assert launch_bounds_register_cap("sm_90", 256, 4) == 64
    assert launch_bounds_register_cap("sm_90", 384, 3) == 56
    assert launch_bounds_register_cap("sm_75", 256, 5) is None        # ptxas ignores min blocks
    assert launch_bounds_register_cap("sm_86", 32, 32) is None        # more than 16 blocks


# --- cliffs and sweeps --------------------------------------------------------------------------


def test_register_cliffs_at_multiples_of_eight():
    cl = cliffs("sm_90", 256, 48, 16384)
    assert (cl.registers.gain.value, cl.registers.gain.delta) == (40, 8)
    assert cl.registers.gain.result.active_blocks == 6
    assert (cl.registers.loss.value, cl.registers.loss.delta) == (49, 1)
    assert cl.registers.loss.result.active_blocks == 4
    assert cl.shared_memory.gain is None          # registers bind; shedding smem does not help


def test_shared_memory_cliff_is_exact():
    cl = cliffs("sm_86", 256, 16, static_smem=16384)
    gain = cl.shared_memory.gain
    assert gain.result.active_blocks == 6 and gain.delta == 384
    assert compute("sm_86", 256, 16, static_smem=gain.value + 1).active_blocks == 5
    loss = cl.shared_memory.loss
    assert compute("sm_86", 256, 16, static_smem=loss.value - 1).active_blocks == 5
    assert loss.result.active_blocks == 4
    assert cl.block_size.gain.value == 288


def test_sweep_covers_block_sizes_and_registers():
    rows = sweep("sm_90", static_smem=4096)
    assert len(rows) == 32 * 32
    assert {r.block_size for r in rows} == set(range(32, 1025, 32))
    assert {r.regs_per_thread for r in rows} == set(range(8, 257, 8))
    one = sweep("sm_90", 40, registers=[40], block_sizes=[256])
    assert one[0].result == compute("sm_90", 256, 40)


# --- GPU database -------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "name"), [
    ("sm_90", "sm_90"), ("sm_90a", "sm_90"), ("sm_100f", "sm_100"), ("compute_90", "sm_90"),
    ("9.0", "sm_90"), ("90", "sm_90"), ("h100", "sm_90"), ("H100", "sm_90"),
    ("rtx4090", "sm_89"), ("rtx-4090", "sm_89"), ("RTX 4090", "sm_89"),
    ("GeForce RTX 5090", "sm_120"), ("12.1", "sm_121"), ("sm_103", "sm_103"), ("thor", "sm_110"),
    ("sm_101a", "sm_110"),
])
def test_arch_specs(spec, name):
    assert gpus.arch_name(spec) == name
    assert gpus.arch(spec).name == name


def test_unknown_arch_lists_choices():
    with pytest.raises(OcclintError, match=r"sm_90.*h100"):
        gpus.arch("sm_99")


def test_database_covers_the_thirteen_ccs_and_named_gpus():
    ccs = [a.cc for a in gpus.all_archs()]
    assert ccs == ["7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3",
                   "11.0", "12.0", "12.1"]
    for name in ("v100", "t4", "a100", "a10", "rtx3090", "orin", "l4", "l40s", "rtx4090",
                 "h100", "h200", "b200", "b300", "thor", "rtx5090", "gb10"):
        g = gpus.gpu(name)
        assert g.sm_count > 0 and g.limits.name == g.arch
    for a in gpus.all_archs():
        assert a.smem_per_block_optin + a.smem_reserved_per_block <= a.smem_configs[-1]
        assert a.smem_per_sm == a.smem_configs[-1]


def test_sizes():
    assert parse_size("16K") == parse_size("16KiB") == parse_size("16384") == 16384
    assert parse_size("48KB") == 49152 and parse_size("0x4000") == 16384
    assert format_size(17408) == "17 KiB" and format_size(1000) == "1000 B"
    for bad in ("12Q", "-1", "1.1", ""):
        with pytest.raises(OcclintError):
            parse_size(bad)
