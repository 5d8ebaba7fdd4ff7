"""Put Nsight Compute's figures for each profiled launch (run.sh's CSV) beside what
`occlint kernels --json --arch sm_90` says at the launch sites of that kernel in that sample.

    (cd cuda-samples && occlint kernels --json --arch sm_90 Samples > kernels.json)
    python tests/harness/gpu_launches/compare.py ncu.csv kernels.json

A profiled kernel is matched to the sample's launch sites of its name (last `::` part, no
template arguments) that have an occupancy figure at Nsight's block size and dynamic shared
memory. Prints one line per profiled kernel and the totals; exits 1 when a matched launch's
theoretical occupancy or static shared memory differs, or when a site with a figure exists but
none at Nsight's configuration.
"""

from __future__ import annotations

import collections
import csv
import json
import re
import sys


def profiles(path: str) -> list[dict]:
    out: dict = {}
    sample, header = None, None
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        if line.startswith("=== "):
            sample = line[4:].strip()
            continue
        row = next(csv.reader([line]))
        if row and row[0] == "ID":
            header = row
            continue
        if header is None or len(row) < header.index("Metric Value") + 1:
            continue                    # (a row ends after its value unless a rule fired)
        d = dict(zip(header, row, strict=False))
        got = out.setdefault((sample, d["ID"]), {"sample": sample, "kernel": d["Kernel Name"]})
        got[d["Metric Name"]] = d["Metric Value"]
    return list(out.values())


def base_name(name: str) -> str:
    name = re.sub(r"^void ", "", re.sub(r"\(.*$", "", name))
    depth, out = 0, []
    for c in name:
        depth += (c == "<") - (c == ">")
        if depth == 0 and c not in "<>":
            out.append(c)
    return "".join(out).split("::")[-1].strip()


def number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def main() -> int:
    with open(sys.argv[2], encoding="utf-8") as fh:
        recs = json.load(fh)
    profs = profiles(sys.argv[1])
    launches = [r for r in recs if r["kind"] == "launch"]
    totals: collections.Counter = collections.Counter()
    bad = 0
    for p in profs:
        sample, name = p["sample"], base_name(p["kernel"])
        block, dyn = number(p.get("Block Size", "")), number(p.get("Dynamic Shared Memory Per Block", ""))
        regs = number(p.get("Registers Per Thread", ""))
        smem = number(p.get("Static Shared Memory Per Block", ""))
        occ = number(p.get("Theoretical Occupancy", ""))
        if None in (block, dyn, regs, smem, occ):
            totals["not measured by Nsight (the kernel failed)"] += 1
            continue
        sites = [r for r in launches if f"/{sample}/" in "/" + r["path"]
                 and r["name"].split("::")[-1] == name]
        figured = [r for r in sites if r.get("occupancy")]
        same = [r for r in figured if r["block"] == block and r["dynamic_smem"] == dyn]
        if not sites:
            totals["no launch site in the source (a library's kernel)"] += 1
            print(f"{sample} {name}: launched by a library (no site)")
        elif not figured:
            totals["sites without a figure"] += 1
            print(f"{sample} {name}: no figure: {sites[0]['no_occupancy']}")
        elif not same:
            totals["DIFFERENT configuration"] += 1
            bad += 1
            print(f"DIFF {sample} {name}: Nsight block {block:g} dyn {dyn:g}, occlint "
                  f"{[(r['line'], r['block'], r['dynamic_smem']) for r in figured]}")
        else:
            o = same[0]["occupancy"]["sm_90"]
            ok_occ = abs(o["occupancy"] * 100 - occ) < 0.01
            ok_smem = o["static_smem"] == smem
            totals["matched"] += 1
            totals["occupancy agrees"] += ok_occ
            totals["static smem agrees"] += ok_smem
            totals["registers agree"] += o["registers"] == regs
            bad += not (ok_occ and ok_smem)
            print(f"{'' if ok_occ and ok_smem else 'DIFF '}{sample} {name}: block {block:g}, "
                  f"dyn {dyn:g}; Nsight {regs:g} regs {smem:g} B {occ:g}%; occlint "
                  f"{o['registers']} regs {o['static_smem']} B {o['occupancy'] * 100:g}%")
    print(f"{len(profs)} profiled kernels from {len({p['sample'] for p in profs})} programs")
    for k, v in totals.items():
        print(f"  {k}: {v}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
