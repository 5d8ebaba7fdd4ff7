"""`occlint baseline [PATHS]`: record today's findings so that `check --baseline FILE` hides them."""

from __future__ import annotations

import argparse

DEFAULT_FILE = "occlint-baseline.json"


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_lint_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments `occlint check` uses to choose files, archs and rules (see check.load)."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the project root)")
    parser.add_argument("--config", metavar="FILE", help="config file, or an inline `key = value`")
    parser.add_argument("--arch", action="append", type=_csv, metavar="ARCHS", help="target archs, e.g. sm_80,sm_90")
    parser.add_argument("--gpu", metavar="NAME", help="GPU for SM counts (default: h100)")
    parser.add_argument("--min-occupancy", type=float, metavar="FRACTION", help="occupancy target (default: 0.5)")
    parser.add_argument("--select", type=_csv, metavar="CODES", help="rule codes or prefixes to enable")
    parser.add_argument("--extend-select", type=_csv, metavar="CODES", help="rule codes or prefixes to add")
    parser.add_argument("--ignore", type=_csv, metavar="CODES", help="rule codes or prefixes to disable")
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="parallel compiles")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the compile cache")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lint_arguments(parser)
    parser.add_argument("--file", "-o", default=DEFAULT_FILE, metavar="FILE",
                        help=f"where to write the baseline (default: {DEFAULT_FILE})")


def run(args) -> int:
    import sys

    from occlint import baseline
    from occlint.commands.check import load
    from occlint.engine import lint_paths

    config = load(args)
    result = lint_paths(args.paths, config, jobs=config.jobs)
    for notice in result.notices:
        print(notice if notice.startswith("occlint:") else f"occlint: notice: {notice}", file=sys.stderr)
    for error in result.errors:
        print(f"occlint: error: {error}", file=sys.stderr)
    if result.errors:
        return 2
    n = baseline.write(result.findings, args.file, root=config.root, sources=result.sources)
    print(f"Wrote {n} finding{'s' * (n != 1)} to {args.file}.", file=sys.stderr)
    return 0
