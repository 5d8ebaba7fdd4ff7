"""Versioned JSON documents that occlint writes and reads back (baselines, lockfiles)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TypeVar

from occlint.errors import OcclintError
from occlint.files import read_regular

T = TypeVar("T")


def load(file: str, *, version: int, kind: str, missing: str, parse: Callable[[dict], T]) -> T:
    """`parse(document)`; a missing, malformed or other-version file is one OcclintError line
    (`missing` when it does not exist, else naming the `kind` of document expected)."""
    if not os.path.isfile(file):
        raise OcclintError(missing)
    try:
        doc = json.loads(read_regular(file).decode("utf-8"))
        if doc.get("version") != version:
            raise ValueError(f"unsupported version {doc.get('version')!r}")
        return parse(doc)
    except OSError as exc:
        raise OcclintError(f"cannot read {file}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OcclintError(f"{file} is not an occlint {kind}: {exc}") from None
