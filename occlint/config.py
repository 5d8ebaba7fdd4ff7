"""Settings: `[tool.occlint]` in pyproject.toml, or occlint.toml / .occlint.toml.

The Config dataclass is the contract every part reads. Loading, `extend`, validation with
near-miss suggestions and CLI overrides live here too (issue: rules and configuration).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Config:
    arch: tuple[str, ...] = ()               # empty: archs from the build flags, else ("sm_90",)
    gpu: str = "h100"
    select: tuple[str, ...] = ("OCC",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    min_occupancy: float = 0.5
    cliff_margin: int = 8
    nvcc: str | None = None
    nvcc_flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    compile_commands: str | None = None
    cache_dir: str | None = None             # None: <project root>/.occlint_cache
    no_cache: bool = False
    jobs: int | None = None                  # None: os.cpu_count()
    compile_timeout: float = 300.0
    root: str = "."                          # project root (where the config file lives)
    extra: dict = field(default_factory=dict, compare=False, hash=False)
