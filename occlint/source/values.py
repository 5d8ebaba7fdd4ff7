"""Expressions that take one of a few known values.

A launch's block size or dynamic shared memory that is not one constant may still be one of a
few: an element of a constant array (benchmark harnesses walk `int sizes[] = {32, ..., 1024}`
in a loop), either side of a ternary of constants, or a function parameter whose every call in
the file passes such a value (followed through up to MAX_DEPTH calls). `few_values` returns the
sorted distinct values, or None when any path is unknown or there are more than MAX_VALUES.
"""

from __future__ import annotations

import re

from occlint.source import types
from occlint.source.consteval import assigned_in_branches, exprs
from occlint.source.context import (
    Context,
    _template_parameters,
    declarator_name,
    function_declarator,
    word_starts,
)

MAX_VALUES = 16
MAX_DEPTH = 4


def few_values(ctx: Context, node, scope: int | None, depth: int = 0,
               bind: dict | None = None, trace: set | None = None) -> tuple[int, ...] | None:
    """The values `node` may take; `bind`: names fixed to one value (the block size's);
    `trace` gets "array" when some of them are the elements of a constant array."""
    if node is None or depth > MAX_DEPTH:
        return None
    try:
        found = _values(ctx, node, scope, depth, bind or {}, trace if trace is not None else set())
    except RecursionError:          # absurdly nested source: unknown
        return None
    if found is None or not found or len(found) > MAX_VALUES:
        return None
    return tuple(sorted(found))


def _values(ctx: Context, node, scope, depth, bind, trace) -> set[int] | None:
    if node.type == "identifier" and node.text in bind:
        return {bind[node.text]}
    v = ctx.env.value(node, scope)
    if v is not None:
        return {v}
    t = node.type
    if t == "parenthesized_expression" and node.named_child_count == 1:
        return _values(ctx, node.named_children[0], scope, depth, bind, trace)
    if t == "conditional_expression":
        a = _values(ctx, node.child_by_field_name("consequence"), scope, depth, bind, trace)
        b = _values(ctx, node.child_by_field_name("alternative"), scope, depth, bind, trace)
        return None if a is None or b is None else a | b
    if t == "subscript_expression":
        found = _array(ctx, node, scope)
        if found is not None and len(found) > 1:
            trace.add("array")
        return found
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        a = _values(ctx, node.child_by_field_name("left"), scope, depth, bind, trace)
        b = _values(ctx, node.child_by_field_name("right"), scope, depth, bind, trace)
        if a is None or b is None or op is None or len(a) * len(b) > MAX_VALUES:
            return None
        out = set()
        for x in a:
            for y in b:
                r = _binary(op.text, x, y)
                if r is None:
                    return None
                out.add(r)
        return out
    if t in ("identifier", "type_identifier") and scope is not None:   # (`dim3 b(n)`'s `n`)
        local = ctx.local(scope, node.text)
        if local is not None and local.written and len(local.decls) == 1:
            arms = assigned_in_branches(local.decls[0][1], local, node)   # `if ... b = 256;
            if not arms:                                                # else b = 128;`
                return None
            out: set[int] = set()
            for value in arms:
                got = _values(ctx, value, scope, depth, bind, trace)
                if got is None:
                    return None
                out |= got
            # one value only: the arms' conditions are mostly the device's own (ccminer's
            # lyra2: `tpb = 32`, `else if (arch >= 200) tpb = 160`), and the launch sits under
            # one of them (`if (arch >= 520) k<<<g, tpb>>>`): 160 there was a false OCC032
            return out if len(out) == 1 else None
        if local is None or not local.decls or local.written:
            return None
        if len(local.decls) == 1 and types.normalize(
                local.decls[0][0].decode("utf-8", "replace")) == "dim3":
            return _dim3_values(ctx, local.decls[0][1], scope, depth, bind, trace)
        if len(local.decls) == 1 and local.decls[0][1].type in (
                "parameter_declaration", "optional_parameter_declaration"):
            return _parameter(ctx, local.decls[0][1], scope, depth, trace)
        if len(local.decls) == 1 and local.decls[0][1].type == "function_definition":
            return _template_parameter(ctx, local.decls[0][1], node.text, depth, trace)
        out: set[int] = set()
        for _type, decl in local.decls:       # `int b = sizes[j];` in two loops: either
            value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
            if value is not None and value.type in ("initializer_list", "argument_list") \
                    and value.named_child_count == 1:
                value = value.named_children[0]
            got = _values(ctx, value, scope, depth, bind, trace) if value is not None else None
            if got is None:
                return None
            out |= got
        return out
    return None


