"""Launch sites written inside macro bodies (`#define LAUNCH(T) k<T><<<g, b>>>(...)`).

The bodies of macros that launch kernels are parsed again at their own byte offsets, with
tree-sitter's included ranges over a copy of the file, so positions need no mapping. A body is
read two ways, and per macro the reading that finds more launches wins: as statements, wrapped
in a function named after the macro (`#define NAME(params)` overwritten by `void NAME(){`, the
body's final newline by `}`), and as top-level code (a body that defines whole functions).
`##` becomes `__` and `#` a space, so pasted names stay one token. Macro parameters are unknown,
but for a launch whose kernel is one: it is read at each use of the macro (`_at_uses`).
"""

from __future__ import annotations

import re
from bisect import bisect_right

from tree_sitter import Point, Range

from occlint.record import replace
from occlint.source.context import Context
from occlint.source.grammar import new_parser
from occlint.source.launches import LaunchReader

_MARKERS = (b"<<<", b"cudaLaunch", b"cudaFuncSet", b"cudaOccupancyMaxPotentialBlockSize")


def macro_launches(ctx: Context, reader: LaunchReader) -> tuple[list, list]:
    """(launches, attribute calls) written in macro bodies: the file's own, and the launches of
    a project header's launch macro at each use in the file (`_header_uses`). `reader`: the
    file's, which reads a body's launch again at each use (`_at_use`)."""
    own, attributes = _own_macros(ctx, reader)
    return own + _header_uses(ctx), attributes


def _header_uses(ctx: Context) -> list:
    """Launches of function-like macros a project header defines with `<<<` in their body and a
    parameter as the kernel (CloverLeaf's `CUDALAUNCH(kernel, ...)`), at each use in the file:
    the body with the use's arguments put in, read on its own (names of the using function are
    unknown there; the header's and the file's macros and constants are known)."""
    if b"(" not in ctx.data:
        return []
    own = {n.child_by_field_name("name").text for n in ctx.caps.get("fdef", ())}
    out = []
    for name, defs in list(dict.items(ctx.env.fmacros)):
        if len(defs) != 1 or name in own:
            continue
        params, body = defs[0]
        if not params or not _launches_a_parameter(params, body) or name not in ctx.data:
            continue
        for start, end, args, _at in _uses(ctx, name):
            if len(args) < len([p for p in params if p != b"..."]):
                continue
            text = _pasted(_bound(body, _bind(params, args), _STRINGIFIED_OR_NAME))
            sub = _sub_context(ctx, "void __occlint_use() {\n" + text.decode("utf-8", "replace")
                               + ";\n}\n")
            reader = LaunchReader(sub)
            for la in reader.chevrons() + reader.api_calls()[0]:
                out.append(replace(la, span=ctx.tx.span(start, end), config_span=None,
                                   arg_spans=(), argc=None, path=ctx.path,
                                   function=ctx.function_name(start)))
    return out


# a launch API call in a header's macro body (NCCL's `LAUNCH_KERNEL(config, kernel, ...)`)
_API_LAUNCH = re.compile(rb"\bcudaLaunch(?:Kernel|KernelExC?|CooperativeKernel)\s*\(")
_LAUNCHING: dict[tuple, bool] = {}      # (params, body) -> _launches_a_parameter, per process


def _launches_a_parameter(params: tuple, body: bytes) -> bool:
    """Does a function-like macro's body launch (`<<<`, a cudaLaunch* call) a kernel one of its
    parameters names? Asked of every header macro in every file: remembered."""
    key = (params, body)
    got = _LAUNCHING.get(key)
    if got is None:
        at = body.find(b"<<<")
        api = _API_LAUNCH.search(body) if at < 0 else None
        head = body[:at] if at >= 0 else body[api.end():] if api is not None else None
        got = head is not None and bool(set(_NAME.findall(head)) & set(params))
        if len(_LAUNCHING) > 65536:                 # (an API call's kernel: an argument)
            _LAUNCHING.clear()
        _LAUNCHING[key] = got
    return got


def _own_macros(ctx: Context, reader: LaunchReader) -> tuple[list, list]:
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
    for start, node, value in defs:     # (spans count characters, nodes bytes)
        lo, hi = ctx.tx.char_offset(start), ctx.tx.char_offset(value.end_byte)

        def inside(x, lo=lo, hi=hi):
            return lo <= x.span.start and x.span.end <= hi + 1
        best = max(readings, key=lambda r: sum(1 for la in r[0] if inside(la)))
        for la in best[0]:
            if inside(la):
                uses = _at_uses(ctx, reader, node, la)
                launches += [la] if uses is None else uses     # (none: the file has no use)
        attributes += [a for a in best[1] if inside(a)]
    return launches, attributes


