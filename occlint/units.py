"""Byte sizes as people write them: `16384`, `16K`, `16KiB`, `48KB`, `1.5K`, `0x4000`.

K, KB and KiB all mean 1024 bytes (CUDA's "48 KB" of shared memory is 49152 bytes); M likewise.
"""

from __future__ import annotations

import re

from occlint.errors import OcclintError

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
          "mib": 1024**2}
_SIZE = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[a-z]*)")


def parse_size(text: str | int) -> int:
    """Bytes in `text`; OcclintError naming the text when it is not a size."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise OcclintError(f"size must not be negative: {text}")
        return text
    s = str(text).strip().lower()
    if re.fullmatch(r"0x[0-9a-f]+", s):
        return int(s, 16)
    m = _SIZE.fullmatch(s)
    if m is None or m.group("unit") not in _UNITS:
        raise OcclintError(f"not a size: {text!r} (use e.g. 16384, 16K, 16KiB, 48KB)")
    value = float(m.group("num")) * _UNITS[m.group("unit")]
    if value != int(value):
        raise OcclintError(f"not a whole number of bytes: {text!r}")
    return int(value)


def format_size(n: int) -> str:
    """`16384` -> "16 KiB", `17408` -> "17 KiB", `1000` -> "1000 B", `1536` -> "1.5 KiB"."""
    if n >= 1024 and n % 128 == 0:
        kib = n / 1024
        return f"{kib:g} KiB"
    return f"{n} B"


def format_amount(n: int) -> str:
    """A file or cache size in `format_size`'s units, rounded once it is large:
    `1000` -> "1000 B", `16384` -> "16 KiB", `300000` -> "293.0 KiB", `5 << 20` -> "5.0 MiB"."""
    if n < 1024 or (n < 1 << 20 and n % 128 == 0):
        return format_size(n)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
