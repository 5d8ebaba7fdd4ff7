"""occlint.source.parse: one file's text -> model.SourceFile. Never raises."""

from __future__ import annotations

from occlint import record
from occlint.model import SourceFile
from occlint.record import dataclass, field
from occlint.source.context import Context
from occlint.source.forwarded import forwarded
from occlint.source.indices import attach_indices
from occlint.source.kernels import kernel_nodes
from occlint.source.launches import LaunchReader
from occlint.source.macros import macro_kernels, macro_launches
from occlint.source.preproc import View
from occlint.source.shared import shared_nodes
from occlint.source.text import decode

STRICT = False      # tests set this to see the exception instead of an empty result


@dataclass
class Parsed:
    """A SourceFile with what `specialize` needs (the tree, the environment, kernel nodes)."""

    sf: SourceFile
    ctx: Context | None
    kernels: list
    shared: list
    links: object = None        # occlint.link.FileLinks, built on first use
    _nodes: dict | None = None  # Kernel -> (its kernel node, its shared nodes), for `node_of`

    view: View | None = None
    arch_views: dict = field(default_factory=dict)     # arch -> SourceFile (for_arch)
    heads: list = field(default_factory=list)   # KernelNodes of kernels a macro's use heads

    def node_of(self, kernel) -> tuple[object, list] | None:
        """(kernel node, shared nodes in its body) for a Kernel of this file, or None."""
        if self._nodes is None:
            shared: dict[int, list] = {}
            for sn in self.shared:
                shared.setdefault(id(sn.kernel_node), []).append(sn)
            nodes: dict = {}
            for kn in (*self.kernels, *self.heads):
                nodes.setdefault(kn.kernel, (kn, shared.get(id(kn), [])))
            self._nodes = nodes
        return self._nodes.get(kernel)


def release(sf: SourceFile) -> None:
    """Break a parsed file's one cycle (the SourceFile and its Parsed; its Context has none)
    once the caller is done with it: its objects are freed at once, not by the collector
    (which traversed them: 3% of a parse-only listing)."""
    if getattr(sf, "parsed", None) is not None:
        object.__setattr__(sf, "parsed", None)


def parse(text: str | bytes, path: str = "<input>", view: View | None = None) -> SourceFile:
    """Kernels, shared declarations, launches and attribute calls found in `text`. `view`: the
    unit's flags (-D, -U, -I: preproc.view_from_flags); conditionals that read `__CUDA_ARCH__`
    stay undecided here (both branches live): `for_arch` decides them per arch."""
    return parse_full(text, path, view).sf


def parse_full(text: str | bytes, path: str = "<input>", view: View | None = None,
               tree=None) -> Parsed:
    """`parse`, with what `specialize` needs; `tree`: the same text's tree-sitter tree, when
    one was already made (another pass of the same file)."""
    try:
        decoded = decode(text)
    except Exception:
        decoded = ""
    try:
        parsed = _extract(decoded, path, view, tree)
    except Exception:
        # a bug must not take the linter down on one odd file: report nothing for it
        if STRICT:
            raise
        parsed = Parsed(SourceFile(path=path, text=decoded), None, [], [], view=view)
        object.__setattr__(parsed.sf, "parsed", parsed)
    return parsed


def for_arch(sf: SourceFile, arch: str) -> SourceFile:
    """`sf` as the device pass for `arch` sees it (`__CUDA_ARCH__`, feature macros): kernels,
    bounds and shared arrays in branches false for that arch are gone, macros that depend on
    the arch resolve. `sf` itself when no conditional of it (or its headers) reads the arch."""
    p = parsed_for(sf)
    if p.ctx is None or not p.ctx.pp.arch_dependent:
        return sf
    got = p.arch_views.get(arch)
    if got is None:
        view = record.replace(p.view or View(), arch=arch, host=False)
        got = p.arch_views[arch] = parse_full(sf.text, sf.path, view, p.ctx.tree).sf
    return got


def parsed_for(sf: SourceFile) -> Parsed:
    """The Parsed behind `sf`: the one made when `sf` was parsed (a SourceFile built by hand,
    without one, is parsed from its text)."""
    if isinstance(sf.parsed, Parsed):
        return sf.parsed
    return parse_full(sf.text, sf.path)


def _extract(text: str, path: str, view: View | None = None, tree=None) -> Parsed:
    ctx = Context(text, path, view=view, tree=tree)
    kns = kernel_nodes(ctx)
    kept = {kn.node.start_byte for kn in kns}
    dropped = {n.start_byte for n in ctx.caps.get("kernel", ()) if n.start_byte not in kept}
    by_start = {kn.node.start_byte: kn for kn in kns if kn.body is not None}
    heads: dict = {}
    macro_kns = macro_kernels(ctx, heads)
    sns = shared_nodes(ctx, {**heads, **by_start}, dropped)
    sns = attach_indices(ctx, sns)
    reader = LaunchReader(ctx, frozenset(kn.kernel.name for kn in kns if kn.kernel.template_params))
    launches, attributes = reader.api_calls()
    launches += reader.chevrons()
    in_macros = macro_launches(ctx, reader)
    launches = forwarded(ctx, reader, launches + in_macros[0], {kn.kernel.name for kn in kns})
    launches = sorted(launches, key=lambda x: x.span.start)
    attributes += in_macros[1]
    sf = SourceFile(
        path=path, text=text, kernels=(*(kn.kernel for kn in kns), *macro_kns),
        shared=tuple(sorted((sn.decl for sn in sns), key=lambda d: d.span.start)),
        launches=tuple(launches),
        attributes=tuple(sorted(attributes, key=lambda a: a.span.start)),
    )
    parsed = Parsed(sf, ctx, kns, sns, view=view, heads=list(heads.values()))
    object.__setattr__(sf, "parsed", parsed)      # frozen dataclass: set once, here
    return parsed

