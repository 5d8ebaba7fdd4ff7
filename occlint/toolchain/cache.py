"""Content-addressed compile cache (ccache's "direct mode").

An entry's key hashes the toolchain (nvcc and host compiler versions), the normalized flags,
the arch, the working directory, the file's path and its bytes. The entry names the list of the
headers the compile read (gcc -MD in nvcc's device preprocessing pass: no extra process) with
their hashes, a file of its own named by its hash, which a unit's archs share (read and checked
once per run); a hit needs every one of them unchanged. A failed compile is stored when its dependency list is
complete (preprocessing succeeded), or when it failed on a missing header, with what could make
it pass (occlint.toolchain.failure): a missing header must not stick once it exists.

Writes are atomic (temp file in the same directory + os.replace), so several occlint processes
may share the cache; an unreadable entry is a miss and is rewritten. Oldest entries are evicted
beyond `max_bytes`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from pathlib import Path

from occlint.config import Config
from occlint.files import read_regular

FORMAT = 9          # 2: usages carry the cubin's launch attributes; 3: remembered failures;
                    # 4: dependency lists stored once, named by their hash; 5: -rdc units'
                    # figures from the device-linked cubin (toolchain.devlink); 6: a compile's
                    # warnings, said again on a hit; 7: an error a template instantiation led
                    # into a header is the instantiating line's (ptxas._at_instantiations);
                    # 8: an error carries the unit's line of the include chain that led to it;
                    # 9: usages carry the spills of the functions a kernel calls, not inlined
TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# occlint compile cache: `occlint clean` removes it\n"
MAX_BYTES = 256 * 1024 * 1024


def cache_dir(config: Config) -> Path:
    if config.cache_dir:
        p = Path(config.cache_dir)
        return p if p.is_absolute() else Path(config.root) / p
    return Path(config.root) / ".occlint_cache"


GITIGNORE = "# created by occlint\n*\n"
_ENTRY = re.compile(r"[0-9a-f]{64}\.json\Z")        # a compile's result
# a dependency list; a run's findings; a project's file list (libraries.project_files); a
# Python file's extension entries (python.build_entries)
_OTHER = re.compile(r"[0-9a-f]{64}\.(deps|findings|files|ext)\Z")
LIST, FINDINGS = ".deps", ".findings"
_SUBDIR = re.compile(r"[0-9a-f]{2}\Z")


def looks_like_cache(path: Path) -> bool:
    """True for a real folder (not a link) that holds occlint's CACHEDIR.TAG."""
    tag = path / "CACHEDIR.TAG"
    try:
        if path.is_symlink() or not path.is_dir() or tag.is_symlink():
            return False
        return read_regular(tag).decode("utf-8").startswith(TAG.split("\n")[0] + "\n# occlint")
    except (OSError, ValueError):
        return False


def claim(root: Path) -> bool:
    """Make `root` occlint's cache folder, or say it cannot be: a folder that does not exist
    is created with CACHEDIR.TAG and .gitignore; an existing one must already carry occlint's
    tag. Never writes over an existing file."""
    if looks_like_cache(root):
        return True
    try:
        root.mkdir(parents=True)
    except OSError:
        return False             # someone else's folder (`cache-dir = "."`): never written
    for name, text in (("CACHEDIR.TAG", TAG), (".gitignore", GITIGNORE)):
        try:
            fd = os.open(root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue         # another occlint got there first
        except OSError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    return looks_like_cache(root)


HASHES = "hashes.idx"     # JSON; not *.json, which names cache entries
SETTLED_NS = 2_000_000_000     # a file changed this recently is hashed again next run (ccache's rule)
MAX_HASHES = 50_000            # remembered files; beyond it, only the last run's are kept


def signature(st: os.stat_result) -> list[int]:
    """What says a file is unchanged without reading it: inode, size, mtime and ctime."""
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def settled(*times_ns: int) -> bool:
    """Are these changes SETTLED_NS old, so that one within the clock's granularity after them
    cannot have gone unseen? Only then is what was read kept by a stat (git's racy rule)."""
    return max(times_ns, default=0) < time.time_ns() - SETTLED_NS


class FileHashes:
    """sha256 of files, memoized for one run (headers are shared by many files and archs). With
    a cache folder, the hashes are also remembered in its `hashes.idx` with each file's inode,
    size, mtime and ctime: a later run whose stat finds all four the same takes the hash
    without reading the file (a warm run's ~300 toolkit headers). A write changes ctime, which
    no program can set back, and a file is remembered only once its ctime and mtime are
    SETTLED_NS old, so a change within the clock's granularity is never missed."""

    def __init__(self, root: Path | None = None) -> None:
        self._memo: dict[str, str | None] = {}
        self._root = root
        self._known: dict[str, list] | None = None   # path -> [ino, size, mtime, ctime, sha256]
        self._added = 0

    def __call__(self, path: str) -> str | None:
        if path not in self._memo:
            self._memo[path] = self._hash(path)
        return self._memo[path]

    def _hash(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None                        # a FIFO, tty or device is never read
        sig = signature(st)
        known = self._stored().get(path)
        if known is not None and known[:4] == sig:
            return known[4]
        try:
            digest = hashlib.sha256(read_regular(path)).hexdigest()
        except (OSError, ValueError):          # gone or unreadable
            return None
        if self._root is not None and settled(st.st_mtime_ns, st.st_ctime_ns):
            self._stored()[path] = [*sig, digest]
            self._added += 1
        return digest

    def _stored(self) -> dict[str, list]:
        if self._known is None:
            self._known = {}
            if self._root is not None and looks_like_cache(self._root):
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    data = json.loads(read_regular(self._root / HASHES).decode("utf-8"))
                    if data["format"] == FORMAT:
                        self._known = {p: v for p, v in data["files"].items()
                                       if isinstance(v, list) and len(v) == 5
                                       and all(isinstance(x, int) for x in v[:4])
                                       and isinstance(v[4], str)}
        return self._known

    def save(self) -> None:
        """Write `hashes.idx` when this run hashed files it did not know (atomically; into a
        folder occlint created only, never through a link)."""
        if not self._added or self._root is None or self._known is None:
            return
        self._added = 0
        known = self._known
        if len(known) > MAX_HASHES:
            known = {p: v for p, v in known.items() if p in self._memo}
        target = self._root / HASHES
        try:
            if not claim(self._root) or target.is_symlink():
                return
            fd, tmp = tempfile.mkstemp(dir=self._root, prefix=".tmp-hashes-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": FORMAT, "files": known}, fh, separators=(",", ":"))
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            pass          # a read-only or full disk never fails a lint


class Cache:
    def __init__(self, root: Path, max_bytes: int = MAX_BYTES) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.hashes = FileHashes(self.root)
        self._verified: dict[str, bool] = {}    # dependency list -> unchanged, in this run
        self._lists: dict[str, list | None] = {}  # dependency list -> its (path, hash) pairs
        self.hits = self.misses = self.writes = 0
        self.refused = False     # the folder is not occlint's: nothing is written

    def key(self, toolchain: str, flags: list[str], arch: str, cwd: str, path: str) -> str | None:
        content = self.hashes(os.path.abspath(os.path.join(cwd, path)))
        if content is None:
            return None
        h = hashlib.sha256()
        for part in (str(FORMAT), toolchain, "\0".join(flags), arch, cwd, path, content):
            h.update(part.encode("utf-8", "surrogateescape"))
            h.update(b"\x1f")
        return h.hexdigest()

    def _unchanged(self, deps_id: str) -> bool:
        """Does every (path, sha256) of the stored list `deps_id` still hold? A unit's archs
        share one list, so a list is read and walked once per run (9 archs x ~350 headers)."""
        if deps_id not in self._verified:
            deps = self._deps(deps_id)
            self._verified[deps_id] = deps is not None and all(self.hashes(p) == h for p, h in deps)
        return self._verified[deps_id]

    def _deps(self, deps_id: str) -> list | None:
        """The stored dependency list `deps_id` ([[path, sha256 | None], ...]), or None."""
        if deps_id not in self._lists:
            found = None
            try:
                data = json.loads(read_regular(self._entry(deps_id, LIST)).decode("utf-8"))
                listed = data["list"]
                if data.get("format") == FORMAT and isinstance(listed, list) and all(
                        isinstance(d, list) and len(d) == 2 and isinstance(d[0], str)
                        and isinstance(d[1], (str, type(None))) for d in listed) \
                        and _digest(listed) == deps_id:
                    found = listed
                    with contextlib.suppress(OSError):
                        os.utime(self._entry(deps_id, LIST))      # used: evicted last
            except (OSError, ValueError, KeyError, TypeError):
                pass
            self._lists[deps_id] = found
        return self._lists[deps_id]

    def _entry(self, key: str, suffix: str = ".json") -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def get(self, key: str, suffix: str = ".json") -> dict | None:
        """The stored result, with its dependency list as "deps", when every recorded
        dependency is unchanged; else None. `suffix`: the kind of entry (FINDINGS: a run's)."""
        path = self._entry(key, suffix)
        try:
            data = json.loads(read_regular(path).decode("utf-8"))
            ok = data.get("format") == FORMAT and isinstance(data["deps_id"], str) \
                and self._unchanged(data["deps_id"])
            if ok and "failure" in data:            # a missing header: still missing?
                from occlint.toolchain.failure import holds
                ok = holds(data["failure"])
            if ok:
                data["deps"] = self._lists[data["deps_id"]]
        except (OSError, ValueError, KeyError, TypeError):
            ok, data = False, None
        if not ok:
            self.misses += 1
            return None
        self.hits += 1
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used goes first
        return data

    def put(self, key: str, deps: list[str], result: dict, *, absent_ok: bool = False,
            suffix: str = ".json") -> None:
        """Store `result` with the hashes of `deps` (absolute paths the compile read), the list
        in a file of its own named by its hash (shared by the entries that read the same files).
        `absent_ok`: a dependency that does not exist is recorded as absent (a hit needs it
        still absent), instead of leaving the result unstored."""
        recorded = []
        for dep in deps:
            digest = self.hashes(dep)
            if digest is None and not absent_ok:
                return  # a dependency vanished: do not store what cannot be verified
            recorded.append([dep, digest])
        deps_id = _digest(recorded)
        if self.refused or not claim(self.root):
            self.refused = True
            return
        if self._deps(deps_id) is None:
            if not self._write(self._entry(deps_id, LIST), {"format": FORMAT, "list": recorded}):
                return
            self._lists[deps_id] = recorded
        self._verified[deps_id] = True
        if self._write(self._entry(key, suffix), {"format": FORMAT, "deps_id": deps_id, **result}):
            self.writes += 1

    def note(self, key: str, suffix: str) -> dict | None:
        """A small record kept by `keep` (no dependency list: its reader checks it)."""
        try:
            data = json.loads(read_regular(self._entry(key, suffix)).decode("utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    def keep(self, key: str, suffix: str, data: dict) -> None:
        """Store a small record under `key` (never into a folder occlint did not create)."""
        if self.refused or not claim(self.root):
            self.refused = True
            return
        self._write(self._entry(key, suffix), {"format": FORMAT, **data})

    def _write(self, path: Path, data: dict) -> bool:
        """Write one file atomically; False when it cannot be written."""
        try:
            with contextlib.suppress(FileExistsError):
                path.parent.mkdir()
            if path.parent.is_symlink() or path.is_symlink():
                return False     # a planted link: never write through it
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(data, fh, separators=(",", ":"))
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return True
        except OSError:
            return False  # a read-only or full disk never fails a lint

    def evict(self) -> int:
        """Remove the least recently used entries beyond max_bytes; returns how many."""
        entries = []
        total = 0
        for path, st in iter_entries(self.root):
            entries.append((st.st_mtime, st.st_size, path))
            total += st.st_size
        removed = 0
        for _mtime, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
                total -= size
                removed += 1
            except OSError:
                pass
        return removed


def _digest(recorded: list) -> str:
    """A dependency list's name: the hash of its (path, sha256) pairs."""
    h = hashlib.sha256()
    for path, digest in recorded:
        h.update(f"{path}\0{digest}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def existing(config: Config) -> Cache | None:
    """The config's cache, where its folder already is one (and `no-cache` is off): for the
    readers that keep small records there but never create the folder (discovery's header
    kinds, a source view's project file list)."""
    if config.no_cache:
        return None
    root = cache_dir(config)
    return Cache(root) if looks_like_cache(root) else None


def iter_entries(root: Path, *, temporary: bool = False):
    """(path, stat) for every stored file: `xx/<sha256>.json` (a compile's result), `.deps`
    (a dependency list), `.findings` (a run's findings) and `.files` (a project's file list)
    regular files (and with `temporary`, the `.tmp-*` files an interrupted write left) and
    nothing else."""
    try:
        subdirs = list(os.scandir(root))
    except OSError:
        return
    for sub in subdirs:
        if not _SUBDIR.match(sub.name) or not sub.is_dir(follow_symlinks=False):
            continue
        try:
            for f in os.scandir(sub.path):
                ours = _ENTRY.match(f.name) or _OTHER.match(f.name) or (temporary and f.name.startswith(".tmp-")
                                                and f.name.endswith(".json"))
                if ours and f.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        yield f.path, f.stat(follow_symlinks=False)
        except OSError:
            pass


def remove(root: Path) -> tuple[int, int]:
    """Delete what occlint wrote in the cache `root` (entries, then the folders and the tag
    files once nothing else is left); anything else stays. Returns (compile results, bytes)
    removed."""
    count = size = 0
    for path, st in list(iter_entries(root, temporary=True)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            count += bool(_ENTRY.match(os.path.basename(path)))
            size += st.st_size
    for sub in list(os.scandir(root)):
        if _SUBDIR.match(sub.name) and sub.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.rmdir(sub.path)          # only when empty
        elif (sub.name in ("probes.db", "includers.idx", HASHES)
              or sub.name.startswith((".tmp-probes-", ".tmp-hashes-"))) \
                and sub.is_file(follow_symlinks=False):    # probes, includers, file hashes
            with contextlib.suppress(OSError):
                os.unlink(sub.path)
    left = {e.name for e in os.scandir(root)}
    if left <= {"CACHEDIR.TAG", ".gitignore"}:
        for name, text in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", TAG)):
            file = root / name
            with contextlib.suppress(OSError):
                if not file.is_symlink() and read_regular(file).decode("utf-8") == text:
                    file.unlink()
        with contextlib.suppress(OSError):
            os.rmdir(root)
    return count, size


def stats(root: Path) -> tuple[int, int]:
    """(compile results stored, total bytes with the dependency lists and findings)."""
    count = size = 0
    for path, st in iter_entries(root):
        count += bool(_ENTRY.match(os.path.basename(path)))
        size += st.st_size
    return count, size


def parse_depfile(text: str) -> list[str]:
    """Paths in a make-style dependency file (`x.o : a.cu \\` ...)."""
    text = text.replace("\\\n", " ")
    out: list[str] = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        _target, _, rest = line.partition(": ")
        if not _:
            _target, _, rest = line.partition(":")
        # paths are space-separated; `\ ` escapes a space
        for token in rest.replace("\\ ", "\x00").split():
            out.append(token.replace("\x00", " "))
    return list(dict.fromkeys(out))
