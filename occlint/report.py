"""The model behind the HTML report: every kernel of a run with its instantiations aggregated, the
compiler's figures per arch, occupancy at each evaluation site and the calculator's curves.

    model = build(result)          # result: engine.LintResult of lint_paths
    model.kernels[0].archs["sm_90"].evaluations[0].occupancy

The sites are the linter's own (`facts.build_facts` with the inputs `lint_paths` used), so the
report shows the numbers the findings were computed from. A kernel with no evaluable launch and no
`__launch_bounds__` is shown at its best block size (`best_evaluation`).
"""

from __future__ import annotations

import os
import re

from occlint import curves as curves_mod
from occlint.model import Finding, Kernel, Usage
from occlint.record import dataclass, field


@dataclass(frozen=True)
class Evaluation:
    """One occupancy figure for a kernel on an arch."""

    basis: str                  # "launch" | "launch_bounds" | "best"
    label: str                  # kernel name with template arguments
    block: int
    dynamic_smem: int
    occupancy: float | None     # None: the configuration cannot launch
    active_blocks: int
    limiter: str                # binding limiter name, or why it cannot launch
    where: str                  # "path:line" of the launch or the kernel
    usage: Usage | None = None
    static_smem: int = 0
    max_dynamic_smem: int | None = None
    carveout: int | None = None
    max_block: int | None = None    # __launch_bounds__ maximum, when known


@dataclass
class ArchFigures:
    arch: str
    usages: list[Usage] = field(default_factory=list)       # one per instantiation
    evaluations: list[Evaluation] = field(default_factory=list)
    curves: tuple = ()          # (by block, by registers, by shared memory) at `focus`
    focus: Evaluation | None = None

    def span(self, get) -> tuple[int, int] | None:
        values = [get(u) for u in self.usages]
        return (min(values), max(values)) if values else None

    @property
    def worst(self) -> Evaluation | None:
        """The evaluation with the lowest occupancy (one that cannot launch counts lowest)."""
        return min(self.evaluations, key=lambda e: (-1 if e.occupancy is None else e.occupancy),
                   default=None)


@dataclass
class KernelEntry:
    anchor: str                 # unique HTML id: "k-3-reduce"
    name: str                   # qualified name
    path: str | None            # where it is defined (None: only the compiler knows it)
    line: int | None
    instantiations: list[str] = field(default_factory=list)
    archs: dict[str, ArchFigures] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class ReportModel:
    root: str
    archs: tuple[str, ...]
    kernels: list[KernelEntry]
    findings: list[Finding]
    sources: dict[str, str]
    files: list[str]
    notices: list[str]
    min_occupancy: float
    compiled: bool              # nvcc's figures were available
    finding_kernel: dict[int, str] = field(default_factory=dict)   # id(finding) -> kernel anchor


