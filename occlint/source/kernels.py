"""`__global__` functions -> model.Kernel."""

from __future__ import annotations

import re
from bisect import bisect_left

from occlint.model import Kernel, LaunchBounds
from occlint.record import dataclass
from occlint.source.context import Context, ancestors


@dataclass
class TemplateParam:
    """One template parameter of a kernel."""

    name: bytes
    is_type: bool
    default: object = None         # the default's node, if any


@dataclass
class KernelNode:
    """A Kernel with the tree nodes that `specialize` re-evaluates."""

    kernel: Kernel
    node: object
    body: object
    tparams: list
    bounds_args: list
    blanked: dict                  # "maxnreg" / "cluster_dims" -> argument bytes


def _template_params(node) -> list[TemplateParam]:
    out = []
    p = node.parent
    if p is None or p.type != "template_declaration":
        return out
    plist = p.child_by_field_name("parameters")
    for c in plist.named_children if plist is not None else ():
        t = c.type
        if t in ("parameter_declaration", "optional_parameter_declaration",
                 "variadic_parameter_declaration"):
            d = c.child_by_field_name("declarator")
            while d is not None and d.type not in ("identifier",):
                d = d.child_by_field_name("declarator") if d.named_child_count else None
            if d is not None:
                out.append(TemplateParam(d.text, False, c.child_by_field_name("default_value")))
        elif t in ("type_parameter_declaration", "optional_type_parameter_declaration",
                   "variadic_type_parameter_declaration", "template_template_parameter_declaration"):
            name = c.child_by_field_name("name")
            if name is None:
                name = next((x for x in c.named_children if x.type == "type_identifier"), None)
            if name is not None:
                out.append(TemplateParam(name.text, True, c.child_by_field_name("default_type")))
    return out


def _name(declarator):
    """(name node, qualifier prefix) of a function declarator's name."""
    prefix = []
    d = declarator
    while d is not None:
        if d.type == "qualified_identifier":
            scope = d.child_by_field_name("scope")
            if scope is not None:
                prefix.append(b"".join(scope.text.split()).decode("utf-8", "replace"))
            d = d.child_by_field_name("name")
        elif d.type == "template_function":
            d = d.child_by_field_name("name")
        elif d.type in ("identifier", "field_identifier"):
            return d, prefix
        else:
            return None, prefix
    return None, prefix


def _extern_c(node, root) -> bool:
    for p in reversed(ancestors(root, node)):       # the innermost linkage specification
        if p.type == "linkage_specification":
            v = p.child_by_field_name("value")
            return v is not None and b'"C"' in v.text
    return False


def _candidates(ctx: Context) -> list:
    """`__global__` declarations, plus definitions whose `__global__` tree-sitter's error
    recovery pulled into a preceding ERROR node (`SOME_MACRO(x)` with no `;` before them), and
    definitions written with a macro that is `__global__`."""
    found = list(ctx.caps.get("kernel", ()))
    data = ctx.tx.parse_data
    macros = ctx.env.macros
    for f in ctx.caps.get("function", ()):
        prev = f.prev_sibling
        if prev is not None and prev.type == "ERROR" and \
                data[max(prev.end_byte - 10, 0):prev.end_byte] == b"__global__":
            found.append(f)
            continue
        # `#define GLOBAL __global__` (pytorch3d's pulsar, in a header): tree-sitter reads the
        # macro's name as the function's type
        ty = f.child_by_field_name("type")
        if ty is not None and ty.type == "type_identifier":
            bodies = macros.get(ty.text)
            if bodies and len(bodies) == 1 and b"__global__" in bodies[0].split():
                found.append(f)
    return found


