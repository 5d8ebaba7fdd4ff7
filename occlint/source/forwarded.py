"""Launches through a function whose kernel is one of its parameters (`template <typename K>
void run(K kernel, int threads) { kernel<<<g, threads>>>(...); }`, then `run(heavy, 256)`):
one launch per call of the function in the file, at the call, of the kernel the call passes,
its block, grid and dynamic shared memory read again at the call with the function's
parameters bound to the call's arguments (`macros._at_use`). No fix edits it: the launch's
text is the function's, shared by every call. A call that passes one of its own variables
(a longer chain) is not followed.

A launcher object's `operator()` (xgboost's `dh::LaunchKernel{grid, block}(kernel, ...)`, or
`LaunchKernel launch{grid, block}; launch(kernel, ...)`) is called where the file constructs
its class: the members its launch reads (`blocks_`) are what the chosen constructor's
initializer list makes of the construction's arguments (`blocks_{b, 1, 1}`: `dim3(b, 1, 1)`).
Likewise a launch-parameters object the caller constructs (ggml's `launch_params.block_dims`),
a lambda of the caller (gsplat's `auto launch = [&](auto kernel_fn) {...}`), each kernel a
conditional passes, or a macro that writes one (nccl-tests' `SPECIALIZE_KERNEL`), and a
project header's launcher at the file's calls (`_from_headers`; `launchers` names them for
the word filters of discovery and listing)."""

from __future__ import annotations

import re

from occlint.record import replace
from occlint.source.consteval import declarator_name
from occlint.source.context import (
    _REGEX_WORD,
    Context,
    ancestors,
    function_declarator,
    word_starts,
)
from occlint.source.launches import LaunchReader, _args, callee_parts, unwrap_kernel_ref
from occlint.source.macros import _at_use, _bound
from occlint.source.values import calls_of

_PARAMETERS = ("parameter_declaration", "optional_parameter_declaration")
_KERNEL_ARGS = ("identifier", "qualified_identifier", "template_function")


def forwarded(ctx: Context, reader: LaunchReader, launches: list, kernels: set[str]) -> list:
    """`launches` with each one whose kernel is a parameter of its function replaced by its
    launches at the file's calls of that function (kept when the file has none). `kernels`:
    the names of the file's kernels (a launch naming one is not looked at)."""
    out = []
    for la in launches:
        got = None
        if _maybe_forwarded(la, kernels):
            got = _at_calls(ctx, reader, la, ctx)
        out += got or [la]
    return out + _from_headers(ctx, reader)


def _callee(ctx: Context, reader: LaunchReader, node, scope) -> dict:
    """The launch's kernel, template arguments as written and their values, from the kernel
    reference a call passes (as a chevron launch reads its callee)."""
    name, targs = callee_parts(node)      # (the node may be a macro body's: its own text)
    return {"callee": name, "template_args": tuple(" ".join(a.text.decode(
                "utf-8", "replace").split()) for a in targs),
            "template_values": reader.template_values(targs, scope)}


def _maybe_forwarded(la, kernels) -> bool:
    return bool(la.callee) and "::" not in la.callee and "[" not in la.callee and \
        la.callee not in kernels and la.span is not None


_SPACE = frozenset(b" \t\n\r\f\v")


def _chevron_callees(data: bytes) -> set[bytes]:
    """The names written right before `<<<` (`name <<<`; a name starts with a letter or `_`):
    each `<<<` found as bytes and the name read backwards (a pattern that starts with `\\b`
    tests every byte of the text)."""
    names = set()
    at = data.find(b"<<<")
    while at != -1:
        end = at
        while end > 0 and data[end - 1] in _SPACE:
            end -= 1
        start = end
        while start > 0 and data[start - 1] in _REGEX_WORD:
            start -= 1
        if start < end and not 48 <= data[start] <= 57:
            names.add(data[start:end])
        at = data.find(b"<<<", at + 3)
    return names


