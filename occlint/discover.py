"""Which files to lint: CUDA sources and build files under the given paths.

Folders are walked in sorted order; hidden folders, common tool folders, `.gitignore` patterns
(from the root down to each folder) and `exclude`/`extend-exclude` globs are skipped. A file
named explicitly is always linted, as in ruff, unless `force-exclude` is set and an exclude glob
matches it (what pre-commit hooks want: they name every changed file).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path

from occlint.buildfiles import BUILD_NAMES, BUILD_SUFFIXES, is_build_file
from occlint.errors import OcclintError
from occlint.files import inside, read_regular
from occlint.python import PY_SUFFIXES, is_python, names_a_framework

# The one home of these lists: discovery, the compiler, the engine and the language server read them.
UNIT_SUFFIXES = (".cu",)                                 # compiled by nvcc on their own
CUDA_HEADERS = (".cuh", ".cuhpp", ".cu.inc")
CUDA_SUFFIXES = UNIT_SUFFIXES + CUDA_HEADERS             # what `check` lints
HEADER_SUFFIXES = CUDA_HEADERS + (".h", ".hpp", ".hh", ".hxx", ".inl", ".ipp", ".inc")  # analysed
                                                         # through the units that include them
CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C")     # CUDA units where a database says so
C_FAMILY_SUFFIXES = UNIT_SUFFIXES + HEADER_SUFFIXES + CPP_SUFFIXES   # `//` comments, `#include`s
SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__",
             ".occlint_cache", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache",
             "CMakeFiles", "_deps"}      # CMake's generated files and fetched dependencies
# every name discovery may want ends so (or is a build file's name): others are skipped unread
_SUFFIXES = HEADER_SUFFIXES + UNIT_SUFFIXES + CPP_SUFFIXES + BUILD_SUFFIXES + PY_SUFFIXES


def is_cuda(path: str) -> bool:
    return path.endswith(CUDA_SUFFIXES)


def is_unit(path: str, config=None) -> bool:
    """A unit nvcc compiles on its own: a .cu file, or (with `config`, to find the compilation
    database) a C++ source the database compiles as CUDA (toolchain.database.compiled_as_cuda)."""
    if path.endswith(UNIT_SUFFIXES):
        return True
    if config is None or not path.endswith(CPP_SUFFIXES):
        return False
    from occlint.toolchain.database import compiled_as_cuda
    return compiled_as_cuda(path, config)


def is_header(path: str) -> bool:
    return path.endswith(HEADER_SUFFIXES)


class GitIgnore:
    """The common subset of .gitignore: globs, `/` anchors, trailing `/` for folders, `!`."""

    def __init__(self):
        # (base, test of the path below base and of the name, negate, dir_only)
        self.rules: list[tuple[str, object, bool, bool]] = []

    def add_file(self, folder: str) -> None:
        file = os.path.join(folder, ".gitignore")
        try:
            lines = read_regular(file).decode("utf-8", "replace").splitlines()
        except OSError:
            return
        for raw in lines:
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            line = line[1:] if negate else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            self.rules.append((os.path.abspath(folder), _rule_test(line), negate, dir_only))

    def ignored(self, path: str, is_dir: bool) -> bool:
        return self.ignored_at(os.path.abspath(path), os.path.basename(path), is_dir)

    def ignored_at(self, full: str, name: str, is_dir: bool) -> bool:
        """`ignored` for an absolute, normalized `full` path whose last part is `name`."""
        if not self.rules:
            return False
        result = False
        name = os.path.normcase(name)
        last, rel = None, None          # a .gitignore's rules are consecutive: one _below each
        for base, test, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if base != last:
                last, rel = base, _below(full, base)
                rel = None if rel is None or rel.startswith("..") else os.path.normcase(rel)
            if rel is not None and test(rel, name):
                result = not negate
        return result


@functools.lru_cache(maxsize=4096)
def glob(pattern: str):
    """fnmatch's test of one glob, compiled once per process (a .gitignore is read by every
    discovery of its tree)."""
    return re.compile(fnmatch.translate(os.path.normcase(pattern))).match


def _rule_test(pattern: str):
    """test(path below the .gitignore's folder, file name) -> does `pattern` match."""
    if "/" in pattern.lstrip("/"):
        whole = glob(pattern.lstrip("/"))
        tail = glob(pattern[3:]) if pattern.startswith("**/") else None
        return lambda rel, _name: bool(whole(rel) or (tail is not None and tail(rel)))
    if pattern.startswith("/"):
        anchored = glob(pattern[1:])
        return lambda rel, _name: bool(anchored(rel))
    named = glob(pattern)
    return lambda _rel, name: bool(named(name))


def _below(full: str, base: str) -> str | None:
    """os.path.relpath(full, base) with `/`, for absolute normalized paths; None when `full` is
    not inside `base` (relpath's `..`)."""
    if full == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not full.startswith(prefix):
        return None
    return full[len(prefix):].replace(os.sep, "/")


def excluded(path: str, config) -> bool:
    patterns = (*config.exclude, *getattr(config, "extend_exclude", ()))
    if not patterns:
        return False
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(config.root)).replace(os.sep, "/")
    parts = rel.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(full, pattern) \
                or any(fnmatch.fnmatch(p, pattern) for p in parts) \
                or fnmatch.fnmatch(rel, pattern + "/*"):
            return True
    return False


