"""One function per rule: facts in, Hits (values, never prose) out.

`build_facts` gathers what every check reads: per kernel its shared arrays, launches and usage,
and per (kernel, arch) the evaluation sites with their occupancy. The "one finding per cause"
decisions are made once, here, as flags on each Site (`unlaunchable`, `exceeds_bounds`,
`needs_opt_in`) and in `verdict()`, so that every check reads the same answer.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from occlint.model import Edit, Kernel, Launch, LaunchBounds, SharedDecl, SourceFile, Span, Usage

STATIC_SMEM_LIMIT = 48 * 1024        # per block without opt-in (all archs occlint supports)
MAX_BLOCK_DIMS = (1024, 1024, 64)
LIMITER_ORDER = ("registers", "shared_memory", "warps", "blocks", "barriers")


class Pct(float):
    """A fraction that formats as a percentage: 0.75 -> "75%", 2/3 -> "66.7%"."""

    def __format__(self, spec: str) -> str:
        if spec:
            return format(float(self), spec)
        value = round(float(self) * 100, 1)
        return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"


@dataclass(frozen=True)
class FixSpec:
    edits: tuple[Edit, ...]
    applicability: str                  # safe | unsafe
    values: dict
    variant: str = "fix_title"


@dataclass(frozen=True)
class Hit:
    code: str
    span: Span
    values: dict
    variant: str = "message"
    arch: str | None = None
    kernel: str | None = None
    fix: FixSpec | None = None
    noqa_lines: tuple[int, ...] = ()    # more lines where `// noqa` silences it (kernel decl)


@dataclass
class KernelFacts:
    kernel: Kernel
    here: bool                          # defined in this file (fixes may edit it)
    shared: list[SharedDecl]
    launches: list[Launch]
    usages: dict[str, list[Usage]]      # arch -> usages (one per template instantiation)
    origin: SourceFile | None = None    # the file that defines it (another file of the run, or this)
    elsewhere: list[Launch] = field(default_factory=list)   # its launches in other files of the run
    static_over_limit: SharedDecl | None = None   # OCC021 fires: nothing else about this kernel
    oversized: list[tuple[SharedDecl, int]] = field(default_factory=list)  # OCC020 (decl, block)

    @property
    def label(self) -> str:
        return self.kernel.name


@dataclass
class Site:
    """One evaluation of a kernel's occupancy: at a launch, or at its `__launch_bounds__`."""

    facts: KernelFacts
    arch: str
    block: int
    dynamic_smem: int
    launch: Launch | None
    usage: Usage | None
    static_smem: int
    bounds: LaunchBounds | None
    span: Span
    label: str                          # kernel name with template args
    max_dynamic_smem: int | None = None
    carveout: int | None = None
    occ: object | None = None           # occupancy.Occupancy
    unlaunchable: str | None = None     # limiter that gives 0 blocks/SM ("threads", ...)
    exceeds_bounds: bool = False
    needs_opt_in: bool = False          # > 48 KB without a large enough cudaFuncSetAttribute (OCC022)


@dataclass
class Facts:
    path: str
    text: str
    source: SourceFile
    config: object
    archs: tuple[str, ...]
    kernels: list[KernelFacts]
    sites: list[Site]
    compile_errors: tuple = ()
    gpu_name: str = "H100"
    sm_count: int = 132
    global_cap: int | None = None       # -maxrregcount from the configured nvcc flags


CHECKS: dict[str, Callable[[Facts], Iterable[Hit]]] = {}


def check(code: str):
    def register(fn):
        CHECKS[code] = fn
        return fn
    return register


# --- helpers --------------------------------------------------------------------------------------


def _occ():
    from occlint import occupancy
    return occupancy


def compute(site: Site, regs: int | None = None, smem: int | None = None, block: int | None = None):
    regs = (site.usage.registers if site.usage else 0) if regs is None else regs
    barriers = site.usage.barriers if site.usage else 1
    return _occ().compute(
        site.arch, block or site.block, regs, site.static_smem if smem is None else smem,
        site.dynamic_smem, max_dynamic_smem=site.max_dynamic_smem, carveout=site.carveout,
        barriers=barriers)


def primary_limiter(occ, with_registers: bool) -> str:
    for name in LIMITER_ORDER:
        if name in occ.limiters and (with_registers or name != "registers"):
            return name
    return "warps"


def limiter_words(name: str) -> str:
    return _occ().LIMITER_WORDS.get(name, f"limited by {name}")


def blocks_for(occ, target: float) -> int:
    """Blocks/SM needed to reach `target` occupancy with this block size."""
    return max(1, math.ceil(target * occ.max_warps / occ.warps_per_block - 1e-9))


def registers_for_blocks(site: Site, blocks: int, hi: int | None = None) -> int | None:
    """The most registers/thread (up to `hi`) that allow `blocks` blocks/SM here; None: none do."""
    lo, best = 1, None
    hi = hi or (site.usage.registers if site.usage else 255)
    while lo <= hi:
        mid = (lo + hi) // 2
        if compute(site, regs=mid).active_blocks >= blocks:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def span_of(facts: Facts, start: int, end: int) -> Span:
    from occlint.fix import make_span
    return make_span(facts.text, start, end)


