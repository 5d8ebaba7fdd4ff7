"""Per-compute-capability limits and named GPUs, from gpus_data.py.

    arch("sm_90") / arch("9.0") / arch("h100") -> ArchLimits
    gpu("rtx 4090") -> GPU(name, arch, sm_count)
    arch_name("compute_90a") -> "sm_90"
"""

from __future__ import annotations

import re
from functools import lru_cache

from occlint.errors import OcclintError
from occlint.record import dataclass


@dataclass(frozen=True)
class ArchLimits:
    """Everything cuda_occupancy.h needs to know about one compute capability."""

    cc: str                         # "9.0"
    major: int
    minor: int
    family: str
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int          # hard-coded in the header
    regs_per_sm: int
    regs_per_block: int
    reg_alloc_granularity: int      # registers per warp are rounded up to this
    max_regs_per_thread: int        # the header's check (256); ptxas stops at 255
    sub_partitions: int
    smem_per_sm: int                # the largest carveout (cudaDeviceProp.sharedMemPerMultiprocessor)
    smem_per_block: int             # without opt-in (48 KB)
    smem_per_block_optin: int
    smem_reserved_per_block: int    # by the driver, CC >= 8.0
    smem_granularity: int
    smem_configs: tuple[int, ...]   # carveout configurations in bytes, ascending
    barriers_per_block_slot: int    # 0: the header applies no barrier limit
    virtual_resources_per_sm: int
    default_gpu: str

    @property
    def name(self) -> str:
        """Canonical arch name: "sm_90"."""
        return f"sm_{self.major}{self.minor}"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


@dataclass(frozen=True)
class GPU:
    """One GPU of gpus_data.py."""

    name: str                       # key in gpus_data.py: "h100"
    arch: str                       # "sm_90"
    sm_count: int
    label: str = ""                 # "H100 SXM5"

    @property
    def limits(self) -> ArchLimits:
        return arch(self.arch)


def _norm_gpu(text: str) -> str:
    key = re.sub(r"[\s\-_]+", "", text.strip().lower())
    for prefix in ("nvidia", "geforce", "jetson", "tesla"):
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
    return key


@lru_cache(maxsize=1)
def _db() -> tuple[dict[str, ArchLimits], dict[str, GPU], dict[str, str]]:
    from occlint.gpus_data import DATA as data
    defaults = data["defaults"]
    archs: dict[str, ArchLimits] = {}
    arch_aliases: dict[str, str] = {}
    for cc, row in data["arch"].items():
        for alias in row.get("aliases", ()):
            arch_aliases[alias] = cc
        values = {**defaults, **row}
        major, minor = (int(p) for p in cc.split("."))
        archs[cc] = ArchLimits(
            cc=cc, major=major, minor=minor, family=values["family"],
            warp_size=values["warp_size"],
            max_threads_per_block=values["max_threads_per_block"],
            max_threads_per_sm=values["max_threads_per_sm"],
            max_blocks_per_sm=values["max_blocks_per_sm"],
            regs_per_sm=values["regs_per_sm"], regs_per_block=values["regs_per_block"],
            reg_alloc_granularity=values["reg_alloc_granularity"],
            max_regs_per_thread=values["max_regs_per_thread"],
            sub_partitions=values["sub_partitions"],
            smem_per_sm=values["smem_per_sm"], smem_per_block=values["smem_per_block"],
            smem_per_block_optin=values["smem_per_block_optin"],
            smem_reserved_per_block=values["smem_reserved_per_block"],
            smem_granularity=values["smem_granularity"],
            smem_configs=tuple(kib * 1024 for kib in values["smem_configs"]),
            barriers_per_block_slot=values["barriers_per_block_slot"],
            virtual_resources_per_sm=values["virtual_resources_per_sm"],
            default_gpu=values["default_gpu"],
        )
    for alias, cc in arch_aliases.items():
        archs.setdefault(alias, archs[cc])
    gpus: dict[str, GPU] = {}
    aliases: dict[str, str] = {}
    for key, row in data["gpu"].items():
        cc = archs[row["cc"]]
        gpus[key] = GPU(name=key, arch=cc.name, sm_count=row["sm_count"], label=row.get("label", ""))
        for alias in (key, row.get("label", ""), *row.get("aliases", ())):
            if alias:
                aliases[_norm_gpu(alias)] = key
    return archs, gpus, aliases


def all_archs() -> list[ArchLimits]:
    """Every known compute capability, oldest first (aliases such as 10.1 left out)."""
    return sorted({a.cc: a for a in _db()[0].values()}.values(), key=lambda a: (a.major, a.minor))


def all_gpus() -> list[GPU]:
    return list(_db()[1].values())


_ARCH_RE = re.compile(r"^(?:sm_|compute_|sm|lto_)?(\d+?)(\d)[afp]?$")


def _choices() -> str:
    names = ", ".join(a.name for a in all_archs())
    return f"{names} (also 9.0, 90, compute_90, sm_90a) or a GPU: {', '.join(_db()[1])}"


@lru_cache(maxsize=256)
def _lookup(spec: str) -> ArchLimits:
    archs, gpus, aliases = _db()
    text = spec.strip().lower()
    m = re.fullmatch(r"(\d+)\.(\d)", text)
    if m:
        cc = f"{int(m.group(1))}.{m.group(2)}"
    else:
        m = _ARCH_RE.fullmatch(text)
        cc = f"{int(m.group(1))}.{m.group(2)}" if m else None
    if cc in archs:
        return archs[cc]
    key = aliases.get(_norm_gpu(text))
    if key is not None:
        return _lookup(gpus[key].arch)
    raise OcclintError(f"unknown arch or GPU {spec!r}; choose one of {_choices()}")


def arch(spec: str | GPU | ArchLimits) -> ArchLimits:
    """Limits for `sm_90`, `sm_90a`, `sm_100f`, `compute_90`, `9.0`, `90` or a GPU name (`h100`)."""
    if isinstance(spec, ArchLimits):
        return spec
    if isinstance(spec, GPU):
        return _lookup(spec.arch)
    if not isinstance(spec, str):
        raise OcclintError(f"arch must be a string like 'sm_90', not {spec!r}")
    return _lookup(spec)


def arch_name(spec: str | ArchLimits) -> str:
    """Canonical name: arch_name("compute_90a") == arch_name("h100") == "sm_90"."""
    return arch(spec).name


def gpu(name: str) -> GPU:
    """A named GPU (`h100`, `RTX 4090`, `rtx-4090`); unknown -> OcclintError with the choices."""
    _, gpus, aliases = _db()
    key = aliases.get(_norm_gpu(str(name)))
    if key is None:
        raise OcclintError(f"unknown GPU {name!r}; choose one of {', '.join(gpus)}")
    return gpus[key]


def default_gpu(spec: str | GPU | ArchLimits) -> GPU:
    """The GPU used for SM counts when only an arch is given: a GPU (name) maps to itself."""
    if isinstance(spec, GPU):
        return spec
    if isinstance(spec, str):
        key = _db()[2].get(_norm_gpu(spec))
        if key is not None:
            return _db()[1][key]
    return _db()[1][arch(spec).default_gpu]