def _dim3_values(ctx: Context, decl, scope, depth, bind, trace) -> set[int] | None:
    """The thread counts (x * y * z) a never-written dim3 local may hold: `dim3 block(tpb)`,
    `dim3 b = dim3(tpb, 2)`, `dim3 b{tpb}`, each component one of a few values (ccminer's
    `uint32_t tpb = TPB35; if (arch >= 500) tpb = TPB50; dim3 block(tpb);`)."""
    parts = _dim3_parts(decl)
    if parts is None:
        return None
    out, several = {1}, 0
    for part in parts:
        got = _values(ctx, part, scope, depth, bind, trace) if part is not None else None
        several += got is not None and len(got) > 1
        if got is None or several > 1:      # `dim3 b(s, s)`: the two vary together, and not
            return None                     # every product of their values is a block
        out = {a * b for a in out for b in got}
    return out


def _dim3_parts(decl) -> list | None:
    """The component expressions of a dim3 local's declaration (`dim3 b(x, y)`, which parses
    as a function declarator, `dim3 b = dim3(x)`, `dim3 b{x, y}`), 1 to 3 of them; else None."""
    if decl.type == "function_declarator":
        params = exprs(decl.child_by_field_name("parameters"))
        if any(p.type != "parameter_declaration" or p.child_by_field_name("declarator")
               is not None for p in params):
            return None
        parts = [p.child_by_field_name("type") for p in params]
    elif decl.type == "init_declarator":
        value = decl.child_by_field_name("value")
        if value is not None and value.type == "call_expression" and \
                b"".join(value.child_by_field_name("function").text.split()) in (b"dim3", b"::dim3"):
            value = value.child_by_field_name("arguments")
        if value is None or value.type not in ("argument_list", "initializer_list"):
            return None
        parts = exprs(value)
    else:
        return None
    return parts if 1 <= len(parts) <= 3 else None


def dim3_shape(ctx: Context, node, scope) -> tuple[int, int, int] | None:
    """(x, y, z) of a never-written dim3 local whose every component has one value, through
    the calls of its function when a component is a parameter (cuda-samples' matrixMul_nvrtc:
    `dim3 threads(block_size, block_size)`, `block_size` 32 at the one call); else None."""
    if node is None or node.type != "identifier" or scope is None:
        return None
    local = ctx.local(scope, node.text)
    if local is None or local.written or len(local.decls) != 1 or types.normalize(
            local.decls[0][0].decode("utf-8", "replace")) != "dim3":
        return None
    decl = local.decls[0][1]
    parts = _dim3_parts(decl)
    if parts is None:
        return None
    shape = []
    for part in parts:
        got = few_values(ctx, part, scope) if part is not None else None
        if got is None or len(got) != 1 or got[0] < 1:
            return None
        shape.append(got[0])
    x, y, z = (*shape, 1, 1)[:3]
    return x, y, z


def _binary(op: bytes, a: int, b: int) -> int | None:
    if op in (b"/", b"%") and b == 0:
        return None
    f = {b"+": a + b, b"-": a - b, b"*": a * b, b"<<": a << b if 0 <= b < 64 else None,
         b">>": a >> b if 0 <= b < 64 else None}
    if op in f:
        return f[op]
    if op == b"/":
        return abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
    if op == b"%":
        return a - b * (abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1))
    return None


