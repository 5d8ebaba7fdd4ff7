"""The semantic model every check reads, built once per file: facts, never verdicts' words.

`build_facts` collects per kernel its shared arrays, launches and usage (linked by occlint.link),
and per (kernel, arch) the evaluation sites with their occupancy (occlint.occupancy). The "one
finding per cause" arbitration is made once, here, as fields of each Site (`unlaunchable`,
`exceeds_bounds`, `needs_opt_in`) and its `owner`: the one rule among OCC001/OCC002/OCC003/OCC020
that reports a below-target site. Each rule's own test (how far, which fix) is in its function
in checks.py. `build_file_facts` is the same for a build file (OCC040).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

from occlint import link
from occlint.config import Config
from occlint.model import (
    CompileError,
    Dim3,
    Kernel,
    Launch,
    LaunchBounds,
    SharedDecl,
    SourceFile,
    Span,
    Usage,
)
from occlint.occupancy import Occupancy
from occlint.record import dataclass, field, replace

STATIC_SMEM_LIMIT = 48 * 1024        # per block without opt-in (all archs occlint supports)
MAX_BLOCK_DIMS = (1024, 1024, 64)
LIMITER_ORDER = ("registers", "shared_memory", "warps", "blocks", "barriers")


@dataclass
class KernelFacts:
    """A kernel with its shared arrays, launches and compiler figures."""

    kernel: Kernel
    here: bool                          # defined in this file (fixes may edit it)
    shared: list[SharedDecl]
    launches: list[Launch]
    usages: dict[str, list[Usage]]      # arch -> usages (one per template instantiation)
    origin: SourceFile | None = None    # the file that defines it (another file of the run, or this)
    elsewhere: list[Launch] = field(default_factory=list)   # its launches in other files of the run
    sites: list[Site] = field(default_factory=list)          # its evaluation sites, every arch
    static_over_limit: SharedDecl | None = None   # > 48 KB static: it cannot build; nothing else is said
    # static arrays larger than any element their subscripts reach: (decl, elements used), where
    # a thread-derived subscript reaches the largest block (facts.used_elements)
    oversized: list[tuple[SharedDecl, int]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.kernel.name

    @property
    def unknown_dynamic_smem(self) -> bool:
        """It declares `extern __shared__` and a launch's dynamic shared memory is not known
        here: an evaluation without launch (at 0 B dynamic) may name the wrong limiter."""
        return any(d.extern for d in self.shared) and any(
            ln.dynamic_smem is None and not ln.runtime_block for ln in (*self.launches, *self.elsewhere))


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
    occ: Occupancy | None = None        # None when it cannot launch for a reason decided first
    unlaunchable: str | None = None     # limiter that gives 0 blocks/SM ("threads", ...)
    exceeds_bounds: bool = False        # launched with more threads than __launch_bounds__ allows
    needs_opt_in: bool = False          # > 48 KB without a large enough cudaFuncSetAttribute
    owner: str | None = None            # the rule that reports this site below the occupancy target
    basis: str = "launch"               # launch | launch_bounds | best (no constant launch, no bounds:
                                        # the best block size up to the kernel's max threads)
    bounds_from_cubin: bool = False     # the bounds' figures came from the cubin, not the source
    text: str = field(default="", repr=False, compare=False)   # the launching file's (block_names)

    @property
    def regs(self) -> int:
        """Registers/thread for the engine: nvcc's figure, else 0 (registers not limiting)."""
        return self.usage.registers if self.usage else 0

    @property
    def launches(self) -> bool:
        """It can launch and nothing about it is wrong but its occupancy."""
        return self.occ is not None and not (self.unlaunchable or self.exceeds_bounds or self.needs_opt_in)

    def engine_inputs(self) -> dict:
        """The keyword inputs every occupancy search over this site uses besides the resource
        it varies (one set, so that rules, hover and the lockfile agree)."""
        return {"max_dynamic_smem": self.max_dynamic_smem, "carveout": self.carveout,
                "barriers": self.usage.barriers if self.usage else 1}