def launch_arg(launch: Launch, index: int) -> Span:
    if len(launch.arg_spans) > index:
        return launch.arg_spans[index]
    return launch.config_span or launch.span


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def indentation(text: str, offset: int) -> str:
    start = line_start(text, offset)
    return re.match(r"[ \t]*", text[start:]).group(0)


def callee_text(launch: Launch) -> str:
    if launch.template_args:
        return f"{launch.callee}<{', '.join(launch.template_args)}>"
    return launch.callee


def is_literal(text: str) -> bool:
    return re.fullmatch(r"\s*\d+[uU]?\s*", text or "") is not None


def serial(launch: Launch) -> bool:
    """`<<<1, 1>>>`: one thread on purpose (setup, a final reduction step); no shape advice."""
    return launch.grid.total == 1 and launch.block.total == 1


def kernel_noqa(k: Kernel) -> tuple[int, ...]:
    return tuple(sorted({k.span.line, k.decl_span.line}))


def launch_bounds_text(block: int, blocks: int) -> str:
    return f"__launch_bounds__({block}, {blocks})"


def bounds_fix(facts: Facts, site: Site, blocks: int) -> tuple[Edit, ...] | None:
    """Edits that give the kernel `__launch_bounds__(block, blocks)`, or None if unsafe to try."""
    kf, k = site.facts, site.facts.kernel
    if not kf.here or k.maxnreg is not None:
        return None
    sizes = [ln.block.total for ln in (*kf.launches, *kf.elsewhere)]
    if any(b is None or b > site.block for b in sizes):
        return None       # a bound of site.block would break another launch
    text = launch_bounds_text(site.block, blocks)
    lb = k.launch_bounds
    if lb is not None:
        if lb.span is None or lb.max_threads != site.block:
            return None
        return (Edit(text, lb.span),)
    at = k.decl_span.start
    return (Edit(text + " ", span_of(facts, at, at)),)


# --- building the facts ---------------------------------------------------------------------------


def _specialize(sf: SourceFile, kernel: Kernel, values: tuple) -> tuple[LaunchBounds | None, list | None]:
    """Launch bounds and shared decls with template parameters bound, when the parser can."""
    if not kernel.template_params or not values:
        return kernel.launch_bounds, None
    try:
        from occlint.source import specialize
        spec = specialize(sf, kernel, tuple(values))
    except Exception:
        return kernel.launch_bounds, None
    return spec.launch_bounds, list(spec.shared)


def _launch_args(launch: Launch) -> tuple:
    from occlint.source import launch_template_args
    return launch_template_args(launch)


def attributes_for(facts: Facts, k: Kernel) -> list:
    """cudaFuncSetAttribute calls in this file that name kernel `k`."""
    def names(text: str) -> bool:
        plain = re.sub(r"\(\s*(const\s+)?void\s*\*\s*\)|reinterpret_cast<[^>]*>|[&()\s]", "", text)
        plain = plain.split("<")[0]
        return plain in (k.name, k.qualname) or plain.endswith("::" + k.name)
    return [a for a in facts.source.attributes if names(a.kernel) or _find_kernel(facts.source, a) == k]


def _find_kernel(sf: SourceFile, launch) -> Kernel | None:
    from occlint.source import find_kernel
    return find_kernel(sf, launch)


def _match_usages(kernel: Kernel, usages) -> list[Usage]:
    from occlint.toolchain import match_usage
    return list(match_usage(kernel, usages))


def _norm_arg(text: str) -> str:
    text = re.sub(r"\s+", "", str(text))
    return re.sub(r"^(\d+)[uUlL]*$", r"\1", text)


def usage_for(kf: KernelFacts, arch: str, launch: Launch | None) -> Usage | None:
    usages = kf.usages.get(arch, [])
    if not usages:
        return None
    if launch is None or not kf.kernel.template_params:
        return usages[0] if len(usages) == 1 else None
    wanted = [_norm_arg(a) for a in launch.template_args]
    values = [str(v) for v in launch.template_values]
    for u in usages:
        got = [_norm_arg(a) for a in u.template_args]
        if got and (got in (wanted, values)):
            return u
    return usages[0] if len(usages) == 1 and not launch.template_args else None


def _global_cap(config) -> int | None:
    flags = list(getattr(config, "nvcc_flags", ()) or ())
    for i, flag in enumerate(flags):
        m = re.fullmatch(r"--?maxrregcount(?:=(\d+))?", flag)
        if m:
            value = m.group(1) or (flags[i + 1] if i + 1 < len(flags) else "")
            if str(value).isdigit():
                return int(value)
    return None


