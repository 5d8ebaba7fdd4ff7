"""Compare occlint's engine with the CUDA runtime on the GPU of this machine.

    python tests/harness/gpu_check.py [--nvcc PATH] [--keep DIR]

Builds gpu_check.cu for the local GPU (-arch=native), runs it, and puts every
cudaOccupancyMaxActiveBlocksPerMultiprocessor / cudaOccupancyMaxPotentialBlockSize answer next to
occlint's `compute()` / `max_potential_block_size()` for the same kernel attributes (registers and
static shared memory as cudaFuncGetAttributes reports them). Also checks the device properties in
gpus_data.py against cudaGetDeviceProperties. Exit 0 when everything agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # run from a checkout, not installed

from occlint import gpus
from occlint.occupancy import compute, max_potential_block_size

HERE = Path(__file__).resolve().parent


def _nvcc(given: str | None) -> str:
    if given:
        return given
    found = shutil.which("nvcc")
    if found:
        return found
    try:
        import nvidia  # the cuda-toolkit wheels

        for root in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvcc"):
                cand = Path(root) / sub / "bin" / "nvcc"
                if cand.is_file():
                    return str(cand)
    except ImportError:
        pass
    sys.exit("nvcc not found: pass --nvcc")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc")
    ap.add_argument("--keep", help="directory for the binary and the raw output")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="occlint-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    exe = work / "gpu_check"
    subprocess.run([_nvcc(args.nvcc), "-O2", "-arch=native", "-o", str(exe),
                    str(HERE / "gpu_check.cu")], check=True)
    raw = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    (work / "gpu_check.txt").write_text(raw)
    return compare(raw)


def compare(raw: str) -> int:
    """Print every disagreement between gpu_check's output and occlint; 1 if any, else 0."""
    bad = total = 0
    arch = sm_count = None
    for line in raw.splitlines():
        f = line.split()
        if f[0] == "D":
            major, minor, sm_count = int(f[1]), int(f[2]), int(f[3])
            arch = gpus.arch(f"{major}.{minor}")
            ours = (arch.max_threads_per_sm, arch.regs_per_sm, arch.regs_per_block,
                    arch.smem_per_sm, arch.smem_per_block, arch.smem_per_block_optin,
                    arch.smem_reserved_per_block)
            theirs = tuple(int(x) for x in f[4:11])
            print(f"device: {arch.name}, {sm_count} SMs; gpus_data.py "
                  f"{'agrees' if ours == theirs else f'DIFFERS: {ours} vs {theirs}'}")
            bad += ours != theirs
        elif f[0] == "A":
            name, regs, static, maxdyn, carveout, block, dyn, want = f[1], *map(int, f[2:])
            got = compute(arch, block, regs, static, dyn, max_dynamic_smem=maxdyn,
                          carveout=None if carveout == -1 else carveout).active_blocks
            total += 1
            if got != want:
                bad += 1
                print(f"MISMATCH {name}: regs={regs} static={static} block={block} dyn={dyn} "
                      f"carveout={carveout} max_dyn={maxdyn}: CUDA {want}, occlint {got}  "
                      f"(occlint calc --arch {arch.name} --regs {regs} --smem {static} "
                      f"--block {block} --dynamic-smem {dyn} --max-dynamic-smem {maxdyn}"
                      + ("" if carveout == -1 else f" --carveout {carveout}") + ")")
        elif f[0] == "P":
            name, regs, static, maxdyn, grid, block = f[1], *map(int, f[2:])
            r = max_potential_block_size(arch, regs, static, 0, max_dynamic_smem=maxdyn,
                                         sm_count=sm_count)
            total += 1
            if (r.min_grid_size, r.block_size) != (grid, block):
                bad += 1
                print(f"MISMATCH {name} max potential block size: CUDA ({grid}, {block}), "
                      f"occlint ({r.min_grid_size}, {r.block_size})")
    print(f"{total - bad} of {total} runtime answers agree with occlint on {arch and arch.name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
