"""NVIDIA's cuda_occupancy.h as a test oracle: compile occ_harness.cpp with g++ and query it.

    header = find_header()                 # None when no CUDA headers are installed
    oracle = Oracle.build(header, tmpdir)
    oracle.active(arch, block, regs, static, dynamic, max_dyn, carveout, cache, barriers)

All queries of one batch go through stdin of one process. The device description is taken from
occlint's gpus_data.py (the same numbers the engine uses), so the comparison is of arithmetic only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from occlint.gpus import ArchLimits, default_gpu
from occlint.occupancy import CACHE_CONFIGS

HERE = Path(__file__).resolve().parent
INT_MAX = 2**31 - 1


# The header release the engine mirrors. CUDA 13.0's header differs in two places: CC 10.x's
# barrier slots (x2 for 10.3, where 13.5 has x1) and cudaOccAvailableDynamicSMemPerBlock (no
# reserve subtracted); everything else agrees (docs/validation.md).
MIRRORED_CUDART = 13050


def header_version(header: Path) -> int:
    """CUDART_VERSION of the toolkit a cuda_occupancy.h belongs to (13050 = 13.5); 0 if unknown."""
    api = header.parent / "cuda_runtime_api.h"
    if api.is_file():
        m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", api.read_text(errors="replace"))
        if m:
            return int(m.group(1))
    return 0


def find_header() -> Path | None:
    """The newest cuda_occupancy.h among the nvidia-cuda-runtime wheel (cu13, cu12),
    $CUDA_HOME, $CUDA_PATH and /usr/local/cuda."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            for sub in ("cu13", "cu12", "cuda_runtime"):
                candidates.append(Path(root) / sub / "include")
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(Path(os.environ[env]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    found = [inc / "cuda_occupancy.h" for inc in candidates if (inc / "cuda_occupancy.h").is_file()]
    return max(found, key=header_version, default=None)


def _device(a: ArchLimits) -> list[int]:
    return [a.major, a.minor, a.max_threads_per_block, a.max_threads_per_sm, a.regs_per_block,
            a.regs_per_sm, a.warp_size, a.smem_per_block, a.smem_per_sm,
            default_gpu(a).sm_count, a.smem_per_block_optin, a.smem_reserved_per_block]


class Oracle:
    def __init__(self, exe: Path):
        self.exe = exe

    @classmethod
    def build(cls, header: Path, workdir: Path) -> Oracle:
        """The harness compiled against `header`, kept in the temp folder between test sessions
        (and xdist workers) under a name hashing every input of the compile: the harness
        source, the header (which includes only the C library's) and g++ (path, size, mtime)."""
        gxx = shutil.which("g++") or shutil.which("c++")
        if gxx is None:
            raise RuntimeError("g++ not found")
        key = hashlib.sha256((HERE / "occ_harness.cpp").read_bytes() + header.read_bytes())
        st = os.stat(os.path.realpath(gxx))
        key.update(f"{os.path.realpath(gxx)} {st.st_size} {st.st_mtime_ns}".encode())
        exe = Path(tempfile.gettempdir()) / f"occlint-test-occ_harness-{key.hexdigest()[:16]}"
        if not os.access(exe, os.X_OK):
            part = Path(workdir) / "occ_harness"
            subprocess.run([gxx, "-O1", "-std=c++14", "-I", str(header.parent), "-o", str(part),
                            str(HERE / "occ_harness.cpp")], check=True, capture_output=True,
                           text=True)
            try:
                shutil.copy2(part, f"{exe}.{os.getpid()}")
                os.replace(f"{exe}.{os.getpid()}", exe)        # atomic: workers race here
            except OSError:
                exe = part
        return cls(exe)

    def _run(self, lines: list[str]) -> list[list[int]]:
        out = subprocess.run([str(self.exe)], input="\n".join(lines) + "\n", text=True,
                             capture_output=True, check=True).stdout.splitlines()
        assert len(out) == len(lines), "harness answered a different number of lines"
        return [[int(t) for t in line.split()] for line in out]

    @staticmethod
    def _line(mode: int, a: ArchLimits, block: int, regs: int, static: int, dynamic: int,
              max_dyn: int, carveout: int | None, cache: str, barriers: int,
              attr_max_threads: int = INT_MAX, extra: int = 0) -> str:
        fields = [mode, *_device(a), regs, static, max_dyn, barriers, attr_max_threads,
                  CACHE_CONFIGS[cache], -1 if carveout is None else carveout, block, dynamic,
                  extra, 0]
        return " ".join(map(str, fields))

    def active(self, queries: list[dict]) -> list[list[int]]:
        """Each query: keys a, block, regs, static, dynamic, max_dyn, carveout, cache, barriers.

        Answers: [status] or [0, active, flags, regs, smem, warps, blocks, barriers,
        alloc_regs, alloc_smem].
        """
        return self._run([self._line(0, **q) for q in queries])

    def potential(self, queries: list[dict]) -> list[list[int]]:
        """Keys as `active` (no block) plus attr_max_threads and per_thread (0: constant smem).

        Answers: [status] or [0, min_grid_size, block_size].
        """
        lines = []
        for q in queries:
            q = dict(q)
            per_thread = q.pop("per_thread", 0)
            lines.append(self._line(2 if per_thread else 1, block=0, extra=per_thread, **q))
        return self._run(lines)

    def available(self, queries: list[dict]) -> list[list[int]]:
        """Keys as `active` (dynamic ignored) plus blocks. Answers: [status] or [0, bytes]."""
        lines = []
        for q in queries:
            q = dict(q)
            blocks = q.pop("blocks")
            q.pop("dynamic", None)
            lines.append(self._line(3, dynamic=0, extra=blocks, **q))
        return self._run(lines)
