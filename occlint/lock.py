"""The resource lockfile `occlint.lock`: per kernel instantiation and arch, what nvcc gave it.

`occlint lock` records registers, spills, static shared memory and the occupancy at each launch
configuration found in the sources; `check --lock occlint.lock` compares and reports OCC050 when
a kernel gains registers, spills or shared memory, or loses occupancy. The file is JSON, sorted
and stable, so a compiler upgrade shows up as a small, readable diff.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from occlint import jsondoc, link
from occlint.errors import OcclintError
from occlint.model import Launch, Usage
from occlint.record import dataclass

VERSION = 1
FILE_NAME = "occlint.lock"
# resource field in the lock -> the words the OCC050 message uses for it
RESOURCES = {
    "registers": "registers",
    "spill_bytes": "bytes of spills",
    "static_smem": "bytes of static shared memory",
}


def entry_key(entry: dict) -> tuple[str, tuple[str, ...], str]:
    return link.lock_key(entry["kernel"], entry.get("template_args", ()), entry["arch"])


def usage_key(usage: Usage) -> tuple[str, tuple[str, ...], str]:
    return link.lock_key(usage.kernel, usage.template_args, usage.arch)


def site_occupancy(sites) -> dict[tuple, set[tuple[int, int, float]]]:
    """usage key -> {(block, dynamic smem, occupancy)} at the launches of these facts.Sites: the
    occupancy the rules computed, with every input they use (opt-in, carveout, barriers)."""
    out: dict[tuple, set[tuple[int, int, float]]] = {}
    for site in sites:
        if site.launch is not None and site.usage is not None and site.occ is not None:
            out.setdefault(usage_key(site.usage), set()).add(
                (site.block, site.dynamic_smem, round(site.occ.occupancy, 4)))
    return out


def entry(usage: Usage, launches: Iterable[Launch] | link.Launches = (), *,
          occupancy: Iterable[tuple[int, int, float]] | None = None) -> dict:
    """One lock entry: the usage figures and the occupancy at each distinct launch configuration."""
    from occlint.occupancy import compute

    if occupancy is not None:            # from the rules' sites (`site_occupancy`): the same inputs
        return _entry(usage, [{"block": b, "dynamic_smem": s, "occupancy": o}
                              for b, s, o in sorted(occupancy)])
    configs = set()
    index = launches if isinstance(launches, link.Launches) else link.Launches(launches)
    for launch in index.of_usage(usage):
        block, smem = launch.block.total, launch.dynamic_smem
        if block and smem is not None:
            configs.add((block, smem))
    occupancy = []
    for block, smem in sorted(configs):
        try:
            occ = compute(usage.arch, block, usage.registers, usage.static_smem, smem,
                          barriers=max(usage.barriers, 1)).occupancy
        except OcclintError:
            continue                      # a launch the arch cannot run: other rules say so
        occupancy.append({"block": block, "dynamic_smem": smem, "occupancy": round(occ, 4)})
    return _entry(usage, occupancy)


def _entry(usage: Usage, occupancy: list[dict]) -> dict:
    return {
        "kernel": usage.kernel,
        "template_args": list(usage.template_args),
        "arch": usage.arch,
        "registers": usage.registers,
        "spill_bytes": usage.spill_stores + usage.spill_loads,
        "static_smem": usage.static_smem,
        "launches": occupancy,
    }


def build(usages: Iterable[Usage], launches: Iterable[Launch] = (), *,
          occupancy: dict[tuple, set] | None = None) -> dict:
    """The lockfile document; with `occupancy` (from `site_occupancy`), launch figures come from
    the rules' sites instead of being recomputed from `launches`."""
    index = link.Launches(launches)
    entries = {usage_key(u): entry(u, index) if occupancy is None
               else entry(u, occupancy=occupancy.get(usage_key(u), ())) for u in usages}
    return {"version": VERSION, "kernels": [entries[k] for k in sorted(entries)]}


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(usages: Iterable[Usage], launches: Iterable[Launch], file: str, *,
          occupancy: dict[tuple, set] | None = None) -> int:
    doc = build(usages, launches, occupancy=occupancy)
    with open(file, "w", encoding="utf-8") as fh:
        fh.write(dumps(doc))
    return len(doc["kernels"])


def load(file: str) -> dict[tuple, dict]:
    """Lock entries by key; a missing or malformed lockfile is an OcclintError."""
    def parse(doc: dict) -> dict[tuple, dict]:
        entries = {}
        for e in doc["kernels"]:
            for name in ("registers", *RESOURCES):
                int(e[name])
            entries[entry_key(e)] = e
        return entries

    return jsondoc.load(file, version=VERSION, kind="lockfile", missing=f"lockfile not found: {file} (write one with `occlint lock`)", parse=parse)


@dataclass(frozen=True)
class Regression:
    """One resource that grew (or occupancy that fell) for a kernel instantiation on an arch."""

    kernel: str
    template_args: tuple[str, ...]
    arch: str
    resource: str            # a RESOURCES key, or "occupancy"
    old: int | float
    new: int | float
    old_occupancy: float | None = None   # at the launch configuration that lost the most
    new_occupancy: float | None = None
    block: int | None = None


def _worst_drop(old: dict, new: dict) -> tuple[float, float, int] | None:
    before = {(x["block"], x["dynamic_smem"]): x["occupancy"] for x in old.get("launches", ())}
    drops = [
        (before[k] - x["occupancy"], before[k], x["occupancy"], x["block"])
        for x in new.get("launches", ()) if (k := (x["block"], x["dynamic_smem"])) in before
    ]
    if not drops:
        return None
    worst = max(drops)
    return worst[1], worst[2], worst[3]


def compare(old: dict[tuple, dict], new: Iterable[dict]) -> list[Regression]:
    """Regressions of `new` entries against the locked ones (kernels absent from the lock pass)."""
    found = []
    for e in new:
        k = entry_key(e)
        if k not in old:
            continue
        before = old[k]
        drop = _worst_drop(before, e)
        occ = dict(old_occupancy=drop[0], new_occupancy=drop[1], block=drop[2]) if drop else {}
        grew = [r for r in RESOURCES if int(e[r]) > int(before[r])]
        for r in grew:
            found.append(Regression(e["kernel"], k[1], e["arch"], r, int(before[r]), int(e[r]), **occ))
        if not grew and drop and drop[1] < drop[0]:
            found.append(Regression(e["kernel"], k[1], e["arch"], "occupancy", drop[0], drop[1], **occ))
    return found


def with_lock(config, file: str | None):
    """`config` carrying the entries of lockfile `file` (OCC050 reads config.extra["lock"])."""
    if not file:
        return config
    from occlint import record

    return record.replace(config, extra={**config.extra, "lock": load(file)})
