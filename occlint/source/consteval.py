"""Integer constant evaluation over tree-sitter expression nodes.

Names resolve in C order: bound names (template or macro parameters), object-like macros,
locals of the enclosing function (const/constexpr, or plain integers never written again), file,
namespace and class-scope `const`/`constexpr` integers, enumerators. A name with two different
definitions (say in `#if`/`#else`) is unknown. Unknown is None, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from occlint.record import dataclass, field
from occlint.source import types
from occlint.source.grammar import parser

MAX_DEPTH = 150
_INT_SUFFIX = b"ulzULZ"
_MINMAX = {b"min": min, b"max": max, b"std::min": min, b"std::max": max, b"::min": min,
           b"::max": max, b"cuda::std::min": min, b"cuda::std::max": max, b"umin": min,
           b"umax": max, b"imin": min, b"imax": max}
_SNIPPETS: dict[bytes, tuple] = {}
_CASTS = {b"static_cast", b"int", b"unsigned", b"size_t", b"int64_t", b"uint32_t", b"long"}


def parse_int(text: bytes) -> int | None:
    """An integer literal: hex, octal, binary, digit separators, u/l/z suffixes; else None."""
    s = text.replace(b"'", b"").rstrip(_INT_SUFFIX)
    try:
        if s[:2] in (b"0x", b"0X"):
            return int(s[2:], 16)
        if s[:2] in (b"0b", b"0B"):
            return int(s[2:], 2)
        if len(s) > 1 and s[:1] == b"0":
            return int(s[1:], 8)
        return int(s, 10)
    except ValueError:
        return None


def exprs(node) -> list:
    """Named children that are not comments."""
    return [c for c in node.named_children if c.type != "comment"]


def declarator_name(node):
    """The identifier node inside a declarator (`*p`, `a[4]`, `x = 1`, `(*k)(int)`, `&b`,
    `... args`), or None."""
    while node is not None and node.type not in ("identifier", "field_identifier"):
        if node.type in _WRAPPING:      # no `declarator` field: the declarator they wrap
            node = node.named_children[-1] if node.named_child_count else None
        else:
            node = node.child_by_field_name("declarator")
    return node


_WRAPPING = frozenset({"parenthesized_declarator", "reference_declarator", "variadic_declarator"})


def qualifiers(decl) -> set[bytes]:
    """`const`, `constexpr`, `static`, `extern`, `__shared__`, ... on a declaration."""
    out = set()
    for c in decl.children:
        if c.type in ("type_qualifier", "storage_class_specifier"):
            out.add(c.text.strip())
        elif c.type == "__global__":
            out.add(b"__global__")
    return out


_BUILTIN_DIM3 = frozenset((b"threadIdx", b"blockIdx", b"blockDim", b"gridDim"))   # not locals


def _block_of(decl):
    """The compound statement a local's declaration is a statement of, and that statement."""
    stmt = decl.parent if decl.type == "init_declarator" else decl
    block = stmt.parent if stmt is not None else None
    return (block, stmt) if block is not None and block.type == "compound_statement" else (None, None)


def _plain_write(write) -> bool:
    op = write.child_by_field_name("operator") if write.type == "assignment_expression" else None
    return op is not None and op.text == b"=" and write.parent is not None and \
        write.parent.type == "expression_statement"


def _assigned_once(decl, local: Local, at):
    """The value node that reaches the use `at` of a local whose every write is a statement
    `name = value;` of the declaration's own block (not in a branch or loop of it): the last
    such write before `at` (`int b; b = 512;`, and lbry's `tpb = 1024; dim3 b1(tpb); tpb = 768;
    dim3 b2(tpb);`), else its initializer; None otherwise."""
    if not local.writes or local.fields or at is None:
        return None
    block, stmt = _block_of(decl)
    if block is None or not stmt.end_byte <= at.start_byte < block.end_byte:
        return None
    last = None
    for write in local.writes:
        if not _plain_write(write) or write.parent.parent != block:
            return None
        if write.end_byte <= at.start_byte and (last is None or write.start_byte > last.start_byte):
            last = write
    if last is None:
        return decl.child_by_field_name("value") if decl.type == "init_declarator" else None
    return last.child_by_field_name("right")


_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")


def _in_a_loop_around(write, at, stop) -> bool:
    """Is `write` inside a loop that is around `at` (below `stop`)?"""
    loop = at.parent
    while loop is not None and loop != stop:
        if loop.type in _LOOPS and loop.start_byte <= write.start_byte < loop.end_byte:
            return True
        loop = loop.parent
    return False