@dataclass
class Facts:
    """One file's kernels with what the rules read about them."""

    path: str
    text: str
    source: SourceFile
    config: Config
    archs: tuple[str, ...]
    kernels: list[KernelFacts]
    sites: list[Site]
    compile_errors: tuple[CompileError, ...] = ()
    gpu_name: str = "H100"
    sm_count: int = 132
    global_cap: int | None = None       # -maxrregcount from the configured nvcc flags
    failed_archs: frozenset[str] = frozenset()   # its compile failed, errors reported elsewhere

    def compile_failed(self, arch: str) -> bool:
        """nvcc ran on the file for `arch` and failed: no finding rests on the registers it
        would have measured (OCC900 says why, here or in the header of the run it names), as
        `kernels` gives such a launch no figure."""
        return arch in self.failed_archs or any(e.arch in (arch, None) for e in self.compile_errors)


# --- helpers --------------------------------------------------------------------------------------


def occupancy_module():
    from occlint import occupancy
    return occupancy


def compute(site: Site, regs: int | None = None, smem: int | None = None, block: int | None = None) -> Occupancy:
    """The site's occupancy, or with one input changed."""
    return occupancy_module().compute(
        site.arch, block or site.block, site.regs if regs is None else regs,
        site.static_smem if smem is None else smem, site.dynamic_smem, **site.engine_inputs())


def primary_limiter(occ, with_registers: bool) -> str:
    for name in LIMITER_ORDER:
        if name in occ.limiters and (with_registers or name != "registers"):
            return name
    return "warps"


def limiter_words(name: str) -> str:
    return occupancy_module().LIMITER_WORDS.get(name, f"limited by {name}")


def blocks_for(occ, target: float) -> int:
    """Blocks/SM needed to reach `target` occupancy with this block size."""
    return max(1, math.ceil(target * occ.max_warps / occ.warps_per_block - 1e-9))


def span_of(facts: Facts, start: int, end: int) -> Span:
    from occlint.fix import make_span
    return make_span(facts.text, start, end)


def launch_arg(launch: Launch, index: int) -> Span:
    if len(launch.arg_spans) > index:
        return launch.arg_spans[index]
    return launch.config_span or launch.span


def serial(launch: Launch) -> bool:
    """A grid of exactly one block, or a whole launch of at most one warp of threads (a printf
    demo's `<<<2, 2>>>`): deliberate (setup, a `<<<1, 1024>>>` final reduction step). It uses one
    SM, or less than a warp of lanes, whatever its shape: no shape, grid or occupancy advice."""
    grid, block = launch.grid.total, launch.block.total
    return grid == 1 or (grid is not None and block is not None and grid * block <= 32)


def intent_met(site: Site) -> bool:
    """The kernel declares the occupancy it wants and gets it here: `__launch_bounds__(T, B)` with
    at least B blocks/SM at this site, or a `__maxnreg__` register budget."""
    bounds = site.bounds
    if bounds is not None and bounds.min_blocks:
        return site.occ is not None and site.occ.active_blocks >= bounds.min_blocks
    return site.facts.kernel.maxnreg is not None


# --- building the facts ---------------------------------------------------------------------------


def specialize_kernel(sf: SourceFile, kernel: Kernel, values: tuple) -> tuple[LaunchBounds | None, list | None]:
    """Launch bounds and shared decls with template parameters bound, when the parser can."""
    if not kernel.template_params or not values:
        return kernel.launch_bounds, None
    try:
        from occlint.source import specialize
        spec = specialize(sf, kernel, tuple(values))
    except Exception:
        return kernel.launch_bounds, None
    return spec.launch_bounds, list(spec.shared)