def _at_uses(ctx: Context, reader: LaunchReader, node, la) -> list | None:
    """A body's launch whose kernel is a parameter of the macro (`#define LAUNCH(f, ...)
    f<<<n, 256>>>(__VA_ARGS__)`, CloverLeaf's `pack_##face`), once per use of the macro in the
    file (`LAUNCH(heavy, a, b);`), at the use, with the argument for the kernel; None when the
    kernel is not a parameter. Its figures are the body's, read again at the use where the body
    leaves them unknown; its arguments are not edited (no fix: the body is shared)."""
    names = _parameter_names(node)
    if not names:
        return None
    if la.kind != "chevron":
        return _api_at_uses(ctx, node, la, names)
    data = ctx.data
    begin = ctx.tx.byte_offset(la.span.start)           # (a span counts characters)
    head_end = data.find(b"<<<", begin)
    head = re.sub(rb"\\\r?\n", b" ", data[begin:head_end]) if head_end > 0 else b""
    value = node.child_by_field_name("value")
    value_text = value.text if value is not None else b""
    head = _kernel_alias(value_text, head) or head
    config_end = data.find(b">>>", head_end) if head_end > 0 else -1
    config = data[head_end:config_end] if config_end > 0 else b""
    if not set(_NAME.findall(head + b" " + config)) & set(names):
        return None         # (neither the kernel nor a size is the use's)
    kernel_is_parameter = bool(set(_NAME.findall(head.split(b"<")[0])) & set(names))
    out = []
    macro = node.child_by_field_name("name").text
    own = _body_locals(value_text)
    lo, hi = _in_force(ctx, macro, node.start_byte)
    for start, end, args, at, *outer in [*_uses(ctx, macro), *_nested_uses(ctx, macro)]:
        if not lo <= start < hi:
            continue        # another definition of the name is in force there
        if len(args) < len(names):
            continue
        bind = dict(zip(names, args, strict=False))
        scope = ctx.scope_of(start)
        out.append(_at_use(ctx, reader, at, replace(
            la, **_callee(ctx, _pasted(_bound(head, bind)), scope), span=ctx.tx.span(start, end),
            config_span=None, arg_spans=(), argc=None,
            function=ctx.function_name(start)), bind, scope, {**(outer[0] if outer else {}), **own}))
    return out if out or kernel_is_parameter else None


def macro_kernels(ctx: Context, heads: dict | None = None) -> list:
    """Kernels a function-like macro of the file or its project headers defines, one per use
    outside any function (NCCL's `DEFINE_ncclDevKernel(...)`, `#define DEFINE_K(s) __global__
    void k_##s(...) {...}` then `DEFINE_K(f32)`): the body with the use's arguments put in,
    read on its own (the file's macros and constants known), named in the namespaces around
    the use, at the use (`Kernel.in_macro`: no fix edits it). `heads`: filled with the file's
    function definition start -> a KernelNode, for a macro that writes a kernel's head and the
    file its body (flash-attention's), so that the body's `__shared__` arrays are the kernel's."""
    heads = {} if heads is None else heads
    from occlint.source.kernels import kernel_nodes, split_args, unmacroed

    if b"__global__" not in ctx.data and not any(
            b"__global__" in d[1] for defs in dict.values(ctx.env.fmacros) for d in defs):
        return []
    out = []
    for name, defs in list(dict.items(ctx.env.fmacros)):
        if len(defs) != 1 or b"__global__" not in defs[0][1] or name not in ctx.data:
            continue
        params, body = defs[0]
        for start, end, args, at in _uses(ctx, name):
            if len(args) < len(params) - (params[-1:] == (b"...",)):
                continue
            fn = ctx.function_at(start)
            tail = b""
            if fn is not None:      # a macro that writes a kernel's head, its body after the use
                inner = fn.child_by_field_name("body")    # (flash-attention's
                if inner is None or inner.start_byte < end:     # DEFINE_FLASH_FORWARD_KERNEL)
                    continue        # a use inside a function's body
                tail = b" " + inner.text
            use = ctx.data[start:end]               # (the arguments as written: `bool Flag`)
            args = [b" ".join(a.split()) for a in split_args(use[use.find(b"(") + 1:-1])]
            text = _pasted(_bound(body.replace(b"\\\n", b" "), _bind(params, args),
                                  _STRINGIFIED_OR_NAME)) + tail
            sub = _sub_context(ctx, text.decode("utf-8", "replace"))
            scopes = unmacroed(ctx.env, ctx.scopes(at))
            span = ctx.tx.span(start, end)
            for kn in kernel_nodes(sub):
                k = kn.kernel
                lb = replace(k.launch_bounds, span=None) if k.launch_bounds is not None else None
                out.append(replace(k, qualname="::".join((*scopes, *k.scopes, k.name)),
                                   scopes=(*scopes, *k.scopes), path=ctx.path, span=span,
                                   decl_span=ctx.tx.span(start, start), launch_bounds=lb,
                                   in_macro=name.decode("utf-8", "replace")))
                if tail and fn is not None:     # its body is the file's: its `__shared__`
                    heads[fn.start_byte] = replace(kn, kernel=out[-1], node=fn,   # arrays
                                                   body=fn.child_by_field_name("body"))
    return out


