"""The occupancy engine: cuda_occupancy.h's arithmetic, exactly, in plain Python.

    from occlint.occupancy import compute
    occ = compute("sm_90", block_size=256, regs_per_thread=48, static_smem=16384)
    occ.active_blocks, occ.occupancy, occ.limiters      # 5, 0.625, {"registers"}

Each function mirrors one function of NVIDIA's header (CUDA 13.5, CC 7.0 to 12.1); the comments
name it. The device descriptions come from gpus_data.py. The differential test compiles the header
and compares this module with it on many thousands of configurations.
"""

from __future__ import annotations

from collections.abc import Callable

from occlint.errors import OcclintError
from occlint.gpus import GPU, ArchLimits, default_gpu
from occlint.gpus import arch as _arch
from occlint.record import dataclass, field

LIMITERS = ("warps", "registers", "shared_memory", "blocks", "barriers")

# Nsight Compute's words for each limiter (the "Occupancy" section's "Block Limit ..." rows and
# its "... is limited by ..." rule text). The single source for every message that names one.
LIMITER_WORDS = {
    "registers": "limited by the number of required registers",
    "shared_memory": "limited by the required amount of shared memory",
    "warps": "limited by the number of warps within each block",
    "blocks": "limited by the number of blocks that can fit on the SM",
    "barriers": "limited by the number of barriers",
}

CACHE_CONFIGS = {"none": 0, "prefer_shared": 1, "prefer_l1": 2, "prefer_equal": 3}
# cudaOccSMemPreferenceVoltaPlus: a cache config maps to a carveout when the carveout is default.
_CACHE_TO_CARVEOUT = {0: -1, 1: 100, 2: 0, 3: 50}

INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Occupancy:
    """The result of `compute()`; field names follow the header's cudaOccResult.

    `limiters` holds every limiter the header flags: those whose block limit equals the result.
    One quirk is kept on purpose: on CC >= 9 the barrier limit is applied after the flags of the
    other four are set, so when barriers bind alone the earlier flags stay (see `binding`).
    """

    active_blocks: int
    active_warps: int
    max_warps: int
    occupancy: float                            # active_warps / max_warps, 0..1
    limiters: frozenset
    block_limits: dict = field(compare=False, hash=False)  # limiter -> blocks, None: no limit
    allocated_regs_per_block: int
    allocated_smem_per_block: int
    smem_config: int                            # shared memory per SM in bytes (carveout used)
    arch: str = ""
    block_size: int = 0
    warps_per_block: int = 0

    @property
    def binding(self) -> frozenset:
        """Limiters whose own limit equals `active_blocks` (the header's flags minus its quirk)."""
        return frozenset(k for k, v in self.block_limits.items() if v == self.active_blocks)

    @property
    def words(self) -> str:
        """The binding limiters in Nsight Compute's words, joined with "and"."""
        return " and ".join(LIMITER_WORDS[k] for k in LIMITERS if k in self.binding)


# --- per-arch constants, computed once ---------------------------------------------------------


class _Consts:
    """The numbers `_blocks` reads, flattened from an ArchLimits (attribute access is cheap)."""

    __slots__ = ("a", "bars_avail", "blocks_lim", "configs", "max_regs", "max_tpb", "max_warps",
                 "name", "optin", "parts", "prefs", "regs_block", "regs_part", "reserve_limit",
                 "reserved", "rgran", "sgran", "smem_block", "ws")

    def __init__(self, a: ArchLimits):
        self.a = a
        self.name = a.name
        self.ws = a.warp_size
        self.max_tpb = a.max_threads_per_block
        self.max_warps = a.max_threads_per_sm // a.warp_size
        self.blocks_lim = a.max_blocks_per_sm
        self.regs_block = a.regs_per_block
        self.rgran = a.reg_alloc_granularity
        self.max_regs = a.max_regs_per_thread
        self.parts = a.sub_partitions
        self.regs_part = a.regs_per_sm // a.sub_partitions
        self.smem_block = a.smem_per_block
        self.optin = a.smem_per_block_optin
        self.reserved = a.smem_reserved_per_block
        self.sgran = a.smem_granularity
        self.configs = a.smem_configs
        self.bars_avail = a.max_blocks_per_sm * a.barriers_per_block_slot if a.major >= 9 else 0
        self.reserve_limit = a.major >= 8       # cudaOccSMemPerBlock adds the reserve on CC >= 8
        # cudaOccSMemPreferenceVoltaPlus for every (carveout, cache config): carveout -1 = default
        self.prefs = {}
        for carveout in range(-1, 101):
            for cache, code in CACHE_CONFIGS.items():
                pref = _CACHE_TO_CARVEOUT[code] if carveout == -1 else carveout
                size = a.smem_per_sm if pref == -1 else (pref * a.smem_per_sm) // 100
                self.prefs[carveout, cache] = _align_up_config(a.smem_configs, size, a.name)


