"""Resolve a launch's or attribute call's callee to a kernel defined in the file."""

from __future__ import annotations

import re
from collections.abc import Iterable

from occlint.model import AttributeCall, Kernel, Launch, SourceFile

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_CAST = re.compile(r"^\(\s*(const\s+)?void\s*\*\s*\)")


def normalize_callee(text: str) -> str:
    """`&ns::k<256>` / `(void*)k` / `::k` -> `ns::k` / `k` / `k`."""
    s = "".join(text.split())
    s = _CAST.sub("", s).lstrip("&").strip("()").lstrip("&")
    for _ in range(8):
        t = _TEMPLATE_ARGS.sub("", s)
        if t == s:
            break
        s = t
    return s.lstrip(":")


def find_kernel(sf_or_kernels: SourceFile | Iterable[Kernel],
                launch_or_name: Launch | AttributeCall | str) -> Kernel | None:
    """The kernel a callee names: an exact qualified match, else the one kernel whose qualified
    name ends with it (`k` -> `ns::k`); None when absent or ambiguous. A definition is preferred
    to a prototype of the same name."""
    kernels = sf_or_kernels.kernels if isinstance(sf_or_kernels, SourceFile) else sf_or_kernels
    if isinstance(launch_or_name, Launch):
        name = launch_or_name.callee
    elif isinstance(launch_or_name, AttributeCall):
        name = launch_or_name.kernel
    else:
        name = launch_or_name
    name = normalize_callee(name)
    if not name:
        return None
    exact = [k for k in kernels if k.qualname == name]
    found = exact or [k for k in kernels if k.qualname.endswith("::" + name)]
    if not found:
        return None
    if len({k.qualname for k in found}) > 1:
        return None
    defs = [k for k in found if k.is_definition]
    return (defs or found)[0]