UNSURE = object()     # `last_sure_write`: a write that may not run comes after the last sure one


def last_sure_write(assigns, at, stop=None):
    """Of the `x = v;` assignment nodes `assigns` (one name's, or one field's), the one that holds
    at `at`: the last before it whose statement is directly in a block (or `case` arm) around
    `at`, so that it runs whenever `at` does. None when none is before `at` (what came before
    them holds); UNSURE when a write that may not run follows the last sure one, or one after
    `at` sits in a loop around it (below `stop`), or one is not a statement of its own."""
    chosen = None
    for a in sorted(assigns, key=lambda n: n.start_byte):
        stmt = a.parent
        if a.type != "assignment_expression" or stmt is None or \
                stmt.type != "expression_statement" or stmt.parent is None:
            return UNSURE
        if a.start_byte >= at.start_byte:
            if _in_a_loop_around(a, at, stop):
                return UNSURE       # written again later in a loop around the use
            continue
        holder = stmt.parent
        chosen = a if holder.start_byte <= at.start_byte < holder.end_byte else UNSURE
    return chosen


def dominating_assignment(decl, local: Local, at):
    """The value node that reaches the use `at` of a local written by statements `name =
    value;` in blocks nested in its own (ThunderKittens' `auto threads = 4 * WARP_THREADS;`
    launched with, then `threads = WARP_THREADS * BWD_NUM_WORKERS;` in an `if` block before the
    next launch): `last_sure_write`'s, else the initializer. None otherwise."""
    if not local.writes or local.fields or at is None:
        return None
    block, stmt = _block_of(decl)
    if block is None or not stmt.end_byte <= at.start_byte < block.end_byte or \
            not all(_plain_write(w) and block.start_byte <= w.start_byte < block.end_byte
                    for w in local.writes):
        return None
    last = last_sure_write(local.writes, at, block)
    if last is None:
        return decl.child_by_field_name("value") if decl.type == "init_declarator" else None
    return None if last is UNSURE else last.child_by_field_name("right")


def assigned_in_branches(decl, local: Local, at) -> list | None:
    """The value nodes a local may hold at `at` when its only writes are `name = value;` in
    the arms of one if/else (chains of `else if` too) that follows the declaration in its
    block, one write per arm, and `at` comes after that `if` in the block (gups: `size_t
    thread; if (!shm) { thread = A; ... } else { thread = B; ... }`): each arm's value, and the
    initializer's when an arm is missing (ccminer: `uint32_t tpb = TPB35; if (arch >= 500)
    tpb = TPB50;`); None otherwise (no final `else` and no initializer: garbage may be read)."""
    if not local.writes or local.fields or at is None:
        return None
    block, stmt = _block_of(decl)
    stmts = [w.parent for w in local.writes]
    if block is None or not all(_plain_write(w) for w in local.writes):
        return None
    top = stmts[0]
    while top is not None and top.parent != block:
        top = top.parent
    if top is None or top.type != "if_statement" or top.start_byte < stmt.end_byte or \
            not top.end_byte <= at.start_byte < block.end_byte:
        return None
    arms, node, whole = [], top, True
    while node is not None and node.type == "if_statement":
        arms.append(node.child_by_field_name("consequence"))
        other = node.child_by_field_name("alternative")
        node = other.named_children[-1] if other is not None and other.named_children else None
        if node is None:
            whole = False                   # no final `else`: the value before the `if` stays
        elif node.type != "if_statement":
            arms.append(node)
            break
    values = []
    for arm in arms:
        mine = [s for s in stmts if s == arm or (arm is not None and s.parent == arm)]
        if len(mine) > 1 or (not mine and whole):
            return None
        if mine:
            values.append(local.writes[stmts.index(mine[0])].child_by_field_name("right"))
    if len(values) != len(stmts):
        return None
    if len(values) < len(arms) or not whole:
        init = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
        if init is None:
            return None
        values.append(init)
    return values


def _div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int | None:
    q = _div(a, b)
    return None if q is None else a - b * q


