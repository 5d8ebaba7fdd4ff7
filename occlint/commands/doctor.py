"""`occlint doctor`: the nvcc, ptxas, host compiler, archs, cache and compile database in use."""

from __future__ import annotations

from occlint.commands.options import add_config_arguments, load


def add_arguments(parser):
    parser.add_argument("paths", nargs="*", metavar="FILE",
                        help="also show how these files are compiled: the database entry, the "
                             "archs and the exact nvcc command")
    parser.add_argument("--nvcc", metavar="PATH", help="use this nvcc")
    add_config_arguments(parser)


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
    from occlint.toolchain import find_nvcc
    from occlint.toolchain.cache import cache_dir, looks_like_cache, stats
    from occlint.toolchain.database import find_for
    from occlint.toolchain.database import load as load_db
    from occlint.toolchain.flags import archs_for
    from occlint.toolchain.libraries import wheel_include_dirs

    config = load(args)
    paths = list(getattr(args, "paths", None) or ())
    cc_path = find_for(paths[0] if paths else config.root, config)
    entries = list(load_db(cc_path).raw) if cc_path else []
    nvcc = find_nvcc(config, entries)
    rows = []
    if nvcc is None:
        rows.append(("nvcc", "not found: pip install 'occlint[cuda]' (needs g++), or set `nvcc`"))
    else:
        rows += [
            ("nvcc", f"{nvcc.path} ({nvcc.version}, found via {nvcc.found_by})"),
            ("ptxas", nvcc.ptxas),
            ("host compiler", f"{nvcc.host_compiler} ({nvcc.host_version})" if nvcc.host_compiler
             else "not found: nvcc needs g++ on PATH (without it nothing compiles)"),
            ("supported archs", " ".join(checkable(nvcc.archs)) or "unknown"),
        ]
        others = [a for a in nvcc.archs if a not in checkable(nvcc.archs)]
        if others:      # nvcc compiles them, but occlint has no occupancy limits for them
            rows.append(("not checkable", f"{' '.join(others)} (nvcc compiles them; occlint's "
                                          "GPU table has no limits for them, so check rejects them)"))
    rows += _nvcc_rows(config, entries, nvcc)
    archs = archs_for(config, entries)
    source = ("config" if config.arch else f"gpu {config.gpu}" if config.gpu != type(config).gpu
              else "compile_commands.json, each unit its own command's" if cc_path and entries
              else "default")
    rows.append(("target archs", f"{' '.join(archs)} ({source})"))
    libs = wheel_include_dirs()
    rows.append(("library headers", "\n".join(libs) if libs else
                 "none from Python wheels (e.g. `pip install nvidia-cublas` adds cuBLAS's)"))
    from occlint.commands.summary import plural

    cache = cache_dir(config)
    if config.no_cache:
        rows.append(("cache", "disabled (no-cache)"))
    elif looks_like_cache(cache):
        from occlint.units import format_amount

        count, size = stats(cache)
        rows.append(("cache", f"{cache} ({plural(count, 'entry', 'entries')}, {format_amount(size)})"))
    else:
        rows.append(("cache", f"{cache} (empty)"))
    rows.append(("compile_commands.json",
                 f"{cc_path} ({plural(len(entries), 'entry', 'entries')})" if cc_path else
                 "not found (looked beside each folder up from "
                 f"{paths[0] if paths else config.root} and in its build*/ folders)"))
    extensions = None
    if paths:       # setup.py's extension units, as `check` compiles them (engine.collect)
        from occlint.python import build_entries, entries_database, is_python
        extensions = entries_database(build_entries(
            config.root, [p for p in paths if not is_python(p)], [p for p in paths if is_python(p)],
            config))
    for path in paths:
        rows += _file_rows(path, config, nvcc, libs, extensions)
    _print(rows)
    return 0 if nvcc is not None and nvcc.host_compiler else 1


def _print(rows) -> None:
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        lines = str(value).split("\n")
        print(f"{key:<{width}}  {lines[0]}")
        for line in lines[1:]:
            print(f"{'':<{width}}  {line}")


def _nvcc_rows(config, entries, chosen) -> list[tuple[str, str]]:
    """Every nvcc discovery finds, in order, with its version; the chosen one marked."""
    from occlint.toolchain.discover import _real_nvcc, candidates

    lines = []
    newest = None
    for step, path in candidates(config, entries):
        got = _real_nvcc(path)
        if got is None:
            if __import__("os").path.exists(path):
                lines.append(f"  {step}: {path} (does not run)")
            continue
        real, version = got
        mark = "  <- chosen (the first that runs, in this order)" if chosen is not None and \
            real == chosen.path and "chosen" not in "".join(lines) else ""
        shown = path if real == path else f"{path} -> {real}"
        lines.append(f"  {step}: {shown} ({version}){mark}")
        if newest is None or _vkey(version) > _vkey(newest[1]):
            newest = (real, version)
    out = [("nvcc found", "\n".join(line.strip() for line in lines) if lines else "none")]
    if chosen is not None and newest is not None and _vkey(newest[1]) > _vkey(chosen.version):
        out.append(("note", f"a newer nvcc ({newest[1]}) is installed at {newest[0]}; set "
                            f"`nvcc = \"{newest[0]}\"` in the config (or pass --nvcc) to use it"))
    return out


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _file_rows(path: str, config, nvcc, libs, extensions=None) -> list[tuple[str, str]]:
    """How `path` is compiled: its database entry (own or borrowed), archs, the exact command."""
    import os
    import shlex

    from occlint.discover import is_unit
    from occlint.errors import OcclintError
    from occlint.toolchain.compile import compile_command
    from occlint.toolchain.flags import unit_command

    if not os.path.isfile(path):
        raise OcclintError(f"{path}: no such file")
    cmd = unit_command(path, config, libs, extensions)
    rows = [("file", path)]
    entry = cmd.entry
    if entry is None:
        rows.append(("database entry", "none: compiled with the config's flags "
                                       "(include-dirs, defines, nvcc-flags)"))
    else:
        how = (f"borrowed from {entry.borrowed_from} (no entry for this file; the closest one)"
               if entry.borrowed_from else "this file's own")
        rows += [("database entry", f"{entry.database}: {how}"),
                 ("  directory", entry.directory),
                 ("  command", shlex.join(entry.arguments))]
    why = "config/--arch" if config.arch else (
        f"gpu {config.gpu}" if config.gpu != type(config).gpu else
        "the entry's -arch/-gencode flags" if entry is not None and cmd.archs else "default")
    rows.append(("archs", f"{' '.join(cmd.archs)} ({why})"))
    if not is_unit(path, config):
        rows.append(("compile", "a header: measured through the units that include it"))
        return rows
    if nvcc is None:
        rows.append(("compile", "none (no nvcc)"))
        return rows
    for arch in cmd.archs:
        argv = compile_command(nvcc, os.path.abspath(path), arch, list(cmd.flags), "$TMP")
        rows.append((f"compile {arch}", f"cd {shlex.quote(cmd.cwd)} && {shlex.join(argv)}"))
    return rows