def written_for(kf: KernelFacts, launch: Launch, block: int) -> str | None:
    """The name of a size the kernel's code is written for that equals `block` at this launch:
    an integer template parameter, or a `const` its body computes (bitsandbytes'
    `kQuantizeBlockwise<4096, 4>`: `THREADS = BLOCK_SIZE / NUM_PER_TH` = 1024 sizes its
    `cub::BlockReduce`). Then the block is not a knob of the launch alone. None otherwise."""
    if kf.origin is None:
        return None
    try:
        from occlint.source import specialize
        spec = specialize(kf.origin, kf.kernel, launch_args(launch) if kf.kernel.template_params
                          else ())
    except Exception:
        return None
    return next((name for name, v in spec.constants if v == block), None)


def array_registers(site: Site) -> int:
    """Registers/thread the kernel's per-thread arrays hold at this site (`float acc[TM * TN]`,
    sizes bound to the instantiation): ptxas keeps them in registers when it reports no stack
    frame, so a register cap at or below this figure cannot be met without spilling them. With
    a stack frame, each 2 bytes of it may hold an element (a `__half`) that needs no register:
    the figure less that many (leimao's vectorized `__half` GEMMs: 80 - 16). 0 when unknown."""
    u = site.usage
    if u is None:
        return 0
    origin, k = arch_kernel(site.facts, site.arch) or (site.facts.origin, site.facts.kernel)
    if origin is None:
        return 0
    # the instantiation nvcc compiled names every argument; a launch in a template function
    # may leave some its own parameters (lgemm's `gemm_v05<T, ...>` with T the caller's)
    values = usage_args(u) if u.template_args or site.launch is None else launch_args(site.launch)
    try:
        from occlint.source import specialize
        words = specialize(origin, k, values if k.template_params else ()).local_arrays
    except Exception:
        return 0
    return max(0, sum(w for w in words if w) - u.stack_frame // 2)


def launch_args(launch: Launch) -> tuple:
    from occlint.source import launch_template_args
    return launch_template_args(launch)


def usage_args(u: Usage) -> tuple:
    """An instantiation's template arguments for `specialize`: integers where nvcc wrote them
    (`256u`, `true`), else the type names."""
    return tuple(literal_int(v) if literal_int(v) is not None else v for v in u.template_args)


def attributes_for(facts: Facts, k: Kernel) -> list:
    """cudaFuncSetAttribute calls in this file that name kernel `k`."""
    return link.attributes_of(facts.source, k)


def usage_for(kf: KernelFacts, arch: str, launch: Launch | None) -> Usage | None:
    """The one instantiation a launch runs on `arch` (None: not known, or several)."""
    found = link.instantiations(kf.usages.get(arch, []), kf.kernel, launch)
    return found[0] if len(found) == 1 else None


def _global_cap(config) -> int | None:
    flags = list(getattr(config, "nvcc_flags", ()) or ())
    for i, flag in enumerate(flags):
        m = re.fullmatch(r"--?maxrregcount(?:=(\d+))?", flag)
        if m:
            value = m.group(1) or (flags[i + 1] if i + 1 < len(flags) else "")
            if str(value).isdigit():
                return int(value) or None       # -maxrregcount=0: no limit
    return None


def _kernel_facts(k: Kernel, origin: SourceFile, here: bool, usage: link.Usages) -> KernelFacts:
    by_arch: dict[str, list[Usage]] = {}
    for u in usage.of(k):
        by_arch.setdefault(u.arch, []).append(u)
    return KernelFacts(kernel=k, here=here, shared=link.shared_of(origin, k),
                       launches=[], usages=by_arch, origin=origin)


def _key(k: Kernel) -> tuple[str, int]:
    """A kernel's identity among a file's: its qualified name and, for overloads, its arity."""
    return k.qualname, len(k.params)


def build_facts(sf: SourceFile, usage: Iterable[Usage], config, archs: tuple[str, ...],
                compile_errors=(), project: Iterable[SourceFile] = (),
                failed_archs: frozenset[str] = frozenset()) -> Facts:
    """What the checks read. `project`: the other parsed files of the run (headers, other
    sources), for kernels launched here but defined there, and launches there of kernels here."""
    from occlint.project import Project
    usage = usage if isinstance(usage, link.Usages) else link.Usages(usage)
    project = project if isinstance(project, Project) else Project(project)
    kernels: dict[tuple[str, int], KernelFacts] = {}
    for k in sf.kernels:
        known = kernels.get(_key(k))
        if known is None or (k.is_definition and not known.here):
            kernels[_key(k)] = _kernel_facts(k, sf, k.is_definition and k.path == sf.path, usage)
    for launch in sf.launches:
        k, origin = link.find_kernel(sf, launch), sf
        if k is None or not k.is_definition:
            for other in project.definitions.get(launch.callee.split("::")[-1], []):
                found = link.find_kernel(other, launch) if other.path != sf.path else None
                if found is not None and found.is_definition:
                    k, origin = found, other
                    break
        if k is None:       # defined where this run cannot see: a template by its arguments
            name = launch.callee.split("::")[-1]
            arity = len(launch.template_args) or max(
                (len(u.template_args) for u in usage.by_name.get(name, ())), default=0)
            k = Kernel(name=name, qualname=launch.callee, path=sf.path, span=launch.span,
                       decl_span=launch.span, is_definition=False,
                       template_params=tuple(f"<{i}>" for i in range(arity)))
        kf = kernels.get(_key(k))
        if kf is None or (origin is not sf and not kf.here and kf.origin is sf):
            kf = kernels[_key(k)] = _kernel_facts(k, origin, False, usage)
        kf.launches.append(launch)
    for kf in kernels.values():
        if kf.here:     # (a file that defines its own kernel of the name launches that one:
            kf.elsewhere = [ln for other, ln in project.launches.get(kf.kernel.name, [])
                            if other.path != sf.path and link.find_kernel(sf, ln) == kf.kernel
                            and not _defines_its_own(other, ln)]     # cuda-samples' testKernels)
    facts = Facts(path=sf.path, text=sf.text, source=sf, config=config, archs=archs,
                  kernels=list(kernels.values()), sites=[], compile_errors=tuple(compile_errors),
                  failed_archs=frozenset(failed_archs),
                  global_cap=_global_cap(config))
    try:
        from occlint import gpus
        g = gpus.gpu(config.gpu)
        facts.gpu_name, facts.sm_count = (g.label or g.name.upper()), g.sm_count
    except Exception:
        pass
    for kf in facts.kernels:
        _static_limits(kf, archs)
        for arch in archs:
            kf.sites.extend(_sites(facts, kf, arch))
        for site in kf.sites:
            if site.usage is None and facts.compile_failed(site.arch):
                continue        # (ccminer's lyra2: "limited by shared memory" at 168 registers)
            site.owner = owner(site, config.min_occupancy, facts.sm_count)
        facts.sites.extend(kf.sites)
    return facts


def _defines_its_own(other: SourceFile, launch: Launch) -> bool:
    """Does the file of `launch` define the kernel it launches itself?"""
    k = link.find_kernel(other, launch)
    return k is not None and k.is_definition and k.path == other.path


def static_total(kf: KernelFacts, shared: list[SharedDecl] | None = None) -> int:
    return sum(d.size_bytes or 0 for d in (shared if shared is not None else kf.shared) if not d.extern)


def _static_limits(kf: KernelFacts, archs: tuple[str, ...] = ()) -> None:
    """OCC021 (over 48 KB) and OCC020 (thread-indexed array larger than any block)."""
    static = [d for d in kf.shared if not d.extern and d.size_bytes]
    ptxas = max((u.static_smem for us in kf.usages.values() for u in us), default=0)
    total = max(static_total(kf), ptxas)
    if static and total > STATIC_SMEM_LIMIT:
        kf.static_over_limit = max(static, key=lambda d: d.size_bytes)
        return
    blocks = [ln.block.total for ln in (*kf.launches, *kf.elsewhere) if not ln.runtime_block]
    if blocks and all(b is not None for b in blocks):
        largest = max(blocks)
    elif not blocks and kf.kernel.launch_bounds and kf.kernel.launch_bounds.max_threads:
        largest = kf.kernel.launch_bounds.max_threads
    else:
        largest = None      # thread-derived subscripts have no known bound
    for d in static:
        if len(d.dims) != 1 or d.dims[0] is None or not d.indices or d.other_uses:
            continue
        if all(i.constant is not None for i in d.indices):
            continue        # `flag[0]` alone: no evidence of how the array is meant to be used
        used = used_elements(d, largest)
        if used is not None and d.dims[0] > used and \
                _allocates_less(total, (d.dims[0] - used) * (d.element_size or 0), archs):
            kf.oversized.append((d, used))


def _allocates_less(total: int, unused: int, archs: tuple[str, ...]) -> bool:
    """Would a block allocate less shared memory without `unused` of its `total` static bytes
    on one of `archs` (in allocation units: 128 bytes on sm_80+)? A transpose tile's padding
    word (darknet's `tile[33 * 32]`, 4 bytes) allocates the same."""
    from occlint.errors import OcclintError
    from occlint.gpus import arch as arch_limits

    for a in archs or ("sm_90",):
        try:
            gran = arch_limits(a).smem_granularity
        except OcclintError:    # (an arch the table lacks: the saving is not judged)
            return True
        if -(-total // gran) != -(-(total - unused) // gran):
            return True
    return False


def used_elements(decl: SharedDecl, largest_block: int | None) -> int | None:
    """How many leading elements the subscripts can reach (an exclusive bound), or None when one
    is unbounded: a thread-derived one reaches the largest block, a constant itself, a
    loop-bounded one (`k < 256`, Index.bound) its bound."""
    used = 0
    for i in decl.indices:
        if i.thread_derived:
            if largest_block is None:
                return None
            reach = largest_block
        elif i.constant is not None:
            if i.constant < 0:
                return None
            reach = i.constant + 1
        elif i.bound is not None:
            reach = i.bound
        else:
            return None
        used = max(used, reach)
    return used


def _configurations(launches) -> Iterator[tuple[Launch, list[tuple[int, int]], tuple[str, ...]]]:
    """(launch, the (block, dynamic smem) pairs to evaluate it at, its template arguments for
    a label) for each launch: its one configuration, its few `choices`, or per binding of its
    launching template (`bindings`) the launch with that binding's template values, its one
    pair, and its arguments as values (`k<W>` bound to 4: `k<4>`). No pairs when unknown."""
    for launch in launches:
        if launch.runtime_block:
            yield launch, [], launch.template_args
        elif launch.block.total is not None and launch.dynamic_smem is not None:
            yield launch, [(launch.block.total, launch.dynamic_smem)], launch.template_args
        elif launch.choices:            # one of a few values: each is evaluated
            yield launch, list(launch.choices), launch.template_args
        elif launch.bindings:           # its text is shared by the instantiations: no edits
            for values, block, dyn in launch.bindings:
                one = replace(launch, template_values=values, block=Dim3(block, 1, 1, launch.block.text),
                              dynamic_smem=dyn, arg_spans=())     # (`bindings` kept: no edits)
                written = tuple(a if v is None else str(v)
                                for a, v in zip(launch.template_args, values, strict=False))
                yield one, [(block, dyn)] if dyn is not None else [], written
        else:
            yield launch, [], launch.template_args


def _sites(facts: Facts, kf: KernelFacts, arch: str) -> Iterator[Site]:
    if kf.static_over_limit is not None:
        return
    found = arch_kernel(kf, arch)
    if found is None:
        return          # in a branch the device pass for this arch drops
    origin, k = found
    attrs = attributes_for(facts, kf.kernel)
    opt_in = max((a.value for a in attrs if a.attribute == "MaxDynamicSharedMemorySize"
                  and isinstance(a.value, int)), default=None)
    carveout = next((a.value for a in attrs if a.attribute == "PreferredSharedMemoryCarveout"
                     and isinstance(a.value, int) and 0 <= a.value <= 100), None)
    evaluated = False
    known_blocks: list[int] = []     # launches with a constant block, unknown dynamic smem
    unknown_opt_in = any(a.attribute == "MaxDynamicSharedMemorySize" and not isinstance(a.value, int)
                         for a in attrs)
    for launch, configs, written in _configurations(kf.launches):
        if not configs:
            if launch.block.total is not None and not launch.runtime_block:
                known_blocks.append(launch.block.total)   # a constant block, unknown dynamic smem
            continue
        evaluated = True
        # the instantiation it runs; of a launch whose template arguments are partly unknown
        # here (`k<T, 256>` in `template <class T> void run()`), each one it may run
        found = link.instantiations(kf.usages.get(arch, []), k, launch)
        for u in found or [None]:
            args = launch_args(launch) if len(found) < 2 else usage_args(u)
            bounds, shared = specialize_kernel(origin, k, args)
            eff = effective_bounds(k, bounds, u, arch, facts.global_cap)
            bounds = eff.launch_bounds()
            static = u.static_smem if u else static_total(kf, shared)
            label = instance_label(k, written if len(found) < 2 else u.template_args)
            for block, dyn in configs:
                # an opt-in below the launch's need is OCC022's finding; evaluate as if enough
                max_dyn = opt_in if opt_in is not None and opt_in >= dyn else None
                site = Site(kf, arch, block, dyn, launch, u, static, bounds,
                            launch_arg(launch, 1), label, max_dynamic_smem=max_dyn,
                            carveout=carveout, bounds_from_cubin=eff.from_cubin, text=facts.text)
                site.needs_opt_in = (dyn > 0 and static + dyn > STATIC_SMEM_LIMIT
                                     and max_dyn is None and not unknown_opt_in)
                yield _evaluate(site)
    if evaluated or any(ln.block.total is not None or ln.choices for ln in kf.elsewhere):
        return      # evaluated at its launches (those elsewhere: in their own files)
    if not kf.here:
        return      # at its __launch_bounds__: a finding of the file that defines it, at its line
    bounds = k.launch_bounds
    instances = kf.usages.get(arch, []) or [None]
    for u in instances:
        values = tuple(u.template_args) if u and k.template_params else ()
        b, shared = specialize_kernel(origin, k, usage_args(u)) if values else (bounds, None)
        eff = effective_bounds(k, b, u, arch, facts.global_cap)
        b = eff.launch_bounds()
        static = u.static_smem if u else static_total(kf, shared)
        if b is not None and b.max_threads:
            site = Site(kf, arch, b.max_threads, 0, None, u, static, b, k.span,
                        instance_label(k, values), max_dynamic_smem=opt_in, carveout=carveout,
                        basis="launch_bounds", bounds_from_cubin=eff.from_cubin)
        elif u is not None:
            if known_blocks:             # the launch's own block, at no dynamic smem: the best it gets
                block = max(known_blocks, key=lambda x: (occupancy_module().compute(
                    arch, x, u.registers, static, barriers=u.barriers).occupancy, x)) \
                    if all(0 < x <= 1024 for x in known_blocks) else None
                if block is None:
                    continue
            else:
                block, _occ = occupancy_module().best_block_size(
                    arch, u.registers, static, 0, max_dynamic_smem=opt_in, carveout=carveout,
                    barriers=u.barriers)
            site = Site(kf, arch, block, 0, None, u, static, b, k.span,
                        instance_label(k, values), max_dynamic_smem=opt_in, carveout=carveout,
                        basis="best")
        else:
            continue
        yield _evaluate(site)


def arch_kernel(kf: KernelFacts, arch: str) -> tuple[SourceFile, Kernel] | None:
    """(file, kernel) as the device pass for `arch` sees them (source.for_arch): its bounds,
    `__maxnreg__` and shared arrays with `__CUDA_ARCH__` decided; None when a conditional
    drops the kernel on this arch. The kernel itself when its file reads no arch macro."""
    origin = kf.origin
    if origin is None or not kf.kernel.is_definition:
        return origin, kf.kernel
    from occlint.source import for_arch
    view = for_arch(origin, arch)
    if view is origin:
        return origin, kf.kernel
    k = kf.kernel
    same = [x for x in view.kernels if x.qualname == k.qualname and x.params == k.params]
    return (view, same[0]) if same else None


def effective_bounds(k: Kernel, source: LaunchBounds | None, u: Usage | None, arch: str,
                     global_cap: int | None):
    from occlint.bounds import effective
    return effective(k, source, u, arch, global_cap)


def literal_int(text: str) -> int | None:
    m = re.fullmatch(r"\s*(-?\d+)[uUlL]*\s*", str(text))
    return int(m.group(1)) if m else ({"true": 1, "false": 0}.get(str(text).strip()))


def instance_label(k: Kernel, args) -> str:
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


def owner(site: Site, min_occupancy: float, sm_count: int) -> str | None:
    """Which of OCC001/OCC002/OCC003/OCC020 owns a below-target site (one cause, one code),
    decided once per site by `build_facts`; None when it meets the target or fails otherwise
    (a launch that fails has one finding: why it fails), and at a launch whose blocks are all
    resident at once (`resident`)."""
    occ = site.occ
    if not site.launches or occ.occupancy >= min_occupancy or (site.launch is not None and serial(site.launch)):
        return None
    if site.launch is not None and resident(site.launch, occ, sm_count):
        return None
    if site.launch is None and site.facts.unknown_dynamic_smem:
        return None     # its launches' shared memory, not known, may be what limits it
    limiter = primary_limiter(occ, site.usage is not None)
    if limiter in ("registers", "warps", "blocks", "barriers") and intent_met(site):
        return None     # the occupancy its __launch_bounds__ / __maxnreg__ asked for
    if limiter == "registers":
        if site.usage is None:
            return None
        if site.launch is None and (site.usage.all_spill_stores or site.usage.all_spill_loads):
            return None     # kernel-level: OCC011/OCC012 report this register pressure
        return "OCC001"
    if limiter == "shared_memory":
        static_decls = [d for d in site.facts.shared if not d.extern and d.size_bytes]
        if site.dynamic_smem == 0 and static_decls and (site.launch is None or site.facts.oversized):
            return "OCC020"
        return "OCC002"
    if site.basis == "best" or size_not_chosen(site.launch):
        return None     # no block-size advice at a size nobody chose, or that the code picks
    return "OCC003"


BLOCK_NAMES_WINDOW = 64 << 10      # how far before a launch its block's names are looked for


def block_names(text: str, launch: Launch) -> frozenset:
    """The names a launch's block size is written with: in its block argument, and (three
    steps back at most, within BLOCK_NAMES_WINDOW characters) in what those names are set from
    before the launch: `dim3 threads(nThreads, 1, 1)`, `unsigned nThreads = MTF_THREADS_BLOCK;`.
    Asked only of a site below its target for shared memory (`per_thread_bytes`)."""
    before = text[max(0, launch.span.start - BLOCK_NAMES_WINDOW):launch.span.start]
    names: set[str] = set()
    frontier = set(re.findall(r"[A-Za-z_]\w*", launch.block.text)) - {"dim3"}
    for _ in range(3):
        names |= frontier
        found: set[str] = set()
        for n in frontier:
            set_from = list(re.finditer(r"\b" + re.escape(n) + r"\s*(?:\(|\{|=(?!=))([^;]*);", before))
            if set_from:
                found |= set(re.findall(r"[A-Za-z_]\w*", set_from[-1].group(1)))
        frontier = found - names - {"dim3"}
    return frozenset(names)


def per_thread_bytes(site: Site) -> tuple[int, int] | None:
    """(static shared bytes per thread, fixed bytes) when the kernel's shared memory grows with
    its block: each array's size is linear in the names whose value is the block size (cudpp's
    `uchar threadHist[HUFF_THREADS_PER_BLOCK_HIST * 256]` at 64 threads/block: 256 bytes each
    thread keeps) or does not involve them (a flag, a small table). Only names the launch's
    block is written with count (`block_names`), not another constant that happens to equal
    it. None when no array grows with the block, or the arrays' sizes are not all read."""
    kf, block = site.facts, site.block
    decls = [d for d in kf.shared if not d.extern]
    if not decls or kf.origin is None or site.launch is None or \
            any(d.size_bytes is None for d in decls) or \
            not 0 <= site.static_smem - sum(d.size_bytes for d in decls) <= 1024:
        return None         # (ptxas's figure may add alignment: it is what the block needs)
    names_of_block = block_names(site.text, site.launch)
    from occlint.source.build import parsed_for
    try:
        env, text = parsed_for(kf.origin).ctx.env, kf.origin.text
    except Exception:
        return None
    per = 0
    for d in decls:
        dims = [text[span.start:span.end] for span in d.dim_spans]
        names = {n for dim in dims for n in re.findall(r"[A-Za-z_]\w*", dim)
                 if n in names_of_block and env.text_value(n.encode("utf-8", "replace")) == block}
        if not names:
            continue                # a fixed size: a flag, a small table
        grown = d.element_size or 0
        for dim in dims:
            v = env.text_value(re.sub(r"[A-Za-z_]\w*", lambda m, names=names: f"({2 * block})"
                                      if m.group(0) in names else m.group(0), dim).encode())
            grown = grown * v if v is not None else None
            if grown is None:
                return None
        if grown != 2 * d.size_bytes:
            return None             # not linear in the block: not per-thread storage
        per += d.size_bytes
    return (per // block, site.static_smem - per) if per and per % block == 0 else None


def per_thread_cap(site: Site, each: int, fixed: int) -> tuple[float, int]:
    """(the best occupancy, at which block size) of a kernel keeping `each` static shared bytes
    per thread (plus `fixed`) over the block sizes it may run: warp multiples up to its bounds
    whose static shared memory stays within the 48 KB ptxas accepts. (0.0, 0) when none does."""
    top = site.bounds.max_threads if site.bounds and site.bounds.max_threads else 1024
    return max(((compute(site, smem=each * b + fixed, block=b).occupancy, b)
                for b in range(32, top + 1, 32) if each * b + fixed <= STATIC_SMEM_LIMIT),
               default=(0.0, 0))


def size_not_chosen(launch: Launch | None) -> bool:
    """The launch's block is one case of a `switch` over sizes (a dispatch), or what a function
    of the file computes from other sizes (`iDivUp(w, 16)`: a block that follows the data):
    no advice on the size itself (OCC003, OCC030, OCC031)."""
    return launch is not None and (launch.dispatch or launch.computed)


def resident(launch: Launch, occ, sm_count: int) -> bool:
    """Every block of the launch fits on the GPU at once (a constant grid of at most the SMs x
    the blocks each holds): a higher occupancy limit adds no block to an SM, so the limiter's
    advice cannot raise this launch's occupancy; the grid is the knob (OCC033)."""
    grid = launch.grid.total
    return grid is not None and occ.active_blocks > 0 and grid <= sm_count * occ.active_blocks


@dataclass
class BuildFacts:
    """A build file (CMake, Makefile, setup.py, pyproject.toml, compile_commands.json): the
    `-maxrregcount` flags it passes to nvcc, located at the flag."""

    path: str
    text: str
    config: Config
    flags: list  # occlint.buildfiles.FlagHit


def build_file_facts(text: str, path: str, config: Config) -> BuildFacts:
    from occlint import buildfiles
    return BuildFacts(path, text, config, list(buildfiles.scan(text, path)))
