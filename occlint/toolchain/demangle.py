"""Demangle entry names in-process and split them into qualified name and template arguments."""

from __future__ import annotations

import re
from functools import lru_cache

_ANON = "(anonymous namespace)"
_ANON_MARK = "\x00anon\x00"
_INT = re.compile(r"(-?\d+)[uUlL]*")


_NV_STATIC = re.compile(r"__nv_static_(\d+)__")


def strip_static_prefix(mangled: str) -> str:
    """`__nv_static_36__426b201a_14_nv12_resize_cu_d5a6aa57__Z21resizeNV12BatchKernel...`, the
    name nvcc gives a `static __global__` kernel (its number counts the unit tag that follows),
    -> the `_Z...` name of the kernel itself."""
    m = _NV_STATIC.match(mangled)
    if m is None:
        return mangled
    rest = mangled[m.end() + int(m.group(1)):]
    return rest if rest.startswith("_Z") else mangled


@lru_cache(maxsize=1)
def _cxa_demangle():
    """(__cxa_demangle, free) from the C++ runtime, loaded by soname (dlopen, no process), or
    None. cxxfilt does the same, but its import runs `ldconfig -p` twice to find the
    libraries (15-30 ms inside a cold run's first compile)."""
    import ctypes

    for name in ("libstdc++.so.6", "libc++.so.1", "libc++.1.dylib", "libstdc++.6.dylib"):
        try:
            fn = getattr(ctypes.CDLL(name), "__cxa_demangle")
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes, free.restype = [ctypes.c_void_p], None
        return fn, free
    return None


def _native(mangled: str) -> str | None:
    import ctypes

    found = _cxa_demangle()
    if found is None:
        return None
    fn, free = found
    status = ctypes.c_int(0)
    ptr = fn(mangled.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        free(ptr)


@lru_cache(maxsize=4096)
def demangle(mangled: str) -> str:
    """The demangled signature, or the name itself when it is not mangled (extern "C")."""
    mangled = strip_static_prefix(mangled)
    if not mangled.startswith("_Z"):
        return mangled
    try:
        if _cxa_demangle() is not None:
            return _native(mangled) or mangled
        import cxxfilt  # another platform: cxxfilt's library search

        return cxxfilt.demangle(mangled)
    except Exception:  # not a valid name, or no C++ runtime: keep the symbol
        return mangled


def _matching_open(text: str, close_at: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    for i in range(close_at, -1, -1):
        ch = text[i]
        if ch == close_ch:
            depth += 1
        elif ch == open_ch:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` outside <>, () and []."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _plain_arg(arg: str) -> str:
    """"4u" -> "4", "(char)65" stays: integer suffixes only, so `k<4>` launches match."""
    arg = arg.strip()
    m = _INT.fullmatch(arg)
    return m.group(1) if m else arg


@lru_cache(maxsize=4096)
def param_count(mangled: str) -> int | None:
    """`_Z4initiPd` (init(int, double*)) -> 2; None for a name that is not mangled."""
    text = demangle(mangled)
    if not mangled.startswith(("_Z", "__nv_static")) or not text.endswith(")"):
        return None
    start = _matching_open(text, len(text) - 1, "(", ")")
    inner = text[start + 1:-1].strip() if start >= 0 else ""
    return 0 if inner in ("", "void") else len(_split_top(inner, ","))


@lru_cache(maxsize=4096)
def split_name(mangled: str) -> tuple[str, tuple[str, ...]]:
    """`_ZN2ns6reduceILi256EfEEvPKT0_PS1_i` -> ("ns::reduce", ("256", "float"))."""
    text = demangle(mangled).replace(_ANON, _ANON_MARK)
    if text.endswith(")"):  # drop the parameter list
        start = _matching_open(text, len(text) - 1, "(", ")")
        if start > 0:
            text = text[:start]
    # drop the return type that template functions carry: the last top-level space
    words = _split_top(text, " ")
    name = words[-1] if words else text
    args: tuple[str, ...] = ()
    if name.endswith(">"):
        start = _matching_open(name, len(name) - 1, "<", ">")
        if start > 0:
            inner = name[start + 1 : -1]
            args = tuple(_plain_arg(a) for a in _split_top(inner, ",") if a.strip())
            name = name[:start]
    return name.replace(_ANON_MARK, _ANON), args


def normalize_qualname(name: str) -> str:
    """Compare names without anonymous namespaces, leading `::` or scope template arguments."""
    parts = []
    for part in _split_top(name.replace(_ANON, _ANON_MARK).replace("::", "\x01"), "\x01"):
        if part in ("", _ANON_MARK):
            continue
        lt = part.find("<")
        parts.append(part[:lt] if lt > 0 else part)
    return "::".join(parts)
