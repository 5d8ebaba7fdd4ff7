"""`occlint clean`: remove the compile cache: only the entries occlint wrote, in a folder that
carries occlint's CACHEDIR.TAG; the folder goes too once nothing else is in it."""

from __future__ import annotations

from occlint.commands.options import add_config_arguments, load


def add_arguments(parser):
    add_config_arguments(parser, cache=False)
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache to remove")


def run(args) -> int:
    from occlint.errors import OcclintError
    from occlint.record import replace
    from occlint.toolchain.cache import cache_dir, looks_like_cache, remove

    config = load(args)
    if args.cache_dir:
        config = replace(config, cache_dir=args.cache_dir)
    path = cache_dir(config)
    if not path.exists() and not path.is_symlink():
        print(f"no cache at {path}")
        return 0
    if not looks_like_cache(path):
        raise OcclintError(f"refusing to clean {path}: it is not an occlint cache "
                           "(no CACHEDIR.TAG written by occlint)")
    count, size = remove(path)   # only occlint's entries: anything else in the folder stays
    from occlint.commands.summary import plural
    from occlint.units import format_amount

    print(f"removed {plural(count, 'entry', 'entries')} ({format_amount(size)}) from {path}")
    return 0
