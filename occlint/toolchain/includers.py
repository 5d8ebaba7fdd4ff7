"""Which units include a header: a header given alone is measured through them.

Every compile writes its dependency list (the cache keeps it); `remember` adds each unit's list
to `<cache>/includers.idx`, so a later run knows exactly which units read a header. A header no
run has seen yet is looked up in its compilation database: the units whose text `#include`s its
name. At most MAX_INCLUDERS units are compiled for one header, the nearest ones first.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import tempfile
from pathlib import Path

from occlint.config import Config

NAME = "includers.idx"     # JSON; not *.json, which names cache entries
FORMAT = 1
MAX_INCLUDERS = 8


def _load(cache) -> dict[str, list[str]]:
    try:
        data = json.loads((Path(cache.root) / NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    units = data.get("units")
    if not isinstance(units, dict):
        return {}
    return {u: [d for d in deps if isinstance(d, str)] for u, deps in units.items()
            if isinstance(u, str) and isinstance(deps, list)}


def remember(cache, includes: dict[str, tuple[str, ...]], nvcc=None) -> None:
    """Record each compiled unit's dependency list (atomic; never fails a lint)."""
    if not includes:
        return
    known = _load(cache)
    changed = False
    for unit, deps in includes.items():
        key = os.path.realpath(unit)
        value = user_files(deps[1:], nvcc)
        if known.get(key) != value:
            known[key] = value
            changed = True
    if not changed:
        return
    from occlint.toolchain.cache import claim

    root = Path(cache.root)
    if not claim(root):          # never write into a folder occlint did not create
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "units": known}, fh, separators=(",", ":"))
            os.replace(tmp, root / NAME)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def user_files(deps, nvcc=None) -> list[str]:
    """The files among `deps` that belong to the user's project: not the system's (/usr), not
    the running Python's (wheels), not a CUDA toolkit's (a folder with bin/nvcc above them)."""
    skip = ["/usr/", *_python_prefixes()]
    if nvcc is not None:
        skip.append(os.path.dirname(os.path.dirname(nvcc.path)) + os.sep)
    return [d for d in dict.fromkeys(deps) if not d.startswith(tuple(skip)) and not _in_toolkit(d)]


@functools.lru_cache(maxsize=1)
def _python_prefixes() -> tuple[str, str]:
    """The running Python's folders (its wheels), resolved once."""
    import sys

    return os.path.realpath(sys.prefix) + os.sep, os.path.realpath(sys.base_prefix) + os.sep


_TOOLKIT_DIRS: dict[str, bool] = {}


def _in_toolkit(path: str) -> bool:
    folder = os.path.dirname(path)
    trail = []
    while folder not in _TOOLKIT_DIRS:
        trail.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            _TOOLKIT_DIRS[folder] = False
            break
        if os.path.isfile(os.path.join(folder, "bin", "nvcc")):
            _TOOLKIT_DIRS[folder] = True
            break
        folder = parent
    found = _TOOLKIT_DIRS[folder]
    for f in trail:
        _TOOLKIT_DIRS[f] = found
    return found


def _nearest(header: str, units: list[str]) -> list[str]:
    folder = os.path.dirname(header)
    stem = os.path.basename(header).split(".", 1)[0]

    def score(unit: str):
        common = len(os.path.commonpath([folder, os.path.dirname(unit)]).split(os.sep))
        return (os.path.basename(unit).split(".", 1)[0] != stem, -common, unit)

    return sorted(units, key=score)[:MAX_INCLUDERS]


# `#` first, not `^` under re.M: the engine then looks for a literal instead of testing every
# line start; that the `#` starts its line is checked on each match
_INCLUDE_NAME = re.compile(r'#[ \t]*include[ \t]*[<"](?:[^">\n]*/)?([^/">\n]+)[">]')


_INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^">\n]+)[">]', re.M)


def include_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line, the name as written) of each `#include` line of a text."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _INCLUDE_LINE.finditer(text)]


# `#` first (a literal for the engine); that it starts its line is checked on each match
_QUOTED_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*"([^"\n]+)"')


