"""A compile that failed on a missing header, remembered until something could make it pass.

Such a failure used to be compiled again on every run (a project that needs an absent library
header, `cublas_v2.h`, recompiled those units on every warm run). It is now stored in the
compile cache with what could change its outcome, and a later run reuses it only while all of
that holds:

- the files the preprocessor read, by content (like every cache entry): found by running the
  same device preprocessing once more with `-M -MG` (missing headers listed, not fatal), so
  the list goes past the failing `#include`;
- every place a missing header would be found stays empty: each folder gcc searches
  (`-v`: the `-I`/`-isystem` folders, nvcc's, the system's, nonexistent ones included) and each
  folder of a file read (`#include "..."` looks beside the includer), joined with each
  missing name (a file of that name already beside a file read counts only when a file there
  includes it by that quoted name);
- none of those folders changed (their modification time: a file created, removed or renamed
  in them, which also covers `__has_include` of a new file);
- the environment variables that move the search path or nvcc's flags are as they were.

The cache key already covers the toolchain (nvcc and host compiler), the flags, the arch, the
working folder and the unit's bytes.
"""

from __future__ import annotations

import os
import re

from occlint.record import dataclass, field

ENV_KEYS = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "NVCC_PREPEND_FLAGS",
            "NVCC_APPEND_FLAGS", "NVCC_CCBIN")
_MISSING = re.compile(r"^(.+): No such file or directory$")
_IGNORED = re.compile(r'^ignoring (?:nonexistent|duplicate) directory "(.*)"$')


@dataclass
class Failure:
    """What a failed compile read and what must stay as it is for it to fail again."""

    deps: list[str]                                          # files read (real paths)
    absent: list[str] = field(default_factory=list)          # where a missing header could appear
    dirs: dict[str, int | None] = field(default_factory=dict)   # folder -> mtime_ns (None: absent)
    env: dict[str, str | None] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"absent": self.absent, "dirs": [[d, m] for d, m in self.dirs.items()],
                "env": self.env}


def missing_headers(errors) -> list[str] | None:
    """The headers named by `fatal error: NAME: No such file or directory`, when every error
    is one of those (any other failure is not remembered); else None."""
    names = []
    for e in errors:
        m = _MISSING.match(e.message.strip()) if e.kind == "fatal" else None
        if m is None:
            return None
        names.append(m.group(1))
    return names or None


def mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def environment() -> dict[str, str | None]:
    return {k: os.environ.get(k) for k in ENV_KEYS}


def fingerprint(names: list[str], out: str, depfile: str, cwd: str, tmp: str) -> Failure | None:
    """The Failure of a compile whose `-M -MG -v` preprocessing wrote `depfile` and printed
    `out` (run in `cwd`, with occlint's links in `tmp` still there); None when the output is
    not what it should be (then nothing is remembered)."""
    from occlint.toolchain.cache import parse_depfile

    searched, listing, complete = [], False, False
    for line in out.splitlines():
        m = _IGNORED.match(line.strip())
        if m:
            searched.append(m.group(1))
        elif "search starts here:" in line:
            listing = True
        elif line.startswith("End of search list."):
            listing, complete = False, True
        elif listing and line.startswith(" "):
            searched.append(line.strip().removesuffix(" (framework directory)"))
    try:
        with open(depfile, encoding="utf-8", errors="surrogateescape") as fh:
            listed = parse_depfile(fh.read())
    except OSError:
        return None
    if not complete or not listed:
        return None
    real_tmp = os.path.realpath(tmp) + os.sep

    def real(path: str) -> str | None:
        full = os.path.realpath(os.path.join(cwd, path))
        return None if full.startswith(real_tmp) else full

    deps, missing = [], set()
    for d in listed:
        if os.path.exists(os.path.join(cwd, d)):
            if real(d):
                deps.append(real(d))
        else:
            missing.add(d)
    if not set(names) <= missing:
        return None                 # the preprocessor does not agree with the compile
    searched_real = {real(d) for d in searched}
    folders = searched_real | {os.path.dirname(d) for d in deps}
    folders.discard(None)
    absent = sorted({os.path.normpath(os.path.join(f, n)) for f in folders for n in missing})
    # a file of that name beside a file read is found only by an `#include "NAME"` of a file
    # there (LeetCUDA's `utils.h`, missing, while g++'s pstl/utils.h sits beside a header read)
    absent = [a for a in absent if not os.path.exists(a) or
              os.path.dirname(a) in searched_real or
              _included_beside(a, [d for d in deps if os.path.dirname(d) == os.path.dirname(a)])]
    if any(os.path.exists(a) for a in absent):
        return None
    watched = sorted(folders | {os.path.dirname(a) for a in absent})
    return Failure(list(dict.fromkeys(deps)), absent, {d: mtime(d) for d in watched},
                   environment())


def _included_beside(path: str, files: list[str]) -> bool:
    """Does one of `files` (all in `path`'s folder) `#include "..."` a name `path` ends with?"""
    from occlint.toolchain.includers import quoted_includes

    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read(1 << 22)
        except OSError:
            return True             # unreadable: assume it might
        for written in quoted_includes(data):
            name = written.decode("utf-8", "surrogateescape")
            if os.path.normpath(os.path.join(os.path.dirname(f), name)) == path:
                return True
    return False


def holds(stored) -> bool:
    """Would the remembered failure happen again? (every folder as it was, every missing
    header still missing, the same environment)"""
    try:
        env, dirs, absent = stored["env"], stored["dirs"], stored["absent"]
        if env != environment() or not isinstance(absent, list) or \
                not all(isinstance(p, str) for p in absent) or \
                not all(isinstance(d, str) and (m is None or isinstance(m, int)) for d, m in dirs):
            return False
        return all(mtime(d) == m for d, m in dirs) and not any(os.path.exists(p) for p in absent)
    except (KeyError, TypeError, ValueError):
        return False
