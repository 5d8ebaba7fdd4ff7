"""`occlint clean`: remove the compile cache (only a directory that is an occlint cache)."""

from __future__ import annotations


from occlint.commands.options import add_config_arguments, load


def add_arguments(parser):
    add_config_arguments(parser, cache=False)
    parser.add_argument("--cache-dir", metavar="DIR", help="the cache to remove")


def run(args) -> int:
    import shutil
    from dataclasses import replace

    from occlint.errors import OcclintError
    from occlint.toolchain.cache import cache_dir, looks_like_cache, stats

    config = load(args)
    if args.cache_dir:
        config = replace(config, cache_dir=args.cache_dir)
    path = cache_dir(config)
    if not path.exists():
        print(f"no cache at {path}")
        return 0
    if path.is_symlink() or not path.is_dir() or not looks_like_cache(path):
        raise OcclintError(f"refusing to remove {path}: it is not an occlint cache "
                           "(no CACHEDIR.TAG written by occlint)")
    count, size = stats(path)

    def ignore_vanished(_func, _path, exc):
        if not isinstance(exc if isinstance(exc, BaseException) else exc[1], FileNotFoundError):
            raise exc if isinstance(exc, BaseException) else exc[1]

    shutil.rmtree(path, onerror=ignore_vanished)  # another occlint may be writing: fine
    print(f"removed {path} ({count} entries, {size} bytes)")
    return 0
