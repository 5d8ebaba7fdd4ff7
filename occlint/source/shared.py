"""`__shared__` declarations -> model.SharedDecl (sizes; indices come from occlint.source.indices)."""

from __future__ import annotations

import re

from occlint.model import SharedDecl
from occlint.record import dataclass
from occlint.source import types
from occlint.source.context import Context, qualifiers


@dataclass
class SharedNode:
    """A SharedDecl with the nodes `specialize` re-evaluates."""

    decl: SharedDecl
    type_text: str
    size_nodes: list             # outermost dimension first; None for `[]`
    name_node: object
    kernel_node: object          # the owning KernelNode, or None


def _dims(declarator):
    """(name node, [size node or None, ...] outermost first) of a declarator."""
    sizes = []
    d = declarator
    while d is not None and d.type in ("array_declarator", "init_declarator",
                                       "parenthesized_declarator"):
        if d.type == "array_declarator":
            sizes.append(d.child_by_field_name("size"))
        d = d.child_by_field_name("declarator") if d.type != "parenthesized_declarator" \
            else (d.named_children[0] if d.named_child_count else None)
    if d is None or d.type != "identifier":
        return None, []
    return d, list(reversed(sizes))


def evaluate(ctx: Context, type_text: str, size_nodes, bind: dict, scope) -> tuple:
    """(dims, element_size, size_bytes) under template bindings `bind` (bytes -> int | str)."""
    env = ctx.env
    dims = tuple(env.value(n, scope, bind) if n is not None else None for n in size_nodes)
    dims = tuple(None if d is not None and d < 0 else d for d in dims)    # not a valid size
    bound = bind.get(type_text.encode())
    elem = types.size_of(bound if isinstance(bound, str) and bound else type_text, env.structs)
    size = None
    if elem is not None and None not in dims and not (size_nodes and size_nodes[0] is None):
        size = elem
        for d in dims:
            size *= d
    return dims, elem, size


def shared_nodes(ctx: Context, kernels_by_start: dict, dropped: set) -> list[SharedNode]:
    tx = ctx.tx
    out = []
    for decl in ctx.caps.get("shared", ()):
        if ctx.dead(decl):
            continue
        func = ctx.function_at(decl.start_byte)
        if func is not None and func.start_byte in dropped:
            continue              # inside a duplicate definition (an `#else` branch): counted once
        kn = kernels_by_start.get(func.start_byte) if func is not None else None
        type_node = decl.child_by_field_name("type")
        if type_node is None:
            continue
        type_text = " ".join(tx.node_text(type_node).split())
        extern = b"extern" in qualifiers(decl)
        tnames = {t.name for t in kn.tparams} if kn is not None else set()
        bind = {n: "" for n in tnames}
        for d in decl.children_by_field_name("declarator"):
            name_node, size_nodes = _dims(d)
            if name_node is None:
                continue
            dims, elem, size = evaluate(ctx, type_text, size_nodes, bind, func.start_byte
                                        if func is not None else None)
            if extern:
                size = None
            dep_text = type_text + " " + " ".join(tx.node_text(n) for n in size_nodes if n)
            dependent = bool(tnames) and any(
                re.search(rf"\b{re.escape(n.decode())}\b", dep_text) for n in tnames)
            sd = SharedDecl(
                name=name_node.text.decode("utf-8", "replace"), path=ctx.path,
                span=tx.span(decl.start_byte, decl.end_byte),
                kernel=kn.kernel.qualname if kn is not None else None,
                element_type=type_text,
                dims=() if extern and size_nodes and size_nodes[0] is None else dims,
                element_size=elem, size_bytes=size, extern=extern,
                template_dependent=dependent, name_span=tx.node_span(name_node),
                dim_spans=tuple(tx.node_span(n) for n in size_nodes if n is not None),
            )
            out.append(SharedNode(sd, type_text, size_nodes, name_node, kn))
    return out
