"""The toolchain: nvcc discovery, device-only compiles, ptxas parsing, cubin reading, cache.

Public API: find_nvcc, collect_usage, archs_for, load_sidecars, usage_by_arch.
(Which source kernel a Usage belongs to is occlint.link's question.)
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False    # typing's import alone costs ~9 ms, paid by every `occlint nvcc`
if TYPE_CHECKING:
    from collections.abc import Iterable

    from occlint.model import Usage

# name -> module: imported on first use, so `occlint nvcc` (run once per compile) stays light
_LAZY = {
    "CompileError": "occlint.model",
    "UsageReport": "occlint.toolchain.compile",
    "collect_usage": "occlint.toolchain.compile",
    "print_notice": "occlint.toolchain.compile",
    "Nvcc": "occlint.toolchain.discover",
    "find_nvcc": "occlint.toolchain.discover",
    "archs_for": "occlint.toolchain.flags",
    "load_sidecars": "occlint.toolchain.sidecar",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'occlint.toolchain' has no attribute {name!r}")


__all__ = [
    "CompileError", "Nvcc", "UsageReport", "archs_for", "collect_usage", "find_nvcc",
    "load_sidecars", "print_notice", "usage_by_arch",
]


def usage_by_arch(usages: Iterable[Usage]) -> dict[str, dict]:
    """arch -> {registers, spill_stores, spill_loads, static_smem, barriers}: the `usage` record
    of `occlint kernels --json`. With several instantiations, the largest figure of each."""
    out: dict[str, dict] = {}
    for u in usages:
        rec = out.setdefault(u.arch, {"registers": 0, "spill_stores": 0, "spill_loads": 0,
                                      "static_smem": 0, "barriers": 0})
        for k in rec:
            rec[k] = max(rec[k], getattr(u, k))
    return out
