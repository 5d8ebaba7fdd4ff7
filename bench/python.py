"""Benchmark: what `.py` files cost `occlint check`. `python bench/python.py [FOLDER]` prints a table.

FOLDER (default: this Python's standard library) holds ordinary Python files without CUDA. It
times, best of 5 (CPU time of this process), `lint_paths` on that folder with the Python side
on (the default) and off, and the per-file text pre-filter alone; then the pipeline on one file
with a CuPy kernel (libcst extraction, lint; NVRTC compile served from the cache).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tempfile
import time
from unittest import mock

from timing import best_cpu

from occlint.config import Config
from occlint.engine import lint_paths
from occlint.python import lint_python, might_have_cuda

KERNEL = '''import cupy as cp
k = cp.RawKernel(r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
""", "saxpy")
k((4096,), (100,), (1.0, None, None, 1 << 20))
'''


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else sysconfig.get_paths()["stdlib"]
    files = [os.path.join(d, f) for d, _s, fs in os.walk(folder) for f in fs if f.endswith(".py")]
    size = sum(os.path.getsize(f) for f in files)
    config = Config(root=folder, arch=("sm_90",), no_cache=True)
    with_py = best_cpu(lambda: lint_paths([folder], config))
    import occlint.discover as discover
    real = discover.discover
    with mock.patch.object(discover, "discover", lambda p, c, python=None: real(p, c)):
        without_py = best_cpu(lambda: lint_paths([folder], config))
    texts = []
    for f in files:
        with open(f, "rb") as fh:
            texts.append(fh.read().decode("utf-8", "replace"))
    prefilter = best_cpu(lambda: [might_have_cuda(t) for t in texts])
    passed = sum(might_have_cuda(t) for t in texts)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Config(root=tmp, arch=("sm_90",), cache_dir=os.path.join(tmp, "cache"))
        from occlint.toolchain.cache import Cache
        cache = Cache(os.path.join(tmp, "cache"))
        t = time.perf_counter()
        lint_python(KERNEL, "k.py", cfg, cache=cache)
        cold = time.perf_counter() - t
        warm = best_cpu(lambda: lint_python(KERNEL, "k.py", cfg, cache=cache))
    rows = [
        ("python files (no CUDA)", f"{len(files)} files, {size / 1e6:.1f} MB"),
        ("files passing the pre-filter", str(passed)),
        ("lint_paths, .py discovery off", f"{without_py * 1e3:.1f} ms"),
        ("lint_paths, .py discovery on", f"{with_py * 1e3:.1f} ms"),
        ("added per .py file", f"{(with_py - without_py) / max(1, len(files)) * 1e6:.1f} us"),
        ("pre-filter alone, per file", f"{prefilter / max(1, len(files)) * 1e6:.1f} us"),
        ("CuPy file: cold (NVRTC compile)", f"{cold * 1e3:.1f} ms wall"),
        ("CuPy file: warm (cache hit)", f"{warm * 1e3:.1f} ms"),
    ]
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"{a:<{width}}  {b}")


if __name__ == "__main__":
    main()