def _kernel_facts(k: Kernel, origin: SourceFile, here: bool, usage: list[Usage]) -> KernelFacts:
    by_arch: dict[str, list[Usage]] = {}
    for u in _match_usages(k, usage):
        by_arch.setdefault(u.arch, []).append(u)
    return KernelFacts(kernel=k, here=here, shared=[d for d in origin.shared if d.kernel == k.qualname],
                       launches=[], usages=by_arch, origin=origin)


class Project(tuple):
    """The parsed files of one run, indexed by name (kernel definitions, launch callees)."""

    @functools.cached_property
    def definitions(self) -> dict[str, list[SourceFile]]:
        out: dict[str, list[SourceFile]] = {}
        for sf in self:
            for k in sf.kernels:
                if k.is_definition:
                    out.setdefault(k.name, []).append(sf)
        return out

    @functools.cached_property
    def launches(self) -> dict[str, list[tuple[SourceFile, Launch]]]:
        out: dict[str, list[tuple[SourceFile, Launch]]] = {}
        for sf in self:
            for ln in sf.launches:
                out.setdefault(ln.callee.split("::")[-1], []).append((sf, ln))
        return out


def build_facts(sf: SourceFile, usage: Iterable[Usage], config, archs: tuple[str, ...],
                compile_errors=(), project: Iterable[SourceFile] = ()) -> Facts:
    """What the checks read. `project`: the other parsed files of the run (headers, other
    sources), for kernels launched here but defined there, and launches there of kernels here."""
    usage = list(usage)
    project = project if isinstance(project, Project) else Project(project)
    kernels: dict[str, KernelFacts] = {}
    for k in sf.kernels:
        known = kernels.get(k.qualname)
        if known is None or (k.is_definition and not known.here):
            kernels[k.qualname] = _kernel_facts(k, sf, k.is_definition and k.path == sf.path, usage)
    for launch in sf.launches:
        k, origin = _find_kernel(sf, launch), sf
        if k is None or not k.is_definition:
            for other in project.definitions.get(launch.callee.split("::")[-1], []):
                found = _find_kernel(other, launch) if other.path != sf.path else None
                if found is not None and found.is_definition:
                    k, origin = found, other
                    break
        if k is None:
            name = launch.callee.split("::")[-1]
            k = Kernel(name=name, qualname=launch.callee, path=sf.path, span=launch.span,
                       decl_span=launch.span, is_definition=False)
        kf = kernels.get(k.qualname)
        if kf is None or (origin is not sf and not kf.here and kf.origin is sf):
            kf = kernels[k.qualname] = _kernel_facts(k, origin, False, usage)
        kf.launches.append(launch)
    for kf in kernels.values():
        if kf.here:
            kf.elsewhere = [ln for other, ln in project.launches.get(kf.kernel.name, [])
                            if other.path != sf.path and _find_kernel(sf, ln) == kf.kernel]
    facts = Facts(path=sf.path, text=sf.text, source=sf, config=config, archs=archs,
                  kernels=list(kernels.values()), sites=[], compile_errors=tuple(compile_errors),
                  global_cap=_global_cap(config))
    try:
        from occlint import gpus
        g = gpus.gpu(config.gpu)
        facts.gpu_name, facts.sm_count = (g.label or g.name.upper()), g.sm_count
    except Exception:
        pass
    for kf in facts.kernels:
        _static_limits(kf)
        for arch in archs:
            facts.sites.extend(_sites(facts, kf, arch))
    return facts


def _static_total(kf: KernelFacts, shared: list[SharedDecl] | None = None) -> int:
    return sum(d.size_bytes or 0 for d in (shared if shared is not None else kf.shared) if not d.extern)


def _static_limits(kf: KernelFacts) -> None:
    """OCC021 (over 48 KB) and OCC020 (thread-indexed array larger than any block)."""
    static = [d for d in kf.shared if not d.extern and d.size_bytes]
    ptxas = max((u.static_smem for us in kf.usages.values() for u in us), default=0)
    total = max(_static_total(kf), ptxas)
    if static and total > STATIC_SMEM_LIMIT:
        kf.static_over_limit = max(static, key=lambda d: d.size_bytes)
        return
    blocks = [ln.block.total for ln in (*kf.launches, *kf.elsewhere) if not ln.runtime_block]
    if blocks and all(b is not None for b in blocks):
        largest = max(blocks)
    elif not blocks and kf.kernel.launch_bounds and kf.kernel.launch_bounds.max_threads:
        largest = kf.kernel.launch_bounds.max_threads
    else:
        return
    for d in static:
        if len(d.dims) != 1 or d.dims[0] is None or not d.indices or d.other_uses:
            continue
        thread_only = all(i.thread_derived or (i.constant is not None and 0 <= i.constant < largest)
                          for i in d.indices)
        if thread_only and any(i.thread_derived for i in d.indices) and d.dims[0] > largest:
            kf.oversized.append((d, largest))


