"""`occlint calc` as a user runs it."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli


def test_calc_text_names_the_limiter_and_the_cliff():
    r = run_cli("calc", "--arch", "sm_90", "--regs", "48", "--smem", "16K", "--block", "256")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "occupancy: 62.5%, limited by the number of required registers" in out
    assert "40 of 64 warps" in out
    assert "40 registers/thread (shed 8) -> 6 blocks, 75.0%" in out
    assert "12288 registers" in out and "17 KiB shared memory" in out


def test_calc_json_and_gpu():
    r = run_cli("calc", "--gpu", "RTX 3090", "--regs", "16", "--smem", "16KiB", "--block", "256",
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
    r = run_cli("calc", "--arch", "8.6", "--regs", "32", "--block", "256", "--sweep", "--json")
    doc = json.loads(r.stdout)
    sizes = [row["block_size"] for row in doc["sweep"]["block_sizes"]]
    assert sizes == list(range(32, 1025, 32))
    regs = {row["regs_per_thread"]: row["active_blocks"] for row in doc["sweep"]["registers"]}
    assert regs[32] == regs[40] == 6 and regs[48] == 5 and regs[255] == 1
    text = run_cli("calc", "--arch", "8.6", "--regs", "32", "--block", "256", "--sweep").stdout
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
    ("--regs", "32",),
])
def test_calc_bad_input_is_one_line_exit_2(args):
    r = run_cli("calc", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("occlint: error: "), r.stderr
    assert "Traceback" not in r.stderr