def _parameter_callees(data: bytes) -> set[bytes]:
    """The `<<<` callee names of `data` when one of them is also written as a parameter
    (`K kernel,`, `(*kernel)(int*))`; a text test: empty for the many headers that launch
    kernels by name only)."""
    names = _chevron_callees(data)
    return names if names and _written_as_parameter(data, names) else set()


_AFTER_PARAMETER = re.compile(rb"\s*[,)]")
_BEFORE_PARAMETER_REVERSED = re.compile(rb"\s*\*?\(?\s+[\w*&)]")


def _written_as_parameter(data: bytes, names) -> bool:
    r"""Does one of `names` follow a type as a parameter does (what the pattern
    `[\w*&)]\s+\(?\*?\s*NAME\s*[,)]` finds)? Each occurrence of a name is tested where it
    stands, the text before it read backwards (reversed, with the pattern's reverse): a search
    for the pattern tried a match at every word character of a large header (ggml's, ~1 ms)."""
    rev = None
    for name in names:
        at = data.find(name)
        while at >= 0:
            if _AFTER_PARAMETER.match(data, at + len(name)):
                rev = data[::-1] if rev is None else rev
                if _BEFORE_PARAMETER_REVERSED.match(rev, len(data) - at):
                    return True
            at = data.find(name, at + 1)
    return False


def _from_headers(ctx: Context, reader: LaunchReader) -> list:
    """The launches of the project headers `ctx` includes whose kernel is a parameter of their
    function (or launcher class), at the file's calls (constructions) of it."""
    from occlint.source.context import MAX_LOOKUP_HEADERS
    from occlint.source.preproc import read_header

    out = []
    for path in ctx.pp.headers[:MAX_LOOKUP_HEADERS]:    # (a text test each: `<<<` first)
        data = read_header(path)
        if not data or not _has_chevrons(data):
            continue
        home = _home(path, data)
        if home is None:
            continue
        for la in _parameter_launches(home):
            got = _at_calls(ctx, reader, la, home)
            out += [replace(x, path=ctx.path) for x in got or ()]
    return out


_HOMES: dict[tuple[str, int], Context | None] = {}
_CHEVRONS: dict[bytes, bool] = {}       # a header's text -> it holds `<<<`, per process


def _has_chevrons(data: bytes) -> bool:
    """`<<<` in `data`, searched once per text (every file of a project includes its headers)."""
    got = _CHEVRONS.get(data)
    if got is None:
        if len(_CHEVRONS) > 4096:
            _CHEVRONS.clear()
        got = _CHEVRONS[data] = b"<<<" in data
    return got


def _home(path: str, data: bytes) -> Context | None:
    """Header `path` parsed on its own (no view: only its launches' texts and functions are
    read), when it launches on a name it also writes as a parameter; once per process and
    contents (every file of a project includes its common header)."""
    key = (path, hash(data))
    if key not in _HOMES:
        home = None
        if _parameter_callees(data):
            home = Context(data.decode("utf-8", "replace"), path)
            if not _parameter_launches(home):
                home = None
        if len(_HOMES) > 256:
            _HOMES.clear()
        _HOMES[key] = home
    return _HOMES[key]


_FUNCTION_HEAD = re.compile(
    rb"\b([A-Za-z_]\w*)\s*(?:\(\s*\))?\s*\(((?:[^;{}()]|\([^;{}()]*\))*)\)\s*"
    rb"(?:const\s*)?(?:noexcept\s*)?(?:->[^;{}]*)?\{")
_CLASS_HEAD = re.compile(rb"\b(?:class|struct)\s+([A-Za-z_]\w*)[^;{}()]*\{")


def launchers(path: str, data: bytes) -> set[bytes]:
    """The names of the functions (and launcher classes) header `path` defines that launch a
    kernel their caller passes (tiny-cuda-nn's `linear_kernel(kernel, shmem, stream, n,
    args...)`): a file that calls one holds launches its own words do not show. Read from
    the text (discovery and the listing's word filter ask it of every header with `<<<`):
    a function head whose parameters name a `<<<` callee its body launches."""
    if not data or b"<<<" not in data:
        return set()
    key = (path, hash(data))
    got = _LAUNCHERS.get(key)
    if got is None:
        if len(_LAUNCHERS) > 4096:
            _LAUNCHERS.clear()
        got = _LAUNCHERS[key] = frozenset(_launchers(data))
    return set(got)


