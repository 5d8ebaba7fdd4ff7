"""Re-evaluate a template kernel's launch bounds and shared sizes for one instantiation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from occlint.model import Kernel, Launch, LaunchBounds, SharedDecl, SourceFile
from occlint.record import dataclass, replace
from occlint.source import types
from occlint.source.build import parsed_for
from occlint.source.context import qualifiers
from occlint.source.kernels import macro_bounds, split_args
from occlint.source.shared import _dims, evaluate


@dataclass(frozen=True)
class Specialized:
    """One instantiation of a kernel: `k<256>` with BLOCK = 256 bound."""

    kernel: Kernel
    bindings: tuple[tuple[str, int | str | None], ...]   # (parameter, value) in order
    launch_bounds: LaunchBounds | None
    maxnreg: int | None
    cluster_dims: tuple[int | None, ...] | None
    shared: tuple[SharedDecl, ...]                      # the kernel's own shared declarations
    # 32-bit words of each per-thread array the kernel body declares (`float acc[TM * TN]`),
    # None where a size is unknown
    local_arrays: tuple[int | None, ...] = ()
    # the sizes the kernel's code is written for: its integer template parameters and the
    # `const`/`constexpr` integers its body declares (`THREADS = BLOCK_SIZE / NUM_PER_TH`),
    # (name, value) as bound
    constants: tuple[tuple[str, int], ...] = ()

    @property
    def static_smem(self) -> int | None:
        """Bytes of static shared memory declared in the kernel body; None if any is unknown."""
        total = 0
        for s in self.shared:
            if s.extern:
                continue
            if s.size_bytes is None:
                return None
            total += s.size_bytes
        return total


def specialize(sf: SourceFile, kernel: Kernel,
               template_values: Mapping[str, int | str | None] | Sequence[int | str | None] = (),
               ) -> Specialized:
    """Bind template parameters (ints; a str binds a type parameter, e.g. "float") and
    re-evaluate. Parameters not given take their defaults; otherwise they stay unknown."""
    parsed = parsed_for(sf)
    kn, kernel_shared = parsed.node_of(kernel) or (None, [])
    if kn is None:
        return Specialized(kernel, (), kernel.launch_bounds, kernel.maxnreg, kernel.cluster_dims,
                           tuple(s for s in sf.shared if s.kernel == kernel.qualname))
    env, ctx = parsed.ctx.env, parsed.ctx
    if isinstance(template_values, Mapping):
        given = {str(k).encode(): v for k, v in template_values.items()}
    else:
        given = {t.name: v for t, v in zip(kn.tparams, template_values, strict=False)}
    bind: dict[bytes, int | str] = {}
    for t in kn.tparams:
        v = given.get(t.name)
        if v is None and t.default is not None:
            if t.is_type:
                v = " ".join(ctx.tx.node_text(t.default).split())
            else:
                v = env.value(t.default, None, bind)
        bind[t.name] = v if isinstance(v, (int, str)) and not isinstance(v, bool) else ""
    bounds = kernel.launch_bounds
    if bounds is not None and kn.bounds_args:
        vals = [env.value(a, None, bind) for a in kn.bounds_args[:3]] + [None] * 3
        bounds = replace(bounds, max_threads=vals[0], min_blocks=vals[1],
                         max_blocks_per_cluster=vals[2])
    elif bounds is not None and "bounds_macro" in kn.blanked:
        vals = macro_bounds(env, kn.blanked["bounds_macro"], bind) or [None] * 3
        bounds = replace(bounds, max_threads=vals[0], min_blocks=vals[1],
                         max_blocks_per_cluster=vals[2])
    maxnreg = kernel.maxnreg
    if "maxnreg" in kn.blanked:
        maxnreg = env.text_value(kn.blanked["maxnreg"], None, bind)
    cluster = kernel.cluster_dims
    if "cluster_dims" in kn.blanked:
        cluster = tuple(env.text_value(a, None, bind) for a in split_args(kn.blanked["cluster_dims"]))
    shared = []
    scope = kn.node.start_byte
    for sn in kernel_shared:
        dims, elem, size = evaluate(ctx, sn.type_text, sn.size_nodes, bind, scope)
        if sn.decl.extern:
            size = None
            dims = sn.decl.dims
        shared.append(replace(sn.decl, dims=dims, element_size=elem, size_bytes=size))
    bindings = tuple((t.name.decode("utf-8", "replace"), bind[t.name] if bind[t.name] != "" else None)
                     for t in kn.tparams)
    return Specialized(kernel, bindings, bounds, maxnreg, cluster, tuple(shared),
                       _local_arrays(ctx, kn, bind), _constants(ctx, kn, bind, bindings))


_NOT_PER_THREAD = {b"__shared__", b"static", b"extern", b"__constant__", b"__device__",
                   b"__managed__", b"constexpr"}


def _declarations(ctx, kn):
    """The live declarations of the kernel's body, outside lambdas."""
    stack = [kn.body] if kn.body is not None else []
    while stack:
        node = stack.pop()
        if node.type == "lambda_expression":
            continue
        if node.type != "declaration":
            stack.extend(node.named_children)
        elif not ctx.dead(node):
            yield node


def _local_arrays(ctx, kn, bind) -> tuple[int | None, ...]:
    """Registers of the per-thread arrays declared in the kernel's body (not shared, static or
    constant), sizes evaluated under `bind`: a word each 4 bytes, one per element of a 16-bit
    float (types.HALF_SCALARS)."""
    out: list[int | None] = []
    for node in _declarations(ctx, kn):
        if qualifiers(node) & _NOT_PER_THREAD:
            continue
        type_node = node.child_by_field_name("type")
        if type_node is None:
            continue
        type_text = " ".join(ctx.tx.node_text(type_node).split())
        for d in node.children_by_field_name("declarator"):
            name, size_nodes = _dims(d)
            if name is None or not size_nodes:
                continue
            size = evaluate(ctx, type_text, size_nodes, bind, kn.node.start_byte)[2]
            bound = bind.get(type_text.encode())
            kind = types.normalize(bound if isinstance(bound, str) and bound else type_text)
            if size is not None and kind in types.HALF_SCALARS:
                out.append(size // 2)       # (lgemm's `__half C[8][8]`: 64 registers, not 32)
            else:
                out.append(None if size is None else -(-size // 4))
    return tuple(out)


def _constants(ctx, kn, bind, bindings) -> tuple[tuple[str, int], ...]:
    """`Specialized.constants`: the bound integer template parameters, then the `const` or
    `constexpr` integer locals of the kernel's body evaluated under `bind`."""
    out = [(name, v) for name, v in bindings if isinstance(v, int) and not isinstance(v, bool)]
    scope = kn.node.start_byte
    for node in _declarations(ctx, kn):
        type_node = node.child_by_field_name("type")
        if not qualifiers(node) & {b"const", b"constexpr"} or type_node is None \
                or not types.is_integral(" ".join(ctx.tx.node_text(type_node).split())):
            continue
        for d in node.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            name = d.child_by_field_name("declarator") if value is not None else None
            if name is None or name.type != "identifier":
                continue
            v = ctx.env.value(value, scope, bind)
            if v is not None:
                out.append((name.text.decode("utf-8", "replace"), v))
    return tuple(out)


def launch_template_args(launch: Launch) -> tuple[int | str | None, ...]:
    """A launch's template arguments for `specialize`: evaluated ints, else type names."""
    return tuple(v if v is not None else a for v, a in zip(launch.template_values,
                                                            launch.template_args, strict=False))