def _wanted(path: str, config=None, headers: _Headers | None = None,
            hosts: bool = True) -> str | None:
    if is_cuda(path):
        return "cuda"
    if is_build_file(path):
        return "build"
    if config is not None and path.endswith(CPP_SUFFIXES) and (
            is_unit(path, config) or (hosts and (headers or _Headers()).drives(path))):
        return "cuda"
    if config is not None and path.endswith(HEADER_SUFFIXES):
        return (headers or _Headers()).kind(path)
    return None


_DRIVER_LAUNCH = re.compile(rb"\b(?:cuLaunch(?:Cooperative)?Kernel|cudaLaunch(?:Cooperative)?Kernel(?:Ex)?)\s*\(")


def driver_launches(path: str) -> bool:
    """A C++ source that launches kernels through the driver API (`cuLaunchKernel(f, ...)`
    outside strings and comments: cuda-samples' vectorAddDrv.cpp) or the runtime's launch
    calls (nvdiffrast's `cudaLaunchKernel((void*)K, ...)` of kernels its `.cu` files define):
    linted for its launches, with the figures of the unit that compiles the kernel it names,
    not compiled itself."""
    try:
        data = read_regular(path)
    except OSError:
        return False
    if b"cuLaunch" not in data and b"cudaLaunch" not in data:
        return False
    from occlint.source.text import blank_noise
    return _DRIVER_LAUNCH.search(blank_noise(data)) is not None


# a `#define` line, or a macro's continued line, with `__global__` or `<<<` on it
_MACRO_HINT = re.compile(rb"#[ \t]*define[^\n]*(?:__global__|<<<)|\\\r?\n[^\n]*<<<")


class _Headers:
    """Discovery's reading of C++ headers (`.h`, `.hpp`, `.hxx`, `.inl`, ...): one that writes
    `__global__` or a `<<<` launch (outside strings and comments) is CUDA a unit includes
    (llama_cu_awq's gpu_kernels.h, xmrig's hash.hpp, moderngpu's transform.hxx), linted as a
    `.cuh` is, through its includers. One that writes neither waits for the walk's end: it is
    CUDA when it uses, outside a directive, a macro some header read in the walk defines to be
    `__global__` or to launch (pytorch3d's pulsar: `GLOBAL void fill(...)`,
    `LAUNCH_PARALLEL_1D(...)` in `*.device.h`). Each header is read once; with a cache folder,
    what a header was found to be is kept by its inode, size, mtime and ctime (`_Kinds`), so a
    warm run reads no header it read before (tiny-cuda-nn's 798 vendored ones: 18.6 MB)."""

    def __init__(self, config=None):
        self.launch_macros: set[bytes] = set()
        self.kernel_macros: set[bytes] = set()
        self.pending: dict[str, bytes | None] = {}
        self.kinds = _Kinds.open(config)

    def kind(self, path: str) -> str | None:
        known = self.kinds.get(path) if self.kinds is not None else None
        if known is None:
            known = self._read(path)
            if known is None:
                return None
            if self.kinds is not None:
                self.kinds.put(path, known)
        kind, launch, kernel = known
        self.launch_macros.update(launch)
        self.kernel_macros.update(kernel)
        if kind == "maybe":
            self.pending.setdefault(os.path.normpath(path), None)     # read if it must be
        return kind

    def drives(self, path: str) -> bool:
        """`driver_launches(path)` of a C++ source, kept as a header's kind is (a warm run
        reads none of a project's C++ sources: cuda-samples' 458, 20 ms)."""
        known = self.kinds.get(path, _SOURCE_KINDS) if self.kinds is not None else None
        if known is not None:
            return known[0] == "driver"
        found = driver_launches(path)
        if self.kinds is not None:
            self.kinds.put(path, ("driver" if found else "host", set(), set()))
        return found

    def _read(self, path: str) -> tuple[str, set[bytes], set[bytes]] | None:
        """(kind, the launch macros it defines, the kernel macros it defines), None unread."""
        try:
            data = read_regular(path)
        except OSError:
            return None
        launch: set[bytes] = set()
        kernel: set[bytes] = set()
        if (b"<<<" in data or b"__global__" in data) and b"define" in data and \
                _MACRO_HINT.search(data):           # (most headers have neither word)
            from occlint.source.preproc import kernel_macros, launch_macros
            launch.update(launch_macros(data))
            kernel.update(kernel_macros(data))
        if b"<<<" in data:          # a function that launches the kernel its caller passes
            from occlint.source.forwarded import launchers
            launch.update(launchers(path, data))
        if b"__global__" in data:
            return "cuda", launch, kernel
        at = data.find(b"<<<")
        if at >= 0:
            from occlint.source.text import blank_noise  # (helper_image.h prints "<<<")
            while at >= 0:          # a `<<<` its own line does not hold in a string or comment
                start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
                if b"<<<" in blank_noise(data[start:end if end >= 0 else len(data)]):
                    return "cuda", launch, kernel
                at = data.find(b"<<<", end) if end >= 0 else -1
        self.pending[os.path.normpath(path)] = data
        return "maybe", launch, kernel

    def kept(self, path: str) -> bool:
        """Does a header that waited use one of the walk's kernel or launch macros?"""
        from occlint.toolchain.includers import uses_macros
        if path not in self.pending:
            return False
        data = self.pending[path]
        if data is None:
            try:
                data = read_regular(path)
            except OSError:
                return False
        return uses_macros(data, self.launch_macros, self.kernel_macros)

    def save(self) -> None:
        if self.kinds is not None:
            self.kinds.save()