_LAUNCHERS: dict[tuple[str, int], frozenset] = {}     # (path, hash) -> names, per process


def _launchers(data: bytes) -> set[bytes]:
    from occlint.source.kernels import _matching_brace

    callees = _parameter_callees(data)
    if not callees:
        return set()                # (most headers launch kernels by name: no parameter)
    code = data                     # (raw: a brace in a comment is rare, and costs a name)
    out: set[bytes] = set()
    for m in _FUNCTION_HEAD.finditer(code):
        params = m.group(2)
        named = [n for n in callees if n in params and re.search(
            rb"[\w*&)>.]\s*\(?\s*\*?\s*" + re.escape(n) + rb"\s*(?:\)|,|=|$)", params.strip())]
        if not named:
            continue
        close = _matching_brace(code, m.end() - 1)
        if close is None or not any(re.search(rb"\b" + re.escape(n) + rb"\s*<<<",
                                              code[m.end():close]) for n in named):
            continue
        name = m.group(1)
        if name == b"operator":             # `operator()(K kernel, ...)`: its class's name
            cls = None
            for c in _CLASS_HEAD.finditer(code, 0, m.start()):
                cls = c
            name = cls.group(1) if cls is not None else None
        if name is not None and name not in (b"if", b"for", b"while", b"switch", b"return"):
            out.add(name)
    return out


def _parameter_launches(home: Context) -> list:
    """The chevron launches of `home` (a header) on a name that is a parameter of their
    function (memoized on it)."""
    got = home.__dict__.get("_parameter_launches")
    if got is None:
        got = home.__dict__["_parameter_launches"] = [
            la for la in LaunchReader(home).chevrons() if _maybe_forwarded(la, set())
            and (fn := home.function_at(home.tx.byte_offset(la.span.start))) is not None
            and la.callee.encode() in _parameters(fn)]
    return got


def _parameters(fn) -> list[bytes | None]:
    """The names of function definition `fn`'s parameters, in order (None: unnamed; a pack
    `Args... args` is the last, named b"...")."""
    decl = function_declarator(fn)
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    if plist is None:
        return []
    out = []
    for p in plist.named_children:
        if p.type == "variadic_parameter_declaration":
            out.append(b"...")
        elif p.type in _PARAMETERS:
            out.append(_param_name(p))
    return out


def _param_name(p) -> bytes | None:
    """A parameter declaration's name (`int n`, `const dim3& b`, `void (*k)(int)`), or None."""
    d = declarator_name(p.child_by_field_name("declarator"))
    return d.text if d is not None and d.type == "identifier" else None


def _lambda(ctx: Context, fn, at: int, callee: bytes):
    """(its parameter names, the variable it initializes) of the lambda around offset `at` in
    function `fn` whose parameter `callee` is (gsplat's `auto launch = [&](auto kernel_fn) {
    kernel_fn<<<grid, 256>>>(...); }; launch(blend<16>);`), or None."""
    node = ctx.tree.root_node.descendant_for_byte_range(at, at + 1)
    if node is None:
        return None
    lam = next((p for p in reversed(ancestors(fn, node)) if p.type == "lambda_expression"), None)
    decl = lam.child_by_field_name("declarator") if lam is not None else None
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    init = lam.parent if lam is not None else None
    var = init.child_by_field_name("declarator") if init is not None and \
        init.type == "init_declarator" else None
    if plist is None or var is None or var.type != "identifier":
        return None
    names = [_param_name(p) if p.type in _PARAMETERS else b"..." for p in _args(plist)]
    return (names, var) if callee in names else None