_BINARY = {
    b"+": lambda a, b: a + b, b"-": lambda a, b: a - b, b"*": lambda a, b: a * b,
    b"/": _div, b"%": _mod,
    b"<<": lambda a, b: a << b if 0 <= b < 64 else None,
    b">>": lambda a, b: a >> b if 0 <= b < 64 else None,
    b"&": lambda a, b: a & b, b"|": lambda a, b: a | b, b"^": lambda a, b: a ^ b,
    b"<": lambda a, b: int(a < b), b">": lambda a, b: int(a > b),
    b"<=": lambda a, b: int(a <= b), b">=": lambda a, b: int(a >= b),
    b"==": lambda a, b: int(a == b), b"!=": lambda a, b: int(a != b),
}


@dataclass
class Local:
    """What one function does with one name: its declarations (type text, declarator node:
    an init_declarator, or a parameter/plain declaration whose value is unknown), whether it is
    written after its declaration, and `name.field = value` assignments."""

    decls: list = field(default_factory=list)
    written: bool = False                           # any write, a field's included
    fields: dict = field(default_factory=dict)      # field name (bytes) -> [value node or None]
    whole_written: bool = False                     # written other than through `.field =`
    writes: list = field(default_factory=list)      # the assignment/update/`&` nodes
    passed: list = field(default_factory=list)      # calls' argument lists naming it alone


# a template argument written as a type (`smem_bytes_for<float, 32>()`)
_TYPE_NODES = frozenset(("type_descriptor", "primitive_type", "sized_type_specifier"))