_HEADER_KINDS = ("cuda", "maybe")       # what a header is (_Headers.kind)
_SOURCE_KINDS = ("driver", "host")      # whether a C++ source launches kernels (driver_launches)


class _Kinds:
    """What each header discovery read was found to be (and whether each C++ source launches
    kernels itself: driver_launches), kept in the cache folder (only one that exists: discovery never
    creates it) by the file's inode, size, mtime and ctime, as `hashes.idx` keeps hashes (a
    file changed less than SETTLED_NS ago is not kept)."""

    def __init__(self, cache, key: str, known: dict) -> None:
        self.cache, self.key, self.known, self.added = cache, key, known, False

    @classmethod
    def open(cls, config) -> _Kinds | None:
        """The project's record, read once per run (`preproc.one_run`) and cache folder
        (`kernels` discovers path by path)."""
        from occlint.toolchain.cache import existing

        cache = existing(config) if config is not None else None
        if cache is None:
            return None
        from occlint import results
        from occlint.source.preproc import run_memo

        key = results.key(["header kinds", os.path.abspath(config.root)])
        memo = run_memo("header kinds")
        opened = memo.get((cache.root, key)) if memo is not None else None
        if opened is None:
            note = cache.note(key, KINDS) or {}
            known = note.get("headers")
            opened = cls(cache, key, known if isinstance(known, dict) else {})
            if memo is not None:
                memo[cache.root, key] = opened
        return opened

    @staticmethod
    def _sig(path: str) -> list[int] | None:
        from occlint.toolchain.cache import signature
        try:
            return signature(os.stat(path))
        except OSError:
            return None

    def get(self, path: str, kinds: tuple[str, ...] = _HEADER_KINDS
            ) -> tuple[str, set[bytes], set[bytes]] | None:
        row = self.known.get(os.path.abspath(path))
        sig = self._sig(path) if row is not None else None
        try:
            if sig is not None and row[:4] == sig and row[4] in kinds:
                return row[4], {m.encode("latin-1") for m in row[5]}, \
                    {m.encode("latin-1") for m in row[6]}
        except (TypeError, ValueError, AttributeError, IndexError):
            pass
        return None

    def put(self, path: str, known: tuple[str, set[bytes], set[bytes]]) -> None:
        from occlint.toolchain.cache import settled
        sig = self._sig(path)
        if sig is not None and settled(sig[2], sig[3]):
            kind, launch, kernel = known
            self.known[os.path.abspath(path)] = [*sig, kind, sorted(m.decode("latin-1") for m in launch),
                                                 sorted(m.decode("latin-1") for m in kernel)]
            self.added = True

    def save(self) -> None:
        """Keep the record, with what another process kept since it was read (`kernels`
        discovers its folders in processes: each would otherwise drop the other's rows)."""
        if self.added:
            kept = (self.cache.note(self.key, KINDS) or {}).get("headers")
            rows = {**kept, **self.known} if isinstance(kept, dict) else self.known
            self.cache.keep(self.key, KINDS, {"headers": rows})
            self.added = False


KINDS = ".files"        # a project's header kinds: a small record, as its file list is