def _at_calls(ctx: Context, reader: LaunchReader, la, home: Context) -> list | None:
    """`la`'s launches at the calls in `ctx` of its function in `home` (`ctx`, or a header)."""
    at = home.tx.byte_offset(la.span.start)
    fn = home.function_at(at)
    if fn is None:
        return None
    names = _parameters(fn)
    callee = la.callee.encode()
    lam = _lambda(home, fn, at, callee) if callee not in names and home is ctx else None
    if lam is not None:             # `auto launch = [&](auto kernel_fn) { kernel_fn<<<...>>>(...) }`
        names, var = lam
        calls, members = [(c, {}) for c in calls_of(ctx, var.text)
                          if var.end_byte <= c.start_byte < fn.end_byte], set()
        fn = var                    # (its calls are after it, outside the lambda)
    elif callee not in names:
        return None
    else:
        decl = function_declarator(fn)
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        if inner is not None and inner.type == "operator_name" and inner.text == b"operator()":
            calls, members = _object_calls(ctx, fn, home)
        else:
            fname = declarator_name(inner)
            if fname is None:
                return None
            calls, members = [(c, {}) for c in calls_of(ctx, fname.text)], set()
    index = names.index(callee)
    tnames = _function_template_parameters(fn) if lam is None else []
    mentions = {n for n in names if n and n != b"..."} | members
    out = []
    for call, made in calls:
        if home is ctx and fn.start_byte <= call.start_byte < fn.end_byte:
            continue                    # the function calling itself
        args = _args(call.child_by_field_name("arguments"))
        if index >= len(args) or (len(args) > len(names) and b"..." not in names):
            continue                    # (another overload's call)
        bound = _template_bound(tnames, call)       # (what the call's `<...>` writes)
        made = {**bound, **made}
        scope = ctx.scope_of(call.start_byte)
        for kernel in _chosen(ctx, args[index]):    # (each kernel `c ? k1 : k2` may pass)
            kernel = unwrap_kernel_ref(reader.kernel_ref(unwrap_kernel_ref(kernel), call))
            if kernel is None or kernel.type not in _KERNEL_ARGS or (
                    kernel.type == "identifier" and scope is not None and
                    ctx.local(scope, kernel.text) is not None):
                continue                # an expression, or a variable of the caller
            out.append(_site(ctx, reader, la, call, kernel, names, args, made,
                             mentions | bound.keys(), home))
    return out or None


def _function_template_parameters(fn) -> list[bytes]:
    """The template parameters of function definition `fn`, in order ([] for a plain one)."""
    from occlint.source.context import _template_parameters

    parent = fn.parent
    return _template_parameters(parent) if parent is not None and \
        parent.type == "template_declaration" else []


def _template_bound(tnames: list[bytes], call) -> dict[bytes, bytes]:
    """Each template parameter the call's explicit template arguments give, name -> the
    argument as written (kaolin's `packed_simple_cuda_launcher<BLOCK_SIZE, ...>(...)`, whose
    launch is `cuda_kernel<<<param_idx, block_size>>>`; a type argument binds its type, which
    `sizeof(T)` reads); an unnamed parameter is skipped."""
    if not tnames:
        return {}
    _name, written = callee_parts(call.child_by_field_name("function"))
    return {n: _grouped(a.text) for n, a in zip(tnames, written, strict=False) if n}


def _chosen(ctx: Context, node, depth: int = 0) -> list:
    """The kernels an argument passes: itself, or each branch of `c ? k1 : k2`, a null left
    out; a function-like macro of the file's is expanded first (nccl-tests'
    `SPECIALIZE_KERNEL(kernel, type, op)`: `op != ncclSum ? nullptr : type == ncclInt8 ?
    kernel<int8_t> : ... : nullptr`)."""
    from occlint.source.macros import _bind, _bound, _pasted

    node = unwrap_kernel_ref(node) or node      # (a macro's call is no cast: kept)
    if node is not None and node.type == "parenthesized_expression" and \
            node.named_child_count == 1:
        node = node.named_children[0]
    if node is not None and node.type == "conditional_expression" and depth < 16:
        return [k for part in ("consequence", "alternative")
                for k in _chosen(ctx, node.child_by_field_name(part), depth + 1)]
    if node is not None and node.type == "call_expression" and depth < 16:
        fn = node.child_by_field_name("function")
        defs = ctx.env.fmacros.get(fn.text) if fn is not None and fn.type == "identifier" \
            else None
        if defs:        # (each live definition: nccl-tests' `#if NCCL_VERSION_CODE >= ...`
            args = [a.text for a in _args(node.child_by_field_name("arguments"))]  # one's
            out = []                                      # a ternary, the other's `nullptr`)
            for params, body in defs:
                if len(args) == len(params):
                    text = _pasted(_bound(body.replace(b"\\\n", b" "), _bind(params, args)))
                    expr = ctx.env.snippet(text)[1]
                    out += _chosen(ctx, expr, depth + 4) if expr is not None else \
                        _named_in(ctx, text, args)
            return out
    if node is None or node.type in ("null", "nullptr") or node.text in (b"0", b"NULL"):
        return []
    return [node]


