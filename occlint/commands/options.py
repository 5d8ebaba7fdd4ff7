"""The options every linting command shares, and the one function that turns them into a Config.

`check`, `fix`, `baseline`, `lock` and `report` take `add_lint_arguments`; `kernels`, `doctor` and
`clean` take `add_config_arguments` (config, archs, GPU, cache; `kernels` and `doctor` add
`--nvcc`). `load(args)` reads whichever
of them a command has: the config file (or the closest one), then inline `--config key = value`
options in order, then the flags, as in ruff.
"""

from __future__ import annotations

import argparse
import os


def csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_config_arguments(parser: argparse.ArgumentParser, *, cache: bool = True) -> None:
    """`--config` (repeatable: one file and any number of inline `key = value`), `--arch`, `--gpu`
    and, with `cache`, `--jobs`, `--no-cache` and `--cache-dir`."""
    parser.add_argument("--config", action="append", metavar="FILE | KEY=VALUE",
                        help="config file, or an inline TOML `key = value` overriding it (repeatable)")
    parser.add_argument("--arch", action="append", type=csv, metavar="ARCHS",
                        help="target archs, e.g. sm_80,sm_90 (repeatable)")
    parser.add_argument("--gpu", metavar="NAME", help="GPU for SM counts and the default arch (default: h100)")
    if cache:
        parser.add_argument("--jobs", "-j", type=int, metavar="N",
                            help="parallel compiles (for kernels also the processes that share a "
                                 "large listing); default: the CPU count")
        parser.add_argument("--no-cache", action="store_true", help="do not read or write the compile cache")
        parser.add_argument("--cache-dir", metavar="DIR", help="the compile cache folder")


def add_lint_arguments(parser: argparse.ArgumentParser, *, here: bool = False) -> None:
    """The arguments that choose files, archs and rules: `check`, `fix`, `baseline`, `lock`.
    `here`: with no path, the working directory, as ruff (`check`), not the project root (a
    baseline or a lock is the whole project's)."""
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders (default: the working directory, as ruff)" if here
                        else "files or folders (default: the project root; with --config "
                             "FILE, the working directory)")
    parser.set_defaults(lints_paths=True, paths_here=here)
    add_config_arguments(parser)
    parser.add_argument("--min-occupancy", type=float, metavar="FRACTION", help="occupancy target (default: 0.5)")
    parser.add_argument("--select", type=csv, metavar="CODES", help="rule codes or prefixes to enable (replaces the config)")
    parser.add_argument("--extend-select", type=csv, metavar="CODES", help="rule codes or prefixes to enable in addition")
    parser.add_argument("--ignore", type=csv, metavar="CODES", help="rule codes or prefixes to disable")
    parser.add_argument("--per-file-ignores", action="append", type=csv, metavar="GLOB:CODE,...",
                        help="codes to disable for files matching a glob, e.g. `tests/*:OCC031` "
                             "(replaces the config's)")
    parser.add_argument("--extend-per-file-ignores", action="append", type=csv,
                        metavar="GLOB:CODE,...", help="like --per-file-ignores, added to the config's")
    parser.add_argument("--exclude", type=csv, metavar="GLOBS",
                        help="files and folders to skip (replaces the config's `exclude`)")
    parser.add_argument("--extend-exclude", type=csv, metavar="GLOBS",
                        help="files and folders to skip, in addition to `exclude`")
    parser.add_argument("--force-exclude", action="store_true", default=None,
                        help="apply the excludes to files named on the command line too")
    parser.add_argument("--no-force-exclude", dest="force_exclude", action="store_false")
    parser.add_argument("--nvcc", metavar="PATH", help="use this nvcc")


def load(args):
    """The Config for a command's arguments (any subset of the ones above)."""
    from occlint.config import load_config, split_config_options

    config_file, overrides = split_config_options(getattr(args, "config", None) or ())
    flags = {
        "arch": [a for group in getattr(args, "arch", None) or () for a in group] or None,
        "gpu": getattr(args, "gpu", None),
        "nvcc": getattr(args, "nvcc", None),
        "min-occupancy": getattr(args, "min_occupancy", None),
        "select": getattr(args, "select", None),
        "jobs": getattr(args, "jobs", None),
        "no-cache": True if getattr(args, "no_cache", False) else None,
        "exclude": getattr(args, "exclude", None),
        "extend-exclude": getattr(args, "extend_exclude", None),
        "force-exclude": getattr(args, "force_exclude", None),
        "cache-dir": getattr(args, "cache_dir", None),
        "per-file-ignores": _per_file(getattr(args, "per_file_ignores", None)),
    }
    overrides.update({key: value for key, value in flags.items() if value is not None})
    extend = {key: value for key, value in (("extend-select", getattr(args, "extend_select", None)),
                                            ("ignore", getattr(args, "ignore", None))) if value}
    paths = [p for p in getattr(args, "paths", None) or () if p != "-"]
    stdin_name = getattr(args, "stdin_filename", None)
    start = paths[0] if paths else stdin_name
    config = load_config(config_file, start=start, overrides=overrides, extend=extend,
                         from_cwd=True)
    args.settings_file = config_file        # (--show-settings names the file given)
    if getattr(args, "lints_paths", False) and not args.paths and (
            config_file is not None or getattr(args, "paths_here", False)):
        # no path: the working directory, as ruff (`check` in a subfolder checks that folder);
        # with `--config FILE` for every command, not FILE's folder (a config kept elsewhere
        # would lint the folder around it)
        args.paths = [os.curdir]
    more = _per_file(getattr(args, "extend_per_file_ignores", None))
    if more:
        from occlint import record

        extra = tuple((glob, tuple(codes)) for glob, codes in more.items())
        config = record.replace(config, per_file_ignores=config.per_file_ignores + extra)
    return config


def _per_file(groups) -> dict | None:
    """`GLOB:CODE` pairs (ruff's --per-file-ignores) as the config's {glob: [codes]}."""
    if not groups:
        return None
    from occlint.errors import OcclintError

    table: dict[str, list[str]] = {}
    for pair in (p for group in groups for p in group):
        glob, sep, code = pair.rpartition(":")
        if not sep or not glob or not code:
            raise OcclintError(f"--per-file-ignores takes GLOB:CODE pairs, not `{pair}`")
        table.setdefault(glob, []).append(code)
    return table
