"""Subscripts used on shared arrays, classified as thread-derived (see model.Index).

An index is thread-derived along an axis when it is provably below the block's thread count
along that axis, so that only proofs are accepted, never likely cases:
  threadIdx.x                                  -> "x"
  tid (a local never written again, = one of these)
  e / c, e >> c, e % c, e & c  (c a constant >= 0, e thread-derived) -> e's axis
  threadIdx.x + threadIdx.y * blockDim.x       -> "xyz" (below the total thread count)
  e + s inside `if (e < s ...)`, s <= blockDim.A / 2 (a halving loop from blockDim.A / 2, or a
  loop condition s < blockDim.A / 2)           -> A, since e + s < 2 s <= blockDim.A
"""

from __future__ import annotations

from dataclasses import replace

from occlint.model import Index
from occlint.source.context import word_starts

_AXES = {b"x": "x", b"y": "y", b"z": "z"}
_SHRINK = {b"/", b">>", b"%"}


def _norm(node) -> bytes:
    return b"".join(node.text.split()) if node is not None else b""


def _strip(node):
    while node is not None and node.type in ("parenthesized_expression", "cast_expression"):
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
        else:
            inner = [c for c in node.named_children if c.type != "comment"]
            node = inner[0] if len(inner) == 1 else None
    return node


def _builtin_axis(node, builtin: bytes) -> str | None:
    """`threadIdx.x` -> "x" (for builtin b"threadIdx")."""
    node = _strip(node)
    if node is None or node.type != "field_expression":
        return None
    arg, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
    if arg is None or fld is None or arg.text != builtin:
        return None
    return _AXES.get(fld.text)


class Classifier:
    def __init__(self, ctx, scope: int | None):
        self.ctx, self.env, self.scope = ctx, ctx.env, scope

    def alias(self, node):
        """The initializer of a local never written again, else None."""
        if node is None or node.type != "identifier" or self.scope is None:
            return None
        local = self.env.local(self.scope, node.text)
        if local is None or len(local.decls) != 1 or local.written:
            return None
        decl = local.decls[0][1]
        return decl.child_by_field_name("value") if decl.type == "init_declarator" else None

    def const(self, node) -> int | None:
        return self.env.value(node, self.scope)

    def axis(self, node, at, depth: int = 0) -> str | None:
        node = _strip(node)
        if node is None or depth > 12:
            return None
        a = _builtin_axis(node, b"threadIdx")
        if a is not None:
            return a
        if node.type == "identifier":
            init = self.alias(node)
            return self.axis(init, at, depth + 1) if init is not None else None
        if node.type != "binary_expression":
            return None
        op = node.child_by_field_name("operator").text
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in _SHRINK:
            c = self.const(right)
            ok = c is not None and (c > 0 or (op == b">>" and c >= 0))
            return self.axis(left, at, depth + 1) if ok else None
        if op == b"&":
            for a_side, c_side in ((left, right), (right, left)):
                c = self.const(c_side)
                if c is not None and c >= 0:
                    return self.axis(a_side, at, depth + 1)
            return None
        if op == b"+":
            return self._flat(left, right, at, depth) or self._guarded(left, right, at, depth) \
                or self._guarded(right, left, at, depth)
        return None

    def _flat(self, left, right, at, depth) -> str | None:
        """threadIdx.x + threadIdx.y * blockDim.x (either order) -> "xyz"."""
        for x_side, prod in ((left, right), (right, left)):
            prod = _strip(prod)
            if prod is None or prod.type != "binary_expression" or \
                    prod.child_by_field_name("operator").text != b"*":
                continue
            pl, pr = prod.child_by_field_name("left"), prod.child_by_field_name("right")
            for y_side, dim in ((pl, pr), (pr, pl)):
                if _builtin_axis(dim, b"blockDim") == "x" and \
                        self.axis(x_side, at, depth + 1) == "x" and \
                        self.axis(y_side, at, depth + 1) == "y":
                    return "xyz"
        return None

    def _guarded(self, base, offset, at, depth) -> str | None:
        """base + s under `if (base < s)` with s <= blockDim.A / 2 -> A."""
        a = self.axis(base, at, depth + 1)
        offset = _strip(offset)
        if a is None or offset is None or offset.type != "identifier":
            return None
        if not self._guard(at, _norm(base), offset.text):
            return None
        return a if self._half_block(at, offset.text) == a else None

    def _guard(self, at, base: bytes, s: bytes) -> bool:
        """An enclosing `if (base < s && ...)` whose then-branch holds `at`."""
        node, child = at.parent, at
        while node is not None and node.type not in ("function_definition", "lambda_expression"):
            if node.type == "if_statement" and node.child_by_field_name("consequence") == child:
                for c in _conjuncts(node.child_by_field_name("condition")):
                    if c.type == "binary_expression" and \
                            c.child_by_field_name("operator").text == b"<" and \
                            _norm(c.child_by_field_name("left")) == base and \
                            _norm(c.child_by_field_name("right")) == s:
                        return True
            node, child = node.parent, node
        return False

    def _half_block(self, at, s: bytes) -> str | None:
        """The axis A when an enclosing loop keeps s <= blockDim.A / 2."""
        node = at.parent
        while node is not None and node.type not in ("function_definition", "lambda_expression"):
            if node.type == "for_statement":
                a = self._halving_loop(node, s)
                if a is not None:
                    return a
            node = node.parent
        return self._halving_variable(s)

    def _halving_variable(self, s: bytes) -> str | None:
        """`int s = blockDim.A / 2;` only ever halved (`s >>= 1` in a while loop) -> A."""
        local = self.env.local(self.scope, s)
        if local is None or len(local.decls) != 1 or local.decls[0][1].type != "init_declarator":
            return None
        a = _half(local.decls[0][1].child_by_field_name("value"))
        if a is None or not all(_shrinks(w, s) for w in local.writes):
            return None
        return a

    def _halving_loop(self, loop, s: bytes) -> str | None:
        init = loop.child_by_field_name("initializer")
        cond = loop.child_by_field_name("condition")
        update = loop.child_by_field_name("update")
        # `s < blockDim.A / 2` or `s <= blockDim.A / 2` as the condition
        for c in _conjuncts(cond):
            if c.type == "binary_expression" and \
                    c.child_by_field_name("operator").text in (b"<", b"<=") and \
                    _norm(c.child_by_field_name("left")) == s:
                a = _half(c.child_by_field_name("right"))
                if a is not None:
                    return a
        # `s = blockDim.A / 2` (declared or assigned) with a shrinking update
        start = None
        if init is not None:
            for d in ([init] if init.type != "declaration" else
                      init.children_by_field_name("declarator")):
                if d.type in ("init_declarator", "assignment_expression"):
                    decl = d.type == "init_declarator"
                    name = d.child_by_field_name("declarator" if decl else "left")
                    if _norm(name) == s:
                        start = d.child_by_field_name("value" if decl else "right")
        a = _half(start)
        if a is None or update is None:
            return None
        return a if _shrinks(update, s) else None


def _half(node) -> str | None:
    """`blockDim.A / 2` or `blockDim.A >> 1` -> A."""
    node = _strip(node)
    if node is None or node.type != "binary_expression":
        return None
    op, right = node.child_by_field_name("operator").text, node.child_by_field_name("right")
    if (op, _norm(right)) not in ((b"/", b"2"), (b">>", b"1"), (b"/", b"2u"), (b">>", b"1u")):
        return None
    return _builtin_axis(node.child_by_field_name("left"), b"blockDim")


def _shrinks(update, s: bytes) -> bool:
    """`s >>= 1`, `s /= 2`, `s = s >> 1`, `s = s / 2` (any positive constant)."""
    if update.type != "assignment_expression" or _norm(update.child_by_field_name("left")) != s:
        return False
    op, right = update.child_by_field_name("operator").text, _strip(
        update.child_by_field_name("right"))
    if op in (b">>=", b"/="):
        return right is not None and right.type == "number_literal" and right.text not in (b"0",)
    if op == b"=" and right is not None and right.type == "binary_expression":
        return _norm(right.child_by_field_name("left")) == s and \
            right.child_by_field_name("operator").text in (b">>", b"/") and \
            _norm(right.child_by_field_name("right")) not in (b"0", b"")
    return False


def _conjuncts(node, limit: int = 64) -> list:
    """`a && (b && c)` -> [a, b, c] (at most `limit`; no recursion on long chains)."""
    out, stack = [], [node]
    while stack and len(out) < limit:
        n = stack.pop()
        if n is not None and n.type == "condition_clause":
            inner = [c for c in n.named_children if c.type != "comment"]
            n = inner[-1] if inner else None
        n = _strip(n) if n is not None else None
        if n is None:
            continue
        if n.type == "binary_expression" and n.child_by_field_name("operator").text == b"&&":
            stack += [n.child_by_field_name("right"), n.child_by_field_name("left")]
        else:
            out.append(n)
    return out


def attach_indices(ctx, sns):
    """SharedNodes with `indices` and `other_uses` filled in."""
    by_body: dict = {}
    for sn in sns:
        body = sn.kernel_node.body if sn.kernel_node is not None else None
        if body is None and sn.decl.kernel is None:
            body = ctx.tree.root_node         # file scope: every use in the file
        if body is not None:
            by_body.setdefault((body.start_byte, body.end_byte), (body, []))[1].append(sn)
    out, classifiers = {}, {}
    data = ctx.tx.parse_data
    for body, group in by_body.values():
        uses: dict[bytes, list] = {}
        for name in {sn.name_node.text for sn in group}:
            # find the name by text, keep only identifier nodes (not comments or strings)
            for start in word_starts(data, name, body.start_byte, body.end_byte):
                n = body.descendant_for_byte_range(start, start + len(name))
                if n is not None and n.type == "identifier" and n.start_byte == start:
                    uses.setdefault(name, []).append(n)
        for sn in group:
            indices, other = [], 0
            for use in uses.get(sn.name_node.text, ()):
                if use.start_byte == sn.name_node.start_byte:
                    continue
                scope = ctx.scope_of(use.start_byte)
                if scope not in classifiers:
                    classifiers[scope] = Classifier(ctx, scope)
                found, top = _subscripts(ctx, classifiers[scope], use)
                indices.extend(found)
                parent = top.parent
                if not found or (parent is not None and parent.type == "pointer_expression" and
                                 parent.child_by_field_name("operator").text == b"&"):
                    other += 1        # the array (or an element's address) goes elsewhere
            out[id(sn)] = replace(sn.decl, indices=tuple(indices), other_uses=other)
    for sn in sns:
        if id(sn) in out:
            sn.decl = out[id(sn)]
    return sns


def _subscripts(ctx, cl: Classifier, use) -> tuple[list[Index], object]:
    """The subscripts applied to `use` (`a[i][j]`) and the outermost node of that chain."""
    found = []
    node, dim = use, 0
    while node.parent is not None and node.parent.type == "subscript_expression" and \
            node.parent.child_by_field_name("argument") == node:
        sub = node.parent
        args = sub.child_by_field_name("indices")
        exprs = [c for c in args.named_children if c.type != "comment"] if args else []
        if len(exprs) != 1:
            return found, node
        e = exprs[0]
        axis = cl.axis(e, sub)
        found.append(Index(text=" ".join(ctx.tx.node_text(e).split()), span=ctx.tx.node_span(e),
                           thread_derived=axis is not None, axis=axis, dim=dim,
                           constant=cl.const(e) if axis is None else None))
        node, dim = sub, dim + 1
    return found, node