def _array(ctx: Context, node, scope) -> set[int] | None:
    """The elements of a constant array (a local or a file-scope array) subscripted by `node`:
    the one a constant index names, else every one (a sweep: `sizes[i]`)."""
    found = ctx.env.array_elements(node.child_by_field_name("argument"), scope)
    if found is None:
        return None
    items, at = found
    index = node.child_by_field_name("indices")
    index = exprs(index) if index is not None else []
    i = ctx.env.value(index[0], scope) if len(index) == 1 else None
    if i is not None:
        items = items[i:i + 1] if 0 <= i < len(items) else []
    out = set()
    for item in items:
        v = ctx.env.value(item, at)
        if v is None:
            return None
        out.add(v)
    return out or None


def _parameter(ctx: Context, decl, scope, depth, trace) -> set[int] | None:
    """Union over every call of the enclosing function in this file of the argument passed
    for this parameter; None when the function has no call here or one passes an unknown."""
    fn = ctx.function_at(scope)
    if fn is None or depth >= MAX_DEPTH:
        return None
    fdecl = function_declarator(fn)
    params = fdecl.child_by_field_name("parameters") if fdecl is not None else None
    if params is None:
        return None
    plist = [p for p in params.named_children if p.type != "comment"]
    if decl not in plist:
        return None
    index = plist.index(decl)
    name = declarator_name(fdecl.child_by_field_name("declarator"))
    if name is None:
        return None

    required = sum(p.type != "optional_parameter_declaration" for p in plist)
    overloaded = _definitions(ctx).get(name.text, 0) > 1

    def argument(call):
        args = [a for a in call.child_by_field_name("arguments").named_children
                if a.type != "comment"]
        if len(args) == len(plist):
            return args[index]
        if overloaded and not required <= len(args) <= len(plist):
            return _OTHER           # another overload's call (tiny-cuda-nn's parallel_for_gpu)
        return None                 # (a default taken: not read)
    return _over_calls(ctx, name.text, argument, depth, trace)


_OTHER = object()


def _over_calls(ctx: Context, name: bytes, argument, depth, trace) -> set[int] | None:
    """Union over the calls of function `name` in this file of the values of the node
    `argument(call)` picks; None when one picks none or is unknown, or there is no call."""
    out: set[int] = set()
    calls = 0
    for call in calls_of(ctx, name):
        node = argument(call)
        if node is _OTHER:
            continue
        got = _values(ctx, node, ctx.scope_of(call.start_byte), depth + 1, {}, trace) \
            if node is not None else None
        if got is None:
            return None
        out |= got
        calls += 1
    return out if calls else None


def _template_parameter(ctx: Context, fn, name: bytes, depth, trace) -> set[int] | None:
    """Union over the calls in this file of template function `fn` of the template argument
    each names for its parameter `name` (Rodinia's dwt2d: `launch<192>(...)`,
    `launch<128>(...)`, `launch<64>(...)`); None when a call leaves it to deduction or passes
    an unknown, or there is no call."""
    t = fn.parent
    if depth >= MAX_DEPTH or t is None or t.type != "template_declaration":
        return None
    names = _template_parameters(t)
    if name not in names:
        return None
    index = names.index(name)
    ident = _defined_name(fn)
    if ident is None:
        return None

    def argument(call):
        targs = _written_template_args(call)
        if len(targs) <= index or fn.start_byte <= call.start_byte < fn.end_byte:
            return None         # deduced, defaulted, or the template calling itself
        return targs[index]
    return _over_calls(ctx, ident.text, argument, depth, trace)


def _defined_name(fn):
    """The identifier naming function definition `fn`, or None."""
    decl = function_declarator(fn)
    return declarator_name(decl.child_by_field_name("declarator")) if decl is not None else None


