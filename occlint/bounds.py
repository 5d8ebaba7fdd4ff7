"""The launch bounds and register cap of one kernel instantiation on one arch.

The compiler is the truth for what it knows: the cubin's EIATTR_MAX_THREADS and
EIATTR_MAXREG_COUNT (in `Usage`) win over what the parser could evaluate, so a
`__launch_bounds__(1024, MAX_BLOCKS)` whose `MAX_BLOCKS` depends on `__CUDA_ARCH__`, or a
`tile_dims<D>::blocks_sm` trait, still has its figures. A min-blocks argument the parser could
not evaluate is named again from the cap (`occupancy.min_blocks_for_cap`). Without a cubin
(no nvcc, recorded usage) the source's figures are used as before.
"""

from __future__ import annotations

from occlint.model import Kernel, LaunchBounds, Usage
from occlint.record import dataclass

UNCAPPED = 255


@dataclass(frozen=True)
class Bounds:
    """What caps a kernel's registers and threads, and where that came from."""

    max_threads: int | None         # the effective `__launch_bounds__` max threads
    min_blocks: int | None          # its min blocks/SM, evaluated or named again from the cap
    cap: int | None                 # registers/thread ptxas may use (255: uncapped); None unknown
    cause: str | None               # what caps registers: bounds | maxnreg | global | cap | None
    text: str                       # the cap as a person writes it: `__launch_bounds__(1024, 2)`
    from_cubin: bool                # max threads or min blocks came from the cubin, not the source
    source: LaunchBounds | None     # what the parser read (for positions and fixes)

    def launch_bounds(self) -> LaunchBounds | None:
        """As a model.LaunchBounds (span and text of the source's, when there is one)."""
        if self.max_threads is None:
            return self.source
        src = self.source
        return LaunchBounds(self.max_threads, self.min_blocks,
                            src.max_blocks_per_cluster if src else None,
                            src.text if src else "", src.span if src else None)


def bounds_text(max_threads: int, min_blocks: int | None) -> str:
    if min_blocks and min_blocks > 1:
        return f"__launch_bounds__({max_threads}, {min_blocks})"
    return f"__launch_bounds__({max_threads})"


def effective(kernel: Kernel, source: LaunchBounds | None, usage: Usage | None, arch: str,
              global_cap: int | None = None) -> Bounds:
    """What bounds and caps this instantiation on `arch`. `source`: the kernel's
    `__launch_bounds__` with template arguments bound (or the kernel's own)."""
    from occlint import occupancy

    src_threads = source.max_threads if source else None
    src_blocks = source.min_blocks if source else None
    threads = (usage.max_threads if usage else None) or src_threads
    from_cubin = bool(usage and usage.max_threads and usage.max_threads != src_threads)
    cap = usage.max_registers if usage else None
    if cap is None:                 # no cubin attributes: what the source implies
        try:
            cap = occupancy.register_cap(arch, src_threads, src_blocks, kernel.maxnreg, global_cap)
        except Exception:
            cap = None
    blocks = src_blocks
    if threads and cap and blocks is None and (source is None or source.min_blocks is None) \
            and _names_min_blocks(source):
        try:
            blocks = occupancy.min_blocks_for_cap(arch, threads, cap)
        except Exception:
            blocks = None
        from_cubin = from_cubin or blocks is not None
    cause = _cause(kernel, threads, blocks, cap, global_cap, arch)
    if cause == "bounds":
        text = bounds_text(threads, blocks)
    elif cause == "maxnreg":
        text = f"__maxnreg__({cap})"
    elif cause == "global":
        text = f"-maxrregcount={cap}"
    elif cause == "cap":
        text = f"a {cap}-register cap"
    else:
        text = ""
    return Bounds(threads, blocks, cap, cause, text, from_cubin, source)


def _names_min_blocks(source: LaunchBounds | None) -> bool:
    """The source writes a min-blocks argument (or no bounds at all were parsed)."""
    if source is None:
        return True
    from occlint.source.kernels import split_args
    inner = source.text[source.text.find("(") + 1:source.text.rfind(")")]
    return len(split_args(inner.encode())) >= 2


def _cause(kernel: Kernel, threads, blocks, cap, global_cap, arch) -> str | None:
    from occlint import occupancy

    if kernel.maxnreg is not None and (cap is None or cap == kernel.maxnreg):
        return "maxnreg"
    if cap is None or cap >= UNCAPPED:
        if threads is None and blocks is None and global_cap is not None:
            return "global"
        return "bounds" if threads and blocks and blocks > 1 else None
    if global_cap is not None and cap == global_cap:
        return "global"
    if threads:
        try:
            from_bounds = occupancy.register_cap(arch, threads, blocks)
        except Exception:
            from_bounds = None
        if from_bounds == cap:
            return "bounds"
    return "cap"
