"""One function per rule: facts in, Hits (values, never prose) out.

The facts (kernels, launches, evaluation sites with their occupancy, and the "one finding per
cause" verdicts) are gathered once per file by `occlint.facts.build_facts`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator

from occlint import occupancy
from occlint.facts import (
    STATIC_SMEM_LIMIT,
    BuildFacts,
    Facts,
    KernelFacts,
    Site,
    arch_kernel,
    array_registers,
    attributes_for,
    blocks_for,
    compute,
    effective_bounds,
    instance_label,
    intent_met,
    launch_arg,
    launch_args,
    limiter_words,
    per_thread_bytes,
    per_thread_cap,
    primary_limiter,
    serial,
    size_not_chosen,
    span_of,
    specialize_kernel,
    static_total,
    usage_args,
    written_for,
)
from occlint.model import Edit, Kernel, Launch, LaunchBounds, SharedDecl, Span, Usage
from occlint.record import dataclass, replace
from occlint.source.text import split_lines


class Pct(float):
    """A fraction that formats as a percentage: 0.75 -> "75%", 2/3 -> "66.7%"."""

    def __format__(self, spec: str) -> str:
        if spec:
            return format(float(self), spec)
        value = round(float(self) * 100, 1)
        return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"


@dataclass(frozen=True)
class FixSpec:
    """A rule's fix before its title is rendered."""

    edits: tuple[Edit, ...]
    applicability: str                  # safe | unsafe
    values: dict
    variant: str = "fix_title"


@dataclass(frozen=True)
class Hit:
    """A rule's match before it becomes a Finding."""

    code: str
    span: Span
    values: dict
    variant: str = "message"
    arch: str | None = None
    kernel: str | None = None
    fix: FixSpec | None = None
    noqa_lines: tuple[int, ...] = ()    # more lines where `// noqa` silences it (kernel decl)


CHECKS: dict[str, Callable[[Facts], Iterable[Hit]]] = {}          # code -> check, every kind
KINDS: dict[str, str] = {}                                           # code -> "source" | "build"


def check(code: str, kind: str = "source"):
    """Register the rule `code`'s function: "source" checks read Facts, "build" checks BuildFacts."""
    def register(fn):
        CHECKS[code] = functools.wraps(fn)(lambda facts: merge_choices(fn(facts)))
        KINDS[code] = kind
        return fn
    return register


def merge_choices(hits: Iterable[Hit]) -> list[Hit]:
    """Hits at a launch whose configuration is one of a few values (`choices` in their values)
    become one per (code, place, arch, variant), naming the values it holds for (`holds_for`);
    the figures are those of the first (smallest) configuration it holds for."""
    out: list = []
    groups: dict[tuple, list[Hit]] = {}
    for h in hits:
        if not h.values.get("choices"):
            out.append(h)
            continue
        key = (h.code, h.span.start, h.arch, h.variant)
        if key not in groups:
            groups[key] = []
            out.append(key)
        groups[key].append(h)
    merged = []
    for item in out:
        if isinstance(item, Hit):
            merged.append(item)
            continue
        hs = groups[item]
        held = [(h.values.get("block"), h.values.get("dynamic_smem")) for h in hs]
        if _minor_point_of_a_sweep(hs[0], held):
            continue
        merged.append(replace(hs[0], values={**hs[0].values, "holds_for": tuple(held)}))
    return merged


def _minor_point_of_a_sweep(hit: Hit, held) -> bool:
    """Advice that holds for fewer than half the block sizes a benchmark sweep tries (a launch
    walking `int sizes[] = {32, ..., 1024}`): the harness tries them all on purpose, and the
    size it keeps is chosen by measurement. Errors (a launch that fails) are always kept."""
    from occlint.registry import RULES
    if not hit.values.get("sweep") or RULES[hit.code].severity == "error":
        return False
    sizes = {b for b, _d in hit.values["choices"]}
    return 2 * len({b for b, _d in held}) < len(sizes)


def notes(values: dict) -> str:
    """The words a finding's message ends with, from its values (`engine.to_finding`)."""
    return choices_note(values) + unmeasured_note(values) + callee_note(values)


def callee_note(values: dict) -> str:
    """A spill finding whose spills are (partly) in functions the kernel calls."""
    callee = values.get("callee")
    if not callee:
        return ""
    return (f" [{values['callee_stores']} bytes of the stores are in functions it calls that "
            f"ptxas did not inline, most in `{callee}`]")


def choices_note(values: dict) -> str:
    """The words a finding at a few-valued launch ends with."""
    choices, held = values.get("choices"), values.get("holds_for") or ()
    if not choices:
        return ""
    smem = len({d for _b, d in choices}) > 1

    def say(pairs) -> str:
        return ", ".join(f"{b} ({d} B)" if smem else str(b) for b, d in pairs)
    what = "block size (dynamic shared memory)" if smem else "block size"
    return f" [the {what} is one of {say(choices)}: this holds for {say(held)}]"


def unmeasured_note(values: dict) -> str:
    """The words an occupancy finding ends with when the kernel has no compiler figures (its
    unit did not compile, or no nvcc): its registers were taken as binding nothing."""
    if values.get("measured") is not False:
        return ""
    return (" [registers not measured (no compiler figures for this kernel): these figures "
            "hold only where registers do not limit it first]")