def discover(paths, config, python: list[str] | None = None,
             hosts: bool = True, seen: set | None = None) -> tuple[list[str], list[str]]:
    """(CUDA sources, build files) under `paths` (default: the project root). With a `python`
    list, the Python files found are appended to it (CUDA inside Python, occlint.python).
    `hosts=False`: C++ sources only where a database compiles them as CUDA (the units, not
    the driver-API hosts `driver_launches` reads every C++ source for). `seen`: the files
    (`_identity`) an earlier call found, left out, and this call's added."""
    paths = list(paths) or [config.root]
    cuda: list[str] = []
    builds: list[str] = []
    seen = set() if seen is None else seen
    headers = _Headers(config)
    waiting: list = []      # (place in `cuda`, path, its absolute path, name, .gitignore rules)

    def add(path: str, kind: str) -> None:
        key = _identity(path)
        if key in seen:
            return
        seen.add(key)
        (cuda if kind == "cuda" else builds if kind == "build" else python).append(path)

    for given in paths:
        if not os.path.exists(given):
            raise OcclintError(f"{given}: no such file or directory")
        if not os.path.isdir(given):    # a file, or a FIFO/device that reading names and skips
            if not (getattr(config, "force_exclude", False) and excluded(given, config)):
                kind = _wanted(given) or ("python" if python is not None and is_python(given) else "cuda")
                add(given, kind)
            continue
        ignore = GitIgnore()
        root = Path(os.path.abspath(given))
        chain = [p for p in (*reversed(root.parents), root)
                 if (p / ".git").exists() or p == root or inside(p, config.root)]
        for folder in chain:
            ignore.add_file(str(folder))
        for folder, dirs, files in os.walk(given):
            if folder != given:
                ignore.add_file(folder)
            full = os.path.abspath(folder)      # once per folder, not per entry
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                             and not ignore.ignored_at(os.path.join(full, d), d, True)
                             and not excluded(os.path.join(folder, d), config))
            for name in sorted(files):
                if not name.endswith(_SUFFIXES) and name not in BUILD_NAMES:
                    continue                    # no kind: not joined, stat'ed or read
                path = os.path.join(folder, name)
                kind = _wanted(path, config, headers, hosts) or ("python" if python is not None and
                                                 is_python(path) and names_a_framework(path)
                                                 else None)
                if kind == "maybe":         # decided once the walk has read every header
                    waiting.append((len(cuda), path, os.path.join(full, name), name, ignore))
                elif kind and not ignore.ignored_at(os.path.join(full, name), name, False) \
                        and not excluded(path, config):
                    add(os.path.normpath(path), kind)
    if waiting and (headers.launch_macros or headers.kernel_macros):
        cuda = _with_waiting(cuda, waiting, headers, config, seen)
    headers.save()
    return cuda, builds


def discover_each(paths: list[str], config, jobs: int | None = None) -> list[str]:
    """The CUDA and Python files of each of `paths` (they exist), path by path as
    `discover([path], config, python=...)` finds them (`kernels`), a file two paths name
    listed once, at the first. Two or more folders are discovered in up to `jobs` processes
    (`process.fork_map`; the bench's four folders: 0.06 s, half of what came before the
    listing's own fork); the files are the same, in the same order."""
    def one(path: str, seen: set | None = None) -> list[str]:
        python: list[str] = []
        return discover([path], config, python=python, seen=seen)[0] + python

    seen: set = set()
    workers = min(jobs or os.cpu_count() or 1, len(paths))
    if workers < 2 or sum(os.path.isdir(p) for p in paths) < 2:
        return [f for p in paths for f in one(p, seen)]
    from occlint.process import fork_map

    out = []
    for found in fork_map(one, list(paths), workers):
        for f in found:
            key = _identity(f)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def _with_waiting(found: list[str], waiting: list, headers: _Headers, config, seen: set) -> list[str]:
    """`found` with the waiting headers that use a kernel or launch macro of the walk, each at
    its place in the walk's order (the .gitignore and `exclude` tests made only for them)."""
    out: list[str] = []
    i = 0
    for place, path, full_path, name, ignore in waiting:
        out += found[i:place]
        i = place
        norm = os.path.normpath(path)
        if headers.kept(norm) and not ignore.ignored_at(full_path, name, False) and \
                not excluded(path, config):
            key = _identity(norm)
            if key not in seen:
                seen.add(key)
                out.append(norm)
    return out + found[i:]


def _identity(path: str):
    """What makes two names one file: its device and inode (one stat, where realpath lstats every
    folder of the path), else its resolved path."""
    try:
        st = os.stat(path)
        if st.st_ino:
            return (st.st_dev, st.st_ino)
    except OSError:
        pass
    return os.path.realpath(path)
