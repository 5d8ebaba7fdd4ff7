"""Record ptxas reports (and the cubins they describe) for the parser's unit tests.

    python tests/ptxas/record.py NVCC [NVCC ...]

writes `<release>_<arch>.txt` (ptxas -v output) and `<release>_<arch>.cubin` for every arch in
ARCHS that the nvcc supports. The tests compare the two independent readings.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
# extra variants: (suffix, arch, flags); -rdc makes ptxas report the non-entry helper first
VARIANTS = (("_rdc", "sm_90", ["-rdc=true"]),)


def record(nvcc: str) -> None:
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release ([\d.]+)", version).group(1)
    for suffix, arch, flags in [("", a, []) for a in ARCHS] + list(VARIANTS):
        stem = HERE / f"cuda{release}_{arch}{suffix}"
        proc = subprocess.run(
            [nvcc, "-cubin", f"-arch={arch}", "-Xptxas", "-v", *flags, "-o", f"{stem}.cubin",
             str(HERE / "kernels.cu")], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{nvcc} {arch}: failed\n{proc.stderr}", file=sys.stderr)
            continue
        Path(f"{stem}.txt").write_text(proc.stdout + proc.stderr, encoding="utf-8")
        print(f"wrote {stem.name}.txt/.cubin")


if __name__ == "__main__":
    for nvcc in sys.argv[1:]:
        record(nvcc)
