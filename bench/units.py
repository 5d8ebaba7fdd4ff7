"""Units analysed on a real project, run the way pre-commit runs occlint (docs/realworld.md):

    python bench/units.py REPO [--arch sm_90] [--jobs 2] [PATHSPEC ...]

From REPO's root, the paths are `git ls-files` of the CUDA suffixes (or the PATHSPECs), with no
occlint config: the same paths and config `occlint check PATHS` gets, through the same
`collect_usage`. Prints one table: units in each compilation database found, `.cu` files given,
units analysed (every arch compiled with ptxas figures), and the units with an OCC900 sorted by
the cause of their first error (a missing header names the header). Wheels with library
headers on PYTHONPATH (e.g. `pip install --target DIR/site-packages nvidia-cublas`) count.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time


def cause(message: str, kind: str) -> str:
    m = re.search(r'`([^`]+)` not found|source file "([^"]+)"|([^\s:]+): No such file', message)
    if m:
        return "missing " + next(g for g in m.groups() if g)
    return f"{kind}: {message[:70]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo")
    ap.add_argument("pathspec", nargs="*", default=["*.cu", "*.cuh", "*.cuhpp", "*.cu.inc"])
    ap.add_argument("--arch", help="override every unit's archs (bounds the run)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.chdir(args.repo)
    files = subprocess.run(["git", "ls-files", *args.pathspec], capture_output=True, text=True,
                           check=True).stdout.split()
    from occlint.config import load_config
    from occlint.discover import discover, is_unit
    from occlint.toolchain import collect_usage
    from occlint.toolchain.database import database_for

    config = load_config(start=files[0], overrides={"arch": [args.arch]} if args.arch else None)
    sources, _ = discover(files, config)
    units = [s for s in sources if is_unit(s)]
    dbs = {db.path: db for db in (database_for(u, config) for u in units) if db}
    in_db = {u for u in units if any(os.path.realpath(u) in db.entries for db in dbs.values())}
    start = time.time()
    report = collect_usage(sources, config, jobs=args.jobs)
    wall = time.time() - start
    first: dict[str, str] = {}
    for err in report.errors:
        first.setdefault(os.path.realpath(err.unit), cause(err.message, err.kind))
    rows = [("databases", ", ".join(f"{os.path.relpath(p)} ({len(db.units())} units)"
                                     for p, db in dbs.items()) or "none")]
    for label, group in (("in a database", sorted(in_db)), ("not in one", sorted(set(units) - in_db))):
        bad = collections.Counter(first[os.path.realpath(u)] for u in group
                                  if os.path.realpath(u) in first)
        ok = len(group) - sum(bad.values())
        rows.append((f".cu {label}", f"{len(group)}: {ok} analysed, {sum(bad.values())} OCC900"))
        rows += [("", f"  {n} x {why}") for why, n in bad.most_common()]
    rows.append(("compiles", f"{report.compiled} run, {report.cached} cached, {wall:.0f} s"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
