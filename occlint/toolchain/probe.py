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
import tempfile
import threading
from pathlib import Path

from occlint.files import read_regular

FORMAT = 1
_memo: dict[str, str] = {}                 # this process: key -> output
_stores: dict[str, dict] = {}              # cache folder -> its loaded probes.db
_dirty: set[str] = set()
_loading = threading.Lock()


def _stat(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino]


def _run(cmd: list[str], timeout: float) -> str | None:
    """stdout + stderr; None when it cannot run or times out (its process group is killed and
    dies with occlint: occlint.process)."""
    from occlint.process import run

    try:
        code, out, _ = run(cmd, timeout=timeout)
    except (OSError, ValueError):
        return None
    return out.decode("utf-8", "replace") if code is not None else None


def _load(root: str) -> dict:
    with _loading:      # probes run in threads (discover._prefetch): one store per folder
        return _load_locked(root)


def _load_locked(root: str) -> dict:
    if root not in _stores:
        try:
            data = json.loads(read_regular(Path(root) / "probes.db").decode("utf-8"))
            ok = isinstance(data, dict) and data.get("format") == FORMAT
            _stores[root] = data["probes"] if ok and isinstance(data.get("probes"), dict) else {}
        except (OSError, ValueError, KeyError):
            _stores[root] = {}
    return _stores[root]


def run(cmd: list[str], cache_root: str | os.PathLike | None = None, *,
        depends_on: tuple[str, ...] = (), timeout: float = 30, failed=""):
    """stdout + stderr of `cmd` (a probe: no input, no side effects), remembered while
    `cmd[0]` and `depends_on` are unchanged. `failed` ("") when it cannot run or times out."""
    key = "\0".join(cmd)
    deps = [_stat(p) for p in (cmd[0], *depends_on)]
    if None in deps:                       # a missing binary: nothing to remember
        got = _run(cmd, timeout)
        return failed if got is None else got
    memo_key = key + "\0" + json.dumps(deps)
    if memo_key in _memo:
        return _memo[memo_key]
    root = str(cache_root) if cache_root is not None else None
    store = _load(root) if root else {}
    entry = store.get(key)
    if isinstance(entry, dict) and entry.get("deps") == deps and isinstance(entry.get("out"), str):
        out = entry["out"]
    else:
        got = _run(cmd, timeout)
        if got is None:                    # failed or timed out: never remembered
            return failed
        out = got
        if root:
            store[key] = {"deps": deps, "out": out}
            _dirty.add(root)
            save(root)
    _memo[memo_key] = out
    return out


_saving = threading.Lock()


def save(root: str) -> None:
    """Write the cache folder's probes atomically; a read-only disk never fails a lint. One
    writer at a time, each with every answer known when it starts (two probe threads finish
    together: the file written last lacked the other's answer)."""
    with _saving:
        _save(root)


def _save(root: str) -> None:
    if root not in _dirty:
        return
    _dirty.discard(root)
    from occlint.toolchain.cache import claim

    try:
        if not claim(Path(root)) or Path(root, "probes.db").is_symlink():
            return                         # not occlint's folder: written nowhere
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".tmp-probes-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"format": FORMAT, "probes": dict(_stores[root])}, fh)
            os.replace(tmp, Path(root) / "probes.db")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass
