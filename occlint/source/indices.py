"""Subscripts used on shared arrays, classified as thread-derived (see model.Index).

An index is thread-derived along an axis when it is provably below the block's thread count
along that axis, so that only proofs are accepted, never likely cases:
  threadIdx.x                                  -> "x"
  tid (a local never written again, = one of these)
  e / c, e >> c, e % c, e & c  (c a constant >= 0, e thread-derived) -> e's axis
  threadIdx.x + threadIdx.y * blockDim.x       -> "xyz" (below the total thread count)
  e + s inside `if (e < s ...)`, s <= blockDim.A / 2 (a halving loop from blockDim.A / 2, or a
  loop condition s < blockDim.A / 2)           -> A, since e + s < 2 s <= blockDim.A
Other subscripts may still have a proven bound (Index.bound, Classifier.bound): the variable
of `for (k = ...; k < 256; k++)` that only the update writes is < 256, `255 - threadIdx.x`
is < 256, and + - * / % & >> of bounded, non-negative terms keep a bound.
"""

from __future__ import annotations

import re

from occlint.model import Index
from occlint.record import replace
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


_BELOW_BLOCK = re.compile(rb"<\s*(?:\(\s*(?:int|unsigned)\s*\)\s*)?blockDim\s*\.")


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
        # a file that compares something with `blockDim.A` (`_block_guard`'s test), once per file
        guards = ctx.__dict__.get("_guards_block")
        if guards is None:
            guards = ctx.__dict__["_guards_block"] = _BELOW_BLOCK.search(ctx.data) is not None
        self._guards_block = guards

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
        if depth == 0 and at is not None and self._guards_block:
            a = self._block_guard(node, at)
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

    def bound(self, node, at, depth: int = 0) -> int | None:
        """An exclusive upper bound on `node`'s value that the source proves without the block
        size: constants, the variable of an enclosing `for (k = ...; k < C; k++)` that only the
        loop's update writes, and + - * / % & >> of these (`255 - threadIdx.x` < 256)."""
        node = _strip(node)
        if node is None or depth > 12:
            return None
        c = self.const(node)
        if c is not None:
            return c + 1 if c >= 0 else None
        if node.type == "identifier":
            loop = self._loop_bound(at, node.text)
            if loop is not None:
                return loop
            init = self.alias(node)
            return self.bound(init, at, depth + 1) if init is not None else None
        if node.type != "binary_expression":
            return None
        op = node.child_by_field_name("operator").text
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op == b"-":
            c = self.const(left)
            if c is not None and self.nonnegative(right, at, depth + 1):
                return c + 1                        # C - e with e >= 0 is at most C
            b = self.bound(left, at, depth + 1)
            return b if b is not None and self.nonnegative(right, at, depth + 1) else None
        lb, rb = self.bound(left, at, depth + 1), self.bound(right, at, depth + 1)
        if op == b"+" and lb is not None and rb is not None:
            return lb + rb - 1
        if op == b"*" and lb is not None and rb is not None:
            return (lb - 1) * (rb - 1) + 1
        c = self.const(right)
        if op in (b"%", b"&") and c is not None and c > 0 and self.nonnegative(left, at, depth + 1):
            return c if op == b"%" else c + 1
        if op in (b"/", b">>") and lb is not None and c is not None and c > 0:
            return (lb - 1) // (c if op == b"/" else 1 << c) + 1
        return None

    def nonnegative(self, node, at, depth: int = 0) -> bool:
        """`node` is >= 0: a constant, a built-in index or size, a loop variable counting up from
        >= 0, or + * / % >> & of these."""
        node = _strip(node)
        if node is None or depth > 12:
            return False
        c = self.const(node)
        if c is not None:
            return c >= 0
        if node.type == "field_expression":
            arg = node.child_by_field_name("argument")
            return arg is not None and arg.text in (b"threadIdx", b"blockIdx", b"blockDim", b"gridDim")
        if node.type == "identifier":
            if self._loop_start(at, node.text):
                return True
            init = self.alias(node)
            return init is not None and self.nonnegative(init, at, depth + 1)
        if node.type == "binary_expression":
            op = node.child_by_field_name("operator").text
            if op in (b"+", b"*", b"/", b"%", b">>", b"&"):
                return self.nonnegative(node.child_by_field_name("left"), at, depth + 1) and \
                    self.nonnegative(node.child_by_field_name("right"), at, depth + 1)
        return False

    def _counting_loop(self, at, name: bytes):
        """The innermost enclosing `for` whose body holds `at`, that sets `name` in its
        initializer, and in which only its update writes `name` (k++, k += c with c > 0)."""
        node, child = at.parent, at
        while node is not None and node.type not in ("function_definition", "lambda_expression"):
            if node.type == "for_statement" and child == node.child_by_field_name("body"):
                start = _loop_init(node, name)
                if start is not None:
                    update = node.child_by_field_name("update")
                    local = self.env.local(self.scope, name) if self.scope is not None else None
                    inside = [w for w in (local.writes if local else ())
                              if node.start_byte <= w.start_byte < node.end_byte]
                    init = node.child_by_field_name("initializer")
                    if update is None or not all(
                            _within(w, update) or _within(w, init) for w in inside) \
                            or not _counts_up(update, name, self):
                        return None
                    return node, start
            node, child = node.parent, node
        return None

    def _loop_bound(self, at, name: bytes) -> int | None:
        found = self._counting_loop(at, name)
        if found is None:
            return None
        loop, _ = found
        for c in _conjuncts(loop.child_by_field_name("condition")):
            if c.type != "binary_expression":
                continue
            op = c.child_by_field_name("operator").text
            left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
            if op in (b"<", b"<=") and _norm(left) == name:
                v = self.const(right)
            elif op in (b">", b">=") and _norm(right) == name:
                v, op = self.const(left), (b"<" if op == b">" else b"<=")
            else:
                continue
            if v is not None:
                return v if op == b"<" else v + 1
        return None

    def _loop_start(self, at, name: bytes) -> bool:
        found = self._counting_loop(at, name)
        return found is not None and self.nonnegative(found[1], found[0])

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

    def _block_guard(self, node, at) -> str | None:
        """The axis A when an enclosing `if (e >= 0 && e < blockDim.A)` (or `e` nonnegative by
        construction) whose then-branch holds `at` bounds the subscript `e` (GPU MODE's
        privatization: `if (accessIdx >= 0 && accessIdx < blockDim.x) sum += data[accessIdx];`)."""
        text = _norm(node)
        if node.type == "identifier":           # a name written after the test may leave it
            local = self.env.local(self.scope, node.text)
            if local is None or local.written:
                return None
        parent, child = at.parent, at
        while parent is not None and parent.type not in ("function_definition", "lambda_expression"):
            if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
                below, low = None, False
                for c in _conjuncts(parent.child_by_field_name("condition")):
                    if c.type != "binary_expression":
                        continue
                    op = c.child_by_field_name("operator").text
                    left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
                    if op == b"<" and _norm(left) == text:
                        below = below or _builtin_axis(right, b"blockDim")
                    elif (op == b">=" and _norm(left) == text and self.const(right) == 0) or \
                            (op == b"<=" and _norm(right) == text and self.const(left) == 0):
                        low = True
                if below is not None and (low or self.nonnegative(node, at)):
                    return below
            parent, child = parent.parent, parent
        return None

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


def _loop_init(loop, name: bytes):
    """The value `name` starts from in the loop's initializer (`int k = 0`, `k = tid`), or None."""
    init = loop.child_by_field_name("initializer")
    if init is None:
        return None
    items = init.children_by_field_name("declarator") if init.type == "declaration" else \
        ([init] if init.type != "comma_expression" else init.named_children)
    for d in items:
        if d.type == "init_declarator" and _norm(d.child_by_field_name("declarator")) == name:
            return d.child_by_field_name("value")
        if d.type == "assignment_expression" and _norm(d.child_by_field_name("left")) == name \
                and d.child_by_field_name("operator").text == b"=":
            return d.child_by_field_name("right")
    return None


def _within(node, outer) -> bool:
    return outer is not None and outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def _counts_up(update, name: bytes, cl) -> bool:
    """`k++`, `++k`, `k += c` (c > 0 or a built-in size), `k = k + c`."""
    for u in ([update] if update.type != "comma_expression" else update.named_children):
        if u.type == "update_expression":
            if u.text.replace(name, b"").strip() != b"++" or _norm(u.child_by_field_name("argument")) != name:
                return False
        elif u.type == "assignment_expression" and _norm(u.child_by_field_name("left")) == name:
            op, right = u.child_by_field_name("operator").text, u.child_by_field_name("right")
            if op == b"=" and right is not None and right.type == "binary_expression" and \
                    right.child_by_field_name("operator").text == b"+" and \
                    _norm(right.child_by_field_name("left")) == name:
                right, op = right.child_by_field_name("right"), b"+="
            if op != b"+=" or not cl.nonnegative(right, u) or cl.const(right) == 0:
                return False
        else:
            return False
    return True


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
        constant = cl.const(e) if axis is None else None
        found.append(Index(text=" ".join(ctx.tx.node_text(e).split()), span=ctx.tx.node_span(e),
                           thread_derived=axis is not None, axis=axis, dim=dim,
                           constant=constant,
                           bound=cl.bound(e, sub) if axis is None and constant is None else None))
        node, dim = sub, dim + 1
    return found, node
