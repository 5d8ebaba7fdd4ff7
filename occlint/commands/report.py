"""`occlint report`: the HTML report, and linting with the usage `occlint nvcc` recorded.

    occlint report --html report.html [PATHS]     # one self-contained page: kernels, curves, findings
    occlint report BUILD_DIR [PATHS]              # lint with a build tree's *.occlint.json, no nvcc

With `--html`, a first PATH that is a build tree holding sidecars supplies the usage (nothing is
recompiled), as without it; otherwise the PATHS are linted as `occlint check` lints them.
"""

from __future__ import annotations

import os

from occlint.commands.options import add_lint_arguments, load


def add_arguments(parser):
    add_lint_arguments(parser)
    parser.add_argument("--html", metavar="FILE",
                        help="write the HTML report (kernels, occupancy curves, findings) to FILE")
    parser.add_argument("--output-format", default="full", metavar="FORMAT",
                        help="without --html: output format: full, concise, json, sarif, ... (default: full)")
    parser.add_argument("--usage", action="store_true",
                        help="print the merged per-kernel usage of BUILD_DIR instead of linting")


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


def _recorded(build_dir: str, config) -> dict:
    from occlint.toolchain import load_sidecars

    usage = load_sidecars(build_dir)
    if config.arch:
        usage = {s: tuple(u for u in us if u.arch in config.arch) for s, us in usage.items()}
    return usage


def _print_messages(result) -> None:
    import sys

    for notice in result.notices:
        print(notice if notice.startswith("occlint:") else f"occlint: notice: {notice}",
              file=sys.stderr)
    for error in result.errors:
        print(f"occlint: error: {error}", file=sys.stderr)


def run(args) -> int:
    from occlint.errors import OcclintError

    config = load(args)
    if args.html:
        return _html(args, config)
    if not args.paths:
        raise OcclintError("give a BUILD_DIR with *.occlint.json, or --html FILE for the HTML report")
    build_dir, paths = args.paths[0], args.paths[1:]
    if not os.path.isdir(build_dir):
        raise OcclintError(f"not a directory: {build_dir}")
    usage = _recorded(build_dir, config)
    if not usage:
        raise OcclintError(
            f"no *.occlint.json under {build_dir}: build with the launcher, e.g. "
            "-DCMAKE_CUDA_COMPILER_LAUNCHER='occlint;nvcc;--'")
    if args.usage:
        print_usage(usage)
        return 0
    from occlint.emit import EMITTERS
    from occlint.engine import lint_paths

    if args.output_format not in EMITTERS:
        raise OcclintError(f"unknown format `{args.output_format}` (one of: {', '.join(EMITTERS)})")
    keyed = {_shown(s): us for s, us in usage.items()}
    paths = paths or [p for p in keyed if os.path.exists(p)]
    from occlint.toolchain.sidecar import load_sidecar_includes
    result = lint_paths(paths, config, usage=keyed, includes=load_sidecar_includes(build_dir))
    _print_messages(result)
    text = EMITTERS[args.output_format](result.findings, root=config.root, sources=result.sources)
    if text:
        print(text.rstrip("\n"))
    return 1 if result.findings else 0


def _html(args, config) -> int:
    import sys

    from occlint import report
    from occlint.emit import html
    from occlint.engine import lint_paths
    from occlint.errors import OcclintError

    paths = list(args.paths)
    usage = _recorded(paths[0], config) if paths and os.path.isdir(paths[0]) else {}
    if usage:
        keyed = {_shown(s): us for s, us in usage.items()}
        from occlint.toolchain.sidecar import load_sidecar_includes
        includes = load_sidecar_includes(paths[0])
        paths = paths[1:] or [p for p in keyed if os.path.exists(p)]
        result = lint_paths(paths, config, usage=keyed, includes=includes)
    else:
        result = lint_paths(paths, config, jobs=config.jobs)
    _print_messages(result)
    model = report.build(result, root=config.root)
    page = html.page(model)
    from occlint.emit.encode import output_bytes

    try:
        with open(args.html, "wb") as fh:
            fh.write(output_bytes(page))
    except OSError as exc:
        raise OcclintError(f"cannot write {args.html}: {exc.strerror or exc}") from None
    kernels = len(model.kernels)
    n = len(result.findings)
    from occlint.commands.summary import plural

    print(f"Wrote {args.html}: {plural(kernels, 'kernel')}, {plural(n, 'finding')}.", file=sys.stderr)
    return 2 if result.errors else 0