def checks_of(kind: str) -> dict[str, Callable]:
    return {code: fn for code, fn in CHECKS.items() if KINDS[code] == kind}


def max_registers(site: Site, blocks: int, limit: int = 255) -> int | None:
    """The most registers/thread (up to `limit`) with which `blocks` blocks fit at this site."""
    return occupancy.max_registers(site.arch, site.block, blocks, site.static_smem, site.dynamic_smem,
                                   limit=limit, **site.engine_inputs())


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


def kernel_noqa(k: Kernel) -> tuple[int, ...]:
    return tuple(sorted({k.span.line, k.decl_span.line}))


def launch_bounds_text(block: int, blocks: int) -> str:
    return f"__launch_bounds__({block}, {blocks})"


def bounds_fix(facts: Facts, site: Site, blocks: int) -> tuple[Edit, ...] | None:
    """Edits that give the kernel `__launch_bounds__(block, blocks)`, or None if unsafe to try."""
    kf, k = site.facts, site.facts.kernel
    if not kf.here or k.maxnreg is not None or site.basis == "best" or k.in_macro:
        return None
    sizes = [ln.block.total for ln in (*kf.launches, *kf.elsewhere)]
    if any(b is None or b > site.block for b in sizes):
        return None       # a bound of site.block would break another launch
    cut = facts.config.max_register_cut
    for arch, usages in kf.usages.items():      # the bound caps every instantiation, every arch
        cap = occupancy.launch_bounds_register_cap(arch, site.block, blocks)
        if cap is not None and any(u.registers - cap > u.registers * cut + 1e-9 for u in usages):
            return None   # it would cut another instantiation's registers past max-register-cut
        if cap is not None and arch != site.arch and any(u.registers > cap for u in usages):
            return None   # it would cap another arch checked, which the finding does not say
                          # (darknet: sm_90's `__launch_bounds__(512, 3)` took sm_80 55 -> 40)
    text = launch_bounds_text(site.block, blocks)
    lb = k.launch_bounds
    if lb is not None:
        if lb.span is None or lb.max_threads != site.block:
            return None
        return (Edit(text, lb.span),)
    at = k.decl_span.start
    return (Edit(text + " ", span_of(facts, at, at)),)


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
        "max_block": site.bounds.max_threads if site.bounds and site.bounds.max_threads else 1024,
        "choices": site.launch.choices if site.launch is not None else (),
        "sweep": site.launch is not None and site.launch.sweep,
        "measured": site.usage is not None,
    }


def _site_hit(code: str, site: Site, values: dict, variant: str = "message", fix=None) -> Hit:
    k = site.facts.kernel
    extra = kernel_noqa(k) if site.launch is None and site.facts.here else ()
    return Hit(code, site.span, values, variant, site.arch, k.qualname, fix, extra)


def _register_step(facts: Facts, site: Site, code: str, values: dict, regs: int, after) -> Hit:
    """OCC001/OCC010's finding for shedding registers down to `regs` (occupancy `after`), with
    the `__launch_bounds__` that makes ptxas do it as the (unsafe) fix."""
    values.update(target_regs=regs, shed=site.usage.registers - regs,
                  target_blocks=after.active_blocks, target_occupancy=Pct(after.occupancy))
    edits = bounds_fix(facts, site, after.active_blocks)
    bounds = launch_bounds_text(site.block, after.active_blocks)
    fix = FixSpec(edits, "unsafe", {**values, "bounds": bounds}) if edits else None
    return _site_hit(code, site, values, fix=fix)


@check("OCC001")
def register_limited_occupancy(facts: Facts) -> Iterator[Hit]:
    """Only where a register cap is a remedy: it reaches the target (at this launch's block size,
    or for a kernel with no constant launch at the block size needing the smallest cap) and
    removes at most `max-register-cut` of the registers. Without such a cap the registers are
    the design (register-tiled GEMMs whose shared memory binds next, 128+ live values)."""
    for site in facts.sites:
        if site.owner != "OCC001":
            continue
        have = site.usage.registers
        # the lowest cap that is a remedy: within max-register-cut, above the per-thread arrays
        floor = max(have - int(have * facts.config.max_register_cut + 1e-9), array_registers(site) + 1)
        values = _occ_values(site, facts)
        if site.basis == "best":        # no launch chose a size: the cap at any block size
            found = occupancy.largest_register_cap(
                site.arch, site.block, have - 1, site.static_smem, site.dynamic_smem,
                target=facts.config.min_occupancy, max_block_size=site.bounds.max_threads
                if site.bounds else None, **site.engine_inputs())
            if found is None or found[0] < floor:
                continue
            regs, step = found
            values.update(target_regs=regs, shed=have - regs, target_block=step.value,
                          target_blocks=step.result.active_blocks,
                          target_occupancy=Pct(step.result.occupancy))
            # no bound to write; the usual block sizes (powers of two) at which the cap reaches
            # the target, not only the one nearest the best (nvdiffrast launches at 64, the
            # best was 896, and "at 1024 threads/block (1 block/SM)" read as advice)
            sizes = [b for b in (32, 64, 128, 256, 512, 1024) if b <= values["max_block"] and
                     compute(site, regs=regs, block=b).occupancy >= facts.config.min_occupancy]
            if len(sizes) > 1:
                values["target_sizes"] = ", ".join(map(str, sizes[:-1])) + f" or {sizes[-1]}"
            yield _site_hit("OCC001", site, values, "best_sizes" if len(sizes) > 1 else "best")
            continue
        regs = max_registers(site, blocks_for(site.occ, facts.config.min_occupancy), have - 1)
        if regs is None or regs < floor:
            continue
        yield _register_step(facts, site, "OCC001", values, regs, compute(site, regs=regs))