def quoted_includes(data: bytes) -> list[bytes]:
    """The names, as written, of the `#include "..."` lines of `data`."""
    if b"include" not in data:
        return []
    return [m.group(1) for m in _QUOTED_INCLUDE.finditer(data)
            if not data[data.rfind(b"\n", 0, m.start()) + 1:m.start()].strip(b" \t")]


def uses_included_macro(path: str, data: bytes, memo: dict) -> bool:
    """Does `data` use a macro defined by a header it `#include "..."`s (found beside it): a
    launch macro, called (CloverLeaf's units launch only through cuda_common.hpp's
    `CUDALAUNCH(kernel, ...)`), or a macro that is `__global__`, before a declaration
    (pytorch3d's pulsar: `GLOBAL void fill(...)`)? Then it holds kernels or launches that its
    own words do not show. A header's macros include those of the headers it includes in
    turn (pulsar's `commands.h` routes to `gpu/commands.h`). `memo`: header path -> its
    (launch, kernel) macros, for the run: each header is read once. A function of such a header
    that launches a kernel its caller passes (`linear_kernel(kernel, ...)`:
    `forwarded.launchers`) counts as a launch macro."""
    launches, kernels, _whole = _header_macros(path, data, memo)
    return uses_macros(data, launches, kernels)


def uses_macros(data: bytes, launches, kernels) -> bool:
    """Does `data` call one of the launch macros `launches`, or write one of the kernel macros
    `kernels` before a declaration, on a line that is not a directive (`#define LAUNCH(...)`,
    a host fallback, is no use)?"""
    return any(n in data and re.search(rb"^(?![ \t]*#).*\b" + n + rb"\s*\(", data, re.M)
               for n in launches) or \
        any(n in data and re.search(rb"^(?![ \t]*#).*\b" + n + rb"\s+[A-Za-z_]", data, re.M)
            for n in kernels)


def _header_macros(path: str, data: bytes, memo: dict, depth: int = 0) -> tuple[set, set, bool]:
    """The (launch, kernel) macros of the headers `data` (at `path`) includes beside it, and of
    theirs in turn, _MAX_DEPTH levels deep, and whether that reading is whole (not cut by the
    depth limit, an include cycle or the run's budget of _MAX_READS readings). A whole
    reading of a header is remembered in `memo`."""
    from occlint.source.forwarded import launchers
    from occlint.source.preproc import kernel_macros, launch_macros, read_header

    launches: set = set()
    kernels: set = set()
    if depth >= _MAX_DEPTH:
        return launches, kernels, False
    whole = True
    folder = os.path.dirname(os.path.abspath(path))
    for name in quoted_includes(data):
        header = os.path.normpath(os.path.join(folder, os.fsdecode(name)))
        got = memo.get(header)
        if got is _READING or (got is None and memo.get(_READS, 0) >= _MAX_READS):
            whole = False                   # (in an include cycle, or out of budget)
            continue
        if got is None:
            memo[_READS] = memo.get(_READS, 0) + 1
            memo[header] = _READING
            text = read_header(header) or b""
            inner = _header_macros(header, text, memo, depth + 1)
            got = (set(launch_macros(text)) | launchers(header, text) | inner[0],
                   set(kernel_macros(text)) | inner[1])
            if inner[2]:
                memo[header] = got
            else:
                del memo[header]
                whole = False
        launches |= got[0]
        kernels |= got[1]
    return launches, kernels, whole


_MAX_DEPTH = 16
_MAX_READS = 4096
_READING = (frozenset(), frozenset())
_READS = ("readings",)


def included_names(text: str) -> frozenset[str]:
    """The file names (last path part) a text's `#include` lines name: the one reading of
    "does this unit include a file of that name", for `for_headers` and `flags.source_views`."""
    if "include" not in text:
        return frozenset()
    return frozenset(m.group(1) for m in _INCLUDE_NAME.finditer(text)
                     if not text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip(" \t"))


def _textual(header: str, config: Config, project_units) -> list[str]:
    """Units whose text includes a file of the header's name: those of the header's database,
    or with no database the project's units (`project_units()`: `check`'s discovery under the
    project root, made once per call of `for_headers`), for a header inside the project (one
    outside it, a folder listed from elsewhere, is no project unit's header)."""
    from occlint.files import inside
    from occlint.toolchain.database import database_for

    db = database_for(header, config)
    if db is None and not inside(header, config.root):
        return []
    units = tuple(db.units()) if db is not None else tuple(project_units())
    found = _by_name(units).get(os.path.basename(header), [])
    return [u for u in found if not includes_another(u, header)]


def includes_another(unit: str, header: str) -> bool:
    """Does every `#include "..."` of `unit` naming a file of the header's name resolve, beside
    the unit (where a quoted include is looked for first), to another file? flash-attention's
    `hopper/flash_prepare_scheduler.cu` includes `hopper/flash.h`, not `src/flash.h`."""
    name = os.path.basename(header)
    named = [n for n in _quoted_of(unit) if os.path.basename(n) == name]
    if not named:
        return False                # an angle-bracket include: the include path decides
    target = os.path.realpath(header)
    here = os.path.dirname(os.path.abspath(unit))
    for n in named:
        beside = os.path.join(here, n)
        if not os.path.isfile(beside) or os.path.realpath(beside) == target:
            return False
    return True


@functools.lru_cache(maxsize=8)
def _by_name(units: tuple[str, ...]) -> dict[str, list[str]]:
    """File name -> the units among `units` with an `#include` of a file of that name (each
    unit's text read and searched once, for all the headers of a run)."""
    out: dict[str, list[str]] = {}
    for unit in units:
        for name in sorted(included_names(_text(unit))):
            out.setdefault(name, []).append(unit)
    return out


_TEXTS: dict[str, str] = {}
_QUOTED: dict[str, tuple[str, ...]] = {}


def _quoted_of(unit: str) -> tuple[str, ...]:
    """The names of a unit's `#include "..."` lines, read once per process."""
    got = _QUOTED.get(unit)
    if got is None:
        got = _QUOTED[unit] = tuple(n.decode("utf-8", "replace") for n in quoted_includes(
            _text(unit).encode("utf-8", "surrogateescape")))
    return got


def forget() -> None:
    """Forget unit texts read by an earlier run (the language server lives long)."""
    _TEXTS.clear()
    _QUOTED.clear()
    _by_name.cache_clear()
    _listing.cache_clear()
    _FOLDER_INCLUDES.clear()


def _text(path: str) -> str:
    """A unit's text, read once per process (several lone headers ask about the same units)."""
    if path not in _TEXTS:
        _TEXTS[path] = ""
        with contextlib.suppress(OSError):
            with open(path, encoding="utf-8", errors="replace") as fh:
                _TEXTS[path] = fh.read()
    return _TEXTS[path]


def for_headers(headers: list[str], units: list[str], config: Config, cache,
                memo: dict | None = None) -> list[tuple[str, str]]:
    """(unit, header) for every header none of `units` includes directly: the units to compile
    on its behalf. The units whose text `#include`s it come first (the database's, else the
    project's); the recorded dependency lists only when none does. The decision reads no cache,
    so a cold and a warm run compile the same units: a unit that reaches the header only through
    another header (ggml's convert.cu and mmq.cuh) rarely instantiates its templates. `memo`:
    a dict kept for one run's calls (the project's units, found once: cupy's warm check walked
    the project for each of 11 headers)."""
    known = _load(cache) if cache is not None else {}
    given = {os.path.realpath(u) for u in units}
    out: list[tuple[str, str]] = []
    memo = {} if memo is None else memo

    def project_units() -> list[str]:
        if "project units" not in memo:
            from occlint.discover import discover, is_unit
            memo["project units"] = [os.path.abspath(u) for u in discover(
                [config.root], config, hosts=False)[0] if is_unit(u, config)]
        return memo["project units"]

    for header in headers:
        target = os.path.realpath(header)
        if _included_by(header, given, config):
            continue                 # a unit of this run names it (its database's all would)
        found = [os.path.abspath(u) for u in _textual(header, config, project_units)]
        if not found:        # included only indirectly, or through a computed #include
            found = [u for u, deps in known.items() if target in deps and os.path.isfile(u)]
        if any(os.path.realpath(u) in given for u in found):
            continue                 # a unit of this run includes it already
        out.extend((_shown(u), header) for u in _nearest(target, found))
    return list(dict.fromkeys(out))


