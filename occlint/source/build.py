"""occlint.source.parse: one file's text -> model.SourceFile. Never raises."""

from __future__ import annotations

from dataclasses import dataclass

from occlint.model import SourceFile
from occlint.source.context import Context
from occlint.source.indices import attach_indices
from occlint.source.kernels import kernel_nodes
from occlint.source.launches import LaunchReader
from occlint.source.macros import macro_launches
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

    def node_of(self, kernel) -> tuple[object, list] | None:
        """(kernel node, shared nodes in its body) for a Kernel of this file, or None."""
        if self._nodes is None:
            shared: dict[int, list] = {}
            for sn in self.shared:
                shared.setdefault(id(sn.kernel_node), []).append(sn)
            nodes: dict = {}
            for kn in self.kernels:
                nodes.setdefault(kn.kernel, (kn, shared.get(id(kn), [])))
            self._nodes = nodes
        return self._nodes.get(kernel)


def parse(text: str | bytes, path: str = "<input>") -> SourceFile:
    """Kernels, shared declarations, launches and attribute calls found in `text`."""
    return parse_full(text, path).sf


def parse_full(text: str | bytes, path: str = "<input>") -> Parsed:
    try:
        decoded = decode(text)
    except Exception:
        decoded = ""
    try:
        parsed = _extract(decoded, path)
    except Exception:
        # a bug must not take the linter down on one odd file: report nothing for it
        if STRICT:
            raise
        parsed = Parsed(SourceFile(path=path, text=decoded), None, [], [])
        object.__setattr__(parsed.sf, "parsed", parsed)
    return parsed


def parsed_for(sf: SourceFile) -> Parsed:
    """The Parsed behind `sf`: the one made when `sf` was parsed (a SourceFile built by hand,
    without one, is parsed from its text)."""
    if isinstance(sf.parsed, Parsed):
        return sf.parsed
    return parse_full(sf.text, sf.path)


def _extract(text: str, path: str) -> Parsed:
    ctx = Context(text, path)
    kns = kernel_nodes(ctx)
    kept = {kn.node.start_byte for kn in kns}
    dropped = {n.start_byte for n in ctx.caps.get("kernel", ()) if n.start_byte not in kept}
    by_start = {kn.node.start_byte: kn for kn in kns if kn.body is not None}
    sns = shared_nodes(ctx, by_start, dropped)
    sns = attach_indices(ctx, sns)
    reader = LaunchReader(ctx)
    launches, attributes = reader.api_calls()
    launches += reader.chevrons()
    in_macros = macro_launches(ctx)
    launches = sorted(launches + in_macros[0], key=lambda x: x.span.start)
    attributes += in_macros[1]
    sf = SourceFile(
        path=path, text=text, kernels=tuple(kn.kernel for kn in kns),
        shared=tuple(sorted((sn.decl for sn in sns), key=lambda d: d.span.start)),
        launches=tuple(launches),
        attributes=tuple(sorted(attributes, key=lambda a: a.span.start)),
    )
    parsed = Parsed(sf, ctx, kns, sns)
    object.__setattr__(sf, "parsed", parsed)      # frozen dataclass: set once, here
    return parsed

