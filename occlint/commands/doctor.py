"""`occlint doctor`: the nvcc, ptxas, host compiler, archs, cache and compile database in use."""

from __future__ import annotations


from occlint.commands.options import add_config_arguments, load


def add_arguments(parser):
    parser.add_argument("--nvcc", metavar="PATH", help="use this nvcc")
    add_config_arguments(parser)


def _size(n: int) -> str:
    """Bytes in the units `calc` and `kernels` use (B, KiB, MiB); exact where it can be."""
    from occlint.units import format_size

    if n < 1024 or (n < 1 << 20 and n % 128 == 0):
        return format_size(n)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def checkable(archs) -> list[str]:
    """The archs both nvcc compiles and occlint's GPU table knows: what `check --arch` accepts."""
    from occlint import gpus
    from occlint.errors import OcclintError

    out = []
    for a in archs:
        try:
            gpus.arch(a)
        except OcclintError:
            continue
        out.append(a)
    return out


def run(args) -> int:
    from occlint.toolchain import archs_for, find_nvcc
    from occlint.toolchain.cache import cache_dir, looks_like_cache, stats
    from occlint.toolchain.flags import find_compile_commands, load_compile_commands

    config = load(args)
    cc_path = find_compile_commands(config)
    entries = load_compile_commands(cc_path)
    nvcc = find_nvcc(config, entries)
    rows = []
    if nvcc is None:
        rows.append(("nvcc", "not found: pip install 'occlint[cuda]' (needs g++), or set `nvcc`"))
    else:
        rows += [
            ("nvcc", f"{nvcc.path} ({nvcc.version}, found via {nvcc.found_by})"),
            ("ptxas", nvcc.ptxas),
            ("host compiler", f"{nvcc.host_compiler} ({nvcc.host_version})" if nvcc.host_compiler
             else "not found: nvcc needs g++ on PATH"),
            ("supported archs", " ".join(checkable(nvcc.archs)) or "unknown"),
        ]
        others = [a for a in nvcc.archs if a not in checkable(nvcc.archs)]
        if others:      # nvcc compiles them, but occlint has no occupancy limits for them
            rows.append(("not checkable", f"{' '.join(others)} (nvcc compiles them; occlint's "
                                          "GPU table has no limits for them, so check rejects them)"))
    archs = archs_for(config, entries)
    source = ("config" if config.arch else f"gpu {config.gpu}" if config.gpu != type(config).gpu
              else "compile_commands.json" if cc_path and entries else "default")
    rows.append(("target archs", f"{' '.join(archs)} ({source})"))
    cache = cache_dir(config)
    if config.no_cache:
        rows.append(("cache", "disabled (no-cache)"))
    elif looks_like_cache(cache):
        count, size = stats(cache)
        rows.append(("cache", f"{cache} ({count} entr{'y' if count == 1 else 'ies'}, {_size(size)})"))
    else:
        rows.append(("cache", f"{cache} (empty)"))
    rows.append(("compile_commands.json",
                 f"{cc_path} ({len(entries)} entries)" if cc_path else "not found"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0 if nvcc is not None and nvcc.host_compiler else 1