class Env:
    """What names mean in one file; filled by occlint.source.context.Context."""

    def __init__(self):
        self.macros: dict[bytes, list[bytes]] = {}
        self.fmacros: dict[bytes, list[tuple[tuple[bytes, ...], bytes]]] = {}
        self.globals: dict[bytes, list[tuple[str, object]]] = {}    # name -> (qualname, value node)
        self.enums: dict[bytes, list[tuple[list, int]]] = {}        # name -> (enumerators, index)
        # (scope, name, the node naming it or None) -> Local or None; set by
        # occlint.source.context (found on demand)
        self.local: Callable[..., Local | None] = lambda scope, name, at=None: None
        # (scope, name, site) -> the value a `case` of `switch (name)` around `site` gives it;
        # set by occlint.source.context; `site`: the launch being read (set by launches)
        self.switch_value: Callable[..., int | None] = lambda scope, name, site: None
        # name -> (parameter names, template parameter names, returned expression) of the one
        # function of that name the file defines whose body is `return expr;`; set by context
        self.function_return: Callable[[bytes], tuple | None] = lambda name: None
        self.site = None
        self._narrowed = 0      # values that came from `site` (not remembered)
        self._called = 0        # values that came from a call of a function of the file
        # (identifier node, scope) -> Dim3 of a local dim3; set by occlint.source.launches
        self.dim3_of: Callable | None = None
        # where names are looked up when the expression is not the file's own text (a launch
        # macro's body read at a use of the macro): that use's node (occlint.source.macros)
        self.use_site = None
        self.structs: dict[str, tuple[int, int]] = {}
        # `namespace C = cfg;` -> {b"C": b"cfg"} (None: two different ones); set by context
        self.namespace_aliases: dict[bytes, bytes | None] = {}
        # (scope, head, node) -> what `head::member` reads in a class template the file defines
        # (occlint.source.classes.class_constants); set by occlint.source.context
        self.class_constants: Callable | None = None
        self._active: set = set()
        self._memo: dict = {}
        self._depth = 0
        self._cut = 0       # evaluations cut short by MAX_DEPTH (their None is not remembered)

    # --- definitions ---------------------------------------------------------------------------

    def add_macro(self, name: bytes, body: bytes, params: tuple[bytes, ...] | None = None):
        body = body.strip()     # (a name's definitions may be a header's shared tuple: rebound)
        table, item = (self.macros, body) if params is None else (self.fmacros, (params, body))
        have = table.get(name, ())
        if item not in have:
            table[name] = [*have, item]

    def snippet(self, body: bytes):
        """(tree, expression node) for a piece of text (a macro body); parsed once per process."""
        hit = _SNIPPETS.get(body)
        if hit is not None:
            return hit
        node, tree = None, None
        if body and len(body) < 4000:
            tree = parser().parse(b"int __occlint_v = (" + body + b"\n);")
            decl = tree.root_node.children[0] if tree.root_node.child_count else None
            if not tree.root_node.has_error and decl is not None and decl.type == "declaration":
                init = decl.child_by_field_name("declarator")
                value = init.child_by_field_name("value") if init is not None else None
                if value is not None and value.type == "parenthesized_expression":
                    inner = exprs(value)
                    node = inner[0] if len(inner) == 1 else None
        if len(_SNIPPETS) > 50_000:
            _SNIPPETS.clear()
        _SNIPPETS[body] = (tree, node)      # the tree keeps its nodes alive
        return _SNIPPETS[body]

    def text_value(self, body: bytes, scope: int | None = None,
                   bind: Mapping[bytes, int | str] | None = None) -> int | None:
        return self.value(self.snippet(body)[1], scope, bind or {})

    # --- evaluation ----------------------------------------------------------------------------

    def value(self, node, scope: int | None = None,
              bind: Mapping[bytes, int | str] | None = None) -> int | None:
        if node is None:
            return None
        if self._depth > MAX_DEPTH:
            self._cut += 1
            return None
        self._depth += 1
        try:
            v = self._value(node, scope, bind or {})
        except (RecursionError, OverflowError, ValueError, MemoryError):
            v = None
        finally:
            self._depth -= 1
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _value(self, node, scope, bind):
        t = node.type
        if t == "number_literal":
            return parse_int(node.text)
        if t in ("parenthesized_expression", "condition_clause"):
            inner = exprs(node)
            return self.value(inner[-1], scope, bind) if inner else None
        if t in ("identifier", "qualified_identifier", "field_identifier",
                 "namespace_identifier", "type_identifier"):
            return self.name_value(b"".join(node.text.split()), scope, bind, node)
        if t == "binary_expression":
            return self._binary(node, scope, bind)
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            v = self.value(node.child_by_field_name("argument"), scope, bind)
            if v is None or op is None:
                return None
            return {b"-": -v, b"+": v, b"~": ~v, b"!": int(not v)}.get(op.text)
        if t == "conditional_expression":
            c = self.value(node.child_by_field_name("condition"), scope, bind)
            a = self.value(node.child_by_field_name("consequence"), scope, bind)
            b = self.value(node.child_by_field_name("alternative"), scope, bind)
            if c is None:
                return a if a is not None and a == b else None
            return a if c else b
        if t == "field_expression":
            arg, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
            if arg is None or fld is None or arg.type != "identifier" or scope is None or \
                    arg.text in _BUILTIN_DIM3 or node.child_by_field_name("operator") is None or \
                    node.child_by_field_name("operator").text != b".":
                return None
            got = self._member(arg, fld.text, scope, bind)
            if got is not None or self.dim3_of is None or fld.text not in (b"x", b"y", b"z"):
                return got
            return getattr(self.dim3_of(arg, scope, 1), fld.text.decode())   # a local dim3
        if t == "type_descriptor" and node.named_child_count == 1:   # `k<N>`: N parsed as a type
            return self.value(node.named_children[0], scope, bind)
        if t == "cast_expression":
            return self.value(node.child_by_field_name("value"), scope, bind)
        if t == "sizeof_expression":
            return self._sizeof(node, bind)
        if t == "call_expression":
            return self._call(node, scope, bind)
        if t == "subscript_expression":         # `SIZES[1]` of `const int SIZES[] = {...}`
            return self._element(node, scope, bind)
        if t == "char_literal" and node.named_child_count == 1:
            c = node.named_children[0]
            return c.text[0] if c.type == "character" and len(c.text) == 1 else None
        if t == "true":
            return 1
        if t == "false":
            return 0
        if t == "initializer_list":     # `constexpr int WARP_THREADS{32};`: brace-initialized
            inner = exprs(node)         # (ThunderKittens' constants, a class's members)
            return self.value(inner[0], scope, bind) \
                if len(inner) == 1 and inner[0].type != "initializer_pair" else None
        return None

    def _member(self, arg, member: bytes, scope, bind) -> int | None:
        """`extent.width` of a local CUDA aggregate or vector, never written, initialized with
        its members in order: `cudaExtent extent = {N, 0, 0};`, `int2 v{a, b}`,
        `make_cudaExtent(w, h, d)`, `make_int2(a, b)` (missing trailing members are zero)."""
        local = self.local(scope, arg.text, arg)
        if local is None or len(local.decls) != 1 or local.written:
            return None
        type_text, decl = local.decls[0]
        names = types.fields_of(type_text.decode("utf-8", "replace"))
        if names is None or decl.type != "init_declarator" or \
                member.decode("utf-8", "replace") not in names:
            return None
        value = decl.child_by_field_name("value")
        if value is None:
            return None
        if value.type == "call_expression":
            fn = value.child_by_field_name("function")
            wanted = b"make_" + types.normalize(type_text.decode("utf-8", "replace")).encode()
            if fn is None or b"".join(fn.text.split()).lstrip(b":") != wanted:
                return None
            items = exprs(value.child_by_field_name("arguments"))
            if len(items) != len(names):
                return None
        elif value.type == "initializer_list":
            items = exprs(value)
            if len(items) > len(names) or any(i.type == "initializer_pair" for i in items):
                return None
        else:
            return None
        at = names.index(member.decode("utf-8", "replace"))
        return self.value(items[at], scope, bind) if at < len(items) else 0

    def _binary(self, node, scope, bind):
        op = node.child_by_field_name("operator")
        if op is None:
            return None
        a = self.value(node.child_by_field_name("left"), scope, bind)
        if op.text == b"&&" and a == 0:
            return 0
        if op.text == b"||" and a is not None and a != 0:
            return 1
        b = self.value(node.child_by_field_name("right"), scope, bind)
        if a is None or b is None:
            return None
        if op.text == b"&&":
            return int(bool(a and b))
        if op.text == b"||":
            return int(bool(a or b))
        f = _BINARY.get(op.text)
        return f(a, b) if f else None

    def _sizeof(self, node, bind):
        inner = node.child_by_field_name("type") or node.child_by_field_name("value")
        while inner is not None and inner.type == "parenthesized_expression" \
                and inner.named_child_count == 1:
            inner = inner.named_children[0]
        if inner is None:
            return None
        name = inner.text.decode("utf-8", "replace")
        bound = bind.get(inner.text.strip())
        if isinstance(bound, str):
            name = bound
        return types.size_of(name, self.structs)

    def _call(self, node, scope, bind):
        fn = node.child_by_field_name("function")
        args_node = node.child_by_field_name("arguments")
        if fn is None or args_node is None:
            return None
        args = exprs(args_node)
        name = b"".join(fn.text.split())
        if fn.type == "template_function":
            base = fn.child_by_field_name("name")
            name = base.text if base is not None else name
        if name in _MINMAX and len(args) == 2:
            a, b = (self.value(x, scope, bind) for x in args)
            return None if a is None or b is None else _MINMAX[name](a, b)
        if name in _CASTS and len(args) == 1:
            return self.value(args[0], scope, bind)
        defs = self.fmacros.get(name)
        if defs and len(defs) == 1 and name not in bind:
            params, body = defs[0]
            if len(params) != len(args) or ("f", name) in self._active:
                return None
            inner = dict(bind)
            for p, a in zip(params, args, strict=False):
                v = self.value(a, scope, bind)
                if v is None:
                    return None     # keep it simple: every argument must be constant
                inner[p] = v
            self._active.add(("f", name))
            try:
                return self.value(self.snippet(body)[1], scope, inner)
            finally:
                self._active.discard(("f", name))
        if defs or name in bind:
            return None
        if b"::" in name:       # `dh::WarpThreads()`: the one function of that name occlint
            last = name.rsplit(b"::", 1)[1]     # reads (xgboost's `constexpr int32_t
            if not re.fullmatch(rb"[A-Za-z_]\w*", last) or last in self.fmacros:  # WarpThreads()
                return None                     # { return 32; }` in device_helpers.cuh)
            name = last
        return self._function(name, fn, args, scope, bind)

    def _function(self, name: bytes, fn, args, scope, bind) -> int | None:
        """A call of a function the file defines as `return expr;` (`constexpr int warp_size()
        { return 32; }`, `smem_bytes<MT, NT>()`), its arguments and template arguments
        constant."""
        values = []
        for a in args:          # constant arguments first: most calls have none, and no lookup
            v = self.value(a, scope, bind)
            if v is None:
                return None
            values.append(v)
        got = self.function_return(name)
        if got is None or ("f", name) in self._active:
            return None
        params, tparams, expr, steps = got
        if len(params) != len(values):
            return None
        inner: dict = dict(zip(params, values, strict=True))
        if fn.type == "template_function":
            targs = exprs(fn.child_by_field_name("arguments"))
            if len(targs) > len(tparams):
                return None
            for p, a in zip(tparams, targs, strict=False):
                v = self.value(a, scope, bind)
                if v is None:       # a type: as the binding names it, or as written
                    v = bind.get(b"".join(a.text.split())) or \
                        (a.text.decode("utf-8", "replace") if a.type in _TYPE_NODES else None)
                    v = v if isinstance(v, str) and v else None
                if v is not None:
                    inner[p] = v
        self._active.add(("f", name))
        try:
            got = None
            for local, node in steps:       # locals in order; a guard must be false
                v = self.value(node, None, inner)
                if v is None or (local is None and v != 0):
                    break
                if local is not None:
                    inner[local] = v
            else:
                got = self.value(expr, None, inner)
        finally:
            self._active.discard(("f", name))
        self._called += got is not None
        return got

    def name_value(self, name: bytes, scope: int | None, bind, at=None) -> int | None:
        if name in bind:
            v = bind[name]
            return v if isinstance(v, int) else None
        head, sep, rest = name.partition(b"::")
        if sep and isinstance(bind.get(head), str) and bind[head] and ("t", head) not in self._active:
            # a type parameter bound to a class (flash-attention's `Kernel_traits::kNThreads`
            # with Kernel_traits = `Traits<4>`): that class's member, written out
            self._active.add(("t", head))
            try:
                return self.text_value(bind[head].encode() + b"::" + rest, scope)
            finally:
                self._active.discard(("t", head))
        if name in self.macros:
            bodies = self.macros[name]
            if len(bodies) != 1 or ("m", name) in self._active:
                return None
            key = (name, scope)
            if key in self._memo:
                return self._memo[key]
            self._active.add(("m", name))
            narrowed = self._narrowed
            try:
                got = self.value(self.snippet(bodies[0])[1], scope, {})
            finally:
                self._active.discard(("m", name))
            if self._narrowed == narrowed:
                self._memo[key] = got
            return got
        if name in self.fmacros:
            return None
        plain = name.rsplit(b"::", 1)[-1]
        if scope is not None and plain == name and self.site is not None:
            v = self.switch_value(scope, name, self.site)
            if v is not None:
                self._narrowed += 1
                return v
        if scope is not None and plain == name:
            local = self.local(scope, name, self.use_site or at)
            if local is not None:
                return self._local(name, local, scope, bind, at)
        if plain != name and self.class_constants is not None:
            v = self._class_member(name, plain, scope, bind, at)
            if v is not None:
                return v
        key = ("g", name)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return None
        self._active.add(key)
        try:
            self._memo[key] = v = self._global(name, plain)
        finally:
            self._active.discard(key)
        target = self.namespace_aliases.get(head) if v is None and sep else None
        if target and ("a", name) not in self._active:     # `namespace C = cfg;` `C::kThreads`
            self._active.add(("a", name))
            try:
                v = self.name_value(target + b"::" + rest, scope, bind, at)
            finally:
                self._active.discard(("a", name))
        return v

    def _element(self, node, scope, bind):
        index = node.child_by_field_name("indices")
        index = exprs(index) if index is not None else []
        items, at = self.array_elements(node.child_by_field_name("argument"), scope, True) or \
            ([], None)
        i = self.value(index[0], scope, bind) if len(index) == 1 and items else None
        if i is None or not 0 <= i < len(items):
            return None
        return self.value(items[i], at, bind)

    def array_elements(self, node, scope, constant: bool = False) -> tuple[list, int | None] | None:
        """(the element expressions, the scope they are read in) of the array `node` names: a
        local of the function at `scope` declared once with an initializer list and never
        assigned as a whole (with `constant`, only a `const` or `constexpr` one), or a
        file-scope constant array."""
        if node is None or node.type != "identifier":
            return None
        init = None
        local = self.local(scope, node.text) if scope is not None else None
        if local is not None:
            if len(local.decls) != 1 or local.whole_written:
                return None
            decl = local.decls[0][1]
            if decl.type == "declaration":      # `int a[] = {...}`: the declarator is an array's
                decl = next((d for d in decl.children_by_field_name("declarator")
                             if d.type == "init_declarator" and
                             getattr(declarator_name(d), "text", None) == node.text), decl)
            if decl.type == "init_declarator" and (not constant or (
                    decl.parent is not None and qualifiers(decl.parent) & {b"const", b"constexpr"})):
                init = decl.child_by_field_name("value")
        else:
            defs = self.globals.get(node.text, [])
            if len(defs) == 1:
                init = defs[0][1]
        if init is None or init.type != "initializer_list" or \
                any(c.type == "initializer_pair" for c in init.named_children):
            return None
        return exprs(init), scope if local is not None else None

    def _class_member(self, name, plain, scope, bind, at):
        """`Ktraits::kNThreads`: a static constant of a class (template) the file defines, its
        parameters bound to the arguments its alias, or the name, gives; members before it in
        the class are bound as they evaluate (`kSmem = kNThreads * 4`)."""
        found = self.class_constants(scope, name.rsplit(b"::", 1)[0], at)
        if found is None:
            return None
        params, defaults, args, members = found
        key = ("c", scope, name, at.start_byte if at is not None else None)
        if key in self._active:
            return None
        memo = ("cv", *key[1:]) if not bind else None
        if memo in self._memo:
            return self._memo[memo]
        self._active.add(key)
        cut, narrowed = self._cut, self._narrowed
        got = None
        try:
            inner: dict = {}
            for i, param in enumerate(params):
                if i < len(args):
                    v = self.value(args[i], scope, bind)
                else:
                    v = self.value(defaults[i], None, inner) if defaults[i] is not None else None
                if v is not None and param:
                    inner[param] = v
            for member, node in members:
                v = self.value(node, None, inner)
                if v is not None:
                    inner[member] = v
                if member == plain:
                    got = v
                    break
        finally:
            self._active.discard(key)
        return self._remember(memo, key, cut, narrowed, got)

    def _remember(self, memo, key, cut: int, narrowed: int, got):
        """Keep `got` under `memo` when its evaluation (`key`) was whole: nothing cut at the
        depth limit, no value taken from a launch site, no other evaluation in progress."""
        if memo is not None and self._cut == cut and self._narrowed == narrowed and \
                not self._active - {key}:
            self._memo[memo] = got
        return got

    def _local(self, name, local, scope, bind, at=None):
        # a local's initializer reads the same template bindings as the expression naming it
        if len(local.decls) != 1:
            return None
        type_text, decl = local.decls[0]
        if types.normalize(type_text.decode("utf-8", "replace")) in ("dim3", "float", "double"):
            return None
        key = ("l", scope, name)
        if key in self._active:
            return None
        if local.written or decl.type != "init_declarator":
            value = _assigned_once(decl, local, at) or \
                dominating_assignment(decl, local, at)    # `int b; b = 512;` read after it
            if value is None:           # `int b; if (c) b = 512; else b = 512;`: one value
                arms = assigned_in_branches(decl, local, at) or ()
                self._active.add(key)
                try:
                    got = {self.value(v, scope, bind) for v in arms} or {None}
                finally:
                    self._active.discard(key)
                return got.pop() if len(got) == 1 else None
        else:
            value = decl.child_by_field_name("value")
        # a Local lives as long as its Context; a written one's value depends on the use
        memo = ("lv", id(local), at.start_byte if local.written and at is not None else None) \
            if not bind else None
        if memo in self._memo:
            return self._memo[memo]
        self._active.add(key)
        cut, narrowed = self._cut, self._narrowed
        try:
            if value is not None and value.type in ("initializer_list", "argument_list"):
                got = self.value(value.named_children[0], scope, bind) \
                    if value.named_child_count == 1 else None
            else:
                got = self.value(value, scope, bind)
        finally:
            self._active.discard(key)
        return self._remember(memo, key, cut, narrowed, got)

    def _global(self, name, plain):
        found = set()
        qual = name.decode("utf-8", "replace").lstrip(":")
        texts = set()
        for qualname, node in self.globals.get(plain, ()):
            if plain == name or qualname == qual or qualname.endswith("::" + qual):
                if node is None:
                    return None
                if node.text in texts:
                    continue
                texts.add(node.text)          # the same text twice (a repeated header) is one
                found.add(self.value(node, None))
                if len(found) > 1:
                    return None
        for enumerators, index in self.enums.get(plain, ()):
            found.add(self._enum(enumerators, index))
            if len(found) > 1:
                return None
        if not found and plain == name:       # <climits>, <cstdint>: not read, fixed on LP64
            return types.LIMITS.get(name)
        return found.pop() if len(found) == 1 else None

    def _enum(self, enumerators, index):
        steps = 0
        while index >= 0:
            value = enumerators[index].child_by_field_name("value")
            if value is not None:
                v = self.value(value, None)
                return None if v is None else v + steps
            index -= 1
            steps += 1
        return steps - 1