def _api_at_uses(ctx: Context, node, la, names) -> list | None:
    """A launch API call in a macro body whose kernel is a parameter of the macro (NCCL's
    `#define LAUNCH_KERNEL(cfg, kernel, ...) cudaLaunchKernelEx(cfg, kernel, ...)`): one launch
    per use, of the kernel the use names, at the use (its configuration is the use's and is
    not read); None when the kernel is not a parameter."""
    if la.callee.encode() not in names:
        return None
    macro = node.child_by_field_name("name").text
    lo, hi = _in_force(ctx, macro, node.start_byte)
    out = []
    for start, end, args, _at, *_outer in [*_uses(ctx, macro), *_nested_uses(ctx, macro)]:
        if not lo <= start < hi or len(args) < len(names):
            continue
        text = _pasted(_bound(la.callee.encode(), dict(zip(names, args, strict=False))))
        out.append(replace(
            la, **_callee(ctx, text.strip().lstrip(b"&"), ctx.scope_of(start)),
            span=ctx.tx.span(start, end), config_span=None, arg_spans=(), argc=None,
            function=ctx.function_name(start)))
    return out


def _callee(ctx: Context, text: bytes, scope) -> dict:
    """A launch's callee, template arguments and their values from a kernel written at a
    macro's use (`k_f32<256 / (4)>`)."""
    from occlint.link import template_arg

    name, _, rest = text.strip().partition(b"<")
    targs = [t.strip() for t in rest.rstrip(b">").split(b",")] if rest else []
    return {"callee": name.decode("utf-8", "replace").strip(),
            "template_args": tuple(template_arg(t.decode("utf-8", "replace")) for t in targs),
            "template_values": tuple(ctx.env.text_value(t, scope) for t in targs)}


def _bind(params, args) -> dict:
    """A function-like macro's parameters bound to a use's arguments (`...`: the rest)."""
    bind = dict(zip(params, args, strict=False))
    bind[b"__VA_ARGS__"] = b", ".join(args[len(params) - 1:]) if params[-1:] == (b"...",) else b""
    return bind


def _sub_context(ctx: Context, text: str) -> Context:
    """`text` (a macro's body put together at a use) parsed on its own, reading the file's
    macros, constants, enums and structs."""
    sub = Context(text, ctx.path)
    env, mine = sub.env, ctx.env
    env.macros, env.fmacros, env.globals, env.enums, env.structs = (
        mine.macros, mine.fmacros, mine.globals, mine.enums, mine.structs)
    return sub


def _uses(ctx: Context, name: bytes) -> list:
    """(start, end, argument texts, the name's node) of each use `NAME(...)` of a function-like
    macro in the file's live code, found in the text (tree-sitter reads `M(float, n)` as no
    call): not in a comment, a string or a `#define`, its arguments split at top-level commas.
    Memoized on the context (each launch of a macro's body reads its uses)."""
    from occlint.source.context import word_starts
    from occlint.source.kernels import split_args

    memo = ctx.__dict__.setdefault("_macro_uses", {})
    if name in memo:
        return memo[name]
    data, out = ctx.data, []
    for start in word_starts(data, name, 0, len(data)):
        at = ctx.tree.root_node.descendant_for_byte_range(start, start + len(name))
        if at is None or at.type not in ("identifier", "type_identifier") or \
                at.start_byte != start or ctx.dead(at):
            continue
        line = data[data.rfind(b"\n", 0, start) + 1:start].lstrip()
        if line.startswith(b"#"):
            continue
        i = start + len(name)
        while i < len(data) and data[i] in b" \t":
            i += 1
        if i >= len(data) or data[i] != 40:         # (
            continue
        j = _closing(data, i)
        if j is None:
            continue
        args = split_args(data[i + 1:j])   # at top-level commas, as the preprocessor does
        out.append((start, j + 1, [b"".join(a.split()) for a in args], at))
    memo[name] = out
    return out


def _closing(data: bytes, i: int) -> int | None:
    """The index of the `)` that closes the `(` at `i`; None when none does."""
    depth = 0
    for j in range(i, len(data)):
        depth += (data[j] == 40) - (data[j] == 41)          # ( )
        if depth == 0:
            return j
    return None


def _parameter_names(node) -> list[bytes]:
    """The named parameters of a function-like `#define` (`...` left out)."""
    params = node.child_by_field_name("parameters")
    return [p.text for p in params.named_children if p.type == "identifier"] \
        if params is not None else []


def _in_force(ctx: Context, name: bytes, start: int) -> tuple[int, int]:
    """The bytes where the `#define` of `name` at `start` is the one in force: up to the next
    `#define` or `#undef` of the name (PyTorch's indexing code redefines its launch macro; every
    use was read with every definition, 66 of 99 launches phantoms); one in a dead branch
    (`#ifdef __CUDACC__` ... `#else` a host fallback) does not count."""
    from occlint.source.preproc import _directives

    for s, e, word, rest in _directives(ctx.data):
        if s > start and word in (b"define", b"undef") and not ctx.pp.is_dead(s, e):
            m = _NAME.match(rest.strip())
            if m is not None and m.group(0) == name:
                return start, s
    return start, len(ctx.data)


def _nested_uses(ctx: Context, name: bytes, chain: tuple = ()) -> list:
    """`_uses` of macro `name` written in the body of another function-like macro of the file
    (LeetCUDA: `#define BIND(t) ... case 128: LAUNCH(128, t) break; ...`, then `BIND(f32)`):
    one per use of that outer macro, at it, with the outer arguments put into the inner ones
    and the outer body's locals (`_body_locals`, bound the same way) as a fifth item; an outer
    macro used in a third one's body in turn (three levels: LeetCUDA's TORCH_BINDING_REDUCE ->
    DISPATCH_REDUCE_KERNEL -> LANUCH_REDUCE_KERNEL). `chain`: the macros already read on the
    way out, skipped (macros that name each other). Memoized on the context."""
    from occlint.source.kernels import split_args

    memo = ctx.__dict__.setdefault("_nested_macro_uses", {})
    if (name, chain) in memo:
        return memo[name, chain]
    out = []
    for node in ctx.caps.get("fdef", ()):
        outer, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if outer is None or value is None or node.child_by_field_name("parameters") is None or \
                outer.text == name or outer.text in chain or name not in value.text or \
                ctx.dead(node):
            continue
        names = _parameter_names(node)
        inner = []
        body = value.text.replace(b"\\\n", b" ")
        for m in re.finditer(rb"\b" + re.escape(name) + rb"\s*\(", body):
            j = _closing(body, m.end() - 1)
            if j is not None:
                inner.append(split_args(body[m.end():j]))
        if not inner:
            continue
        local = _body_locals(body)
        uses = [*_uses(ctx, outer.text),
                *(_nested_uses(ctx, outer.text, (*chain, name)) if len(chain) < 2 else ())]
        for start, end, args, at, *deeper in uses:
            bind = dict(zip(names, args, strict=False))
            mine = {**(deeper[0] if deeper else {}),                  # the outer bodies' locals
                    **{k: _bound(v, bind) for k, v in local.items()}}
            out += [(start, end, [b"".join(_pasted(_bound(a, bind)).split()) for a in use], at,
                     mine) for use in inner]
    memo[name, chain] = out
    return out


def _at_use(ctx: Context, reader: LaunchReader, call, la, bind: dict, scope, local=None):
    """`la` with its unknown block, grid and dynamic shared memory read again where the macro
    is used (ggml's `dim3 block(32, 8);` before `LIGHTNING_INDEXER_CASE(...)`), the macro's
    parameters replaced by the use's arguments."""
    if la.block.total is not None and la.grid.total is not None and la.dynamic_smem is not None:
        return la           # (a use outside any function, scope None: the macro's arguments and
                            # the file's constants still give `256 / (n)`, LeetCUDA's bindings)

    def read(text: str):
        code = _bound(_expanded(text.encode("utf-8", "replace"), local or {}), bind)
        return ctx.env.snippet(code)[1] if code.strip() else None

    ctx.env.use_site = call         # the names are the ones visible at the use
    try:
        block = la.block if la.block.total is not None else \
            _texted(reader.dim3(read(la.block.text), scope), la.block.text)
        grid = la.grid if la.grid.total is not None else \
            _texted(reader.dim3(read(la.grid.text), scope), la.grid.text)
        smem = la.dynamic_smem
        if smem is None and la.dynamic_smem_text:
            smem = reader.smem(read(la.dynamic_smem_text), scope)
    finally:
        ctx.env.use_site = None
    return replace(la, block=block, grid=grid, dynamic_smem=smem)


_NAME = re.compile(rb"[A-Za-z_]\w*")
# `#f` stays (a string of the name); `##` is matched whole, so `k_##t` binds `t`, not `#t`
_STRINGIFIED_OR_NAME = re.compile(rb"##|#?[A-Za-z_]\w*")


def _bound(text: bytes, bind: dict, names: re.Pattern = _NAME) -> bytes:
    """`text` with each name `bind` has replaced by its value (a macro's parameters)."""
    return names.sub(lambda m: bind.get(m.group(0), m.group(0)), text)


def _expanded(text: bytes, local: dict) -> bytes:
    """`text` with the body's locals (`_body_locals`) replaced by their values, which may name
    other locals (three rounds at most)."""
    for _ in range(3):
        done = _bound(text, local)
        if done == text:
            break
        text = done
    return text


_BODY_LOCAL = re.compile(
    rb"\b(?:(?:static|const|constexpr)\s+)*(?:(dim3)|(?:unsigned\s+)?(?:int|long|size_t|"
    rb"u?int\d+_t|unsigned))\s+([A-Za-z_]\w*)\s*(?:\(([^;()]*(?:\([^;()]*\)[^;()]*)*)\)|"
    rb"\{([^;{}]*)\}|=\s*(?:dim3\s*\(([^;]*)\)|([^;,{}]*)))\s*;")


def _body_locals(body: bytes) -> dict:
    """name -> its value's text for the locals a macro body declares once (`dim3 block(256 /
    (n))`, `static const int T = 256 / (n);`, LeetCUDA's bindings): read again at each use,
    the macro's arguments put in. A name declared twice is left out."""
    out: dict = {}
    seen: set = set()
    body = body.replace(b"\\\n", b" ")
    for m in _BODY_LOCAL.finditer(body):
        name, value = m.group(2), next((g for g in m.group(3, 4, 5, 6) if g is not None), None)
        writes = len(re.findall(rb"\b" + name + rb"(?:\.[xyz])?\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|"
                                rb"(?:\+\+|--)\s*" + name + rb"\b|\b" + name + rb"\s*(?:\+\+|--)",
                                body))
        if name in seen or value is None or writes > (m.group(6) is not None or
                                                      m.group(5) is not None):
            out.pop(name, None)         # declared twice, or written after its declaration
            seen.add(name)
            continue
        seen.add(name)
        out[name] = (b"dim3(" + value + b")") if m.group(1) else b"(" + value.strip() + b")"
    return out


def _kernel_alias(body: bytes, head: bytes) -> bytes | None:
    """The kernel a body's launch names through a local it declares once, `auto kernel =
    k<T, N>;` (llm-awq's MMHA_LAUNCH_KERNEL): `k<T, N>`, else None."""
    name = head.strip()
    if not re.fullmatch(rb"[A-Za-z_]\w*", name):
        return None
    body = body.replace(b"\\\n", b" ")
    found = re.findall(rb"\bauto\s*\*?\s*(?:const\s+)?" + name +
                       rb"\s*=\s*&?\s*([A-Za-z_][\w:]*\s*(?:<[^;]*>)?)\s*;", body)
    return found[0].strip() if len(found) == 1 else None


def _pasted(text: bytes) -> bytes:
    """`a ## b` pasted into `ab`."""
    return re.sub(rb"\s*##\s*", b"", text)


def _texted(d, text: str):
    from occlint.model import Dim3
    return Dim3(d.x, d.y, d.z, text)


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
