"""The resource lockfile and OCC050's comparison (pure parts; the CLI path is tested below)."""

from __future__ import annotations

import json

import pytest

from occlint import lock
from occlint.errors import OcclintError
from occlint.model import Dim3, Launch, Span, Usage

SPAN = Span(1, 1, 1, 2)


def launch(callee, block, smem=0, targs=()):
    return Launch(callee, "a.cu", SPAN, Dim3(1), Dim3(block), template_args=targs, dynamic_smem=smem)


def usage(regs, arch="sm_90", kernel="attn_fwd", spills=0, smem=0, targs=()):
    return Usage(kernel, arch, regs, static_smem=smem, spill_stores=spills, template_args=targs)


def test_entries_record_occupancy_at_each_launch(tmp_path):
    file = tmp_path / "occlint.lock"
    n = lock.write([usage(32), usage(32, "sm_80")], [launch("attn_fwd", 256), launch("attn_fwd", 1024),
                                                     launch("other", 64)], str(file))
    assert n == 2
    doc = json.loads(file.read_text())
    assert [e["arch"] for e in doc["kernels"]] == ["sm_80", "sm_90"]
    sm90 = doc["kernels"][1]
    assert sm90["registers"] == 32 and sm90["spill_bytes"] == 0
    assert sm90["launches"] == [
        {"block": 256, "dynamic_smem": 0, "occupancy": 1.0},
        {"block": 1024, "dynamic_smem": 0, "occupancy": 1.0},
    ]


def test_output_is_sorted_and_stable(tmp_path):
    us = [usage(32, "sm_90"), usage(16, "sm_80", kernel="b"), usage(40, "sm_90", kernel="a")]
    a = lock.dumps(lock.build(us, [launch("attn_fwd", 256)]))
    b = lock.dumps(lock.build(us[::-1], [launch("attn_fwd", 256)]))
    assert a == b
    assert [e["kernel"] for e in json.loads(a)["kernels"]] == ["a", "attn_fwd", "b"]


def test_template_instantiations_are_separate_entries():
    us = [usage(32, targs=("128",)), usage(64, targs=("256",))]
    doc = lock.build(us, [launch("attn_fwd", 128, targs=("128",)), launch("attn_fwd", 256, targs=("256",))])
    blocks = {tuple(e["template_args"]): [x["block"] for x in e["launches"]] for e in doc["kernels"]}
    assert blocks == {("128",): [128], ("256",): [256]}


def test_register_growth_is_a_regression_with_the_occupancy_it_costs(tmp_path):
    file = tmp_path / "occlint.lock"
    lock.write([usage(32)], [launch("attn_fwd", 256)], str(file))
    now = lock.build([usage(40)], [launch("attn_fwd", 256)])["kernels"]
    [reg] = lock.compare(lock.load(str(file)), now)
    assert (reg.kernel, reg.arch, reg.resource, reg.old, reg.new) == ("attn_fwd", "sm_90", "registers", 32, 40)
    assert (reg.old_occupancy, reg.new_occupancy, reg.block) == (1.0, 0.75, 256)


def test_spills_and_smem_growth_and_no_change():
    old = {lock.entry_key(e): e for e in lock.build([usage(32)], [])["kernels"]}
    grown = lock.build([usage(32, spills=8, smem=4096)], [])["kernels"]
    assert [(r.resource, r.old, r.new, r.block) for r in lock.compare(old, grown)] == [
        ("spill_bytes", 0, 8, None), ("static_smem", 0, 4096, None)]
    assert lock.compare(old, lock.build([usage(32)], [])["kernels"]) == []
    assert lock.compare(old, lock.build([usage(24)], [])["kernels"]) == []      # fewer is fine
    assert lock.compare(old, lock.build([usage(40, arch="sm_80")], [])["kernels"]) == []  # not locked


def test_bad_lockfiles(tmp_path):
    with pytest.raises(OcclintError, match="lockfile not found"):
        lock.load(str(tmp_path / "occlint.lock"))
    bad = tmp_path / "bad.lock"
    bad.write_text('{"version": 1, "kernels": [{"kernel": "k"}]}')
    with pytest.raises(OcclintError, match="is not an occlint lockfile"):
        lock.load(str(bad))


# --- OCC050 through lint_source (recorded usage) and the CLI (real nvcc) ---------------------

KERNEL = """\
__global__ void attn_fwd(const float* q, float* o, int n) {
    float v[WIDTH];
#pragma unroll
    for (int j = 0; j < WIDTH; ++j) v[j] = q[threadIdx.x + j * n];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < WIDTH; ++j)
#pragma unroll
        for (int k = j; k < WIDTH; ++k) s += v[j] * v[k];
    o[threadIdx.x] = s;
}

void run(const float* q, float* o, int n) {
    attn_fwd<<<1024, 256>>>(q, o, n);
}
"""


def test_occ050_message_from_lint_source():
    from occlint.config import Config
    from occlint.engine import lint_source
    from occlint.source import parse

    text = KERNEL.replace("WIDTH", "32")
    locked = lock.build([usage(32)], parse(text, "k.cu").launches)["kernels"]
    config = Config(arch=("sm_90",), select=("OCC050",),
                    extra={"lock": {lock.entry_key(e): e for e in locked}})
    [f] = lint_source(text, "k.cu", [usage(40)], config)
    assert (f.code, f.name, f.span.line, f.kernel, f.arch) == ("OCC050", "resource-regression", 1, "attn_fwd", "sm_90")
    assert f.message == "`attn_fwd` went from 32 to 40 registers on sm_90: occupancy 100% -> 75% at 256 threads/block"
    assert lint_source(text, "k.cu", [usage(32)], config) == []
    assert lint_source(text, "k.cu", [usage(40)], Config(arch=("sm_90",), select=("OCC050",))) == []
    # the kernel's noqa silences it
    assert lint_source(text.replace("{\n", "{  // noqa: OCC050\n", 1), "k.cu", [usage(40)], config) == []


def test_lock_then_check_lock_with_nvcc(tmp_path, nvcc_path):
    import re

    from conftest import run_cli

    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\n')
    src = tmp_path / "k.cu"
    src.write_text(KERNEL.replace("WIDTH", "4"))
    r = run_cli("lock", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [entry] = json.loads((tmp_path / "occlint.lock").read_text())["kernels"]
    assert entry["launches"][0]["block"] == 256
    ok = run_cli("check", "--select", "OCC050", "--lock", "occlint.lock", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    src.write_text(KERNEL.replace("WIDTH", "32"))         # the same kernel now needs more registers
    r = run_cli("check", "--select", "OCC050", "--lock", "occlint.lock", "--output-format", "concise",
                cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    m = re.search(r"k\.cu:1:17: OCC050 `attn_fwd` went from (\d+) to (\d+) registers on sm_90: "
                  r"occupancy (\d+)% -> (\d+)% at 256 threads/block", r.stdout)
    assert m, r.stdout
    old, new, occ_old, occ_new = map(int, m.groups())
    assert old == entry["registers"] and new > old and occ_new <= occ_old
    missing = run_cli("check", "--lock", "nope.lock", cwd=tmp_path)
    assert missing.returncode == 2 and "lockfile not found: nope.lock" in missing.stderr