def _written_template_args(call) -> list:
    """The template arguments a call writes (`ns::f<128, 4>(...)`); [] when it writes none."""
    f = _template_function(call.child_by_field_name("function"))
    return exprs(f.child_by_field_name("arguments")) if f is not None else []


def _template_function(name):
    """The `template_function` a (qualified) name ends in (`ns::f<128>` -> `f<128>`), or None."""
    while name is not None and name.type == "qualified_identifier":
        name = name.child_by_field_name("name")
    return name if name is not None and name.type == "template_function" else None


def template_bindings(ctx: Context, fn, depth: int = 0) -> list[dict[bytes, int | str]] | None:
    """One binding of template function `fn`'s parameters per live call in this file (outside
    it) that writes its template arguments (`launch<128, 4, float>(...)`: the values known at
    the call; a type parameter to the type written, as `sizeof(T)` and `T::kNThreads` read it:
    cudpp's `runMergeSort<int>`, flash-attention's `run_k<Traits<4>>`). An argument written
    with the calling template's own parameters takes each of that template's bindings in turn
    (two more levels: flash-attention's `run_flash_bwd` -> `run_flash_bwd_seqk_parallel`). A
    parameter the call does not write takes its default (xgboost's `LaunchN(n, stream, f)`:
    BLOCK_THREADS = 256), else stays unbound (deduced from the call's arguments). None when
    `fn` is not a template, has no call, or there would be more than MAX_BINDINGS. A member
    function of a class template that is no template itself: one binding of the class's
    parameters per explicit instantiation in the file (`_class_instantiations`)."""
    t = fn.parent
    if t is None or t.type != "template_declaration":
        return _class_instantiations(ctx, fn)
    memo = ctx.__dict__.setdefault("_template_bindings", {})
    key = (fn.start_byte, depth)
    if key not in memo:
        memo[key] = _template_bindings(ctx, fn, t, depth)
    return memo[key]


def _template_bindings(ctx: Context, fn, t, depth: int) -> list[dict[bytes, int | str]] | None:
    names = _template_parameters(t)
    plist = t.child_by_field_name("parameters")
    params = [p for p in (plist.named_children if plist is not None else ()) if p.type != "comment"]
    needed = sum(p.type not in ("optional_parameter_declaration",
                                "optional_type_parameter_declaration") for p in params)
    kinds = [p.type in ("type_parameter_declaration", "optional_type_parameter_declaration")
             for p in params]
    ident = _defined_name(fn)
    if ident is None:
        return None
    out: list[dict[bytes, int | str]] = []
    overloaded = _definitions(ctx).get(ident.text, 0) > 1
    # the live calls, then the explicit instantiations (`template void launch<128>(float*);`,
    # `launch<>`: its defaults), read as calls that write their template arguments
    sites = [(call, _written_template_args(call)) for call in calls_of(ctx, ident.text)] + \
        [(inst, args) for inst, args in _function_instantiations(ctx, ident.text)]
    for call, targs in sites:
        if fn.start_byte <= call.start_byte < fn.end_byte:
            return None                 # the template calling itself
        if overloaded and targs and not needed <= len(targs) <= len(names):
            continue                    # another overload's (causal_product's `lmha<E, G>`)
        scope = ctx.scope_of(call.start_byte)   # (an argument not written: its default, else
                                                # deduced from the call and left unbound)
        caller = ctx.function_at(call.start_byte)
        theirs = ctx._template_names(caller) if caller is not None else set()
        outer: list = [{}]
        if theirs and depth < 2 and any(theirs & set(_WORD.findall(a.text)) for a in targs):
            # the caller's bindings; with none (a caller no call binds), its parameters'
            # defaults (xgboost's `LaunchN(n, f)` forwarding `LaunchN<ITEMS, BLOCK>(n, 0, f)`)
            outer = template_bindings(ctx, caller, depth + 1) or [_defaults(ctx, caller)]
        for ob in outer:
            bind: dict[bytes, int | str] = {}
            for name, arg, is_type in zip(names, targs, kinds, strict=False):
                v = ctx.env.value(arg, scope, ob) if not is_type else _type_bound(arg, theirs, ob)
                if v is not None and name:
                    bind[name] = v
            for name, param in zip(names[len(targs):], params[len(targs):], strict=False):
                default = param.child_by_field_name("default_value") \
                    if param.type == "optional_parameter_declaration" else None
                v = ctx.env.value(default, None, bind) if default is not None else None
                if v is not None and name:      # xgboost's LaunchN<ITEMS = 8, BLOCK = 256>
                    bind[name] = v
            if bind not in out:
                out.append(bind)
        if len(out) > MAX_BINDINGS:
            return None
    return out or None


def _function_instantiations(ctx: Context, name: bytes) -> list[tuple[object, list]]:
    """(node, the template arguments written) of each live explicit instantiation of function
    template `name` at namespace scope (vllm's `template void launch<128>(float*);`)."""
    if b"template" not in ctx.data:
        return []
    memo = ctx.__dict__.setdefault("_function_instantiations", {})
    if name in memo:
        return memo[name]
    out = []
    for c in _instantiations(ctx):
        d = c.child_by_field_name("declarator")
        f = _template_function(d.child_by_field_name("declarator")) if d is not None and \
            d.type == "function_declarator" else None
        fname = f.child_by_field_name("name") if f is not None else None
        if fname is not None and fname.text == name:
            out.append((c, exprs(f.child_by_field_name("arguments"))))
    memo[name] = out
    return out


def _instantiations(ctx: Context) -> list:
    """The live explicit instantiations (`template ...;`) at namespace scope, in file order
    of their containers (found once per file)."""
    got = ctx.__dict__.get("_instantiations")
    if got is None:
        got = ctx.__dict__["_instantiations"] = []
        todo = [ctx.tree.root_node]
        while todo:
            node = todo.pop()
            for c in node.named_children:
                if c.type in ("namespace_definition", "declaration_list", "linkage_specification"):
                    todo.append(c)
                elif c.type == "template_instantiation" and not ctx.dead(c):
                    got.append(c)
    return got


def _class_instantiations(ctx: Context, fn) -> list[dict[bytes, int | str]] | None:
    """The bindings of the parameters of the class template `fn` is a member function of, one
    per explicit instantiation the file writes (tiny-cuda-nn's `template class
    FullyFusedMLP<network_precision_t, 128>;` for its `threads = {32u, WIDTH / 16, 1}`); None
    when `fn` is no such member or the file has none."""
    if b"template" not in ctx.data:
        return None
    cls = fn.parent.parent if fn.parent is not None else None      # (field_declaration_list)
    holder = cls.parent if cls is not None else None
    name = cls.child_by_field_name("name") if cls is not None and \
        cls.type in ("struct_specifier", "class_specifier") else None
    if name is None or holder is None or holder.type != "template_declaration":
        return None
    names = _template_parameters(holder)
    out: list[dict[bytes, int | str]] = []
    for c in _instantiations(ctx):
        ty = c.child_by_field_name("type")
        tt = next((x for x in (ty.named_children if ty is not None else ())
                   if x.type == "template_type"), None)
        if tt is None or tt.child_by_field_name("name").text != name.text:
            continue
        args = exprs(tt.child_by_field_name("arguments"))
        bind: dict[bytes, int | str] = {}
        for n, a in zip(names, args, strict=False):
            v = ctx.env.value(a, None) if a.type != "type_descriptor" else \
                b" ".join(a.text.split()).decode("utf-8", "replace")
            if v is not None and n:
                bind[n] = v
        if bind and bind not in out:
            out.append(bind)
    return out[:MAX_BINDINGS] or None


def _defaults(ctx: Context, fn) -> dict[bytes, int]:
    """Template function `fn`'s non-type parameters that have a default -> its value."""
    t = fn.parent
    plist = t.child_by_field_name("parameters") if t is not None and \
        t.type == "template_declaration" else None
    out: dict[bytes, int] = {}
    for p in (plist.named_children if plist is not None else ()):
        if p.type != "optional_parameter_declaration":
            continue
        name = declarator_name(p.child_by_field_name("declarator"))
        v = ctx.env.value(p.child_by_field_name("default_value"), None, out)
        if name is not None and v is not None:
            out[name.text] = v
    return out


def _definitions(ctx: Context) -> dict[bytes, int]:
    """Function name -> how many functions of the file define it (memoized on the context)."""
    got = ctx.__dict__.get("_definition_counts")
    if got is None:
        got = ctx.__dict__["_definition_counts"] = {}
        for _s, _e, f in ctx.funcs:
            d = _defined_name(f)
            if d is not None:
                got[d.text] = got.get(d.text, 0) + 1
    return got


MAX_BINDINGS = 64
_WORD = re.compile(rb"[A-Za-z_]\w*")


def _type_bound(arg, theirs: set, ob: dict) -> str | None:
    """A type template argument as written, with the calling template's parameters put in from
    its binding `ob` (`Traits<KW>` with KW = 4: `Traits<4>`); None when one of them is unbound
    (the caller's own `T`, not a type this file names)."""
    text = b" ".join(arg.text.split())
    if not theirs & set(_WORD.findall(text)):
        return text.decode("utf-8", "replace") or None
    missing = False

    def put(m):
        nonlocal missing
        w = m.group(0)
        if w not in theirs:
            return w
        v = ob.get(w)
        if v is None or v == "":
            missing = True
            return w
        return str(v).encode()
    done = _WORD.sub(put, text)
    return None if missing else done.decode("utf-8", "replace")


def config_choices(ctx: Context, block, smem, scope, block_total: int | None,
                   dynamic_smem: int | None, trace: set | None = None) -> tuple[tuple[int, int], ...]:
    """(block size, dynamic shared memory) pairs a launch may take when either is one of a few
    values; () when one is unknown or both are single constants. A dynamic size computed from
    the block size's variable is evaluated with it bound, pair by pair (`block_size *
    sizeof(float)` follows `block_size`)."""
    blocks = (block_total,) if block_total is not None else few_values(ctx, block, scope, trace=trace)
    if not blocks or min(blocks) < 1:     # an extent below 1: a write was missed (launches._extent)
        return ()
    driver = block.text if block_total is None and block is not None and \
        block.type == "identifier" else None
    out: list[tuple[int, int]] = []
    for b in blocks:
        if dynamic_smem is not None:
            smems: tuple[int, ...] | None = (dynamic_smem,)
        elif smem is None:
            smems = (0,)
        else:
            smems = few_values(ctx, smem, scope, bind={driver: b} if driver else None)
        if smems is None:
            return ()
        out += [(b, d) for d in smems]
    out = list(dict.fromkeys(out))
    return tuple(out) if 1 < len(out) <= 2 * MAX_VALUES else ()


def calls_of(ctx: Context, name: bytes) -> list:
    """The live calls of function `name` in the file (memoized on the context)."""
    memo = ctx.__dict__.setdefault("_calls_memo", {})
    if name in memo:
        return memo[name]
    out = []
    for start in word_starts(ctx.data, name, 0, len(ctx.data)):
        ident = ctx.tree.root_node.descendant_for_byte_range(start, start + len(name))
        call = ident.parent if ident is not None else None
        while call is not None and call.type in ("qualified_identifier", "template_function"):
            call = call.parent          # `ns::f(...)`, `f<32>(...)`, `::f<32>(...)`
        if call is None or call.type != "call_expression" or ctx.dead(call):
            continue
        fnode = call.child_by_field_name("function")
        if fnode is not None and fnode.start_byte <= start < fnode.end_byte:
            out.append(call)
    memo[name] = out
    return out
