"""Launches through a function whose kernel is one of its parameters (`template <typename K>
void run(K kernel, int threads) { kernel<<<g, threads>>>(...); }`, then `run(heavy, 256)`):
one launch per call of the function in the file, at the call, of the kernel the call passes,
its block, grid and dynamic shared memory read again at the call with the function's
parameters bound to the call's arguments (`macros._at_use`). No fix edits it: the launch's
text is the function's, shared by every call. A call that passes one of its own variables
(a longer chain) is not followed."""

from __future__ import annotations

from dataclasses import replace

from occlint.source.consteval import declarator_name
from occlint.source.context import Context, function_declarator
from occlint.source.launches import LaunchReader, unwrap_kernel_ref
from occlint.source.macros import _at_use, _callee
from occlint.source.values import calls_of

_PARAMETERS = ("parameter_declaration", "optional_parameter_declaration",
               "variadic_parameter_declaration")
_KERNEL_ARGS = ("identifier", "qualified_identifier", "template_function")


def forwarded(ctx: Context, reader: LaunchReader, launches: list, kernels: set[str]) -> list:
    """`launches` with each one whose kernel is a parameter of its function replaced by its
    launches at the file's calls of that function (kept when the file has none). `kernels`:
    the names of the file's kernels (a launch naming one is not looked at)."""
    out = []
    for la in launches:
        got = None
        if la.callee and "::" not in la.callee and "[" not in la.callee and \
                la.callee not in kernels and la.span is not None:
            got = _at_calls(ctx, reader, la)
        out += got or [la]
    return out


def _parameters(fn) -> list[bytes | None]:
    """The names of function definition `fn`'s parameters, in order (None: unnamed)."""
    decl = function_declarator(fn)
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    if plist is None:
        return []
    out = []
    for p in plist.named_children:
        if p.type in _PARAMETERS:
            name = declarator_name(p.child_by_field_name("declarator"))
            out.append(name.text if name is not None else None)
    return out


def _at_calls(ctx: Context, reader: LaunchReader, la) -> list | None:
    at = ctx.tx.byte_offset(la.span.start)
    fn = ctx.function_at(at)
    if fn is None:
        return None
    names = _parameters(fn)
    callee = la.callee.encode()
    if callee not in names:
        return None
    index = names.index(callee)
    decl = function_declarator(fn)
    fname = declarator_name(decl.child_by_field_name("declarator")) if decl is not None else None
    if fname is None:
        return None
    mentions = {n for n in names if n}
    out = []
    for call in calls_of(ctx, fname.text):
        if fn.start_byte <= call.start_byte < fn.end_byte:
            continue                    # the function calling itself
        args = [a for a in call.child_by_field_name("arguments").named_children
                if a.type != "comment"]
        if index >= len(args) or len(args) > len(names):
            continue
        kernel = unwrap_kernel_ref(args[index])
        scope = ctx.scope_of(call.start_byte)
        if kernel is None or kernel.type not in _KERNEL_ARGS or (
                kernel.type == "identifier" and scope is not None and
                ctx.local(scope, kernel.text) is not None):
            continue                    # an expression, or a variable of the caller
        bind = {n: b"(" + a.text + b")" for n, a in zip(names, args, strict=False) if n}
        site = replace(
            la, **_callee(ctx, kernel.text, scope), span=ctx.tx.node_span(call),
            config_span=None, arg_spans=(), argc=None, arg_types=(), choices=(), bindings=(),
            sweep=False, block_parameter=False, block_template=(),
            function=ctx.function_name(call.start_byte),
            block=_unknown(la.block, mentions), grid=_unknown(la.grid, mentions),
            dynamic_smem=None if _names(la.dynamic_smem_text) & mentions else la.dynamic_smem)
        out.append(_at_use(ctx, reader, call, site, bind, scope))
    return out or None


def _names(text: str) -> set[bytes]:
    from occlint.source.macros import _NAME
    return set(_NAME.findall(text.encode("utf-8", "replace")))


def _unknown(dims, mentions: set[bytes]):
    """`dims` forgotten when its text names a parameter (read again at the call)."""
    if not _names(dims.text) & mentions:
        return dims
    return replace(dims, x=None, y=None, z=None)
