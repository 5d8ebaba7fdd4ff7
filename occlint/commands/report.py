"""`occlint report BUILD_DIR`: lint with the usage `occlint nvcc` recorded beside the objects of a
build tree; nothing is recompiled."""

from __future__ import annotations

import os

from occlint.commands.options import add_config_arguments, load


def add_arguments(parser):
    parser.add_argument("build_dir", metavar="BUILD_DIR", help="build tree with *.occlint.json")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or folders to lint (default: the sources the sidecars name)")
    parser.add_argument("--output-format", default="full", metavar="FORMAT",
                        help="output format: full, concise, json, sarif, ... (default: full)")
    parser.add_argument("--usage", action="store_true",
                        help="print the merged per-kernel usage instead of linting")
    add_config_arguments(parser, cache=False)


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def print_usage(usage: dict) -> None:
    print(f"{'kernel':<40} {'arch':<7} {'regs':>5} {'smem':>7} {'bars':>4} {'stack':>6}  source")
    for source, usages in usage.items():
        for u in sorted(usages, key=lambda u: (u.kernel, u.template_args, u.arch)):
            name = u.kernel + (f"<{', '.join(u.template_args)}>" if u.template_args else "")
            print(f"{name:<40} {u.arch:<7} {u.registers:>5} {u.static_smem:>7} {u.barriers:>4} "
                  f"{u.stack_frame:>6}  {_shown(source)}")


def run(args) -> int:
    import sys

    from occlint.errors import OcclintError
    from occlint.toolchain import load_sidecars

    if not os.path.isdir(args.build_dir):
        raise OcclintError(f"not a directory: {args.build_dir}")
    config = load(args)
    usage = load_sidecars(args.build_dir)
    if config.arch:
        usage = {s: tuple(u for u in us if u.arch in config.arch) for s, us in usage.items()}
    if not usage:
        raise OcclintError(
            f"no *.occlint.json under {args.build_dir}: build with the launcher, e.g. "
            "-DCMAKE_CUDA_COMPILER_LAUNCHER='occlint;nvcc;--'")
    if args.usage:
        print_usage(usage)
        return 0
    from occlint.emit import EMITTERS
    from occlint.engine import lint_paths

    if args.output_format not in EMITTERS:
        raise OcclintError(f"unknown format `{args.output_format}` (one of: {', '.join(EMITTERS)})")
    keyed = {_shown(s): us for s, us in usage.items()}
    paths = args.paths or [p for p in keyed if os.path.exists(p)]
    result = lint_paths(paths, config, usage=keyed)
    for notice in result.notices:
        print(notice if notice.startswith("occlint:") else f"occlint: notice: {notice}",
              file=sys.stderr)
    for error in result.errors:
        print(f"occlint: error: {error}", file=sys.stderr)
    text = EMITTERS[args.output_format](result.findings, root=config.root, sources=result.sources)
    if text:
        print(text.rstrip("\n"))
    return 1 if result.findings else 0
