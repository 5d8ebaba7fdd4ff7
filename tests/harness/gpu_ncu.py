"""Compare occlint's engine with Nsight Compute's occupancy section, launch by launch.

    python tests/harness/gpu_ncu.py [--nvcc PATH] [--ncu PATH] [--keep DIR]   # on the GPU

Builds gpu_check.cu for the local GPU, runs `gpu_check launch` under `ncu --section
LaunchStats --section Occupancy`, and puts each launch's registers, shared memory and block
limits as Nsight Compute reports them next to occlint's `compute()` for the same inputs (the
registers and static shared memory ncu reports). Exit 0 when every compared figure agrees.
`compare(app_output, csv_text)` is the comparison, usable on recorded output.
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

HERE = Path(__file__).resolve().parent

# Nsight Compute metric -> what occlint's Occupancy says for it (None: not compared here).
# Nsight reports the shared memory configuration the driver chose for the launch, which is
# often smaller than the one the occupancy calculator assumes where shared memory does not
# bind; its shared memory block limit is compared only where shared memory binds, and the
# configuration only for holding the active blocks (CARVEOUT).
FIELDS = {
    "Block Limit Registers": lambda o, a: o.block_limits["registers"],
    "Block Limit Shared Mem": lambda o, a: (o.block_limits["shared_memory"]
                                            if "shared_memory" in o.limiters else None),
    "Block Limit Warps": lambda o, a: o.block_limits["warps"],
    "Block Limit SM": lambda o, a: o.block_limits["blocks"],
    "Theoretical Active Warps per SM": lambda o, a: o.active_warps,
    "Theoretical Occupancy": lambda o, a: round(100 * o.occupancy, 2),
    "Driver Shared Memory Per Block": lambda o, a: a.smem_reserved_per_block,
}
CARVEOUT = "Shared Memory Configuration Size"


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def launches(csv_text: str) -> list[dict]:
    """One dict per profiled launch: metric name -> value text, plus the kernel's name and
    block size."""
    rows = [line for line in csv_text.splitlines() if line.startswith('"')]
    by_id: dict[str, dict] = {}
    for r in csv.DictReader(io.StringIO("\n".join(rows))):
        d = by_id.setdefault(r["ID"], {"kernel": r["Kernel Name"], "block": r["Block Size"]})
        d[r["Metric Name"]] = r["Metric Value"]
    return list(by_id.values())


def compare(app_output: str, csv_text: str) -> int:
    """Print every figure where occlint and Nsight Compute differ; 1 if any, else 0."""
    from occlint import gpus
    from occlint.occupancy import compute

    arch = None
    planned = []
    for line in app_output.splitlines():
        f = line.split()
        if f and f[0] == "D":
            arch = gpus.arch(f"{f[1]}.{f[2]}")
        elif f and f[0] == "L":
            planned.append((f[1], *map(int, f[2:])))
    got = launches(csv_text)
    if arch is None or len(got) != len(planned):
        print(f"ncu profiled {len(got)} launches, the program made {len(planned)}")
        return 1
    agree = dict.fromkeys([*FIELDS, CARVEOUT], 0)
    total = dict.fromkeys(agree, 0)
    smaller = 0
    for (name, regs, static, maxdyn, block, dyn), m in zip(planned, got, strict=True):
        ncu_regs = int(_number(m["Registers Per Thread"]))
        occ = compute(arch.name, block, ncu_regs, static, dyn, max_dynamic_smem=maxdyn)
        where = f"{name} block={block} dyn={dyn}"
        if ncu_regs != regs:
            print(f"DIFF {where}: ncu {ncu_regs} registers, cudaFuncGetAttributes {regs}")
        for metric, ours_of in FIELDS.items():
            if metric not in m:
                continue
            ours, theirs = ours_of(occ, arch), _number(m[metric])
            if ours is None:      # no limit from that resource: ncu prints its own cap
                continue
            total[metric] += 1
            if abs(ours - theirs) < 0.01:
                agree[metric] += 1
            else:
                print(f"DIFF {where} {metric}: occlint {ours}, ncu {m[metric]}")
        if CARVEOUT in m:       # the driver's choice holds the blocks occlint says are active
            chosen = _number(m[CARVEOUT])
            total[CARVEOUT] += 1
            smaller += chosen < occ.smem_config
            if occ.active_blocks * occ.allocated_smem_per_block <= chosen <= occ.smem_config:
                agree[CARVEOUT] += 1
            else:
                print(f"DIFF {where} {CARVEOUT}: ncu {m[CARVEOUT]} does not hold "
                      f"{occ.active_blocks} x {occ.allocated_smem_per_block} B")
    print(f"{len(got)} launches on {arch.name} profiled by Nsight Compute")
    for metric in agree:
        print(f"{metric:34} {agree[metric]} of {total[metric]} agree")
    print(f"(the driver chose a smaller shared memory configuration than the occupancy "
          f"calculator's in {smaller} of {total[CARVEOUT]} launches)")
    return 0 if agree == total and sum(total.values()) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    ap.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    ap.add_argument("--keep", help="directory for the binary and the raw output")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="occlint-ncu-"))
    work.mkdir(parents=True, exist_ok=True)
    exe = work / "gpu_check"
    subprocess.run([args.nvcc, "-O2", "-arch=native", "-o", str(exe),
                    str(HERE / "gpu_check.cu")], check=True)
    app = subprocess.run([str(exe), "launch"], check=True, capture_output=True,
                         text=True).stdout
    report = work / "ncu.csv"
    subprocess.run([args.ncu, "--csv", "--print-units", "base", "--section", "LaunchStats",
                    "--section", "Occupancy", "--log-file", str(report), str(exe), "launch"],
                   check=True, capture_output=True)
    (work / "launch.txt").write_text(app)
    return compare(app, report.read_text())


if __name__ == "__main__":
    sys.exit(main())
