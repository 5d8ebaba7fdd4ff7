"""Sidecars: `<object>.occlint.json`, written by `occlint nvcc` and merged by `occlint report`."""

from __future__ import annotations

import json
import os

from occlint.files import read_regular

# Kept light (no occlint.model at import): `occlint nvcc` runs once per compile.

SUFFIX = ".occlint.json"
FORMAT = 1


def sidecar_path(obj: str) -> str:
    return obj + SUFFIX


def write_sidecar(obj: str, sources: list[str], records: list[dict], lacks: tuple[str, ...],
                  compressed: list[str]) -> str:
    """Write atomically beside `obj` (records: cubin.cubin_records); returns the sidecar path."""
    data = {
        "format": FORMAT,
        "tool": "occlint nvcc",
        "object": os.path.abspath(obj),
        "sources": [os.path.abspath(s) for s in sources],
        "lacks": list(lacks),                 # figures the cubin does not record
        "compressed_skipped": compressed,     # archs whose cubins could not be read
        "kernels": records,
    }
    path = sidecar_path(obj)
    tmp = f"{path}.{os.getpid()}.tmp"     # unique per process; no tempfile import per compile
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def read_sidecar(path: str | os.PathLike) -> dict | None:
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return data


def load_sidecars(build_dir: str | os.PathLike) -> dict[str, tuple]:
    """Absolute source path -> its usage, merged over every sidecar under `build_dir`
    (an object compiled twice counts once per (entry, arch)). Unreadable sidecars are skipped."""
    from occlint.toolchain.cubin import usage_from_record

    merged: dict[str, dict] = {}
    for dirpath, dirnames, filenames in os.walk(build_dir):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SUFFIX):
                continue
            data = read_sidecar(os.path.join(dirpath, name))
            if data is None:
                continue
            for source in data.get("sources", []):
                slot = merged.setdefault(source, {})
                for raw in data.get("kernels", []):
                    try:
                        u = usage_from_record(raw, source)
                    except (KeyError, TypeError):
                        continue
                    slot.setdefault((u.mangled, u.arch), u)
    return {src: tuple(v.values()) for src, v in sorted(merged.items())}
