"""`occlint baseline [PATHS]`: record today's findings so that `check --baseline FILE` hides them."""

from __future__ import annotations

import argparse

from occlint.commands.options import add_lint_arguments, load

DEFAULT_FILE = "occlint-baseline.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lint_arguments(parser)
    parser.add_argument("--file", "-o", default=DEFAULT_FILE, metavar="FILE",
                        help=f"where to write the baseline (default: {DEFAULT_FILE})")


def run(args) -> int:
    import sys

    from occlint import baseline
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
    from occlint.commands.summary import plural

    print(f"Wrote {plural(n, 'finding')} to {args.file}.", file=sys.stderr)
    return 0