@check("OCC002")
def shared_memory_limited_occupancy(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if site.owner != "OCC002":
            continue
        values = _occ_values(site, facts)
        per_thread = _per_thread(site, facts.config.min_occupancy, values)
        if per_thread is not None:
            yield per_thread
            continue
        need = blocks_for(site.occ, facts.config.min_occupancy)
        total_now = site.static_smem + site.dynamic_smem
        # the largest static + dynamic bytes/block that fit `need` blocks (all of it as dynamic)
        fit = occupancy.available_dynamic_smem(
            site.arch, site.block, need, site.usage.registers if site.usage else 0,
            carveout=site.carveout)
        best = site.basis == "best"
        if fit is None:
            yield _site_hit("OCC002", site, values, "best_no_step" if best else "no_step")
            continue
        values.update(target_smem=fit, target_blocks=need,
                      target_occupancy=Pct(min(1.0, need * site.occ.warps_per_block / site.occ.max_warps)),
                      shed_smem=total_now - fit, carveout=site.carveout)
        # the default carveout is already the largest: raising it is advice only where the
        # kernel asks for less (cudaFuncAttributePreferredSharedMemoryCarveout)
        lowered = site.carveout is not None and site.carveout < 100
        yield _site_hit("OCC002", site, values, "best" if best else "carveout" if lowered else "message")


def _per_thread(site: Site, target: float, values: dict) -> Hit | None:
    """OCC002's finding for shared memory that is per-thread storage (`facts.per_thread_bytes`)
    capping occupancy below the target at every block size: the remedy is fewer bytes per
    thread (cuda-samples' generateTriangles2 keeps 144 instead of generateTriangles' 288), not
    a smaller tile or another block size. None when it is not, or a block size helps."""
    found = per_thread_bytes(site) if site.dynamic_smem == 0 else None
    if found is None:
        return None
    each, fixed = found
    cap, _block = per_thread_cap(site, each, fixed)
    if cap >= target:
        return None
    values.update(each=each, cap=Pct(cap), array=", ".join(
        f"`{d.name}`" for d in site.facts.shared if not d.extern and d.dim_spans))
    low, high = 0, each - 1          # the most bytes per thread with which a block size reaches it
    if per_thread_cap(site, low, fixed)[0] < target:
        return _site_hit("OCC002", site, values, "per_thread_no_step")
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if per_thread_cap(site, mid, fixed)[0] >= target else (low, mid - 1)
    reached, block = per_thread_cap(site, low, fixed)
    values.update(target_each=low, shed_each=each - low, target_occupancy=Pct(reached),
                  target_block=block)
    return _site_hit("OCC002", site, values, "per_thread")


@check("OCC003")
def block_size_limited_occupancy(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if site.owner != "OCC003":
            continue
        values = _occ_values(site, facts)
        best = occupancy.nearest_block_size(
            site.arch, site.block, site.regs, site.static_smem, site.dynamic_smem,
            target=facts.config.min_occupancy,
            max_block_size=site.bounds.max_threads if site.bounds else None, **site.engine_inputs())
        if best is None:
            yield _site_hit("OCC003", site, values, "no_step")
            continue
        values.update(target_block=best.value, target_occupancy=Pct(best.result.occupancy),
                      target_blocks=best.result.active_blocks)
        tied = written_for(site.facts, site.launch, site.block) if site.launch else None
        if tied:
            values["constant"] = tied
        yield _site_hit("OCC003", site, values, "tied" if tied else "message")


@check("OCC010")
def register_cliff(facts: Facts) -> Iterator[Hit]:
    for site in facts.sites:
        if site.usage is None or not site.launches or site.owner or "registers" not in site.occ.limiters:
            continue
        if site.basis == "best" or (site.launch is None and site.facts.unknown_dynamic_smem):
            continue        # a cliff at a size no launch chose is no cliff; shared memory not
                            # known may limit it first
        if (site.launch is not None and serial(site.launch)) or intent_met(site):
            continue        # one block; or the occupancy its bounds / __maxnreg__ asked for
        gain = occupancy.cliffs(site.arch, site.block, site.regs, site.static_smem, site.dynamic_smem,
                                **site.engine_inputs()).registers.gain
        if gain is None or not 0 < gain.delta <= facts.config.cliff_margin:
            continue
        if on_allocation_step(site.arch, site.regs):
            continue        # every allocated register is used: the next block needs a rewrite
        if gain.value <= array_registers(site):
            continue        # its per-thread arrays alone fill the cap: capping spills them
        yield _register_step(facts, site, "OCC010", _occ_values(site, facts), gain.value, gain.result)


def on_allocation_step(arch: str, regs: int) -> bool:
    """`regs`/thread fills its allocation exactly (48 on an 8-register granule): shedding fewer
    than a whole granule frees nothing, so the count is on a step, not near a cliff."""
    from occlint import gpus
    return regs * 32 % gpus.arch(arch).reg_alloc_granularity == 0


def _instance_bounds(kf: KernelFacts, u: Usage) -> LaunchBounds | None:
    """The kernel's `__launch_bounds__` on the usage's arch, with this instantiation's template
    arguments bound."""
    origin, k = arch_kernel(kf, u.arch) or (kf.origin, kf.kernel)
    if not (k.template_params and u.template_args):
        return k.launch_bounds
    bounds, _ = specialize_kernel(origin, k, usage_args(u))
    return bounds


def _bounds_site(kf, arch: str, u, lb, block: int) -> Site:
    """The kernel at `block` threads under bounds `lb` (no launch, no dynamic shared memory)."""
    return Site(kf, arch, block, 0, None, u, u.static_smem, lb, kf.kernel.span, "")


def _recursive_callee(kf, facts: Facts, u) -> bool:
    """Are `u`'s spills those of a function it calls that calls itself (as the kernel's file
    or this file defines it)?"""
    from occlint.source.kernels import recursive
    texts = {facts.text, kf.origin.text if kf.origin is not None else ""}
    return bool(u.spilling_callee) and any(recursive(t, u.spilling_callee) for t in texts if t)


def _spill_hits(facts: Facts, capped: bool, code: str) -> Iterator[Hit]:
    """OCC012 when a register cap (the cubin's, else the source's) binds the spilling
    instantiation; OCC011 otherwise."""
    for kf in facts.kernels:
        if not kf.here:
            continue
        for arch in facts.archs:
            for u in kf.usages.get(arch, []):
                if not (u.all_spill_stores or u.all_spill_loads):
                    continue
                if not (u.spill_stores or u.spill_loads) and _recursive_callee(kf, facts, u):
                    continue        # the registers each recursive call saves: the design's
                k = (arch_kernel(kf, arch) or (None, kf.kernel))[1]
                eff = effective_bounds(k, _instance_bounds(kf, u), u, arch, facts.global_cap)
                # a cap binds only where ptxas filled it (within one 8-register granule): apex's
                # group_norm spills at 32 registers under a 128-register cap, its own choice
                binds = eff.cause is not None and (eff.cap is None or u.registers + 8 > eff.cap)
                if binds != capped:
                    continue
                values = {"kernel": instance_label(kf.kernel, u.template_args), "arch": arch,
                          "regs": u.registers, "stores": u.all_spill_stores,
                          "loads": u.all_spill_loads, "stack": u.stack_frame}
                if u.callee_spill_stores or u.callee_spill_loads:
                    values.update(callee=u.spilling_callee, callee_stores=u.callee_spill_stores)
                # no cap binds and ptxas used every register a thread can have: there is no
                # cap to raise, only live state to reduce
                variant = "at_max" if not binds and u.registers >= MAX_THREAD_REGISTERS else "message"
                if binds:
                    values.update(cap=eff.text)
                    lb = eff.launch_bounds()
                    if eff.cause == "bounds" and lb.max_threads and lb.max_threads > 32 and \
                            not (lb.min_blocks and lb.min_blocks > 1):
                        # the block size alone sets the cap (ccminer's `__launch_bounds__(1024,
                        # 1)`): no looser cap exists for it, a smaller block gives more
                        half = lb.max_threads // 2 // 32 * 32 or 32
                        regs = max_registers(_bounds_site(kf, arch, u, lb, half), 1) or 0
                        if regs > u.registers:
                            values.update(threads=lb.max_threads, half=half, half_regs=regs)
                            variant = "block"
                    if eff.cause == "bounds" and lb.min_blocks and lb.min_blocks > 1:
                        site = _bounds_site(kf, arch, u, lb, lb.max_threads)
                        # the next step down in blocks/SM that really gives more registers
                        for looser in range(lb.min_blocks - 1, 0, -1):
                            regs = max_registers(site, looser) or 0
                            if regs > u.registers:
                                values.update(looser=launch_bounds_text(lb.max_threads, looser),
                                              looser_regs=regs)
                                variant = "looser"
                                break
                yield Hit(code, kf.kernel.span, values, variant, arch, kf.kernel.qualname,
                          None, kernel_noqa(kf.kernel))


MAX_THREAD_REGISTERS = 255      # ptxas never gives a thread more, on any arch


@check("OCC011")
def register_spills(facts: Facts) -> Iterator[Hit]:
    yield from _spill_hits(facts, False, "OCC011")


@check("OCC012")
def launch_bounds_spills(facts: Facts) -> Iterator[Hit]:
    yield from _spill_hits(facts, True, "OCC012")


@check("OCC020")
def oversized_static_shared_memory(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        if not kf.here:
            continue
        reported = set()
        for decl, largest in kf.oversized:
            reported.add(decl.name)
            values = {"kernel": kf.label, "array": decl.name, "elements": decl.dims[0],
                      "bytes": decl.size_bytes, "block": largest, "used": largest,
                      "wasted": decl.size_bytes - largest * (decl.element_size or 0)}
            if all(i.thread_derived or i.constant is not None for i in decl.indices):
                yield Hit("OCC020", decl.span, values, "message", None, kf.kernel.qualname,
                          _extern_fix(facts, kf, decl, largest), ())
                continue
            # a loop bound (`k < 256`) or constant arithmetic (`255 - threadIdx.x`) limits the
            # subscripts: the array is larger than any element the kernel reaches
            yield Hit("OCC020", decl.span, values, "bounded", None, kf.kernel.qualname,
                      _shrink_fix(facts, decl, largest), ())
        for site in kf.sites:
            if site.owner != "OCC020":
                continue
            decl = max((d for d in kf.shared if not d.extern and d.size_bytes), key=lambda d: d.size_bytes)
            if decl.name in reported:
                continue
            reported.add(decl.name)
            values = {**_occ_values(site, facts), "array": decl.name, "bytes": decl.size_bytes}
            yield Hit("OCC020", decl.span, values, "occupancy", site.arch, kf.kernel.qualname, None, ())


def _shrink_fix(facts: Facts, decl: SharedDecl, used: int) -> FixSpec | None:
    """`[1024]` -> `[256]` where the size is a literal (unsafe: code elsewhere may rely on it)."""
    if len(decl.dim_spans) != 1:
        return None
    span = decl.dim_spans[0]
    if not is_literal(facts.text[span.start:span.end]):
        return None
    return FixSpec((Edit(str(used), span),), "unsafe", {"array": decl.name, "used": used}, "shrink")


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
def static_shared_memory_over_limit(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        if kf.static_over_limit is None or not kf.here:
            continue
        ptxas = max((u.static_smem for us in kf.usages.values() for u in us), default=0)
        total = max(static_total(kf), ptxas)
        decl = kf.static_over_limit
        yield Hit("OCC021", decl.span, {"kernel": kf.label, "array": decl.name, "bytes": total,
                                        "limit": STATIC_SMEM_LIMIT}, "message", None,
                  kf.kernel.qualname, None, ())


@check("OCC022")
def dynamic_shared_memory_without_opt_in(facts: Facts) -> Iterator[Hit]:
    seen = set()
    for site in facts.sites:
        launch = site.launch
        if not site.needs_opt_in or site.unlaunchable or site.exceeds_bounds:
            continue
        total = site.static_smem + site.dynamic_smem
        k = site.facts.kernel
        opted = [a for a in attributes_for(facts, k) if a.attribute == "MaxDynamicSharedMemorySize"]
        key = (launch.span.start, site.block, site.dynamic_smem)
        if key in seen:
            continue
        seen.add(key)
        values = {"kernel": site.label, "dynamic_smem": site.dynamic_smem, "static_smem": site.static_smem,
                  "smem": total, "limit": STATIC_SMEM_LIMIT, "block": site.block,
                  "opted": max((a.value for a in opted), default=0), "choices": launch.choices,
                  "sweep": launch.sweep}
        at = line_start(facts.text, launch.span.start)
        call = (f"{indentation(facts.text, launch.span.start)}cudaFuncSetAttribute({callee_text(launch)}, "
                f"cudaFuncAttributeMaxDynamicSharedMemorySize, {site.dynamic_smem});\n")
        fix = FixSpec((Edit(call, span_of(facts, at, at)),), "safe", values)
        if opted or launch.choices or launch.bindings or \
                not own_statement(facts.text, launch.span.start, launch.span.end):
            fix = None    # an existing call to raise, several sizes, or no line of its own to add
        yield Hit("OCC022", launch_arg(launch, 2), values, "too_small" if opted else "message",
                  None, k.qualname, fix, ())


def own_statement(text: str, start: int, end: int) -> bool:
    """Is text[start:end] a whole statement on lines of its own, inside a `{}` block, so that a
    statement inserted on the line before it runs exactly when it does? Not the body of a braceless
    `if`/`for`/`while`/`else`/`do` (the insert would run unconditionally or once), not part of a
    comma expression, not inside a macro body (a line without its `\\` would end the macro)."""
    at = line_start(text, start)
    if text[at:start].strip() or not text[end:].lstrip(" \t").startswith(";"):
        return False
    prev = text[:at].rstrip()
    if text[:at].rstrip("\r\n").endswith("\\"):
        return False         # a continued line: a macro body
    while True:          # skip comments and preprocessor lines
        line = prev[line_start(prev, len(prev)):]
        if line.lstrip().startswith(("#", "//")):
            prev = prev[:len(prev) - len(line)].rstrip()
        elif prev.endswith("*/") and "/*" in prev:
            prev = prev[:prev.rfind("/*")].rstrip()
        else:
            break
    if prev.endswith("\\"):
        return False
    return not prev or prev[-1] in ";{}" or (prev[-1] == ":" and not prev.endswith("::"))


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
            if launch.block.total != 1024 or launch.runtime_block or serial(launch) or \
                    size_not_chosen(launch):
                continue
            sites = by_launch.get(launch.span.start, [])
            if any(s.unlaunchable or s.exceeds_bounds for s in sites):
                continue
            bounds = _bounds_at(kf, launch)
            if bounds is not None and bounds.max_threads == 1024:
                continue    # declared for 1024 threads: ptxas keeps it launchable, by design
            tied = written_for(kf, launch, 1024)     # no "with the grid adjusted" alone
            measured = [s for s in sites if s.usage is not None and s.occ is not None]
            if measured and len(measured) == len(sites):
                # nvcc's figures: what 1024 threads reach against the best smaller block
                size = _best_smaller_block(measured)
                if size is None:
                    continue    # no smaller block does better for these registers
                gap, site = max(((compute(s, block=size).occupancy - s.occ.occupancy, s)
                                 for s in measured), key=lambda g: g[0])
                occ = compute(site, block=size)
                values = {"kernel": instance_label(kf.kernel, launch.template_args), "arch": site.arch,
                          "regs": site.usage.registers, "occupancy": Pct(site.occ.occupancy),
                          "blocks": site.occ.active_blocks,
                          "limiter": limiter_words(primary_limiter(site.occ, True)),
                          "best_block": size, "best_occupancy": Pct(occ.occupancy)}
                if tied:
                    values["constant"] = tied
                yield Hit("OCC030", launch_arg(launch, 1), values, "tied" if tied else "measured",
                          None, kf.kernel.qualname, None, ())
                continue
            if _never_instantiated(facts, kf):
                continue    # nvcc compiled the file and never this template: no such launch
            worst = min(facts.archs, key=lambda a: gpus.arch(a).max_threads_per_sm)
            limits = gpus.arch(worst)
            cap = Pct(limits.max_threads_per_sm // 1024 * 1024 / limits.max_threads_per_sm)
            if cap >= 1 and (_fits_1024(kf, facts.archs) or
                             all(facts.compile_failed(a) for a in facts.archs)):
                continue    # its registers are known and launchable at 1024 (the shared memory
                            # alone is unknown), or nvcc failed on the file: the hypothetical
                            # register limit says nothing
            values = {"kernel": instance_label(kf.kernel, launch.template_args), "arch": worst, "cap": cap,
                      "max_regs": limits.regs_per_block // 1024}
            if tied:
                values["constant"] = tied
            yield Hit("OCC030", launch_arg(launch, 1), values,
                      "tied_limit" if tied else "capped" if cap < 1 else "message", None,
                      kf.kernel.qualname, None, ())


def _never_instantiated(facts: Facts, kf) -> bool:
    """A kernel template of this file that nvcc, compiling the file (another of its kernels
    has figures), instantiated on no target arch (OneFlow's softmax: a grad kernel no code of
    the unit calls): its launches do not happen in this unit."""
    return bool(kf.here and kf.kernel.template_params and
                not any(kf.usages.get(a) for a in facts.archs) and
                any(other.usages.get(a) for other in facts.kernels for a in facts.archs))


def _fits_1024(kf, archs) -> bool:
    """nvcc measured every instantiation on every target arch, each within the registers a
    1024-thread block can launch with."""
    from occlint import gpus
    return all(kf.usages.get(a) and all(u.registers <= gpus.arch(a).regs_per_block // 1024
                                        for u in kf.usages[a]) for a in archs)


def _best_smaller_block(sites: list[Site]) -> int | None:
    """The block size below 1024 with the most occupancy summed over the archs (a power of two
    first, then the largest, on a tie), or None when none beats 1024 threads."""
    now = round(sum(s.occ.occupancy for s in sites), 9)
    best, best_key = None, None
    for size in range(992, 31, -32):
        occs = [compute(s, block=size) for s in sites]
        if not all(o.active_blocks for o in occs):
            continue
        key = (round(sum(o.occupancy for o in occs), 9), size & (size - 1) == 0, size)
        if best_key is None or key > best_key:
            best, best_key = size, key
    return best if best_key is not None and best_key[0] > now else None


def _bounds_at(kf: KernelFacts, launch):
    """The `__launch_bounds__` of the instantiation a launch runs (specialized), else the
    kernel's as written."""
    if kf.origin is not None:
        return specialize_kernel(kf.origin, kf.kernel, launch_args(launch))[0]
    return kf.kernel.launch_bounds


@check("OCC031")
def block_size_not_warp_multiple(facts: Facts) -> Iterator[Hit]:
    for kf in facts.kernels:
        for launch in kf.launches:
            total = launch.block.total
            if total is None or total % 32 == 0 or launch.runtime_block or total > 1024 or \
                    serial(launch) or size_not_chosen(launch):
                continue
            if total == 1 and not kf.kernel.thread_indexed:
                continue    # one serial walker per block, by design: 32 would each redo its work
            up = (total + 31) // 32 * 32
            bounds = _bounds_at(kf, launch)
            if bounds is not None and bounds.max_threads is not None and bounds.max_threads < up:
                continue    # declared for fewer threads than a warp (xmrig's execute_vm at
                            # `__launch_bounds__(16, 16)`): rounding up would not launch
            values = {"kernel": instance_label(kf.kernel, launch.template_args), "block": total,
                      "rounded": up, "warps": up // 32, "idle": up - total}
            fix = None
            arg = launch_arg(launch, 1)
            if len(launch.arg_spans) > 1 and is_literal(facts.text[arg.start:arg.end]):
                # unsafe: threads past the old count run the kernel body (they may write past a
                # `__shared__ float tile[100]`) and every block's data range shifts. A grid
                # written as a division by the block (`n / 16`) is scaled to the same threads;
                # else the title says the extra threads need a guard (Rodinia's huffman)
                grid_span = launch.arg_spans[0]
                grid = facts.text[grid_span.start:grid_span.end]
                scaled = _scaled_grid(grid, total, up)
                more = {**values, "grid": grid.strip(), "scaled": scaled}
                fix = FixSpec((Edit(scaled, grid_span), Edit(str(up), arg)), "unsafe", more,
                              "scaled") if scaled is not None else \
                    FixSpec((Edit(str(up), arg),), "unsafe", more, "unscaled")
            yield Hit("OCC031", arg, values, "message", None, kf.kernel.qualname, fix, ())


@check("OCC032")
def launch_exceeds_launch_bounds(facts: Facts) -> Iterator[Hit]:
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
            fix = _bounds_launch_fix(facts, launch, site.block, site.bounds.max_threads, values)
        yield Hit("OCC032", arg, values, "message", None, site.facts.kernel.qualname, fix, ())
    # launches whose block size is known but whose smem is not still exceed their bounds
    for kf in facts.kernels:
        lb = kf.kernel.launch_bounds
        for launch in kf.launches:
            if launch.span.start in seen or launch.block.total is None or launch.dynamic_smem is not None:
                continue
            bound = specialize_kernel(kf.origin, kf.kernel, launch_args(launch))[0] or lb
            if bound and bound.max_threads and launch.block.total > bound.max_threads:
                seen.add(launch.span.start)
                values = {"kernel": instance_label(kf.kernel, launch.template_args), "block": launch.block.total,
                          "bound": bound.max_threads}
                yield Hit("OCC032", launch_arg(launch, 1), values, "message", None,
                          kf.kernel.qualname, None, ())


def _bounds_launch_fix(facts: Facts, launch: Launch, block: int, bound: int, values: dict) -> FixSpec:
    """Block `block` -> `bound`, and the grid scaled to cover the same threads where it is
    written so that this is plain: a literal (`8` -> `16`) or a division by the block size
    (`n / 1024`, `(n + 1023) / 1024`, `DIV_UP(n, 1024)` -> 256). Otherwise the title says so."""
    edits = [Edit(str(bound), launch.arg_spans[1])]
    grid_span = launch.arg_spans[0]
    grid = facts.text[grid_span.start:grid_span.end]
    scaled = _scaled_grid(grid, block, bound)
    if scaled is not None:
        edits.insert(0, Edit(scaled, grid_span))
        return FixSpec(tuple(edits), "unsafe", {**values, "grid": grid, "scaled": scaled}, "scaled")
    return FixSpec(tuple(edits), "unsafe", {**values, "grid": grid.strip()}, "unscaled")


def _scaled_grid(grid: str, block: int, bound: int) -> str | None:
    if is_literal(grid):
        count = int(re.sub(r"[uU]", "", grid))
        return str(count * block // bound) if count * block % bound == 0 else None
    number = rf"(?<![\w.]){block}[uU]?(?![\w.])"
    divisor = re.compile(rf"(/\s*){number}|(\b\w*(?:div|DIV|Div|ceil|CEIL|Ceil|up|UP|Up)\w*\s*\(.*,\s*){number}(\s*\))")
    if not divisor.search(grid):
        return None

    def swap(m: re.Match) -> str:
        if m.group(1) is not None:
            return f"{m.group(1)}{bound}"
        return f"{m.group(2)}{bound}{m.group(3)}"
    out = divisor.sub(swap, grid)
    # the round-up term of `(n + 1023) / 1024`
    return re.sub(rf"(\+\s*){block - 1}(?![\w.])", lambda m: f"{m.group(1)}{bound - 1}", out)


@check("OCC033")
def small_grid(facts: Facts) -> Iterator[Hit]:
    by_launch = _launch_sites(facts)
    for kf in facts.kernels:
        for launch in kf.launches:
            grid = launch.grid.total
            if grid is None or grid <= 1 or grid >= facts.sm_count:
                continue
            if not kf.kernel.grid_stride:
                continue    # the grid is the problem's decomposition, not a knob (no gridDim)
            if _feeds_one_block(facts, launch, grid):
                continue
            sites = [s for s in by_launch.get(launch.span.start, []) if s.occ and s.occ.active_blocks]
            per_sm = sites[0].occ.active_blocks if sites else 1     # (unknown: not said)
            values = {"kernel": instance_label(kf.kernel, launch.template_args), "grid": grid,
                      "sms": facts.sm_count, "gpu": facts.gpu_name, "idle": facts.sm_count - grid,
                      "blocks_per_sm": per_sm, "suggested": per_sm * facts.sm_count}
            if sites:           # blocks/SM from an occupancy without registers: say so
                values["measured"] = sites[0].usage is not None
            # no occupancy at this launch (its dynamic shared memory or block is not known):
            # no blocks/SM to multiply (rasterize_coarse.cu said "1 x 132 = 132")
            yield Hit("OCC033", launch_arg(launch, 0), values, "message" if sites else "no_per_sm",
                      None, kf.kernel.qualname, None, ())


def _feeds_one_block(facts: Facts, launch, grid: int) -> bool:
    """A later launch of the same function is one block of `grid` threads: a two-pass
    reduction whose second pass takes one partial per thread (NVIDIA's longstaff_schwartz:
    `partial<<<NT, NT>>>` then `final<<<1, NT>>>`), so the grid is bound to that block size."""
    return any(other.function == launch.function and other.span.start > launch.span.start and
               other.grid.total == 1 and other.block.total == grid
               for other in facts.source.launches)


@check("OCC034")
def unlaunchable_configuration(facts: Facts) -> Iterator[Hit]:
    seen = set()
    for site in facts.sites:
        if not site.unlaunchable or site.exceeds_bounds or site.launch is None:
            continue
        key = (site.launch.span.start, site.unlaunchable, site.block, site.dynamic_smem, site.label)
        if key in seen:
            continue
        seen.add(key)
        values = {"kernel": site.label, "arch": site.arch, "block": site.block,
                  "regs": site.usage.registers if site.usage else None,
                  "smem": site.static_smem + site.dynamic_smem,
                  "dynamic_smem": site.dynamic_smem, "choices": site.launch.choices,
                  "sweep": site.launch.sweep}
        limiter = site.unlaunchable
        if limiter == "threads":
            dims = site.launch.block
            values["dims"] = "x".join(str(d) for d in (dims.x, dims.y, dims.z))
            variant, arch = "threads", None
        elif limiter == "registers":
            values["limit"] = 65536
            values["max_regs"] = max_registers(site, 1) or 0
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


@check("OCC040", kind="build")
def global_maxrregcount(facts: BuildFacts) -> Iterator[Hit]:
    """`-maxrregcount` set for a whole build: every flag a build file passes to nvcc."""
    for hit in facts.flags:
        yield Hit("OCC040", hit.span, {"flag": hit.flag, "regs": hit.value, "kind": hit.kind,
                                       "file": os.path.basename(facts.path)})


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
                now = lock.site_occupancy(s for s in kf.sites if s.usage is u)
                for r in lock.compare(locked, [lock.entry(u, occupancy=now.get(lock.usage_key(u), ()))]):
                    values = {"kernel": instance_label(kf.kernel, u.template_args), "arch": arch,
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
    archs: dict[str, list[str]] = {}         # one error, every arch it failed for, in order
    units: dict[str, list[str]] = {}         # and every unit whose compile it was, in order
    hits: list[Hit] = []
    for err in facts.compile_errors:
        if err.arch and err.arch not in archs.setdefault(err.message.strip(), []):
            archs[err.message.strip()].append(err.arch)
        if err.unit and err.unit not in units.setdefault(err.message.strip(), []):
            units[err.message.strip()].append(err.unit)
    for err in facts.compile_errors:
        if over and "shared data" in err.message:
            continue    # OCC021 already names this cause at the declaration
        if err.line:
            lines = split_lines(facts.text, keepends=True)
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
        failed = archs.get(err.message.strip()) or ([err.arch] if err.arch else [])
        every = len(failed) > 1 and set(facts.archs) <= set(failed)
        values = {"message": err.message.strip(), "compiler": err.compiler,
                  "arch": f"every target arch ({len(failed)})" if every else ", ".join(failed)}
        values["units"] = _units_note(units.get(err.message.strip(), []), facts.path)
        hits.append(Hit("OCC900", span, values, "with_arch" if failed else "message",
                        failed[0] if len(failed) == 1 else None, err.kernel, None, ()))
    if len(hits) > MAX_COMPILE_ERRORS:      # a cascade (how-to-optim's include-less PyTorch
        more = len(hits) - MAX_COMPILE_ERRORS       # excerpt: 51): the first ones, and a count
        hits = hits[:MAX_COMPILE_ERRORS]
        hits[-1].values["message"] += (f" (and {more} more nvcc error{'s' if more > 1 else ''}"
                                       " in this file; the first ones often cause the rest)")
    yield from hits


MAX_COMPILE_ERRORS = 10         # OCC900 findings per file


def _units_note(units: list[str], path: str) -> str:
    """Which units' compiles an error of a header (`path`) stood in, when they are not the file
    itself (bitsandbytes' compat.cuh: one `cublasLt.h` error for 5 units, none named)."""
    from occlint.commands.summary import plural
    real = os.path.realpath(path)
    others = [u for u in units if os.path.realpath(u) != real]
    if not others:
        return ""
    names = ", ".join(os.path.basename(u) for u in others[:4])
    more = f" and {len(others) - 4} more" if len(others) > 4 else ""
    if len(others) < len(units):        # a unit that another unit includes (llm.c's test_*.cu)
        return f" (also compiling {names}{more})"
    return f" (compiling {plural(len(others), 'unit')}: {names}{more})"
