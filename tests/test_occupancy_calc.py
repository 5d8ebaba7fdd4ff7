"""`occlint calc` as a user runs it."""

from __future__ import annotations

import json

import pytest
from conftest import run_main


def test_calc_text_names_the_limiter_and_the_cliff():
    r = run_main("calc", "--arch", "sm_90", "--regs", "48", "--smem", "16K", "--block", "256")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "occupancy: 62.5%, limited by the number of required registers" in out
    assert "40 of 64 warps" in out
    assert "40 registers/thread (shed 8) -> 6 blocks, 75.0%" in out
    assert "12288 registers" in out and "17 KiB shared memory" in out


def test_calc_json_and_gpu():
    r = run_main("calc", "--gpu", "RTX 3090", "--regs", "16", "--smem", "16KiB", "--block", "256",
                "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["arch"] == "sm_86" and doc["sm_count"] == 82
    res = doc["result"]
    assert (res["active_blocks"], res["active_warps"], res["max_warps"]) == (5, 40, 48)
    assert res["limiters"] == ["shared_memory"]
    assert doc["words"] == "limited by the required amount of shared memory"
    assert doc["cliffs"]["shared_memory"]["gain"] == {
        "value": 16000, "delta": 384, "active_blocks": 6, "occupancy": 1.0}
    assert doc["max_potential_block_size"]["min_grid_size"] == 82 * 2


def test_calc_sweep_tables():
    r = run_main("calc", "--arch", "8.6", "--regs", "32", "--block", "256", "--sweep", "--json")
    doc = json.loads(r.stdout)
    sizes = [row["block_size"] for row in doc["sweep"]["block_sizes"]]
    assert sizes == list(range(32, 1025, 32))
    regs = {row["regs_per_thread"]: row["active_blocks"] for row in doc["sweep"]["registers"]}
    assert regs[32] == regs[40] == 6 and regs[48] == 5 and regs[255] == 1
    text = run_main("calc", "--arch", "8.6", "--regs", "32", "--block", "256", "--sweep").stdout
    assert "block sizes at 32 registers/thread:" in text
    assert "register counts at 256 threads/block:" in text


@pytest.mark.parametrize("args", [
    ("--arch", "sm_99", "--regs", "32"),
    ("--arch", "sm_90", "--regs", "many"),
    ("--arch", "sm_90", "--regs", "32", "--smem", "12Q"),
    ("--arch", "sm_90", "--regs", "32", "--block", "0"),
    ("--arch", "sm_90", "--regs", "32", "--carveout", "150"),
    ("--arch", "sm_90", "--regs", "32", "--cache-config", "huge"),
    ("--arch", "sm_80", "--gpu", "h100", "--regs", "32"),
    ("--gpu", "h101", "--regs", "32"),
])
def test_calc_bad_input_is_one_line_exit_2(args):
    r = run_main("calc", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("occlint: error: "), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(("args", "words"), [
    (dict(block_size=1024, regs_per_thread=255), "262144 registers per block (allocated per warp), "
     "above the 65536 (64K) per block on sm_90"),
    (dict(block_size=2048, regs_per_thread=32), "2048 threads/block is above the 1024-thread maximum"),
    (dict(block_size=256, regs_per_thread=32, dynamic_smem=100 * 1024, max_dynamic_smem=48 * 1024),
     "100 KiB dynamic shared memory needs an opt-in: without cudaFuncSetAttribute"),
    (dict(block_size=256, regs_per_thread=32, static_smem=40 * 1024, dynamic_smem=200 * 1024),
     "240 KiB shared memory per block is above the opt-in maximum of 227 KiB per block on sm_90"),
])
def test_zero_blocks_name_the_exceeded_limit(args, words):
    from occlint.occupancy import compute, zero_block_reasons

    assert compute("sm_90", **args).active_blocks == 0
    (reason,) = zero_block_reasons("sm_90", **args)
    assert words in reason


def test_zero_block_reasons_empty_when_a_block_fits_and_calc_prints_them():
    from occlint.occupancy import zero_block_reasons

    assert zero_block_reasons("sm_90", 1024, 64) == []
    r = run_main("calc", "--arch", "sm_90", "--regs", "255", "--block", "1024")
    assert "active: 0 blocks, 0 of 64 warps per SM" in r.stdout
    assert "cannot launch: 255 registers/thread x 1024 threads needs 262144 registers" in r.stdout
    assert "(1 block, 12.5%)" in r.stdout and "1 blocks" not in r.stdout
    r = run_main("calc", "--arch", "sm_90", "--regs", "32", "--dynamic-smem", "100K",
                "--max-dynamic-smem", "48K")
    assert "max potential block size: none" in r.stdout and "0 threads" not in r.stdout


def test_without_arch_or_gpu_calc_uses_the_configured_gpu(tmp_path):
    # the help says "default: the GPU's": the project's `gpu`, as check uses, else h100
    plain = run_main("calc", "--regs", "32", "--json", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["arch"] == "sm_90"
    (tmp_path / "occlint.toml").write_text('gpu = "a100"\n')
    configured = run_main("calc", "--regs", "32", "--json", cwd=tmp_path)
    assert configured.returncode == 0, configured.stderr
    assert json.loads(configured.stdout)["arch"] == "sm_80"