def _align_up_config(configs: tuple[int, ...], size: int, name: str = "") -> int:
    """cudaOccAlignUpShmemSizeVoltaPlus: the smallest carveout configuration >= size."""
    for cfg in configs:
        if size <= cfg:
            return cfg
    raise OcclintError(f"{size} bytes of shared memory exceed the largest configuration of {name}")


_CONSTS: dict = {}


def _consts(spec) -> _Consts:
    """Constants for an arch spec, a GPU or an ArchLimits, cached by spec (by identity for
    ArchLimits objects)."""
    if type(spec) is str:
        c = _CONSTS.get(spec)
        if c is not None:
            return c
    if isinstance(spec, GPU):
        spec = spec.arch
    key = id(spec) if isinstance(spec, ArchLimits) else spec
    try:
        c = _CONSTS.get(key)
    except TypeError:               # unhashable: let gpus.arch() say what is wrong
        c = None
        key = None
    if c is None or (isinstance(spec, ArchLimits) and c.a is not spec):
        a = spec if isinstance(spec, ArchLimits) else _arch(spec)
        c = _Consts(a)
        if key is not None:
            _CONSTS[key] = c
    return c


def prepare_all() -> None:
    """Build every arch's constants ahead, as `sm_XX` (a cold run does it while nvcc runs: the
    first `compute` per arch builds them otherwise, ~0.6 ms each)."""
    from occlint.gpus import _db

    for cc in _db()[0]:
        _consts("sm_" + cc.replace(".", ""))