def kernel_nodes(ctx: Context) -> list[KernelNode]:
    """All `__global__` functions, one per (qualified name, parameters): definitions win."""
    tx, env = ctx.tx, ctx.env
    seen: dict[tuple, int] = {}
    out: list[KernelNode] = []
    blanked = [b for b in tx.blanked if b[0] != "align"]          # in source order
    blanked_starts = [b[1] for b in blanked]
    opened = _macro_namespaces(ctx)
    for node in sorted(_candidates(ctx), key=lambda n: n.start_byte):
        if ctx.dead(node):
            continue
        fdecl = node.child_by_field_name("declarator")
        if fdecl is None or fdecl.type != "function_declarator":
            continue
        name_node, prefix = _name(fdecl.child_by_field_name("declarator"))
        if name_node is None:
            continue
        name = name_node.text.decode("utf-8", "replace")
        scopes = unmacroed(env, (*_scopes(ctx, node, opened, name_node.start_byte),
                                 *prefix))
        qualname = "::".join((*scopes, name))
        plist = fdecl.child_by_field_name("parameters")
        params = tuple(" ".join(tx.node_text(p).split()) for p in plist.named_children
                       if p.type != "comment") if plist is not None else ()
        tparams = _template_params(node)
        bind_names = {t.name for t in tparams}
        scope = None
        lb_node = next((c for c in node.children if c.type == "launch_bounds"), None)
        bounds_args, bounds = [], None
        if lb_node is not None:
            bounds_args = [c for c in lb_node.named_children if c.type != "comment"]
            vals = [env.value(a, scope, _unbound(bind_names)) for a in bounds_args[:3]]
            vals += [None] * (3 - len(vals))
            bounds = LaunchBounds(vals[0], vals[1], vals[2], tx.node_text(lb_node),
                                  tx.node_span(lb_node))
        extras, where = {}, {}   # __maxnreg__ / __cluster_dims__ / a bounds macro before the name
        for i in range(bisect_left(blanked_starts, node.start_byte), len(blanked)):
            kind, start, end, args = blanked[i]
            if start >= fdecl.start_byte:
                break
            extras[kind], where[kind] = args, (start, end)
        if bounds is None and "bounds_macro" in extras:
            vals = macro_bounds(env, extras["bounds_macro"], _unbound(bind_names))
            if vals is not None:
                bounds = LaunchBounds(vals[0], vals[1], vals[2],
                                      extras["bounds_macro"].decode("utf-8", "replace"),
                                      tx.span(*where["bounds_macro"]))
        maxnreg = None
        if "maxnreg" in extras:
            maxnreg = env.text_value(extras["maxnreg"], None, _unbound(bind_names))
        cluster = None
        if "cluster_dims" in extras:
            cluster = tuple(env.text_value(a, None, _unbound(bind_names))
                            for a in split_args(extras["cluster_dims"]))
        body = node.child_by_field_name("body") if node.type == "function_definition" else None
        pos = fdecl.start_byte
        kernel = Kernel(
            name=name, qualname=qualname, path=ctx.path,
            span=tx.node_span(name_node), decl_span=tx.span(pos, pos), scopes=scopes,
            template_params=tuple(t.name.decode("utf-8", "replace") for t in tparams),
            params=params, launch_bounds=bounds, maxnreg=maxnreg, cluster_dims=cluster,
            extern_c=_extern_c(node, ctx.tree.root_node), is_definition=body is not None,
            grid_stride=body is not None and grid_stride(tx.node_text(body))
            and not _system_callee(ctx, tx.node_text(body)),
            thread_indexed=body is None or thread_indexed(tx.node_text(body), env.fmacros),
        )
        # an explicit specialization (`template <> __global__ void k<64>(...)`) is its own record
        spec = name_node.parent.text if name_node.parent is not None and \
            name_node.parent.type == "template_function" else b""
        key = (qualname, tuple("".join(p.split()) for p in params), b"".join(spec.split()))
        kn = KernelNode(kernel, node, body, tparams, bounds_args, extras)
        if key in seen:
            if body is not None and out[seen[key]].body is None:
                out[seen[key]] = kn           # a definition replaces a prototype
            continue
        seen[key] = len(out)
        out.append(kn)
    return out


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STEP = re.compile(r"\+=[^;]*gridDim|/\s*gridDim|\bthis_grid\s*\(|\bgrid_group\b")
_PRODUCT = re.compile(r"([\w.]+)\s*\*\s*gridDim\.[xyz]|gridDim\.[xyz]\s*\*\s*([\w.]+)")
_PAIR = re.compile(r"(<<<\s*)?(?:blockDim\.[xyz]\s*,\s*gridDim|gridDim\.[xyz]\s*,\s*blockDim)")


_SYSTEM = re.compile(r"\b__threadfence_system\s*\(|\batomic\w*_system\s*\(|\bthread_scope_system\b|"
                     r"\.(?:release|acquire|relaxed|sc|acq_rel)\.sys\b|\bfence\.\w+\.sys\b")


_THREAD_WORDS = re.compile(r"\b(?:threadIdx|blockDim|thread_rank|thread_index|meta_group_rank|"
                           r"lane_?id|__lane_id|tiled_partition|this_thread_block)\b|%laneid|%tid")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?\(")
_NOT_A_CALLEE = re.compile(r"(?:if|for|while|switch|return|sizeof|alignof|decltype|"
                           r"static_cast|reinterpret_cast|const_cast|printf|assert|"
                           r"atomic\w*|__syncthreads\w*|__threadfence\w*|__ldg|__nanosleep|"
                           r"min|max|abs|fabsf?|sqrtf?|expf?|logf?|(?:u?int|float|double)\d*_?t?)")


def thread_indexed(body: str, macros=None, depth: int = 0) -> bool:
    """Can a thread of the kernel tell itself from the others of its block (Kernel
    .thread_indexed)? It reads `threadIdx` or `blockDim` (or a lane or group rank), or calls a
    function occlint does not read (which might); a function-like macro of the file (`macros`)
    is read through its definitions. cuda_memtest's kernels read neither: each block is one
    serial walker, launched `<<<grid, 1>>>` on purpose, and every thread of a larger block
    would walk the same words."""
    body = _COMMENTS.sub(" ", body)
    if _THREAD_WORDS.search(body):
        return True
    for m in _CALL.finditer(body):
        name = m.group(1)
        if _NOT_A_CALLEE.fullmatch(name):
            continue
        defs = macros.get(name.encode()) if macros is not None and depth < 3 else None
        if not defs or any(thread_indexed(d[1].decode("utf-8", "replace"), macros, depth + 1)
                           for d in defs):
            return True
    return False


def _system_callee(ctx: Context, body: str) -> bool:
    """Does the kernel call a function of its file or of a project header it includes whose
    body orders memory at system scope (NCCL's device API: `bar.sync(...)` over
    `multimem.red.release.sys`; `grid_stride`'s exemption read only the kernel's own body)?"""
    texts = ctx.__dict__.get("_system_texts")
    if texts is None:           # once per file: the texts that order memory at system scope
        from occlint.source.preproc import read_header
        texts = ctx.__dict__["_system_texts"] = [
            t for t in (ctx.data, *(read_header(h) for h in ctx.pp.headers[:64]))
            if t and _orders_system(t)]
    if not texts:
        return False
    names = {m.group(1).encode() for m in _CALL.finditer(_COMMENTS.sub(" ", body))
             if not _NOT_A_CALLEE.fullmatch(m.group(1))}
    return any(_SYSTEM_BYTES.search(data, start, end) for data in texts for name in names
               for start, end in _bodies(data, name))


_SYSTEM_BYTES = re.compile(_SYSTEM.pattern.encode())
_ORDERS_SYSTEM: dict[bytes, bool] = {}      # a text -> _SYSTEM_BYTES finds it, per process


def _orders_system(data: bytes) -> bool:
    """`data` writes a system-scope memory order (a header every file of a project includes is
    searched once, not once per kernel's file)."""
    got = _ORDERS_SYSTEM.get(data)
    if got is None:
        if len(_ORDERS_SYSTEM) > 4096:
            _ORDERS_SYSTEM.clear()
        got = _ORDERS_SYSTEM[data] = b"sys" in data and _SYSTEM_BYTES.search(data) is not None
    return got


def recursive(text: str, name: str) -> bool:
    """Does a function named `name` (its last `::` part) that `text` defines call itself
    (cuda-samples' interval: `newton_interval_rec`)? Its spills are the registers each
    recursive call saves: the design's, not a fault to fix."""
    base = name.rsplit("::", 1)[-1].encode()
    data = text.encode("utf-8", "replace")
    if not base or base not in data:
        return False
    call = re.compile(rb"\b" + re.escape(base) + rb"\s*(?:<[^;{}()]*>)?\s*\(")
    return any(call.search(data, start, end) for start, end in _bodies(data, base))


def _bodies(data: bytes, name: bytes):
    """(start, end) of the body of each function named `name` that `data` defines (read from
    the text: `name(...) ... {` to its matching brace)."""
    for m in re.finditer(rb"\b" + re.escape(name) + rb"\s*\([^;{}]*\)[^;{}]*\{", data):
        close = _matching_brace(data, m.end() - 1)
        if close is not None:
            yield m.end(), close


def _matching_brace(data: bytes, at: int, limit: int = 1 << 16) -> int | None:
    """The offset of the `}` that closes the `{` at `at` (strings and comments not skipped:
    bounded by `limit` bytes)."""
    depth = 0
    for i in range(at, min(len(data), at + limit)):
        c = data[i]
        if c == 123:
            depth += 1
        elif c == 125:
            depth -= 1
            if depth == 0:
                return i
    return None


def grid_stride(body: str) -> bool:
    """The kernel spreads its work over however many blocks the grid has (Kernel.grid_stride):
    a step of gridDim (`i += blockDim.x * gridDim.x`, `vec += gridDim.x`), the grid's thread
    count (`blockDim.x * gridDim.x`, `MUL(blockDim.x, gridDim.x)`), a share of the work
    (`n / gridDim.x`) or a cooperative grid group. Not: `blockIdx.y * gridDim.x + blockIdx.x`
    (a flat block index) or `gridDim.x` passed on to a child launch. Nor a kernel that orders
    memory at system scope (`__threadfence_system`, `atomicAdd_system`, `thread_scope_system`):
    it talks to the host or a peer GPU over PCIe/NVLink, whose bandwidth, not the SM count,
    sets its block count (an all-reduce's few blocks with one arrival flag each)."""
    if "grid" not in body:
        return False
    body = _COMMENTS.sub(" ", body)
    if "_system" in body and _SYSTEM.search(body):     # (every form has the word)
        return False
    if _STEP.search(body):
        return True
    if any(not (m.group(1) or m.group(2)).startswith("blockIdx") for m in _PRODUCT.finditer(body)):
        return True
    return any(m.group(1) is None for m in _PAIR.finditer(body))


def _unbound(names) -> dict:
    """Template parameter names bound to 'unknown' so that no global of that name is used."""
    return {n: "" for n in names}


_OPENS = re.compile(rb"\s*namespace\s+([A-Za-z_][\w:]*)\s*\{\s*")
_CLOSES = re.compile(rb"\s*\}\s*(?://[^\n]*|/\*.*?\*/)?\s*", re.S)


def _macro_namespaces(ctx: Context) -> list[tuple[int, str | None]]:
    """(offset, namespace or None for a close) of each use, in source order, of an object-like
    macro that opens a namespace (`#define BEGIN_MGPU_NAMESPACE namespace mgpu {`) or closes
    one (`}`): tree-sitter sees only the macro's name, so the kernels inside had no namespace
    and matched no figures of nvcc's (`mgpu::k`)."""
    from occlint.source.context import word_starts

    opens, closes = {}, set()
    for name, bodies in ctx.env.macros.items():
        if len(bodies) != 1:
            continue
        m = _OPENS.fullmatch(bodies[0]) if b"namespace" in bodies[0] else None
        if m is not None:
            opens[name] = m.group(1).decode("utf-8", "replace")
        elif b"}" in bodies[0] and _CLOSES.fullmatch(bodies[0]):
            closes.add(name)
    if not opens:
        return []
    root, out = ctx.tree.root_node, []
    for name in (*opens, *closes):
        for i in word_starts(ctx.tx.parse_data, name, 0, len(ctx.tx.parse_data)):
            node = root.descendant_for_byte_range(i, i + len(name))
            if node is None or node.start_byte != i or node.end_byte != i + len(name) or \
                    node.type not in ("identifier", "type_identifier") or ctx.dead(node) or \
                    (node.parent is not None and node.parent.type in ("preproc_def",
                                                                      "preproc_function_def")):
                continue                # a comment, a string, its own #define, a dead branch
            out.append((i, opens.get(name)))
    return sorted(out, key=lambda x: x[0])


def unmacroed(env, scopes) -> tuple[str, ...]:
    """`scopes` with a name that is an object-like macro of a name replaced by it
    (flash-attention's `namespace FLASH_NAMESPACE {` with `#define FLASH_NAMESPACE flash`: nvcc
    names its kernels `flash::k`)."""
    out = []
    for part in scopes:
        bodies = env.macros.get(part.encode()) if part else None
        if bodies and len(bodies) == 1 and _QUALIFIED.fullmatch(bodies[0]):
            out += bodies[0].decode("utf-8", "replace").strip(":").split("::")
        else:
            out.append(part)
    return tuple(p.strip() for p in out)


_QUALIFIED = re.compile(rb"\s*(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*\s*")


def _scopes(ctx: Context, node, opened: list[tuple[int, str | None]], at: int) -> tuple[str, ...]:
    """`ctx.scopes(node)` with the namespaces macros have opened (and not closed) before offset
    `at`, each in its place by where it opens."""
    if not opened:
        return ctx.scopes(node)
    stack: list[tuple[int, str]] = []
    for offset, name in opened:
        if offset >= at:
            break
        if name is not None:
            stack.append((offset, name))
        elif stack:
            stack.pop()
    if not stack:
        return ctx.scopes(node)
    return tuple(part for _at, name in sorted(ctx.scoped(node) + stack,
                                               key=lambda x: x[0])
                 for part in name.split("::"))



_MACRO_CALL = re.compile(rb"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", re.S)


def macro_bounds(env, call: bytes, bind, depth: int = 0) -> list | None:
    """`LAUNCH_BOUNDS(128)` between a kernel's `void` and its name -> the values of the
    `__launch_bounds__(...)` its one definition expands to ([max threads, min blocks, max
    blocks per cluster], None where not constant); None when the macro is not known or expands
    to something else (a kernel that is still listed, without bounds)."""
    m = _MACRO_CALL.fullmatch(call)
    defs = env.fmacros.get(m.group(1)) if m is not None and depth < 4 else None
    if not defs or len(defs) != 1:
        return None
    params, body = defs[0]
    args = split_args(m.group(2))
    if len(params) != len(args):
        return None
    if params:
        given = dict(zip(params, args, strict=True))
        body = re.sub(rb"\b(?:" + b"|".join(re.escape(p) for p in params) + rb")\b",
                      lambda w: b"(" + given[w.group(0)] + b")", body)
    inner = _MACRO_CALL.fullmatch(body)
    if inner is None:
        return None
    if inner.group(1) != b"__launch_bounds__":
        return macro_bounds(env, body, bind, depth + 1)      # a macro naming another
    vals = [env.text_value(a, None, bind) for a in split_args(inner.group(2))[:3]]
    return vals + [None] * (3 - len(vals))


def split_args(text: bytes) -> list[bytes]:
    """`2, MIN(a, b), 1` -> [b"2", b"MIN(a, b)", b"1"]: split on top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == 40:            # (
            depth += 1
        elif ch == 41:          # )
            depth -= 1
        elif ch == 44 and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [a.strip() for a in out if a.strip()]
