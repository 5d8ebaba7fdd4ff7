"""Remembered tool probes: `nvcc --version`, `nvcc -dryrun`, `nvcc --list-gpu-arch`,
`g++ -dumpfullversion`. Each takes 50-100 ms and their answers only change when the binary does,
so a warm run reads them from `probes.db` (JSON) in the cache folder instead of spawning them.

An answer is valid while every file it depends on (the probed binary, and for a wrapper script
the real nvcc behind it) keeps its path, size, mtime and inode. Without a cache folder (or with
`--no-cache`) answers are remembered for the process only.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

FORMAT = 1
_memo: dict[str, str] = {}                 # this process: key -> output
_stores: dict[str, dict] = {}              # cache folder -> its loaded probes.db
_dirty: set[str] = set()


def _stat(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino]


def _run(cmd: list[str], timeout: float) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout + proc.stderr


def _load(root: str) -> dict:
    if root not in _stores:
        try:
            data = json.loads((Path(root) / "probes.db").read_text(encoding="utf-8"))
            ok = isinstance(data, dict) and data.get("format") == FORMAT
            _stores[root] = data["probes"] if ok and isinstance(data.get("probes"), dict) else {}
        except (OSError, ValueError, KeyError):
            _stores[root] = {}
    return _stores[root]


def run(cmd: list[str], cache_root: str | os.PathLike | None = None, *,
        depends_on: tuple[str, ...] = (), timeout: float = 30) -> str:
    """stdout + stderr of `cmd` (a probe: no input, no side effects), remembered while
    `cmd[0]` and `depends_on` are unchanged. "" when it cannot run."""
    key = "\0".join(cmd)
    deps = [_stat(p) for p in (cmd[0], *depends_on)]
    if None in deps:                       # a missing binary: nothing to remember
        return _run(cmd, timeout)
    memo_key = key + "\0" + json.dumps(deps)
    if memo_key in _memo:
        return _memo[memo_key]
    root = str(cache_root) if cache_root is not None else None
    store = _load(root) if root else {}
    entry = store.get(key)
    if isinstance(entry, dict) and entry.get("deps") == deps and isinstance(entry.get("out"), str):
        out = entry["out"]
    else:
        out = _run(cmd, timeout)
        if root:
            store[key] = {"deps": deps, "out": out}
            _dirty.add(root)
            save(root)
    _memo[memo_key] = out
    return out


def save(root: str) -> None:
    """Write the cache folder's probes atomically; a read-only disk never fails a lint."""
    if root not in _dirty:
        return
    _dirty.discard(root)
    from occlint.toolchain.cache import Cache

    try:
        Cache(Path(root))._ensure_root()
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-probes-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "probes": _stores[root]}, fh)
            os.replace(tmp, Path(root) / "probes.db")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass
