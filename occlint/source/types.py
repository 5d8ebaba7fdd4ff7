"""Sizes and alignments of the scalar and CUDA vector types (LP64, as nvcc on Linux)."""

from __future__ import annotations

import re

_SCALARS = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "short int": 2, "unsigned short": 2, "unsigned short int": 2, "int16_t": 2,
    "uint16_t": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "signed": 4, "signed int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4,
    "uint32_t": 4, "float": 4, "__half2": 4, "half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4,
    "long": 8, "long int": 8, "unsigned long": 8, "unsigned long int": 8, "long long": 8,
    "long long int": 8, "unsigned long long": 8, "unsigned long long int": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "ptrdiff_t": 8, "double": 8, "__nv_fp8_e4m3": 1,
    "__nv_fp8_e5m2": 1,
}

# 16-bit floating scalars: scalar arithmetic keeps each in a 32-bit register of its own (ptxas
# packs pairs only now and then), so a per-thread array of them needs a register per element
HALF_SCALARS = frozenset({"half", "__half", "__nv_bfloat16", "nv_bfloat16"})

# CUDA vector types: base -> element size; `<base>1..4`
_VECTOR_BASES = {
    "char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4, "float": 4,
    "long": 8, "ulong": 8, "longlong": 8, "ulonglong": 8, "double": 8,
}

_QUALIFIERS = re.compile(r"\b(const|volatile|struct|class|typename|__restrict__)\b|\bstd::|^::")


def normalize(type_text: str) -> str:
    """`const unsigned  int` -> `unsigned int`; `std::uint32_t` -> `uint32_t`."""
    got = _NORMALIZED.get(type_text)
    if got is None:
        if len(_NORMALIZED) > 65536:
            _NORMALIZED.clear()
        got = _NORMALIZED[type_text] = " ".join(_QUALIFIERS.sub(" ", type_text).split())
    return got


_NORMALIZED: dict[str, str] = {}      # a type's text -> normalize's answer, per process


def compact(type_text: str) -> str:
    """`normalize`, `__restrict` dropped too and stars kept tight (`const half * __restrict__`
    -> `half*`): a parameter's and an argument's types as link.deduced compares them."""
    return re.sub(r"\s*\*\s*", "*", normalize(re.sub(r"\b(?:__restrict|restrict)\b", " ",
                                                       type_text))).strip()


def size_align(type_text: str, structs: dict | None = None) -> tuple[int, int] | None:
    """(size, alignment) of a type name, or None when not plainly known."""
    name = normalize(type_text)
    if name.endswith("*"):
        return 8, 8
    if name in _SCALARS:
        s = _SCALARS[name]
        return s, s
    m = re.fullmatch(r"([a-z]+)([1-4])", name)
    if m and m.group(1) in _VECTOR_BASES:
        elem, n = _VECTOR_BASES[m.group(1)], int(m.group(2))
        size = elem * n
        return size, (min(size, 16) if n in (2, 4) else elem)
    if structs is not None and name in structs:
        return structs[name]
    return None


# <climits> and <cstdint> limits as nvcc on LP64 Linux defines them (headers occlint does not read)
LIMITS = {
    b"CHAR_BIT": 8, b"SCHAR_MAX": 127, b"SCHAR_MIN": -128, b"UCHAR_MAX": 255,
    b"SHRT_MAX": 2**15 - 1, b"SHRT_MIN": -2**15, b"USHRT_MAX": 2**16 - 1,
    b"INT_MAX": 2**31 - 1, b"INT_MIN": -2**31, b"UINT_MAX": 2**32 - 1,
    b"LONG_MAX": 2**63 - 1, b"LONG_MIN": -2**63, b"ULONG_MAX": 2**64 - 1,
    b"LLONG_MAX": 2**63 - 1, b"LLONG_MIN": -2**63, b"ULLONG_MAX": 2**64 - 1,
    b"INT8_MAX": 127, b"INT8_MIN": -128, b"UINT8_MAX": 255,
    b"INT16_MAX": 2**15 - 1, b"INT16_MIN": -2**15, b"UINT16_MAX": 2**16 - 1,
    b"INT32_MAX": 2**31 - 1, b"INT32_MIN": -2**31, b"UINT32_MAX": 2**32 - 1,
    b"INT64_MAX": 2**63 - 1, b"INT64_MIN": -2**63, b"UINT64_MAX": 2**64 - 1,
    b"SIZE_MAX": 2**64 - 1,
}

# the CUDA runtime's plain aggregates: member names in declaration order
_AGGREGATES = {
    "cudaExtent": ("width", "height", "depth"),
    "cudaPos": ("x", "y", "z"),
}


def fields_of(type_text: str) -> tuple[str, ...] | None:
    """The members, in order, of a CUDA runtime aggregate or vector type (`cudaExtent`: width,
    height, depth; `int2`: x, y); None for any other type (dim3 included: it has constructors)."""
    name = normalize(type_text)
    if name in _AGGREGATES:
        return _AGGREGATES[name]
    m = re.fullmatch(r"([a-z]+)([1-4])", name)
    if m and m.group(1) in _VECTOR_BASES:
        return ("x", "y", "z", "w")[:int(m.group(2))]
    return None


def size_of(type_text: str, structs: dict | None = None) -> int | None:
    sa = size_align(type_text, structs)
    return sa[0] if sa else None


def layout(fields: list[tuple[int, int]]) -> tuple[int, int]:
    """C layout of (size, align) members: (size, align) of the struct."""
    offset, align = 0, 1
    for size, a in fields:
        offset = (offset + a - 1) // a * a + size
        align = max(align, a)
    return (offset + align - 1) // align * align, align


_INTEGRAL = re.compile(r"(unsigned |signed )?(char|short|int|long|long long)( int)?|unsigned|"
                       r"signed|bool|u?int(8|16|32|64)_t|size_t|ptrdiff_t|index_t|idx_t")


def is_integral(type_text: str) -> bool:
    """An integer type by its spelling (typedefs other than the usual ones are not known)."""
    return _INTEGRAL.fullmatch(normalize(type_text)) is not None