def _check(block_size, regs, static_smem, dynamic_smem, carveout, cache_config, barriers):
    """Raise OcclintError for the first bad argument (called only when the fast check fails)."""
    for name, value in (("block size", block_size), ("registers per thread", regs),
                        ("static shared memory", static_smem),
                        ("dynamic shared memory", dynamic_smem), ("barriers", barriers)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise OcclintError(f"{name} must be an integer, not {value!r}")
        if value < 0:
            raise OcclintError(f"{name} must not be negative, got {value}")
    if block_size <= 0:
        raise OcclintError("block size must be at least 1")
    if carveout is not None and (type(carveout) is not int or not 0 <= carveout <= 100):
        raise OcclintError(f"carveout must be a percentage 0..100, got {carveout!r}")
    if cache_config not in CACHE_CONFIGS:
        raise OcclintError(f"cache_config must be one of {', '.join(CACHE_CONFIGS)}, "
                           f"not {cache_config!r}")


def _prepare(arch, block_size, regs, static_smem, dynamic_smem, max_dynamic_smem, carveout,
             cache_config, barriers):
    """Validate the arguments; returns (consts, smem preference, max dynamic smem)."""
    c = _consts(arch)
    if not (type(block_size) is int and type(regs) is int and type(static_smem) is int
            and type(dynamic_smem) is int and type(barriers) is int and block_size > 0
            and regs >= 0 and static_smem >= 0 and dynamic_smem >= 0 and barriers >= 0):
        _check(block_size, regs, static_smem, dynamic_smem, carveout, cache_config, barriers)
    try:
        pref = c.prefs.get((-1 if carveout is None else carveout, cache_config))
    except TypeError:               # unhashable arguments
        pref = None
    if pref is None or type(carveout) is bool:
        _check(block_size, regs, static_smem, dynamic_smem, carveout, cache_config, barriers)
    if max_dynamic_smem is None:
        max_dyn = c.optin - static_smem
        if max_dyn < 0:
            max_dyn = 0
    elif type(max_dynamic_smem) is int and max_dynamic_smem >= 0:
        max_dyn = max_dynamic_smem
    else:
        raise OcclintError(f"max_dynamic_smem must be a non-negative integer, "
                           f"not {max_dynamic_smem!r}")
    return c, pref, max_dyn


def _blocks(c: _Consts, block_size: int, regs: int, static_smem: int, dynamic_smem: int,
            max_dyn: int, pref: int, barriers: int):
    """cudaOccMaxActiveBlocksPerMultiprocessor; returns the raw per-limiter figures.

    (active, flags, warps_lim, regs_lim, smem_lim, blocks_lim, bars_lim, regs_alloc,
    smem_alloc, smem_cfg, warps); limits that do not apply are INT_MAX.
    """
    ws = c.ws
    warps = (block_size + ws - 1) // ws
    # cudaOccMaxBlocksPerSMRegsLimit: registers are allocated per warp, rounded up to the
    # granularity; each sub-partition holds a whole number of warps; the per-block check
    # assumes the block's warps are rounded up to a multiple of the sub-partitions.
    gran = c.rgran
    per_warp = (regs * ws + gran - 1) // gran * gran
    regs_alloc = per_warp * warps
    parts = c.parts
    if (c.regs_block < per_warp * ((warps + parts - 1) // parts * parts)
            or c.regs_block < regs_alloc or regs > c.max_regs):
        regs_lim = 0
    elif per_warp > 0:
        regs_lim = (c.regs_part // per_warp * parts) // warps
    else:
        regs_lim = INT_MAX
    # cudaOccMaxBlocksPerSMWarpsLimit
    warps_lim = 0 if block_size > c.max_tpb else c.max_warps // warps
    # cudaOccMaxBlocksPerMultiprocessor (hard-coded per CC in the header)
    blocks_lim = c.blocks_lim
    # cudaOccMaxBlocksPerSMSmemLimit with FUNC_SHMEM_LIMIT_OPTIN (the header's conversion from
    # cudaFuncAttributes): the driver's reserve counts as static shared memory.
    sgran = c.sgran
    static_total = static_smem + c.reserved
    smem_alloc = (static_total + dynamic_smem + sgran - 1) // sgran * sgran
    # cudaOccSMemPerBlock: the opt-in limit applies once the kernel may exceed 48 KB
    per_block = c.optin if static_total + max_dyn > c.smem_block else c.smem_block
    if c.reserve_limit:
        per_block += c.reserved
    smem_cfg = pref
    if dynamic_smem > max_dyn or smem_alloc > per_block:
        smem_lim = 0
    else:
        if pref < smem_alloc:       # the carveout is raised to the next config that fits
            smem_cfg = _align_up_config(c.configs, smem_alloc, c.name)
        smem_lim = smem_cfg // smem_alloc if smem_alloc > 0 else INT_MAX
    active = min(regs_lim, smem_lim, warps_lim, blocks_lim)
    flags = ((active == warps_lim) | (active == regs_lim) << 1 | (active == smem_lim) << 2
             | (active == blocks_lim) << 3)
    # cudaOccMaxBlocksPerSMBlockBarrierLimit: CC >= 9 only, applied after the flags above
    bars_lim = INT_MAX
    if c.bars_avail and barriers > 0:
        bars_lim = c.bars_avail // barriers
        if bars_lim <= active:
            active = bars_lim
            flags |= 16
    return (active, flags, warps_lim, regs_lim, smem_lim, blocks_lim, bars_lim, regs_alloc,
            smem_alloc, smem_cfg, warps)


_FLAG_NAMES = {
    bits: frozenset(name for bit, name in ((1, "warps"), (2, "registers"), (4, "shared_memory"),
                                           (8, "blocks"), (16, "barriers")) if bits & bit)
    for bits in range(32)
}


def compute(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
            dynamic_smem: int = 0, *, max_dynamic_smem: int | None = None,
            carveout: int | None = None, cache_config: str = "none",
            barriers: int = 1) -> Occupancy:
    """Occupancy of one launch configuration, as cudaOccMaxActiveBlocksPerMultiprocessor.

    arch: "sm_90", "9.0", "h100", ..., a GPU or an ArchLimits.
    max_dynamic_smem: cudaFuncAttributeMaxDynamicSharedMemorySize. None = opted in to the device
        maximum (opt-in limit - static); a kernel that never set it has 48 KB - static.
    carveout: None (or -1) = default, else PreferredSharedMemoryCarveout in percent (0..100).
    cache_config: "none" | "prefer_shared" | "prefer_l1" | "prefer_equal" (used when the
        carveout is default, as the header does).
    barriers: named barriers the kernel uses (ptxas "used N barriers"); matters on CC >= 9.
    Bad arguments raise OcclintError.
    """
    # _prepare() inlined for the common case (a known arch string and plain arguments)
    c = _CONSTS.get(arch) if type(arch) is str else None
    if (c is not None and max_dynamic_smem is None and type(block_size) is int
            and type(regs_per_thread) is int and type(static_smem) is int
            and type(dynamic_smem) is int and type(barriers) is int and block_size > 0
            and regs_per_thread >= 0 and static_smem >= 0 and dynamic_smem >= 0
            and barriers >= 0 and (carveout is None or type(carveout) is int)
            and type(cache_config) is str
            and (pref := c.prefs.get((-1 if carveout is None else carveout, cache_config)))
            is not None):
        max_dyn = c.optin - static_smem if c.optin > static_smem else 0
    else:
        c, pref, max_dyn = _prepare(arch, block_size, regs_per_thread, static_smem,
                                    dynamic_smem, max_dynamic_smem, carveout, cache_config,
                                    barriers)
    (active, flags, w, r, s, b, br, regs_alloc, smem_alloc, smem_cfg, warps) = _blocks(
        c, block_size, regs_per_thread, static_smem, dynamic_smem, max_dyn, pref, barriers)
    # Built without the frozen dataclass __init__ (a third of the time of a call otherwise).
    occ = object.__new__(Occupancy)
    object.__setattr__(occ, "__dict__", {
        "active_blocks": active, "active_warps": active * warps, "max_warps": c.max_warps,
        "occupancy": active * warps / c.max_warps, "limiters": _FLAG_NAMES[flags],
        "block_limits": {
            "warps": w, "registers": None if r == INT_MAX else r,
            "shared_memory": None if s == INT_MAX else s, "blocks": b,
            "barriers": None if br == INT_MAX else br,
        },
        "allocated_regs_per_block": regs_alloc, "allocated_smem_per_block": smem_alloc,
        "smem_config": smem_cfg, "arch": c.name, "block_size": block_size,
        "warps_per_block": warps,
    })
    return occ


def active_blocks(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
                  dynamic_smem: int = 0, *, max_dynamic_smem: int | None = None,
                  carveout: int | None = None, cache_config: str = "none",
                  barriers: int = 1) -> int:
    """Only `compute(...).active_blocks`, without building the result (for tight loops)."""
    c, pref, max_dyn = _prepare(arch, block_size, regs_per_thread, static_smem, dynamic_smem,
                                max_dynamic_smem, carveout, cache_config, barriers)
    return _blocks(c, block_size, regs_per_thread, static_smem, dynamic_smem, max_dyn, pref,
                   barriers)[0]


# --- launch configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class BlockSizeSuggestion:
    """cudaOccMaxPotentialOccupancyBlockSize's answer."""

    block_size: int          # 0: the kernel cannot run with any block size
    min_grid_size: int       # active_blocks x sm_count: a grid that fills the machine once
    active_blocks: int
    occupancy: float
    sm_count: int


def max_potential_block_size(arch, regs_per_thread: int, static_smem: int = 0,
                             dynamic_smem: int | Callable[[int], int] = 0, *,
                             launch_bounds: int | None = None, sm_count: int | None = None,
                             max_dynamic_smem: int | None = None, carveout: int | None = None,
                             cache_config: str = "none", barriers: int = 1) -> BlockSizeSuggestion:
    """The block size with the most resident threads per SM, as the header's launch configurator.

    Tries block sizes from min(1024, launch_bounds) rounded up to a warp, downwards in steps of
    32 (the first try is the limit itself), keeps the first that gives strictly more threads, and
    stops early at a full SM. `dynamic_smem` may be a function of the block size.
    `launch_bounds` stands for cudaFuncAttributes.maxThreadsPerBlock. `sm_count` defaults to the
    named GPU when `arch` is one, else to the arch's default GPU in gpus_data.py.
    """
    a = _consts(arch).a
    if sm_count is None:
        sm_count = default_gpu(arch).sm_count
    limit = a.max_threads_per_block
    if launch_bounds is not None:
        if not isinstance(launch_bounds, int) or launch_bounds <= 0:
            raise OcclintError(f"launch bounds must be a positive integer, not {launch_bounds!r}")
        limit = min(limit, launch_bounds)
    ws = a.warp_size
    best_size = best_blocks = best_threads = 0
    full = a.max_threads_per_sm
    aligned = (limit + ws - 1) // ws * ws
    while aligned > 0:
        size = min(limit, aligned)
        dyn = dynamic_smem(size) if callable(dynamic_smem) else dynamic_smem
        blocks = active_blocks(a, size, regs_per_thread, static_smem, dyn,
                               max_dynamic_smem=max_dynamic_smem, carveout=carveout,
                               cache_config=cache_config, barriers=barriers)
        if size * blocks > best_threads:
            best_size, best_blocks, best_threads = size, blocks, size * blocks
        if best_threads == full:
            break
        aligned -= ws
    return BlockSizeSuggestion(
        block_size=best_size, min_grid_size=best_blocks * sm_count, active_blocks=best_blocks,
        occupancy=best_threads / full, sm_count=sm_count,
    )


# --- shared memory budget -----------------------------------------------------------------------


def available_dynamic_smem(arch, block_size: int, num_blocks: int, regs_per_thread: int,
                           static_smem: int = 0, *, max_dynamic_smem: int | None = None,
                           carveout: int | None = None, cache_config: str = "none",
                           barriers: int = 1) -> int | None:
    """The largest dynamic shared memory per block with which `num_blocks` blocks still fit.

    None when `num_blocks` do not fit even with no dynamic shared memory. Unlike the header's
    cudaOccAvailableDynamicSMemPerBlock (see `header_available_dynamic_smem`), the answer is
    checked against `compute()`: launching with it gives at least `num_blocks` blocks, and one
    byte more gives fewer (or exceeds `max_dynamic_smem` or the per-block limit).
    """
    if type(num_blocks) is not int or num_blocks <= 0:
        raise OcclintError(f"number of blocks must be a positive integer, not {num_blocks!r}")
    c, pref, max_dyn = _prepare(arch, block_size, regs_per_thread, static_smem, 0,
                                max_dynamic_smem, carveout, cache_config, barriers)

    def fits(dyn: int) -> bool:
        return _blocks(c, block_size, regs_per_thread, static_smem, dyn, max_dyn, pref,
                       barriers)[0] >= num_blocks

    if not fits(0):
        return None
    # Active blocks never grow with more shared memory (the carveout configs at most double
    # from one to the next), so a binary search finds the edge.
    lo, hi = 0, max_dyn
    if fits(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def header_available_dynamic_smem(arch, block_size: int, num_blocks: int, regs_per_thread: int,
                                  static_smem: int = 0, *, max_dynamic_smem: int | None = None,
                                  carveout: int | None = None, cache_config: str = "none",
                                  barriers: int = 1) -> int | None:
    """cudaOccAvailableDynamicSMemPerBlock as the header computes it, for comparison.

    It divides the carveout by `num_blocks` and subtracts static and reserved memory in size_t:
    when those exceed the share, the subtraction wraps around and the answer becomes
    `max_dynamic_smem`, which does not fit. None where the header returns an error.
    """
    c, pref, max_dyn = _prepare(arch, block_size, regs_per_thread, static_smem, 0,
                                max_dynamic_smem, carveout, cache_config, barriers)
    if type(num_blocks) is not int or num_blocks <= 0:
        return None
    if _blocks(c, block_size, regs_per_thread, static_smem, 0, max_dyn, pref,
               barriers)[0] < num_blocks:
        return None
    # cudaOccSMemPerBlock(..., sharedMemPerMultiprocessor): always above 48 KB, so opt-in
    limit = c.optin + (c.reserved if c.reserve_limit else 0)
    # one block may use the whole per-block limit; more share the carveout (0 -> smallest)
    per_sm = limit if num_blocks == 1 else pref or _align_up_config(c.configs, 1, c.name)
    avail = per_sm // num_blocks // c.sgran * c.sgran
    avail = min(avail, limit) - static_smem
    if c.reserve_limit:
        avail -= c.reserved
    avail %= 2**64                      # size_t arithmetic
    return min(avail, max_dyn)


# --- registers and launch bounds ----------------------------------------------------------------


def registers_for_blocks(arch, block_size: int, blocks: int) -> int | None:
    """The most registers per thread (<= 255) with which `blocks` blocks of `block_size` fit.

    Only the register limit is considered (sub-partitions and allocation granularity included).
    None when even 1 register per thread is too many.
    """
    c = _consts(arch)
    if type(block_size) is not int or block_size <= 0 or type(blocks) is not int or blocks <= 0:
        raise OcclintError(f"block size and blocks must be positive integers, "
                           f"not {block_size!r} and {blocks!r}")
    ws, parts, gran = c.ws, c.parts, c.rgran
    warps = (block_size + ws - 1) // ws
    best = None
    for regs in range(1, min(255, c.max_regs) + 1):
        per_warp = (regs * ws + gran - 1) // gran * gran
        if (c.regs_block < per_warp * ((warps + parts - 1) // parts * parts)
                or c.regs_block < per_warp * warps):
            break
        if (c.regs_part // per_warp * parts) // warps < blocks:
            break
        best = regs
    return best


def launch_bounds_register_cap(arch, max_threads: int, min_blocks: int | None = 1) -> int | None:
    """The register budget per thread ptxas derives from `__launch_bounds__(max_threads, min_blocks)`.

    ptxas picks the most registers with which `min_blocks` blocks of `max_threads` threads fit on
    one SM by the register rule of `registers_for_blocks` (sub-partitions included), at most 255;
    checked against ptxas 13 on sm_75, sm_86 and sm_90. When `min_blocks` blocks cannot be
    resident at all (their warps exceed the SM's threads, or more blocks than the SM holds),
    ptxas warns "minnctapersm will be ignored" and picks a budget by its own heuristics: None.
    `__maxnreg__(N)` sets the budget to N directly and cannot be combined with `min_blocks`.
    """
    c = _consts(arch)
    if type(max_threads) is not int or not 0 < max_threads <= c.max_tpb:
        raise OcclintError(f"launch bounds max threads must be 1..{c.max_tpb}, not {max_threads!r}")
    blocks = 1 if min_blocks in (None, 0) else min_blocks
    if type(blocks) is not int or blocks < 0:
        raise OcclintError(f"launch bounds min blocks must be a positive integer, not {min_blocks!r}")
    warps = (max_threads + c.ws - 1) // c.ws
    if warps * c.ws * blocks > c.max_warps * c.ws or blocks > c.blocks_lim:
        return None
    return registers_for_blocks(c.a, max_threads, blocks)


def register_cap(arch, max_threads: int | None = None, min_blocks: int | None = None,
                 maxnreg: int | None = None, maxrregcount: int | None = None) -> int | None:
    """The register budget ptxas records for a kernel (the cubin's EIATTR_MAXREG_COUNT), from
    what the source and flags say: the smallest of 255, `launch_bounds_register_cap(max_threads,
    min_blocks)`, `__maxnreg__` and `-maxrregcount`. When ptxas ignores the min blocks ("will be
    ignored": they cannot all be resident) the budget is that of one block, as ptxas 13 does on
    sm_75, sm_80 and sm_120. Checked against the cubin on several archs by the tests."""
    caps = [255]
    if max_threads:
        cap = launch_bounds_register_cap(arch, max_threads, min_blocks) or \
            launch_bounds_register_cap(arch, max_threads, 1)
        if cap is not None:
            caps.append(cap)
    caps += [c for c in (maxnreg, maxrregcount) if c]
    return min(caps)


def min_blocks_for_cap(arch, max_threads: int, cap: int) -> int | None:
    """The `__launch_bounds__(max_threads, B)` min blocks B that gives exactly the register
    budget `cap` (the smallest such B), or None when no B does: how a cubin's cap from a
    min-blocks argument the parser could not evaluate is named again."""
    c = _consts(arch)
    for blocks in range(1, c.blocks_lim + 1):
        got = launch_bounds_register_cap(c.a, max_threads, blocks)
        if got is None or got < cap:
            return None
        if got == cap:
            return blocks
    return None


def best_block_size(arch, regs_per_thread: int, static_smem: int = 0, dynamic_smem: int = 0, *,
                    max_threads: int | None = None, max_dynamic_smem: int | None = None,
                    carveout: int | None = None, barriers: int = 1) -> tuple[int, Occupancy]:
    """(block size, Occupancy) with the best occupancy over the block sizes a kernel may be
    launched with: multiples of 32 up to `max_threads` (its `__launch_bounds__`, else the
    arch's 1024), as `cudaOccupancyMaxPotentialBlockSize` searches (the largest size wins a tie)."""
    best = max_potential_block_size(arch, regs_per_thread, static_smem, dynamic_smem,
                                    launch_bounds=max_threads, sm_count=1,
                                    max_dynamic_smem=max_dynamic_smem, carveout=carveout,
                                    barriers=barriers)
    size = best.block_size or min(max_threads or 32, 32)
    return size, compute(arch, size, regs_per_thread, static_smem, dynamic_smem,
                         max_dynamic_smem=max_dynamic_smem, carveout=carveout, barriers=barriers)


# --- cliffs and sweeps --------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One change of a resource: reach `value`, a change of `delta`, giving `result`."""

    value: int              # the register count, shared memory bytes per block or block size
    delta: int              # registers/bytes to shed (gain) or to add (loss); signed for blocks
    result: Occupancy


@dataclass(frozen=True)
class Cliff:
    """The nearest changes of one resource that raise and lower occupancy."""

    gain: Step | None       # the nearest change that raises occupancy, None if none does
    loss: Step | None       # the nearest change that lowers it, None if none does


@dataclass(frozen=True)
class Cliffs:
    """Nearest occupancy changes per dimension, from `cliffs()`.

    registers: `gain.value` = the register count to reach, `gain.delta` = how many to shed;
        `loss.value` = the first count that loses a block, `loss.delta` = how many more it takes.
    shared_memory: the same over total shared memory per block (static + dynamic) in bytes;
        the change is applied to dynamic memory first, then static.
    block_size: over warp multiples (32..max), by occupancy (active warps) rather than blocks;
        `delta` is signed (new - current); the nearest wins, ties go to the larger block.
    """

    current: Occupancy
    registers: Cliff
    shared_memory: Cliff
    block_size: Cliff


def _edge(lo: int, hi: int, ok) -> int | None:
    """The largest x in [lo, hi] with ok(x), for ok true up to an edge then false; else None."""
    if lo > hi or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def cliffs(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
           dynamic_smem: int = 0, *, max_dynamic_smem: int | None = None,
           carveout: int | None = None, cache_config: str = "none",
           barriers: int = 1, max_block_size: int | None = None) -> Cliffs:
    """For registers, shared memory and block size: the nearest change that gains a resident
    block (warps, for block size) and the nearest that loses one, each with its occupancy.
    `max_block_size`: the kernel's `__launch_bounds__` maximum; larger blocks cannot launch."""
    kw = {"max_dynamic_smem": max_dynamic_smem, "carveout": carveout,
          "cache_config": cache_config, "barriers": barriers}
    now = compute(arch, block_size, regs_per_thread, static_smem, dynamic_smem, **kw)
    c = _consts(arch)
    blocks = now.active_blocks

    def with_regs(r: int) -> Occupancy:
        return compute(c.a, block_size, r, static_smem, dynamic_smem, **kw)

    # registers: active blocks never grow with registers
    top = min(255, c.max_regs)
    gain = None
    if regs_per_thread > 1 and with_regs(1).active_blocks > blocks:
        # the largest r < current with more blocks
        r = _edge(1, regs_per_thread - 1, lambda x: with_regs(x).active_blocks > blocks)
        gain = Step(r, regs_per_thread - r, with_regs(r))
    loss = None
    if blocks > 0 and regs_per_thread < top and with_regs(top).active_blocks < blocks:
        r = _edge(regs_per_thread, top, lambda x: with_regs(x).active_blocks >= blocks) + 1
        loss = Step(r, r - regs_per_thread, with_regs(r))
    reg_cliff = Cliff(gain, loss)

    # shared memory: change the total per block; dynamic first, then static
    total = static_smem + dynamic_smem

    def with_total(t: int) -> Occupancy:
        if t >= total:
            return compute(c.a, block_size, regs_per_thread, static_smem,
                           dynamic_smem + t - total, **kw) if dynamic_smem else compute(
                c.a, block_size, regs_per_thread, static_smem + t - total, 0, **kw)
        shed = total - t
        if shed <= dynamic_smem:
            return compute(c.a, block_size, regs_per_thread, static_smem, dynamic_smem - shed,
                           **kw)
        return compute(c.a, block_size, regs_per_thread, static_smem - (shed - dynamic_smem), 0,
                       **kw)

    gain = loss = None
    if total > 0 and with_total(0).active_blocks > blocks:
        t = _edge(0, total - 1, lambda x: with_total(x).active_blocks > blocks)
        gain = Step(t, total - t, with_total(t))
    smem_top = c.optin
    if blocks > 0 and total < smem_top and with_total(smem_top).active_blocks < blocks:
        t = _edge(total, smem_top, lambda x: with_total(x).active_blocks >= blocks) + 1
        loss = Step(t, t - total, with_total(t))
    smem_cliff = Cliff(gain, loss)

    # block size: nearest warp multiple with more (fewer) active warps
    gain = loss = None
    top = min(c.max_tpb, max_block_size) if max_block_size else c.max_tpb
    sizes = sorted(range(c.ws, top + 1, c.ws), key=lambda s: (abs(s - block_size), -s))
    for size in sizes:
        if size == block_size:
            continue
        occ = compute(c.a, size, regs_per_thread, static_smem, dynamic_smem, **kw)
        if gain is None and occ.active_warps > now.active_warps:
            gain = Step(size, size - block_size, occ)
        if loss is None and occ.active_warps < now.active_warps:
            loss = Step(size, size - block_size, occ)
        if gain is not None and loss is not None:
            break
    return Cliffs(now, reg_cliff, smem_cliff, Cliff(gain, loss))


def max_registers(arch, block_size: int, blocks: int, static_smem: int = 0, dynamic_smem: int = 0,
                  *, limit: int = 255, max_dynamic_smem: int | None = None,
                  carveout: int | None = None, cache_config: str = "none",
                  barriers: int = 1) -> int | None:
    """The most registers per thread (up to `limit`) with which `blocks` blocks fit, every other
    input as given (unlike `registers_for_blocks`, which asks the register file alone, as ptxas
    does for `__launch_bounds__`). None when no register count reaches `blocks`."""
    kw = {"max_dynamic_smem": max_dynamic_smem, "carveout": carveout,
          "cache_config": cache_config, "barriers": barriers}
    return _edge(1, limit, lambda r: compute(arch, block_size, r, static_smem, dynamic_smem,
                                             **kw).active_blocks >= blocks)


def nearest_block_size(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
                       dynamic_smem: int = 0, *, target: float, max_block_size: int | None = None,
                       max_dynamic_smem: int | None = None, carveout: int | None = None,
                       cache_config: str = "none", barriers: int = 1) -> Step | None:
    """The warp-multiple block size nearest `block_size` (ties: the larger) whose occupancy
    reaches `target`, up to `max_block_size` (a kernel's `__launch_bounds__`); None if none does."""
    c = _consts(arch)
    kw = {"max_dynamic_smem": max_dynamic_smem, "carveout": carveout,
          "cache_config": cache_config, "barriers": barriers}
    top = min(c.max_tpb, max_block_size) if max_block_size else c.max_tpb
    for size in sorted(range(c.ws, top + 1, c.ws), key=lambda s: (abs(s - block_size), -s)):
        occ = compute(c.a, size, regs_per_thread, static_smem, dynamic_smem, **kw)
        if occ.occupancy >= target and occ.active_blocks:
            return Step(size, size - block_size, occ)
    return None


def largest_register_cap(arch, block_size: int, regs_limit: int, static_smem: int = 0,
                         dynamic_smem: int = 0, *, target: float, max_block_size: int | None = None,
                         max_dynamic_smem: int | None = None, carveout: int | None = None,
                         cache_config: str = "none", barriers: int = 1) -> tuple[int, Step] | None:
    """(registers, block step): the most registers/thread (up to `regs_limit`) with which some
    warp-multiple block size up to `max_block_size` reaches `target`, at the block size nearest
    `block_size` that allows them (ties: the larger); None if no register count does."""
    c = _consts(arch)
    kw = {"max_dynamic_smem": max_dynamic_smem, "carveout": carveout,
          "cache_config": cache_config, "barriers": barriers}
    top = min(c.max_tpb, max_block_size) if max_block_size else c.max_tpb
    found = None
    for size in sorted(range(c.ws, top + 1, c.ws), key=lambda s: (abs(s - block_size), -s)):
        regs = _edge(1, regs_limit, lambda r: compute(
            c.a, size, r, static_smem, dynamic_smem, **kw).occupancy >= target)
        if regs is not None and (found is None or regs > found[0]):
            occ = compute(c.a, size, regs, static_smem, dynamic_smem, **kw)
            found = (regs, Step(size, size - block_size, occ))
    return found


@dataclass(frozen=True)
class SweepRow:
    """Occupancy at one block size."""

    block_size: int
    regs_per_thread: int
    result: Occupancy


def sweep(arch, regs_per_thread: int | None = None, static_smem: int = 0,
          dynamic_smem: int | Callable[[int], int] = 0, *, block_sizes=None, registers=None,
          max_dynamic_smem: int | None = None, carveout: int | None = None,
          cache_config: str = "none", barriers: int = 1) -> list[SweepRow]:
    """Occupancy over block sizes x register counts, block size first.

    block_sizes: default 32..max threads per block in warps. registers: default
    [regs_per_thread] when given, else 8..256 in steps of 8 (the allocation unit: counts
    between two multiples of 8 occupy alike). `dynamic_smem` may be a function of block size.
    """
    c = _consts(arch)
    if block_sizes is None:
        block_sizes = range(c.ws, c.max_tpb + 1, c.ws)
    if registers is None:
        registers = [regs_per_thread] if regs_per_thread is not None else range(8, 257, 8)
    rows = []
    for size in block_sizes:
        dyn = dynamic_smem(size) if callable(dynamic_smem) else dynamic_smem
        for regs in registers:
            rows.append(SweepRow(size, regs, compute(
                c.a, size, regs, static_smem, dyn, max_dynamic_smem=max_dynamic_smem,
                carveout=carveout, cache_config=cache_config, barriers=barriers)))
    return rows


def zero_block_reasons(arch, block_size: int, regs_per_thread: int, static_smem: int = 0,
                       dynamic_smem: int = 0, *, max_dynamic_smem: int | None = None) -> list[str]:
    """The hardware limits a configuration exceeds, in words, when 0 blocks fit (else [])."""
    from occlint.units import format_size

    c, _pref, max_dyn = _prepare(arch, block_size, regs_per_thread, static_smem, dynamic_smem,
                                 max_dynamic_smem, None, "none", 0)
    a, out = c.a, []
    if block_size > c.max_tpb:
        out.append(f"{block_size} threads/block is above the {c.max_tpb}-thread maximum per block")
    warps = -(-block_size // c.ws)
    per_warp = -(-regs_per_thread * c.ws // c.rgran) * c.rgran
    needed = per_warp * (-(-warps // c.parts) * c.parts)
    if regs_per_thread > c.max_regs:
        out.append(f"{regs_per_thread} registers/thread is above the {c.max_regs} maximum")
    elif needed > c.regs_block:
        out.append(f"{regs_per_thread} registers/thread x {block_size} threads needs {needed} "
                   f"registers per block (allocated per warp), above the {c.regs_block} "
                   f"(64K) per block on {a.name}")
    if dynamic_smem > max_dyn:
        if max_dynamic_smem is not None and max_dynamic_smem + static_smem <= c.smem_block:
            out.append(f"{format_size(dynamic_smem)} dynamic shared memory needs an opt-in: "
                       f"without cudaFuncSetAttribute(..., "
                       f"cudaFuncAttributeMaxDynamicSharedMemorySize, ...) a block gets at most "
                       f"{format_size(c.smem_block)} ({format_size(max_dyn)} dynamic here)")
        elif max_dynamic_smem is not None and static_smem + max_dynamic_smem <= c.optin:
            out.append(f"{format_size(dynamic_smem)} dynamic shared memory is above the "
                       f"{format_size(max_dyn)} the kernel opted in to "
                       "(cudaFuncAttributeMaxDynamicSharedMemorySize)")
        else:
            out.append(f"{format_size(static_smem + dynamic_smem)} shared memory per block is "
                       f"above the opt-in maximum of {format_size(c.optin)} per block on {a.name}")
    elif static_smem + c.reserved + dynamic_smem > c.optin + (c.reserved if c.reserve_limit else 0):
        out.append(f"{format_size(static_smem + dynamic_smem)} shared memory per block is above "
                   f"the opt-in maximum of {format_size(c.optin)} per block on {a.name}")
    return out
