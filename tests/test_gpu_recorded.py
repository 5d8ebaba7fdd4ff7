"""The GPU recipes' comparisons (tests/harness/gpu_*.py) on output recorded on an H200
(docs/validation.md, section 4), so they are exercised without a GPU: every recorded answer
agrees, and one altered answer is reported."""

from __future__ import annotations

import json
from pathlib import Path

from harness import gpu_cubins, gpu_ncu

RECORDED = Path(__file__).parent / "gpu_recorded"


def test_nsight_compute_figures_agree_and_a_changed_one_is_reported(capsys):
    app = (RECORDED / "launch_h200.txt").read_text()
    csv_text = (RECORDED / "ncu_h200.csv").read_text()
    assert gpu_ncu.compare(app, csv_text) == 0
    out = capsys.readouterr().out
    assert "Theoretical Occupancy              23 of 23 agree" in out
    # a theoretical occupancy one step off, and a configuration too small for the active blocks
    changed = csv_text.replace('"Theoretical Occupancy","%","50"', '"Theoretical Occupancy","%","43.75"', 1)
    assert changed != csv_text
    assert gpu_ncu.compare(app, changed) == 1
    assert "DIFF" in capsys.readouterr().out
    small = csv_text.replace('"Shared Memory Configuration Size","byte","233,472"',
                             '"Shared Memory Configuration Size","byte","8,192"', 1)
    assert small != csv_text and gpu_ncu.compare(app, small) == 1


def test_max_threads_per_block_follows_the_driver():
    """cudaFuncAttributes.maxThreadsPerBlock: the cubin's max threads less what the registers
    allow, for all 48 kernels of occlint's examples and fixtures as an H200 reported them."""
    records = json.loads((RECORDED / "driver_examples_h200.json").read_text())
    assert len(records) == 48
    for r in records:
        assert gpu_cubins.launchable_threads("sm_90", r["occlint"]) == r["driver"]["max_threads"]
        assert r["occlint"]["registers"] == r["driver"]["registers"]
