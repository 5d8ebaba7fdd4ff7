"""Versioned JSON documents that occlint writes and reads back (baselines, lockfiles)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TypeVar

from occlint.errors import OcclintError

T = TypeVar("T")


def load(file: str, *, version: int, kind: str, missing: str, parse: Callable[[dict], T]) -> T:
    """`parse(document)`; a missing, malformed or other-version file is one OcclintError line
    (`missing` when it does not exist, else naming the `kind` of document expected)."""
    if not os.path.isfile(file):
        raise OcclintError(missing)
    try:
        with open(file, encoding="utf-8") as fh:
            doc = json.load(fh)
        if doc.get("version") != version:
            raise ValueError(f"unsupported version {doc.get('version')!r}")
        return parse(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OcclintError(f"{file} is not an occlint {kind}: {exc}") from None