_TEMPLATE_ARGS = rb"\s*<((?:[^<>;]|<[^<>;]*>)*)>"


def _named_in(ctx: Context, text: bytes, args: list[bytes]) -> list:
    """The kernel references (`k<int8_t>`) a macro's expansion writes with one of its
    arguments and template arguments, when the expansion does not parse as one expression
    (`c ? k<int8_t> : ...` can read as comparisons): each read as the function of a call of
    its own (a bare name could be any argument: `type`, `op`)."""
    out = []
    for name in {a.strip() for a in args if re.fullmatch(rb"[A-Za-z_][\w:]*", a.strip())}:
        for m in re.finditer(rb"(?<![\w:])" + re.escape(name) + _TEMPLATE_ARGS + rb"(?![\w(])",
                             text):
            expr = ctx.env.snippet(m.group(0) + b"(0)")[1]
            fn = expr.child_by_field_name("function") if expr is not None and \
                expr.type == "call_expression" else None
            if fn is not None:
                out.append(fn)
    return out


def _site(ctx: Context, reader: LaunchReader, la, call, kernel, names, args, made, mentions,
          home):
    """`la` at `call`, of `kernel`, its sizes read with the call's arguments."""
    scope = ctx.scope_of(call.start_byte)
    bind = {**made, **{n: _grouped(a.text) for n, a in zip(names, args, strict=False)
                       if n and n != b"..."}}
    fields = {(n, m): text for n, a in zip(names, args, strict=False) if n and n != b"..."
              for m, text in _object_fields(ctx, home, a, scope).items()}

    def made_at_call(dims):
        """`dims` unknown, written as the call makes it (`blocks_` -> `dim3(kB, 1, 1)`)."""
        if not _names(dims.text) & mentions:
            return dims
        return replace(dims, x=None, y=None, z=None, text=_substituted(dims.text, bind, fields))
    smem_text = _substituted(la.dynamic_smem_text, bind, fields) \
        if _names(la.dynamic_smem_text) & mentions else la.dynamic_smem_text
    site = replace(
        la, **_callee(ctx, reader, kernel, scope), span=ctx.tx.node_span(call),
        config_span=None, arg_spans=(), argc=None, arg_types=(), choices=(), bindings=(),
        sweep=False, block_parameter=False, block_template=(),
        function=ctx.function_name(call.start_byte),
        block=made_at_call(la.block), grid=made_at_call(la.grid),
        dynamic_smem=None if smem_text != la.dynamic_smem_text else la.dynamic_smem,
        dynamic_smem_text=smem_text)
    return _at_use(ctx, reader, call, site, {}, scope)


_MEMBER_OR_NAME = re.compile(rb"([A-Za-z_]\w*)(\s*\.\s*([A-Za-z_]\w*))?")


def _substituted(text: str, bind: dict, fields: dict) -> str:
    """`text` with, in one pass, each `p.m` that `fields` has and each name `bind` has replaced
    (a replacement is not read again: the caller's names may be the function's)."""
    def one(m):
        if m.group(3) is not None and (m.group(1), m.group(3)) in fields:
            return fields[(m.group(1), m.group(3))]
        return bind.get(m.group(1), m.group(1)) + (m.group(2) or b"")
    return _MEMBER_OR_NAME.sub(one, text.encode("utf-8", "replace")).decode("utf-8", "replace")


def _object_fields(ctx: Context, home: Context, arg, scope) -> dict:
    """The members (name -> text) of the caller's local object `arg` is, as its construction
    makes them (ggml's `const ggml_cuda_kernel_launch_params launch_params =
    ggml_cuda_kernel_launch_params(blocks, block_dims, 0, stream);` passed to
    `ggml_cuda_kernel_launch(k, launch_params, ...)`, whose launch reads
    `launch_params.block_dims`); {} when it is no such local."""
    if arg.type != "identifier" or scope is None:
        return {}
    local = ctx.local(scope, arg.text, arg)      # (the declaration visible at the call)
    if local is None or len(local.decls) != 1 or local.whole_written:
        return {}
    decl = local.decls[0][1]
    value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
    holder = decl.parent
    ty = holder.child_by_field_name("type") if holder is not None else None
    if value is None or ty is None:
        return {}
    if value.type == "call_expression":       # `T x = T(a, b)`
        fn = value.child_by_field_name("function")
        if fn is None or fn.text.split(b"::")[-1] != ty.text.split(b"::")[-1]:
            return {}
        value = value.child_by_field_name("arguments")
    elif value.type == "compound_literal_expression":     # `T x = T{a, b}`
        value = value.child_by_field_name("value")
    if value is None or value.type not in ("argument_list", "initializer_list"):
        return {}
    name = ty.text.split(b"::")[-1].strip()
    for where in (home, ctx):
        body = _class_body(where, name)
        if body is not None:
            made = _made(ctx, _constructors(body, name), _args(value), decl) or {}
            return {m: t for m, t in made.items() if m not in local.fields}  # (not one the
    return {}                                                               # caller sets)


def _class_body(ctx: Context, name: bytes):
    """The body of the class or struct `ctx` defines as `name`, or None."""
    for node in ctx.caps.get("struct", ()):
        if node.type not in ("struct_specifier", "class_specifier"):
            continue
        n = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if n is not None and body is not None and n.text.split(b"::")[-1].strip() == name:
            return body
    return None


def _names(text: str) -> set[bytes]:
    from occlint.source.macros import _NAME
    return set(_NAME.findall(text.encode("utf-8", "replace")))


def _object_calls(ctx: Context, fn, home: Context) -> tuple[list, set[bytes]]:
    """The calls of `operator()` definition `fn` (of `home`) on objects `ctx` constructs, each
    with its members bound to what the construction makes them (name -> text); and the members
    any constructor sets."""
    root = ctx.tree.root_node
    cls = next((p for p in reversed(ancestors(home.tree.root_node, fn))
                if p.type in ("class_specifier", "struct_specifier")), None)
    name = cls.child_by_field_name("name") if cls is not None else None
    body = cls.child_by_field_name("body") if cls is not None else None
    if name is None or body is None:
        return [], set()
    name = name.text.split(b"::")[-1].strip()
    ctors = _constructors(body, name)
    if not ctors:
        return [], set()
    out = []
    for start in word_starts(ctx.data, name, 0, len(ctx.data)):
        node = root.descendant_for_byte_range(start, start + len(name))
        if node is None or (home is ctx and cls.start_byte <= start < cls.end_byte):
            continue
        parent = node.parent
        while parent is not None and parent.type == "qualified_identifier":
            node, parent = parent, parent.parent
        if parent is None or ctx.dead(parent):
            continue
        if parent.type in ("compound_literal_expression", "call_expression") and \
                parent.child_by_field_name("function" if parent.type == "call_expression"
                                           else "type").start_byte == node.start_byte:
            call = parent.parent            # `LaunchKernel{g, b}(k, ...)`, `LaunchKernel(g, b)(k)`
            if call is not None and call.type == "call_expression" and \
                    call.child_by_field_name("function").start_byte == parent.start_byte:
                made = _made(ctx, ctors, _args(parent.child_by_field_name(
                    "arguments" if parent.type == "call_expression" else "value")), call)
                if made is not None:
                    out.append((call, made))
        elif parent.type == "declaration" and parent.child_by_field_name("type") is not None \
                and parent.child_by_field_name("type").start_byte == node.start_byte:
            caller = ctx.function_at(parent.start_byte)     # `LaunchKernel launch{g, b};`
            for d in parent.children_by_field_name("declarator"):
                var = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
                if var is None or var.type != "identifier" or caller is None:
                    continue
                made = _made(ctx, ctors, _args(d.child_by_field_name("value")), parent)
                for call in calls_of(ctx, var.text):
                    f = call.child_by_field_name("function")
                    if made is not None and f.type == "identifier" and \
                            parent.end_byte <= call.start_byte < caller.end_byte:
                        out.append((call, made))
    return out, {m for _p, _d, inits in ctors for m in inits}


def _constructors(body, name: bytes) -> list:
    """(parameter names and types, defaults, member -> initializer text) of each constructor
    class body `body` defines."""
    out = []
    for node in body.named_children:
        if node.type == "template_declaration":
            node = next((c for c in node.named_children if c.type == "function_definition"), node)
        decl = function_declarator(node) if node.type == "function_definition" else None
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        if inner is None or inner.text != name:
            continue
        params = []
        for p in _args(decl.child_by_field_name("parameters")):
            ty = p.child_by_field_name("type")
            default = p.child_by_field_name("default_value")
            params.append((_param_name(p),
                           ty is not None and ty.text.split(b"::")[-1] == b"dim3",
                           default.text if default is not None else None))
        inits = {}
        for child in node.named_children:
            if child.type != "field_initializer_list":
                continue
            for f in child.named_children:
                member = f.named_children[0] if f.named_child_count else None
                values = _args(f.named_children[1]) if f.named_child_count > 1 else []
                if member is None or member.type != "field_identifier" or not values:
                    continue
                texts = [v.text for v in values]
                inits[member.text] = texts[0] if len(texts) == 1 else \
                    b"dim3(" + b", ".join(texts) + b")"
        out.append((params, None, inits))
    return out


def _made(ctx: Context, ctors: list, args: list, at) -> dict | None:
    """The members (name -> text) the constructor a construction with `args` chooses makes:
    of those whose parameter count fits, the one whose `dim3` parameters take the most `dim3`
    arguments; None when none fits."""

    scope = ctx.scope_of(at.start_byte)
    kinds = [_is_dim3(ctx, a, scope) for a in args]
    best, score = None, -1
    for params, _unused, inits in ctors:
        required = sum(1 for p in params if p[2] is None)
        if not required <= len(args) <= len(params):
            continue
        fit = sum(k == p[1] for k, p in zip(kinds, params, strict=False))
        if fit > score:
            best, score = (params, inits), fit
    if best is None:
        return None
    params, inits = best
    bind = {p[0]: _grouped(args[i].text if i < len(args) else p[2])
            for i, p in enumerate(params) if p[0]}
    return {m: _grouped(_bound(text, bind)) for m, text in inits.items()}


_HEAD = re.compile(rb"[\w:.]+")


def _grouped(text: bytes) -> bytes:
    """`text` in parentheses, unless it is one term (`n`, `dim3(4, 4, 1)`, `Policy::kBlock`)."""
    text = text.strip()
    m = _HEAD.match(text)
    rest = text[m.end():].strip() if m else text
    if m and (not rest or (rest[:1] == b"(" and _closes_at_end(rest))):
        return text
    return b"(" + text + b")"


def _closes_at_end(text: bytes) -> bool:
    """Does the `(` that starts `text` close at its last byte?"""
    depth = 0
    for i, c in enumerate(text):
        depth += (c == 40) - (c == 41)
        if depth == 0:
            return i == len(text) - 1
    return False


def _is_dim3(ctx: Context, node, scope) -> bool:
    if node.text.startswith(b"dim3"):
        return True
    if node.type != "identifier" or scope is None:
        return False
    local = ctx.local(scope, node.text)
    return local is not None and any("dim3" in str(d[0]) for d in local.decls)