def shown_path(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return path if rel.startswith("..") else rel


def best_evaluation(arch: str, usage: Usage, kernel: Kernel | None, where: str) -> Evaluation:
    """The best occupancy over the block sizes the kernel may be launched with (warp multiples up
    to its `__launch_bounds__`), as cudaOccupancyMaxPotentialBlockSize chooses."""
    from occlint.occupancy import compute, max_potential_block_size

    bound = kernel.launch_bounds.max_threads if kernel and kernel.launch_bounds else None
    bound = bound if isinstance(bound, int) and bound > 0 else None
    if bound is None and isinstance(usage.max_threads, int) and usage.max_threads > 0:
        bound = usage.max_threads       # the cubin's: an instantiation's bounds, or no source
    best = max_potential_block_size(arch, usage.registers, usage.static_smem,
                                    launch_bounds=bound, barriers=usage.barriers)
    label = _label(usage)
    if best.block_size == 0:
        return Evaluation("best", label, 0, 0, None, 0, "no block size fits", where, usage,
                          usage.static_smem, max_block=bound)
    occ = compute(arch, best.block_size, usage.registers, usage.static_smem,
                  barriers=usage.barriers)
    return Evaluation("best", label, best.block_size, 0, occ.occupancy, occ.active_blocks,
                      curves_mod.limiter_of(occ), where, usage, usage.static_smem, max_block=bound)


def _label(u: Usage) -> str:
    return f"{u.kernel}<{', '.join(u.template_args)}>" if u.template_args else u.kernel


def _site_evaluation(site, root: str) -> Evaluation:
    launch = site.launch
    path = launch.path if launch is not None else site.facts.kernel.path
    line = launch.span.line if launch is not None else site.facts.kernel.span.line
    bound = site.bounds.max_threads if site.bounds and isinstance(site.bounds.max_threads, int) else None
    occ = site.occ
    if site.exceeds_bounds:
        value, blocks, limiter = None, 0, f"exceeds __launch_bounds__({bound})"
    elif site.unlaunchable or occ is None or occ.active_blocks == 0:
        value, blocks = None, 0
        limiter = f"cannot launch ({(site.unlaunchable or 'no block fits').replace('_', ' ')})"
    else:
        value, blocks, limiter = occ.occupancy, occ.active_blocks, curves_mod.limiter_of(occ)
    basis = getattr(site, "basis", None) or ("launch" if launch is not None else "launch_bounds")
    return Evaluation(basis, site.label, site.block,
                      site.dynamic_smem, value, blocks, limiter,
                      f"{shown_path(path, root)}:{line}", site.usage, site.static_smem,
                      site.max_dynamic_smem, site.carveout, bound)


def _key(k: Kernel) -> tuple[str, str]:
    return (os.path.realpath(k.path) if k.is_definition else "", k.qualname)


def build(result, *, root: str | None = None, findings=None) -> ReportModel:
    """The report's model from a `lint_paths` result (which keeps its parses and usage).
    `findings`: those to show when not the result's own (after --diff-base, --baseline, --fix)."""
    from occlint.facts import build_facts
    from occlint.project import Project
    from occlint.toolchain.flags import archs_for

    config = result.config
    root = root or (config.root if config is not None else ".")
    project = result.project if result.project is not None else Project()
    entries: dict[tuple[str, str], KernelEntry] = {}
    seen_sites: set = set()
    matched: set[int] = set()
    all_archs: set[str] = set()
    for sf in project:
        path = sf.path
        usage = result.usage.get(path, [])
        archs = archs_for(config, usage=usage)       # as engine.lint_source decides them
        all_archs.update(archs)
        facts = build_facts(sf, usage, config, archs, (), project)
        for kf in facts.kernels:
            k = kf.kernel
            if not k.is_definition and not kf.launches:
                continue
            e = entries.get(_key(k))
            if e is None:
                e = entries[_key(k)] = KernelEntry(
                    "", k.qualname, k.path if k.is_definition else None,
                    k.span.line if k.is_definition else None)
            for arch in archs:
                fig = e.archs.setdefault(arch, ArchFigures(arch))
                for u in kf.usages.get(arch, []):
                    matched.add(id(u))
                    if all(_ukey(u) != _ukey(v) for v in fig.usages):
                        fig.usages.append(u)
        for site in facts.sites:
            ev = _site_evaluation(site, root)
            mark = (_key(site.facts.kernel), site.arch, ev.where, ev.label, ev.block, ev.dynamic_smem)
            if mark in seen_sites:
                continue
            seen_sites.add(mark)
            entries[_key(site.facts.kernel)].archs.setdefault(
                site.arch, ArchFigures(site.arch)).evaluations.append(ev)
    # compiled kernels the sources do not show (a library's, a macro-generated name)
    for path, usage in result.usage.items():
        for u in usage:
            if id(u) in matched:
                continue
            e = entries.setdefault(("", u.kernel), KernelEntry("", u.kernel, None, None))
            fig = e.archs.setdefault(u.arch, ArchFigures(u.arch))
            if all(_ukey(u) != _ukey(v) for v in fig.usages):
                fig.usages.append(u)
            matched.add(id(u))
            all_archs.add(u.arch)
    kernels = sorted(entries.values(), key=lambda e: (e.path or "\uffff", e.line or 0, e.name))
    for i, e in enumerate(kernels, 1):
        e.anchor = f"k{i}-" + "".join(ch if ch.isalnum() else "-" for ch in e.name.split("::")[-1])[:40]
        kernel = _definition(project, e)
        labels = set()
        for fig in e.archs.values():
            fig.usages.sort(key=lambda u: u.template_args)
            labels.update(_label(u) for u in fig.usages)
            labels.update(ev.label for ev in fig.evaluations)
            evaluated = {ev.usage and _ukey(ev.usage) for ev in fig.evaluations}
            if not fig.evaluations:
                where = f"{shown_path(e.path, root)}:{e.line}" if e.path else "(compiled only)"
                fig.evaluations = [best_evaluation(fig.arch, u, kernel, where) for u in fig.usages
                                   if _ukey(u) not in evaluated]
            fig.focus = _focus(fig)
            if fig.focus is not None and e.path is not None:     # no curves for library kernels
                fig.curves = _curves(fig.arch, fig.focus)
        e.instantiations = sorted(labels)
    findings = list(result.findings if findings is None else findings)
    model = ReportModel(root, tuple(sorted(all_archs, key=arch_order)), kernels, findings,
                        dict(result.sources), list(result.files), list(result.notices),
                        getattr(config, "min_occupancy", 0.5),
                        compiled=any(result.usage.values()))
    link_findings(model)
    return model


def arch_order(arch: str) -> tuple:
    """sm_80 before sm_90 before sm_100 (numerically), sm_90 before sm_90a."""
    m = re.match(r"\D*(\d+)(.*)", arch)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, arch)


def _ukey(u: Usage) -> tuple:
    return (u.arch, tuple(u.template_args))


def _definition(project, e: KernelEntry) -> Kernel | None:
    for sf in project:
        for k in sf.kernels:
            if k.qualname == e.name and k.is_definition and (e.path is None or k.path == e.path):
                return k
    return None


def _focus(fig: ArchFigures) -> Evaluation | None:
    """The configuration the curves are drawn around: the lowest launchable occupancy."""
    usable = [ev for ev in fig.evaluations if ev.usage is not None and ev.occupancy is not None]
    return min(usable, key=lambda ev: ev.occupancy, default=None)


def curve_key(c) -> tuple:
    """What one chart shows, without the arch: equal keys draw identical charts."""
    def step(s):
        return None if s is None else (s.value, s.result.occupancy)
    return (c.kind, c.segments, c.current, c.current_occupancy, c.x_min, c.x_max, c.step,
            step(c.gain), step(c.loss))


def curves_key(fig: ArchFigures) -> tuple:
    """What the charts of `fig` show, without the arch: equal keys draw identical charts."""
    return tuple(curve_key(c) for c in fig.curves)


def _curves(arch: str, ev: Evaluation) -> tuple:
    u = ev.usage
    return curves_mod.curves(arch, ev.block, u.registers, ev.static_smem, ev.dynamic_smem,
                             max_block_size=ev.max_block, max_dynamic_smem=ev.max_dynamic_smem,
                             carveout=ev.carveout, barriers=u.barriers)


def link_findings(model: ReportModel) -> None:
    """Each finding that names a kernel points at that kernel's entry."""
    by_name: dict[str, list[KernelEntry]] = {}
    for e in model.kernels:
        for name in {e.name, e.name.split("::")[-1], *e.instantiations}:
            by_name.setdefault(name, []).append(e)
    for f in model.findings:
        if not f.kernel:
            continue
        candidates = by_name.get(f.kernel) or by_name.get(f.kernel.split("<")[0].split("::")[-1]) or []
        if not candidates:
            continue
        same_file = [e for e in candidates if e.path and os.path.realpath(e.path) == os.path.realpath(f.path)]
        e = (same_file or candidates)[0]
        e.findings.append(f)
        model.finding_kernel[id(f)] = e.anchor


def occupancy_buckets(model: ReportModel) -> dict[str, list[int]]:
    """Per arch, how many kernels have their lowest occupancy in each bucket (see BUCKETS)."""
    out = {}
    for arch in model.archs:
        counts = [0] * len(BUCKETS)
        for e in model.kernels:
            fig = e.archs.get(arch)
            ev = fig.worst if fig else None
            if ev is None:
                continue
            counts[bucket_of(ev.occupancy)] += 1
        out[arch] = counts
    return out


BUCKETS = ("cannot launch", "< 25%", "25-49%", "50-74%", "75-99%", "100%")


def bucket_of(value: float | None) -> int:
    if value is None:
        return 0
    if value >= 1.0:
        return 5
    return 1 + min(3, int(value * 4 + 1e-9))