def _sites(facts: Facts, kf: KernelFacts, arch: str) -> Iterator[Site]:
    if kf.static_over_limit is not None:
        return
    k = kf.kernel
    attrs = attributes_for(facts, k)
    opt_in = max((a.value for a in attrs if a.attribute == "MaxDynamicSharedMemorySize"
                  and isinstance(a.value, int)), default=None)
    carveout = next((a.value for a in attrs if a.attribute == "PreferredSharedMemoryCarveout"
                     and isinstance(a.value, int) and 0 <= a.value <= 100), None)
    evaluated = False
    for launch in kf.launches:
        block = launch.block.total
        if block is None or launch.runtime_block:
            continue
        evaluated = True
        if launch.dynamic_smem is None:
            continue
        bounds, shared = _specialize(kf.origin, k, _launch_args(launch))
        u = usage_for(kf, arch, launch)
        # an opt-in below the launch's need is OCC022's finding; evaluate as if it were enough
        max_dyn = opt_in if opt_in is not None and opt_in >= launch.dynamic_smem else None
        unknown_opt_in = any(a.attribute == "MaxDynamicSharedMemorySize" and not isinstance(a.value, int)
                             for a in attrs)
        static = u.static_smem if u else _static_total(kf, shared)
        site = Site(kf, arch, block, launch.dynamic_smem, launch, u, static, bounds,
                    launch_arg(launch, 1), _label(k, launch.template_args),
                    max_dynamic_smem=max_dyn, carveout=carveout)
        site.needs_opt_in = (launch.dynamic_smem > 0 and static + launch.dynamic_smem > STATIC_SMEM_LIMIT
                             and max_dyn is None and not unknown_opt_in)
        yield _evaluate(site)
    if evaluated or any(ln.block.total is not None for ln in kf.elsewhere):
        return      # evaluated at its launches (those elsewhere: in their own files)
    bounds = k.launch_bounds
    instances = kf.usages.get(arch, []) or [None]
    for u in instances:
        values = tuple(u.template_args) if u and k.template_params else ()
        b, shared = _specialize(kf.origin, k, tuple(_int(v) if _int(v) is not None else v for v in values)) if values else (bounds, None)
        if b is None or not b.max_threads:
            continue
        static = u.static_smem if u else _static_total(kf, shared)
        site = Site(kf, arch, b.max_threads, 0, None, u, static, b, k.span,
                    _label(k, values), max_dynamic_smem=opt_in, carveout=carveout)
        yield _evaluate(site)


def _int(text: str) -> int | None:
    m = re.fullmatch(r"\s*(-?\d+)[uUlL]*\s*", str(text))
    return int(m.group(1)) if m else ({"true": 1, "false": 0}.get(str(text).strip()))


def _label(k: Kernel, args) -> str:
    return f"{k.name}<{', '.join(str(a) for a in args)}>" if args else k.name


def _evaluate(site: Site) -> Site:
    dims = site.launch.block if site.launch else None
    if site.block > MAX_BLOCK_DIMS[0] or (dims is not None and any(
            d is not None and d > lim for d, lim in zip((dims.x, dims.y, dims.z), MAX_BLOCK_DIMS, strict=False))):
        site.unlaunchable = "threads"
    bounds = site.bounds
    if site.launch is not None and bounds and bounds.max_threads and site.block > bounds.max_threads:
        site.exceeds_bounds = True
        return site
    if site.unlaunchable:
        return site
    site.occ = occ = compute(site)
    if occ.active_blocks == 0:
        site.unlaunchable = primary_limiter(occ, site.usage is not None)
        return site
    return site


def verdict(site: Site, min_occupancy: float) -> str | None:
    """Which of OCC001/OCC002/OCC003/OCC020 owns a below-target site (one cause, one code)."""
    occ = site.occ
    if occ is None or site.unlaunchable or site.exceeds_bounds or site.needs_opt_in \
            or occ.occupancy >= min_occupancy or (site.launch is not None and serial(site.launch)):
        return None     # a launch that fails has one finding: why it fails
    limiter = primary_limiter(occ, site.usage is not None)
    if limiter == "registers":
        return "registers"
    if limiter == "shared_memory":
        static_decls = [d for d in site.facts.shared if not d.extern and d.size_bytes]
        if site.dynamic_smem == 0 and static_decls and (site.launch is None or site.facts.oversized):
            return "static_shared"
        return "shared_memory"
    return "block_size"


# --- the rules ------------------------------------------------------------------------------------


def _occ_values(site: Site, facts: Facts) -> dict:
    occ = site.occ
    return {
        "kernel": site.label, "arch": site.arch, "block": site.block,
        "regs": site.usage.registers if site.usage else None,
        "smem": site.static_smem + site.dynamic_smem, "static_smem": site.static_smem,
        "dynamic_smem": site.dynamic_smem, "occupancy": Pct(occ.occupancy),
        "blocks": occ.active_blocks, "warps": occ.active_warps, "max_warps": occ.max_warps,
        "limiter": limiter_words(primary_limiter(occ, site.usage is not None)),
        "min_occupancy": Pct(facts.config.min_occupancy),
    }


def _site_hit(code: str, site: Site, values: dict, variant: str = "message", fix=None) -> Hit:
    k = site.facts.kernel
    extra = kernel_noqa(k) if site.launch is None and site.facts.here else ()
    return Hit(code, site.span, values, variant, site.arch, k.qualname, fix, extra)


