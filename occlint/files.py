"""Reading the user's files: regular files only.

A FIFO, a tty (`#include "/dev/stdin"`), `/dev/zero` or a socket would block or read forever,
so every file occlint reads or hashes goes through `read_regular`: it opens without blocking,
checks that what it opened is a regular file, and only then reads.
"""

from __future__ import annotations

import os
import stat
import sys


class NotRegular(OSError):
    """The path names something other than a regular file (after following links)."""


def read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file at `path` (links followed); NotRegular for a FIFO, device,
    socket or folder; OSError for the rest."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file ({kind(st.st_mode)})")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def is_regular(path: str | os.PathLike) -> bool:
    """True when `path` (links followed) is a regular file; never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def decode(data: bytes) -> str:
    """Source bytes as text: UTF-8 with a BOM dropped; a byte that is not UTF-8 becomes U+FFFD."""
    return data.decode("utf-8-sig", errors="replace")


def toml():
    """The TOML reader (tomllib, tomli before 3.11), imported on first use: 5 ms (typing,
    datetime) that a run without a config or pyproject.toml does not pay."""
    if sys.version_info >= (3, 11):
        import tomllib
        return tomllib
    import tomli  # pragma: no cover
    return tomli  # pragma: no cover


def inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Is `path` `root` itself or below it, links resolved in both?"""
    top = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def real_path(path: str, memo: dict[str, str]) -> str:
    """os.path.realpath, resolving a component at a time as it does, with every folder on the
    way remembered in `memo`: paths that share folders cost one lstat each, not one per folder
    (a compilation database's hundreds of entries, a compile's toolkit headers)."""
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    got = memo.get(path)
    if got is not None:
        return got
    parent, name = os.path.split(path)
    if parent == path:                      # the root
        return path
    if name in ("", "."):
        out = real_path(parent, memo)
    elif name == "..":
        out = os.path.dirname(real_path(parent, memo))
    else:
        cand = os.path.join(real_path(parent, memo), name)
        out = os.path.realpath(cand) if os.path.islink(cand) else cand
    memo[path] = out
    return out