def _included_by(header: str, given: set[str], config: Config) -> bool:
    """Does one of the run's units (real paths), an entry of the header's database, include a
    file of its name? Then `_textual` would find it among the database's units: the answer
    without reading every other unit of the database (cuda-samples: 302)."""
    from occlint.toolchain.database import database_for

    db = database_for(header, config)
    if db is None:
        return False
    mine = tuple(sorted(u for u in given if u.endswith(".cu") and dict.__contains__(db.entries, u)))
    return bool(_by_name(mine).get(os.path.basename(header)))      # (read once per run)


def fragments(paths, config: Config) -> dict[str, list[str]]:
    """The .cu files among `paths` that are not compiled on their own -> the units to compile
    for them: no compilation database lists them, they define no `main`, and a CUDA file of
    their folder (or a C++ file the database compiles as CUDA) `#include`s them by a quoted
    name that resolves to them (Rodinia's kernel.cu, which main.cu includes; compiled alone
    they fail on names main.cu defines).
    They are read as headers, through those units (an including file that is itself such a
    fragment is followed to its own units)."""
    from occlint.discover import UNIT_SUFFIXES

    found: dict[str, list[str]] = {}
    for path in dict.fromkeys(p for p in paths if p.endswith(UNIT_SUFFIXES)):
        units = _roots(path, config, set())
        if units:
            found[path] = units
    return found


_MAIN = re.compile(rb"\bmain\s*\(\s*(?:void\s*)?(?:\)|int\b)")


def _roots(path: str, config: Config, seen: set[str]) -> list[str]:
    """The units compiled for `path` when it is a fragment (see `fragments`), else []."""
    from occlint.source.preproc import read_header
    from occlint.toolchain.database import database_for

    name = os.path.basename(path)
    if name not in _quoted_cu_includes(os.path.dirname(os.path.abspath(path))):
        return []                                 # (most files: no quoted include names it)
    db = database_for(path, config)
    real = os.path.realpath(path)
    if real in seen or len(seen) > 8 or _MAIN.search(read_header(path) or b"") is not None:
        return []                   # a program (llm.c's train_gpt2.cu, which its tests include)
    seen.add(real)
    if db is not None and dict.__contains__(db.entries, real):
        return []                                 # the build compiles it
    from occlint.discover import CUDA_SUFFIXES, is_unit

    out: list[str] = []
    for including in _including(real):
        if not including.endswith(CUDA_SUFFIXES) and not is_unit(including, config):
            continue        # a C++ file the host compiler builds (xgboost's `#if !defined(
                            # XGBOOST_USE_CUDA)` `#include "regression_obj.cu"` for CPU builds)
        out.extend(_roots(including, config, seen) or [including])
    return list(dict.fromkeys(out))


def _including(real: str) -> list[str]:
    """Files of `real`'s folder whose `#include "..."` names resolve to `real`."""
    name = os.path.basename(real)
    out = []
    for other, written in _quoted_cu_includes(os.path.dirname(real)).get(name, ()):
        if other != real and os.path.realpath(
                os.path.join(os.path.dirname(other), written)) == real:
            out.append(other)
    return list(dict.fromkeys(out))


_FOLDER_INCLUDES: dict[str, dict[str, list[tuple[str, str]]]] = {}


def _quoted_cu_includes(folder: str) -> dict[str, list[tuple[str, str]]]:
    """A folder's `#include "....cu"` lines: the included file's name -> (the including file,
    the name as written). Read once per folder and run; a file without `.cu"` is not parsed."""
    from occlint.source.preproc import read_header

    got = _FOLDER_INCLUDES.get(folder)
    if got is None:
        got = _FOLDER_INCLUDES[folder] = {}
        for other in _listing(folder):
            data = read_header(other)
            if not data or b'.cu"' not in data:
                continue
            for name in quoted_includes(data):
                if name.endswith(b".cu"):
                    written = os.fsdecode(name)
                    got.setdefault(os.path.basename(written), []).append((other, written))
    return got


@functools.lru_cache(maxsize=256)
def _listing(folder: str) -> tuple[str, ...]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return ()
    from occlint.discover import C_FAMILY_SUFFIXES
    return tuple(os.path.join(folder, n) for n in names if n.endswith(C_FAMILY_SUFFIXES))


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel
