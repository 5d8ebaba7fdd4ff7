"""Compilation databases, found per file as clangd finds them.

`database_for(path, config)`: the config's `compile-commands` when set; else, walking up from the
file's folder, the first `compile_commands.json` beside an ancestor or in one of its `build*/`
folders. `Database.entry_for(path)` is the file's own entry, or for a file with none (a header,
a new file) the closest entry's command with the file swapped in, as clangd's interpolating
database does: same folder first, then the longest common path, a same-stem unit preferred.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from occlint.config import Config
from occlint.errors import OcclintError
from occlint.files import real_path
from occlint.record import dataclass

NAME = "compile_commands.json"


@dataclass(frozen=True)
class Entry:
    """One compile command for `file`; `borrowed_from` names the unit whose command it copies."""
    file: str                      # real path of the file this entry compiles
    directory: str
    arguments: tuple[str, ...]     # the whole command, compiler (and launchers) included
    database: str                  # the compile_commands.json it came from
    source: str                    # the entry's own `file`, as written
    borrowed_from: str | None = None


def entry_arguments(entry: dict) -> list[str]:
    if isinstance(entry.get("arguments"), list):
        return [str(a) for a in entry["arguments"]]
    return split_command(str(entry.get("command", "")))


# shlex.split's words (POSIX mode): bare text, a backslash-escaped character, '...', "..." (where
# a backslash escapes only `"` and `\`), separated by spaces, tabs, CR and LF.
_WORD_PART = re.compile(r"""([^ \t\r\n'"\\]+)|\\(.)|'([^']*)'|"((?:[^"\\]|\\.)*)"|([ \t\r\n]+)""", re.S)
_QUOTED_ESCAPE = re.compile(r'\\(["\\])')


def split_command(command: str, strict: bool = False) -> list[str]:
    """shlex.split(command), in one regular-expression pass (shlex takes seconds on a large
    compilation database); shlex itself for what the pass rejects (a final backslash), and the
    blank-separated words of a command shlex rejects too (an open quote), or with `strict`
    shlex's ValueError."""
    words: list[str] = []
    word: list[str] | None = None
    pos, n = 0, len(command)
    while pos < n:
        m = _WORD_PART.match(command, pos)
        if m is None:
            import shlex

            try:
                return shlex.split(command)
            except ValueError:      # an open quote: no shell would run it; its words, as written
                if strict:
                    raise
                return command.split()
        pos = m.end()
        kind = m.lastindex
        if kind == 5:
            if word is not None:
                words.append("".join(word))
                word = None
            continue
        text = m.group(kind)
        if kind == 4:
            text = _QUOTED_ESCAPE.sub(r"\1", text)
        if word is None:
            word = []
        word.append(text)
    if word is not None:
        words.append("".join(word))
    return words


class _Entries(dict):
    """real path -> Entry, each made (its command split) when first read: a project's database
    has hundreds of entries and a run reads a few of them."""

    def __getitem__(self, real: str) -> Entry:
        got = dict.__getitem__(self, real)
        if isinstance(got, Entry):
            return got
        directory, item, path, source = got
        entry = Entry(real, directory, tuple(entry_arguments(item)), path, source)
        dict.__setitem__(self, real, entry)
        return entry

    def get(self, real, default=None):
        return self[real] if dict.__contains__(self, real) else default

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]


class Database:
    def __init__(self, path: str, raw: list[dict]):
        self.path = path
        self.raw = raw
        self.entries: dict[str, Entry] = _Entries()    # real path -> first entry (as clangd)
        folders: dict[str, str] = {}
        self.real_paths = folders       # files.real_path's memo, kept for lookups of this tree
        for item in raw:
            directory = str(item.get("directory", "."))
            source = str(item.get("file", ""))
            if not source:
                continue
            real = real_path(os.path.join(directory, source), folders)
            if real not in self.entries:
                dict.__setitem__(self.entries, real, (directory, item, path, source))
        self._folders: dict[str, list[str]] = {}
        self._near: dict[str, dict[str, int]] = {}     # folder -> _nearest_folders(folder)
        self._under: dict[str, list[str]] | None = None
        for real in self.entries:
            self._folders.setdefault(os.path.dirname(real), []).append(real)

    def __len__(self) -> int:
        return len(self.raw)

    def units(self, suffixes: tuple[str, ...] = (".cu",)) -> list[str]:
        return [p for p in self.entries if p.endswith(suffixes)]

    def entry_for(self, path: str) -> Entry | None:
        real = os.path.realpath(path)
        exact = self.entries.get(real)
        if exact is not None:
            return exact
        donor = self._closest(real)
        if donor is None:
            return None
        return Entry(real, donor.directory, donor.arguments, self.path, donor.source,
                     borrowed_from=donor.file)

    def _closest(self, real: str) -> Entry | None:
        """The entry whose file is nearest to `real`: same folder, else the longest common
        path; then a same-stem file, a CUDA unit, a shorter distance, the name."""
        if not self.entries:
            return None
        stem = _stem(real)
        folder = os.path.dirname(real)
        near = self._near.get(folder)
        if near is None:
            near = self._near[folder] = self._nearest_folders(folder)

        best = min((_stem(c) != stem, not c.endswith(".cu"), depth, c)
                   for where, depth in near.items() for c in self._folders[where])
        return self.entries[best[-1]]

    def _nearest_folders(self, folder: str) -> dict[str, int]:
        """The entries' folders that share the most of `folder`'s path (`folder` itself when it
        has entries), each -> its depth below the common path."""
        if folder in self._folders:
            return {folder: 0}
        if self._under is None:         # each ancestor of an entry's folder -> those folders
            self._under = {}
            for where in self._folders:
                above = where
                while True:
                    self._under.setdefault(above, []).append(where)
                    parent = os.path.dirname(above)
                    if parent == above:
                        break
                    above = parent
        above = folder                  # the deepest ancestor `folder` shares with an entry
        while above not in self._under and os.path.dirname(above) != above:
            above = os.path.dirname(above)
        under = self._under.get(above)
        if not under:                   # (a relative path shares nothing)
            return {where: 0 for where in self._folders}
        most = len(above.split(os.sep))
        return {where: len(where.split(os.sep)) - most for where in under}


def _stem(path: str) -> str:
    name = os.path.basename(path)
    return name.split(".", 1)[0]


_LOADED: dict[tuple[str, int, int], Database] = {}


def load(path: str) -> Database:
    """The database at `path` (memoized on path, size and modification time)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise OcclintError(f"cannot read {path}: {exc.strerror or exc}") from None
    key = (path, st.st_size, st.st_mtime_ns)
    if key in _LOADED:
        return _LOADED[key]
    from occlint.files import read_regular
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise OcclintError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, list):
        raise OcclintError(f"{path}: expected a JSON list of compile commands")
    db = Database(path, [e for e in data if isinstance(e, dict)])
    _LOADED[key] = db
    return db


def configured_path(config: Config) -> str | None:
    """The config's `compile-commands` (a file, or a folder holding one), checked."""
    if not config.compile_commands:
        return None
    path = Path(config.compile_commands)
    path = path if path.is_absolute() else Path(config.root) / path
    if path.is_dir():
        path = path / NAME
    if not path.is_file():
        raise OcclintError(f"compile_commands.json not found: {path}")
    return str(path)


_BESIDE: dict[str, str | None] = {}


def _in_folder(folder: str) -> str | None:
    """compile_commands.json in `folder`, else in its build*/ folders (sorted), else None."""
    if folder not in _BESIDE:
        found = None
        direct = os.path.join(folder, NAME)
        if os.path.isfile(direct):
            found = direct
        else:
            try:
                names = sorted(n for n in os.listdir(folder) if n.startswith("build"))
            except OSError:
                names = []
            for name in names:
                cand = os.path.join(folder, name, NAME)
                if os.path.isfile(cand):
                    found = cand
                    break
        _BESIDE[folder] = found
    return _BESIDE[folder]


def find_for(path: str, config: Config) -> str | None:
    """The compile_commands.json that governs `path` (see the module docstring)."""
    configured = configured_path(config)
    if configured:
        return configured
    here = os.path.abspath(path)
    folder = here if os.path.isdir(here) else os.path.dirname(here)
    while True:
        found = _in_folder(folder)
        if found:
            return found
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def database_for(path: str, config: Config) -> Database | None:
    found = find_for(path, config)
    return load(found) if found else None


def entry_for(path: str, config: Config) -> Entry | None:
    """The compile command for `path`: its own, or one borrowed from the closest entry."""
    db = database_for(path, config)
    return db.entry_for(path) if db is not None else None


_CUDA_LANGUAGE = frozenset(("-xcu", "-xcuda", "-x=cu", "--x=cu", "-x=cuda"))


def compiled_as_cuda(path: str, config: Config) -> bool:
    """Does the compilation database compile this file, by its own entry, as CUDA (`nvcc -x cu
    -c main.cpp`: CMake's `LANGUAGE CUDA` on a .cpp, miniBUDE, cuda_memtest; clang's `-x
    cuda`)? The one home of "a C++ source is a CUDA unit" (discover.is_unit asks it)."""
    db = database_for(path, config)
    entry = db.entries.get(real_path(path, db.real_paths)) if db is not None else None
    return entry is not None and cuda_language(entry.arguments)


def cuda_language(args) -> bool:
    """A compile command's `-x cu` (nvcc) or `-x cuda` (clang): its source is CUDA whatever its
    suffix."""
    return any(a in _CUDA_LANGUAGE or (a in ("-x", "--x") and i + 1 < len(args) and
                                       args[i + 1] in ("cu", "cuda"))
               for i, a in enumerate(args))


def forget_folders() -> None:
    """Forget where databases were found (a build folder may appear between two runs of the
    language server); loaded databases stay memoized on their modification time."""
    _BESIDE.clear()
