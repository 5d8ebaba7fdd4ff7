"""Launch sites written inside macro bodies (`#define LAUNCH(T) k<T><<<g, b>>>(...)`).

The bodies of macros that launch kernels are parsed again at their own byte offsets, with
tree-sitter's included ranges over a copy of the file, so positions need no mapping. A body is
read two ways, and per macro the reading that finds more launches wins: as statements, wrapped
in a function named after the macro (`#define NAME(params)` overwritten by `void NAME(){`, the
body's final newline by `}`), and as top-level code (a body that defines whole functions).
`##` becomes `__` and `#` a space, so pasted names stay one token. Macro parameters are unknown.
"""

from __future__ import annotations

from bisect import bisect_right

from tree_sitter import Point, Range

from occlint.source.context import Context
from occlint.source.grammar import new_parser
from occlint.source.launches import LaunchReader

_MARKERS = (b"<<<", b"cudaLaunch", b"cudaFuncSet", b"cudaOccupancyMaxPotentialBlockSize")


def macro_launches(ctx: Context) -> tuple[list, list]:
    """(launches, attribute calls) written in macro bodies."""
    defs = []
    for node in (*ctx.caps.get("def", ()), *ctx.caps.get("fdef", ())):
        value = node.child_by_field_name("value")
        if value is not None and value.end_byte < len(ctx.data) and \
                any(m in value.text for m in _MARKERS):
            defs.append((node.start_byte, node, value))
    if not defs:
        return [], []
    defs.sort(key=lambda d: d[0])
    readings = [_read(ctx, defs, wrapped) for wrapped in (True, False)]
    launches, attributes = [], []
    for start, _node, value in defs:
        def inside(x, lo=start, hi=value.end_byte):
            return lo <= x.span.start and x.span.end <= hi + 1
        best = max(readings, key=lambda r: sum(1 for la in r[0] if inside(la)))
        launches += [la for la in best[0] if inside(la)]
        attributes += [a for a in best[1] if inside(a)]
    return launches, attributes


def _read(ctx: Context, defs, wrapped: bool) -> tuple[list, list]:
    buf = bytearray(ctx.data)
    ranges = []
    for start, node, value in defs:
        body = bytes(value.text).replace(b"##", b"__").replace(b"#", b" ")
        buf[value.start_byte:value.end_byte] = body
        head = value.start_byte - start
        if wrapped:
            header = b"void " + node.child_by_field_name("name").text + b"(){"
            if head < len(header):
                continue
            buf[start:value.start_byte] = header.ljust(head)
            buf[value.end_byte] = ord("}")       # the newline that ends the macro
            begin, end = start, value.end_byte + 1
        else:
            begin, end = value.start_byte, value.end_byte
        ranges.append(Range(_point(ctx, begin), _point(ctx, end), begin, end))
    if not ranges:
        return [], []
    parser = new_parser()
    parser.included_ranges = ranges
    data = bytes(buf)
    sub = Context(ctx.tx.text, ctx.path, outer=ctx, tree=parser.parse(data), data=data)
    reader = LaunchReader(sub)
    found, attributes = reader.api_calls()
    return reader.chevrons() + found, attributes


def _point(ctx: Context, byte: int) -> Point:
    row = bisect_right(ctx.tx.line_bytes, byte) - 1
    return Point(row, byte - ctx.tx.line_bytes[row])
