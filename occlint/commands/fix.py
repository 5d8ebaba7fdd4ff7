"""`occlint fix [PATHS]`: the same as `occlint check --fix`."""

from __future__ import annotations

from occlint.commands import check


def add_arguments(parser) -> None:
    check.add_arguments(parser)


def run(args) -> int:
    if not args.diff and args.fix is not False:
        args.fix = True
    return check.run(args)
