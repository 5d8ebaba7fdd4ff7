"""`json-lines`: one JSON object per finding per line, the same objects as `json`.

Also home of `relative_path`, which every format with project-relative paths uses.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from occlint.emit.encode import dumps
from occlint.model import Finding


def relative_path(path: str, root: str) -> str:
    """`path` (absolute, or relative to the working directory) relative to `root`, with forward
    slashes; absolute when it lies outside `root`."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(root))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return full.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str:
    from occlint.emit.json import finding_dict

    return "".join(dumps(finding_dict(f)) + "\n" for f in findings)
