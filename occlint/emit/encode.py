"""Any file name in any output format.

File names are bytes; Python holds the ones that are not UTF-8 as lone surrogates
(`surrogateescape`). Each format stays valid:
- JSON formats keep the exact name as a `\\udcXX` escape (valid JSON and UTF-8; `json.loads`
  then `os.fsencode` gives back the bytes): `dumps`;
- URIs (SARIF) percent-encode the raw bytes: `uri_path`;
- text, annotations and XML show undecodable bytes and control characters as `\\xNN`:
  `printable`, `xml_text`.
"""

from __future__ import annotations

import json
import re

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# XML 1.0 allows TAB, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and U+10000-U+10FFFF only; this is
# the rest, written as what it matches (the negated class took 10 ms to compile)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _hex(m: re.Match) -> str:
    c = ord(m.group(0))
    if 0xdc80 <= c <= 0xdcff:          # an undecodable byte
        c -= 0xdc00
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def dumps(obj, **kwargs) -> str:
    """json.dumps(ensure_ascii=False), with lone surrogates written as `\\uXXXX` escapes."""
    text = json.dumps(obj, ensure_ascii=False, **kwargs)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def printable(text: str) -> str:
    """`text` with control characters and undecodable bytes as `\\xNN` (one line, valid UTF-8)."""
    return _UNPRINTABLE.sub(_hex, text)


def xml_text(text: str) -> str:
    """`text` with what XML 1.0 cannot hold (ESC, NUL, lone surrogates) as `\\xNN`."""
    return _NOT_XML.sub(_hex, text)


def to_bytes(text: str) -> bytes:
    """UTF-8 bytes of `text`; undecodable file-name bytes come back as they were."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def uri_path(path: str) -> str:
    """A relative path as a URI reference: its raw bytes percent-encoded (`/` kept)."""
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(to_bytes(path))


def output_bytes(text: str) -> bytes:
    """What occlint writes for a rendered report: always valid UTF-8 (a stray surrogate in a
    message becomes `\\udcXX`)."""
    return text.encode("utf-8", "backslashreplace")
