"""`occlint kernels`: text and JSON output, directories, missing paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli

CASES = Path(__file__).parent / "source_cases"


def test_json_records(tmp_path):
    r = run_cli("kernels", "--json", str(CASES / "launches.cu"))
    assert r.returncode == 0, r.stderr
    records = json.loads(r.stdout)
    kinds = {rec["kind"] for rec in records}
    assert kinds == {"kernel", "launch", "attribute"}
    for rec in records:
        assert {"kind", "path", "line", "name"} <= set(rec)
        assert rec["path"].endswith("launches.cu") and rec["line"] >= 1
    launches = [rec for rec in records if rec["kind"] == "launch"]
    first = launches[0]
    assert (first["name"], first["grid"], first["block"], first["dynamic_smem"]) == \
        ("k", 16, 256, 0)
    runtime = [rec for rec in launches if rec["runtime_block"]]
    assert len(runtime) == 1 and runtime[0]["block"] is None
    assert any(rec["grid"] is None for rec in launches)


def test_text_output_and_directory_recursion(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(CASES / "shared.cu", tmp_path / "sub" / "a.cu")
    shutil.copy(CASES / "kernels.cu", tmp_path / "b.cuh")
    (tmp_path / "notes.txt").write_text("__global__ void not_cuda() {}")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.cu").write_text("__global__ void hidden_dir() {}")
    r = run_cli("kernels", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "kernel block_reduce_naive" in out and "kernel outer::inner::nested" in out
    assert "shared float smem[4096]: 16 KiB in block_reduce_naive; " \
        "3/4 subscripts thread-derived" in out
    assert "__launch_bounds__(BLOCK, MIN_BLOCKS) = (256, 2)" in out
    assert "not_cuda" not in out and "hidden_dir" not in out
    assert out.index("b.cuh") < out.index("a.cu")          # files in sorted path order


def test_missing_path_is_one_line_and_others_still_listed(tmp_path):
    r = run_cli("kernels", str(tmp_path / "nope.cu"), str(CASES / "kernels.cu"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"occlint: error: no such file or directory: {tmp_path / 'nope.cu'}"]
    assert "kernel plain" in r.stdout
    assert "Traceback" not in r.stderr


def test_binary_garbage_file_is_listed_without_error(tmp_path):
    (tmp_path / "junk.cu").write_bytes(b"\xff\x00\xfe__global__ void k() {}\x00")
    r = run_cli("kernels", "--json", str(tmp_path / "junk.cu"))
    assert r.returncode == 0, r.stderr
    assert [rec["name"] for rec in json.loads(r.stdout)] == ["k"]
