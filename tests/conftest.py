"""Shared test helpers: run the real CLI, find nvcc (never skip in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# A kernel launched with 100 threads/block: one OCC031 finding at line 7 (the block argument).
SCALE_100 = """\
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(float* x) {
    scale<<<4096, 100>>>(x, 2.0f, 409600);
}
"""


def run_cli(*args: str, cwd: str | os.PathLike | None = None, input: str | None = None,
            env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m occlint ARGS` as a user would; returns the completed process (text)."""
    return subprocess.run(
        [sys.executable, "-m", "occlint", *args], cwd=cwd, input=input, text=True,
        capture_output=True, timeout=timeout, env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="session")
def nvrtc_lib():
    """NVRTC (CuPy's compiler) from the nvidia-cuda-nvrtc wheel; in CI a missing one fails."""
    from occlint.python import nvrtc

    lib = nvrtc.library()
    if lib is None:
        if os.environ.get("CI"):
            pytest.fail("NVRTC not found in CI: install with pip install -e '.[test,cuda]'")
        pytest.skip("NVRTC not found (pip install -e '.[cuda]')")
    return lib


@pytest.fixture(scope="session")
def nvcc_path() -> str:
    """The nvcc occlint discovers; in CI a missing nvcc fails the test instead of skipping."""
    from occlint.toolchain import find_nvcc  # provided by the toolchain package

    found = find_nvcc()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found in CI: install with pip install -e '.[test,cuda]'")
        pytest.skip("nvcc not found (pip install -e '.[cuda]')")
    return str(found.path)