@check("OCC001")
def register_limited(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if site.usage is None or verdict(site, facts.config.min_occupancy) != "registers":
            continue
        values = _occ_values(site, facts)
        need = blocks_for(site.occ, facts.config.min_occupancy)
        regs = registers_for_blocks(site, need)
        if regs is None or regs >= site.usage.registers:
            yield _site_hit("OCC001", site, values, "no_step")
            continue
        after = compute(site, regs=regs)
        values.update(target_regs=regs, shed=site.usage.registers - regs,
                      target_blocks=after.active_blocks, target_occupancy=Pct(after.occupancy))
        edits = bounds_fix(facts, site, after.active_blocks)
        fix = FixSpec(edits, "unsafe", {**values, "bounds": launch_bounds_text(site.block, after.active_blocks)}) if edits else None
        yield _site_hit("OCC001", site, values, fix=fix)


@check("OCC002")
def shared_limited(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if verdict(site, facts.config.min_occupancy) != "shared_memory":
            continue
        values = _occ_values(site, facts)
        need = blocks_for(site.occ, facts.config.min_occupancy)
        total_now = site.static_smem + site.dynamic_smem
        fit = _smem_total_for(site, need)
        if fit is None:
            yield _site_hit("OCC002", site, values, "no_step")
            continue
        values.update(target_smem=fit, target_blocks=need,
                      target_occupancy=Pct(min(1.0, need * site.occ.warps_per_block / site.occ.max_warps)),
                      shed_smem=total_now - fit)
        yield _site_hit("OCC002", site, values)


def _smem_total_for(site: Site, blocks: int) -> int | None:
    """Largest static+dynamic bytes/block with `blocks` blocks/SM (moving the dynamic part)."""
    total = site.static_smem + site.dynamic_smem
    lo, hi, best = 0, total, None
    regs = site.usage.registers if site.usage else 0
    while lo <= hi:
        mid = (lo + hi) // 2
        occ = _occ().compute(site.arch, site.block, regs, mid, 0, carveout=site.carveout)
        if occ.active_blocks >= blocks:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


@check("OCC003")
def block_size_limited(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if verdict(site, facts.config.min_occupancy) != "block_size":
            continue
        values = _occ_values(site, facts)
        best = None
        for size in range(32, 1025, 32):
            if site.bounds and site.bounds.max_threads and size > site.bounds.max_threads:
                break
            occ = compute(site, block=size)
            if occ.occupancy >= facts.config.min_occupancy and occ.active_blocks:
                key = (abs(size - site.block), -size)
                if best is None or key < best[0]:
                    best = (key, size, occ)
        if best is None:
            yield _site_hit("OCC003", site, values, "no_step")
            continue
        values.update(target_block=best[1], target_occupancy=Pct(best[2].occupancy),
                      target_blocks=best[2].active_blocks)
        yield _site_hit("OCC003", site, values)


@check("OCC010")
def register_cliff(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        occ = site.occ
        if site.usage is None or occ is None or site.unlaunchable or site.exceeds_bounds or site.needs_opt_in:
            continue
        if "registers" not in occ.limiters or verdict(site, facts.config.min_occupancy):
            continue
        regs = registers_for_blocks(site, occ.active_blocks + 1)
        if regs is None or not 0 < site.usage.registers - regs <= facts.config.cliff_margin:
            continue
        after = compute(site, regs=regs)
        values = _occ_values(site, facts)
        values.update(target_regs=regs, shed=site.usage.registers - regs,
                      target_blocks=after.active_blocks, target_occupancy=Pct(after.occupancy))
        edits = bounds_fix(facts, site, after.active_blocks)
        fix = FixSpec(edits, "unsafe", {**values, "bounds": launch_bounds_text(site.block, after.active_blocks)}) if edits else None
        yield _site_hit("OCC010", site, values, fix=fix)


def _cap(kf: KernelFacts, facts: Facts) -> tuple[str, str] | None:
    """(kind, text) of whatever caps this kernel's registers, if anything."""
    k = kf.kernel
    if k.maxnreg is not None:
        return "maxnreg", f"__maxnreg__({k.maxnreg})"
    lb = k.launch_bounds
    if lb is not None and lb.min_blocks:
        return "bounds", lb.text or launch_bounds_text(lb.max_threads, lb.min_blocks)
    if facts.global_cap is not None:
        return "global", f"-maxrregcount={facts.global_cap}"
    return None


def _instance_bounds(kf: KernelFacts, u: Usage) -> LaunchBounds | None:
    """The kernel's `__launch_bounds__` with this instantiation's template arguments bound."""
    k = kf.kernel
    if not (k.template_params and u.template_args):
        return k.launch_bounds
    values = tuple(_int(v) if _int(v) is not None else v for v in u.template_args)
    bounds, _ = _specialize(kf.origin, k, values)
    return bounds


def _spill_hits(facts: Facts, capped: bool, code: str) -> Iterator[Hit]:
    for kf in facts.kernels:
        if not kf.here:
            continue
        cap = _cap(kf, facts)
        if (cap is not None) != capped:
            continue
        for arch in facts.archs:
            for u in kf.usages.get(arch, []):
                if not (u.spill_stores or u.spill_loads):
                    continue
                values = {"kernel": _label(kf.kernel, u.template_args), "arch": arch,
                          "regs": u.registers, "stores": u.spill_stores, "loads": u.spill_loads,
                          "stack": u.stack_frame}
                variant = "message"
                if cap is not None:
                    values.update(cap=cap[1])
                    lb = _instance_bounds(kf, u) if cap[0] == "bounds" else None
                    if lb is not None and lb.max_threads and lb.min_blocks:
                        values.update(cap=launch_bounds_text(lb.max_threads, lb.min_blocks))
                    if lb is not None and lb.min_blocks and lb.min_blocks > 1 and lb.max_threads:
                        site = Site(kf, arch, lb.max_threads, 0, None, u, u.static_smem, lb,
                                    kf.kernel.span, "")
                        # the next step down in blocks/SM that really gives more registers
                        for looser in range(lb.min_blocks - 1, 0, -1):
                            regs = registers_for_blocks(site, looser, 255) or 0
                            if regs > u.registers:
                                values.update(looser=launch_bounds_text(lb.max_threads, looser),
                                              looser_regs=regs)
                                variant = "looser"
                                break
                yield Hit(code, kf.kernel.span, values, variant, arch, kf.kernel.qualname,
                          None, kernel_noqa(kf.kernel))


@check("OCC011")
def register_spills(facts: Facts) -> Iterator[Hit]:
    yield from _spill_hits(facts, False, "OCC011")


@check("OCC012")
def launch_bounds_spills(facts: Facts) -> Iterator[Hit]:
    yield from _spill_hits(facts, True, "OCC012")


@check("OCC020")
def oversized_static_shared(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        if not kf.here:
            continue
        reported = set()
        for decl, largest in kf.oversized:
            reported.add(decl.name)
            values = {"kernel": kf.label, "array": decl.name, "elements": decl.dims[0],
                      "bytes": decl.size_bytes, "block": largest,
                      "wasted": decl.size_bytes - largest * (decl.element_size or 0)}
            yield Hit("OCC020", decl.span, values, "message", None, kf.kernel.qualname,
                      _extern_fix(facts, kf, decl, largest), ())
        for site in facts.sites:
            if site.facts is not kf or verdict(site, facts.config.min_occupancy) != "static_shared":
                continue
            decl = max((d for d in kf.shared if not d.extern and d.size_bytes), key=lambda d: d.size_bytes)
            if decl.name in reported:
                continue
            reported.add(decl.name)
            values = {**_occ_values(site, facts), "array": decl.name, "bytes": decl.size_bytes}
            yield Hit("OCC020", decl.span, values, "occupancy", site.arch, kf.kernel.qualname, None, ())


def _extern_fix(facts: Facts, kf: KernelFacts, decl: SharedDecl, block: int) -> FixSpec | None:
    """`__shared__ T a[N];` -> `extern __shared__ T a[];` + the launch passes block*sizeof(T).

    Only when every piece is literal: one launch in this file, no dynamic smem yet, no other
    extern array, a literal block, and the declaration text has the plain shape.
    """
    if len(kf.launches) != 1 or any(d.extern for d in kf.shared) or decl.element_size is None:
        return None
    launch = kf.launches[0]
    if launch.dynamic_smem or len(launch.arg_spans) != 2 or launch.kind != "chevron":
        return None
    if not is_literal(facts.text[launch.arg_spans[1].start:launch.arg_spans[1].end]):
        return None
    text = facts.text
    start = line_start(text, decl.span.start)
    end = text.find(";", decl.span.start)
    if end < 0:
        return None
    stmt = text[start:end + 1]
    m = re.fullmatch(r"([ \t]*)(?:static\s+)?__shared__\s+([\w:\s]+?)\s+(\w+)\s*\[[^\]]+\]\s*;", stmt)
    if not m or m.group(3) != decl.name:
        return None
    new_decl = f"{m.group(1)}extern __shared__ {m.group(2)} {decl.name}[];"
    block_arg = launch.arg_spans[1]
    smem = block * decl.element_size
    edits = (Edit(new_decl, span_of(facts, start, end + 1)),
             Edit(f", {smem}", span_of(facts, block_arg.end, block_arg.end)))
    return FixSpec(edits, "unsafe", {"array": decl.name, "bytes": smem, "block": block})


@check("OCC021")
def static_shared_over_limit(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        if kf.static_over_limit is None or not kf.here:
            continue
        ptxas = max((u.static_smem for us in kf.usages.values() for u in us), default=0)
        total = max(_static_total(kf), ptxas)
        decl = kf.static_over_limit
        yield Hit("OCC021", decl.span, {"kernel": kf.label, "array": decl.name, "bytes": total,
                                        "limit": STATIC_SMEM_LIMIT}, "message", None,
                  kf.kernel.qualname, None, ())


@check("OCC022")
def dynamic_without_opt_in(facts: Facts) -> Iterator[Hit]:
    seen = set()
    for site in facts.sites:
        launch = site.launch
        if not site.needs_opt_in or site.unlaunchable or site.exceeds_bounds:
            continue
        total = site.static_smem + site.dynamic_smem
        k = site.facts.kernel
        opted = [a for a in attributes_for(facts, k) if a.attribute == "MaxDynamicSharedMemorySize"]
        key = launch.span.start
        if key in seen:
            continue
        seen.add(key)
        values = {"kernel": site.label, "dynamic_smem": site.dynamic_smem, "static_smem": site.static_smem,
                  "smem": total, "limit": STATIC_SMEM_LIMIT,
                  "opted": max((a.value for a in opted), default=0)}
        at = line_start(facts.text, launch.span.start)
        call = (f"{indentation(facts.text, launch.span.start)}cudaFuncSetAttribute({callee_text(launch)}, "
                f"cudaFuncAttributeMaxDynamicSharedMemorySize, {site.dynamic_smem});\n")
        fix = FixSpec((Edit(call, span_of(facts, at, at)),), "safe", values)
        if opted or facts.text[at:launch.span.start].strip():
            fix = None    # an existing call to raise, or the launch shares its line with code
        yield Hit("OCC022", launch_arg(launch, 2), values, "too_small" if opted else "message",
                  None, k.qualname, fix, ())


def _launch_sites(facts: Facts) -> dict[int, list[Site]]:
    out: dict[int, list[Site]] = {}
    for site in facts.sites:
        if site.launch is not None:
            out.setdefault(site.launch.span.start, []).append(site)
    return out


@check("OCC030")
def max_threads_per_block(facts: Facts) -> Iterator[Hit]:
    from occlint import gpus
    by_launch = _launch_sites(facts)
    for kf in facts.kernels:
        for launch in kf.launches:
            if launch.block.total != 1024 or launch.runtime_block:
                continue
            sites = by_launch.get(launch.span.start, [])
            if any(s.unlaunchable or s.exceeds_bounds for s in sites):
                continue
            worst = min(facts.archs, key=lambda a: gpus.arch(a).max_threads_per_sm)
            limits = gpus.arch(worst)
            cap = Pct(limits.max_threads_per_sm // 1024 * 1024 / limits.max_threads_per_sm)
            values = {"kernel": _label(kf.kernel, launch.template_args), "arch": worst, "cap": cap,
                      "max_regs": limits.regs_per_block // 1024}
            yield Hit("OCC030", launch_arg(launch, 1), values,
                      "capped" if cap < 1 else "message", None, kf.kernel.qualname, None, ())


@check("OCC031")
def block_not_warp_multiple(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        for launch in kf.launches:
            total = launch.block.total
            if total is None or total % 32 == 0 or launch.runtime_block or total > 1024 or serial(launch):
                continue
            up = (total + 31) // 32 * 32
            values = {"kernel": _label(kf.kernel, launch.template_args), "block": total,
                      "rounded": up, "warps": up // 32, "idle": up - total}
            fix = None
            arg = launch_arg(launch, 1)
            lb = kf.kernel.launch_bounds
            if len(launch.arg_spans) > 1 and is_literal(facts.text[arg.start:arg.end]) \
                    and (lb is None or lb.max_threads is None or up <= lb.max_threads):
                fix = FixSpec((Edit(str(up), arg),), "safe", values)
            yield Hit("OCC031", arg, values, "message", None, kf.kernel.qualname, fix, ())


@check("OCC032")
def launch_exceeds_bounds(facts: Facts) -> Iterator[Hit]:
    seen = set()
    for site in facts.sites:
        if not site.exceeds_bounds or site.launch.span.start in seen:
            continue
        seen.add(site.launch.span.start)
        launch = site.launch
        values = {"kernel": site.label, "block": site.block, "bound": site.bounds.max_threads}
        arg = launch_arg(launch, 1)
        fix = None
        if len(launch.arg_spans) > 1 and is_literal(facts.text[arg.start:arg.end]):
            fix = FixSpec((Edit(str(site.bounds.max_threads), arg),), "unsafe", values)
        yield Hit("OCC032", arg, values, "message", None, site.facts.kernel.qualname, fix, ())
    # launches whose block size is known but whose smem is not still exceed their bounds
    for kf in facts.kernels:
        lb = kf.kernel.launch_bounds
        for launch in kf.launches:
            if launch.span.start in seen or launch.block.total is None or launch.dynamic_smem is not None:
                continue
            bound = _specialize(kf.origin, kf.kernel, _launch_args(launch))[0] or lb
            if bound and bound.max_threads and launch.block.total > bound.max_threads:
                seen.add(launch.span.start)
                values = {"kernel": _label(kf.kernel, launch.template_args), "block": launch.block.total,
                          "bound": bound.max_threads}
                yield Hit("OCC032", launch_arg(launch, 1), values, "message", None,
                          kf.kernel.qualname, None, ())


@check("OCC033")
def small_grid(facts: Facts) -> Iterator[Hit]:
    by_launch = _launch_sites(facts)
    for kf in facts.kernels:
        for launch in kf.launches:
            grid = launch.grid.total
            if grid is None or grid <= 1 or grid >= facts.sm_count:
                continue
            sites = [s for s in by_launch.get(launch.span.start, []) if s.occ and s.occ.active_blocks]
            per_sm = sites[0].occ.active_blocks if sites else 1
            values = {"kernel": _label(kf.kernel, launch.template_args), "grid": grid,
                      "sms": facts.sm_count, "gpu": facts.gpu_name, "idle": facts.sm_count - grid,
                      "blocks_per_sm": per_sm, "suggested": per_sm * facts.sm_count}
            yield Hit("OCC033", launch_arg(launch, 0), values, "message", None,
                      kf.kernel.qualname, None, ())


@check("OCC034")
def unlaunchable(facts: Facts) -> Iterator[Hit]:
    seen = set()
    for site in facts.sites:
        if not site.unlaunchable or site.exceeds_bounds or site.launch is None:
            continue
        key = (site.launch.span.start, site.unlaunchable)
        if key in seen:
            continue
        seen.add(key)
        values = {"kernel": site.label, "arch": site.arch, "block": site.block,
                  "regs": site.usage.registers if site.usage else None,
                  "smem": site.static_smem + site.dynamic_smem}
        limiter = site.unlaunchable
        if limiter == "threads":
            dims = site.launch.block
            values["dims"] = "x".join(str(d) for d in (dims.x, dims.y, dims.z))
            variant, arch = "threads", None
        elif limiter == "registers":
            values["limit"] = 65536
            values["max_regs"] = registers_for_blocks(site, 1) or 0
            variant, arch = "registers", site.arch
        elif limiter == "shared_memory":
            from occlint import gpus
            values["limit"] = gpus.arch(site.arch).smem_per_block_optin
            variant, arch = "shared_memory", site.arch
        else:
            variant, arch = "message", site.arch
            values["limiter"] = limiter_words(limiter)
        if arch is None and (site.launch.span.start, None) in seen:
            continue
        yield Hit("OCC034", site.span, values, variant, arch, site.facts.kernel.qualname, None, ())


@check("OCC040")
def global_maxrregcount(facts: Facts) -> Iterator[Hit]:
    return iter(())    # build files: occlint.buildfiles.scan (the engine runs it per build file)


@check("OCC050")
def resource_regression(facts: Facts) -> Iterator[Hit]:
    """Against `check --lock FILE` (config.extra["lock"]): resources grown, occupancy lost."""
    locked = (getattr(facts.config, "extra", None) or {}).get("lock")
    if not locked:
        return
    from occlint import lock
    for kf in facts.kernels:
        if not kf.here:
            continue
        for arch in facts.archs:
            for u in kf.usages.get(arch, []):
                for r in lock.compare(locked, [lock.entry(u, kf.launches)]):
                    values = {"kernel": _label(kf.kernel, u.template_args), "arch": arch,
                              "old": r.old, "new": r.new, "what": lock.RESOURCES.get(r.resource, ""),
                              "block": r.block or 0, "old_occ": Pct(r.old_occupancy or 0),
                              "new_occ": Pct(r.new_occupancy or 0)}
                    variant = ("occupancy" if r.resource == "occupancy"
                               else "message" if r.block is not None else "no_launch")
                    yield Hit("OCC050", kf.kernel.span, values, variant, arch, kf.kernel.qualname,
                              None, kernel_noqa(kf.kernel))


@check("OCC900")
def compile_error(facts: Facts) -> Iterator[Hit]:
    from occlint.fix import make_span
    seen = set()
    kernels = {kf.kernel.qualname: kf.kernel for kf in facts.kernels}
    over = [kf for kf in facts.kernels if kf.static_over_limit is not None]
    for err in facts.compile_errors:
        if over and "shared data" in err.message:
            continue    # OCC021 already names this cause at the declaration
        if err.line:
            lines = facts.text.splitlines(keepends=True)
            line = min(err.line, max(1, len(lines)))
            offset = sum(len(s) for s in lines[:line - 1])
            width = len(lines[line - 1].rstrip("\n")) if lines else 0
            col = min(max(1, err.column or 1), width + 1)
            span = make_span(facts.text, offset + col - 1, offset + col - 1)
        elif err.kernel and err.kernel in kernels:
            span = kernels[err.kernel].span
        else:
            span = make_span(facts.text, 0, 0)
        key = (span.line, span.column, err.message)
        if key in seen:
            continue
        seen.add(key)
        values = {"message": err.message.strip(), "arch": err.arch or ""}
        yield Hit("OCC900", span, values, "with_arch" if err.arch else "message", err.arch,
                  err.kernel, None, ())
