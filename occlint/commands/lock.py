"""`occlint lock [PATHS]`: write each kernel's resources and occupancy to occlint.lock."""

from __future__ import annotations

import argparse

from occlint.commands.options import add_lint_arguments, load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lint_arguments(parser)
    parser.add_argument("--file", "-o", default="occlint.lock", metavar="FILE",
                        help="where to write the lockfile (default: occlint.lock)")


def run(args) -> int:
    import sys

    from occlint import lock, record
    from occlint.discover import discover
    from occlint.engine import read_text
    from occlint.errors import OcclintError
    from occlint.facts import build_facts
    from occlint.project import Project
    from occlint.toolchain import collect_usage

    config = load(args)
    sources, _builds = discover(args.paths, config)
    if not sources:
        raise OcclintError("no CUDA sources found to lock")
    report = collect_usage(sources, config, jobs=config.jobs)
    if report.nvcc is None:
        raise OcclintError("`occlint lock` needs nvcc's figures and nvcc was not found "
                           "(pip install 'occlint[cuda]', or set `nvcc` in the config)")
    for err in report.errors:
        print(f"occlint: error: {err.path or err.unit}: {err.message}", file=sys.stderr)
    if report.errors:
        raise OcclintError("nvcc failed on some files, so the lockfile was not written")
    usages = [u for unit in sources for u in report.usage_for(unit)]
    project = Project.read({path: read_text(path) for path in sources})
    launches = [launch for sf in project for launch in sf.launches]
    # occupancy at each launch as the rules compute it (OCC050 compares with the same inputs)
    occupancy: dict[tuple, set] = {}
    run_config = record.replace(config, arch=tuple(report.archs))
    for sf in project:
        facts = build_facts(sf, report.usage_for(sf.path), run_config, run_config.arch, project=project)
        for key, configs in lock.site_occupancy(facts.sites).items():
            occupancy.setdefault(key, set()).update(configs)
    n = lock.write(usages, launches, args.file, occupancy=occupancy)
    from occlint.commands.summary import plural

    print(f"Wrote {plural(n, 'kernel instantiation')} x arch to {args.file}.", file=sys.stderr)
    return 0
