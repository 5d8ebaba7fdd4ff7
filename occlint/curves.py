"""The calculator's three curves for one configuration: occupancy against block size, against
registers per thread and against shared memory per block, with the current point and the
nearest gain and loss cliffs (from `occupancy.cliffs`, so the labels and the text agree).

    from occlint.curves import curves
    by_block, by_regs, by_smem = curves("sm_90", block_size=256, regs_per_thread=48)
    by_regs.segments      # (Segment(first=1, last=40, occupancy=0.75, ...), ...)

Registers and shared memory are exact step functions: occupancy never rises with either, so each
flat run is found by bisection over `occupancy.compute` (every value in a run gives the same
occupancy). Block size is evaluated at every warp multiple (and at the current size).
"""

from __future__ import annotations

import functools

from occlint import occupancy
from occlint.occupancy import Step, _consts, _edge, compute
from occlint.record import dataclass


@dataclass(frozen=True)
class Segment:
    """Values `first`..`last` (inclusive) of the varied resource all give this occupancy."""

    first: int
    last: int
    occupancy: float
    active_blocks: int
    limiter: str            # the binding limiter's name ("registers", ...), "" when none fit


@dataclass(frozen=True)
class Curve:
    """One occupancy curve of the report."""

    kind: str               # "block_size" | "registers" | "shared_memory"
    title: str              # "Occupancy vs block size"
    x_label: str            # "threads per block"
    segments: tuple[Segment, ...]
    current: int            # the configuration's value of the varied resource
    current_occupancy: float
    gain: Step | None       # nearest change that raises occupancy (occupancy.cliffs)
    loss: Step | None       # nearest change that lowers it
    x_min: int
    x_max: int
    step: bool              # True: a step function over every value; False: points only


def limiter_of(occ) -> str:
    """The one limiter to name for a result: the binding one, in occupancy.LIMITERS order."""
    if occ.active_blocks == 0:
        return next((n for n in occupancy.LIMITERS if occ.block_limits.get(n) == 0), "")
    return next((n for n in occupancy.LIMITERS if n in occ.binding), "")


def _runs(f, lo: int, hi: int) -> tuple[Segment, ...]:
    """Flat runs of f over [lo, hi] for f whose active blocks never grow with x."""
    f = functools.lru_cache(maxsize=None)(f)
    out = []
    x = lo
    while x <= hi:
        occ = f(x)
        last = _edge(x, hi, lambda y, b=occ.active_blocks: f(y).active_blocks >= b)
        out.append(Segment(x, last, occ.occupancy, occ.active_blocks, limiter_of(occ)))
        x = last + 1
    return tuple(out)


def curves(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
           dynamic_smem: int = 0, *, max_block_size: int | None = None,
           max_dynamic_smem: int | None = None, carveout: int | None = None,
           cache_config: str = "none", barriers: int = 1) -> tuple[Curve, Curve, Curve]:
    """(by block size, by registers/thread, by shared memory/block) around one configuration.

    `max_block_size`: the kernel's `__launch_bounds__` maximum (the block curve stops there).
    Results are cached: kernels of a project often share a configuration.
    """
    name = _consts(arch).name
    if _consts(name).a is not _consts(arch).a:     # an ArchLimits not from gpus_data.py: no cache
        return _curves(arch, block_size, regs_per_thread, static_smem, dynamic_smem,
                       max_block_size, max_dynamic_smem, carveout, cache_config, barriers)
    return _cached(name, block_size, regs_per_thread, static_smem, dynamic_smem,
                   max_block_size, max_dynamic_smem, carveout, cache_config, barriers)


def _curves(arch, block_size, regs_per_thread, static_smem, dynamic_smem, max_block_size,
            max_dynamic_smem, carveout, cache_config, barriers) -> tuple[Curve, Curve, Curve]:
    kw = {"max_dynamic_smem": max_dynamic_smem, "carveout": carveout,
          "cache_config": cache_config, "barriers": barriers}
    c = _consts(arch)
    now = compute(arch, block_size, regs_per_thread, static_smem, dynamic_smem, **kw)
    cl = occupancy.cliffs(arch, block_size, regs_per_thread, static_smem, dynamic_smem,
                          max_block_size=max_block_size, **kw)

    top_block = min(c.max_tpb, max_block_size or c.max_tpb)
    sizes = sorted({*range(c.ws, top_block + 1, c.ws), block_size} - {0})
    points = []
    for size in sizes:
        occ = compute(arch, size, regs_per_thread, static_smem, dynamic_smem, **kw)
        points.append(Segment(size, size, occ.occupancy, occ.active_blocks, limiter_of(occ)))
    by_block = Curve("block_size", "Occupancy vs block size", "threads per block", tuple(points),
                     block_size, now.occupancy, cl.block_size.gain, cl.block_size.loss,
                     0, max(top_block, block_size), step=False)

    top_regs = min(255, c.max_regs)
    by_regs = Curve(
        "registers", "Occupancy vs registers per thread", "registers per thread",
        _runs(lambda r: compute(arch, block_size, r, static_smem, dynamic_smem, **kw), 1,
              max(top_regs, regs_per_thread)),
        regs_per_thread, now.occupancy, cl.registers.gain, cl.registers.loss,
        0, max(top_regs, regs_per_thread), step=True)

    total = static_smem + dynamic_smem

    def with_total(t: int):          # as occupancy.cliffs: change dynamic first, then static
        if t >= total:
            if dynamic_smem:
                return compute(arch, block_size, regs_per_thread, static_smem,
                               dynamic_smem + t - total, **kw)
            return compute(arch, block_size, regs_per_thread, static_smem + t - total, 0, **kw)
        shed = total - t
        if shed <= dynamic_smem:
            return compute(arch, block_size, regs_per_thread, static_smem, dynamic_smem - shed,
                           **kw)
        return compute(arch, block_size, regs_per_thread, static_smem - (shed - dynamic_smem), 0,
                       **kw)

    top_smem = max(c.optin, total)
    by_smem = Curve(
        "shared_memory", "Occupancy vs shared memory per block", "shared memory per block (bytes)",
        _runs(with_total, 0, top_smem), total, now.occupancy, cl.shared_memory.gain,
        cl.shared_memory.loss, 0, top_smem, step=True)
    return by_block, by_regs, by_smem


_cached = functools.lru_cache(maxsize=4096)(_curves)
