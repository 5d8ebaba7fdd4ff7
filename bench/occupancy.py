"""Benchmark of the occupancy engine: `python bench/occupancy.py` prints a table.

compute() runs over varied arguments (no caching of results anywhere), best of 5 rounds, on
one core; the sweep is the full 32 block sizes x 32 register counts. Times are CPU time of this
process (time.process_time), so other load on the machine does not inflate them.
"""

from __future__ import annotations

import random

from timing import best_cpu

from occlint.occupancy import (
    active_blocks,
    cliffs,
    compute,
    max_potential_block_size,
    sweep,
)


def main() -> None:
    rng = random.Random(1)
    archs = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    args = [(rng.choice(archs), rng.randint(1, 1024), rng.randint(0, 255),
             rng.choice([0, 1024, 16384, 40000]), rng.choice([0, 0, 4096]))
            for _ in range(20_000)]

    def many_compute():
        for a, b, r, s, d in args:
            compute(a, b, r, s, d)

    def many_blocks():
        for a, b, r, s, d in args:
            active_blocks(a, b, r, s, d)

    def many_carveout():
        for a, b, r, s, d in args:
            compute(a, b, r, s, d, carveout=50, cache_config="prefer_l1", barriers=2)

    rows = []
    n = len(args)
    for label, fn in (("compute()", many_compute), ("compute(carveout=, barriers=)", many_carveout),
                      ("active_blocks()", many_blocks)):
        t = best_cpu(fn)
        rows.append((label, f"{n / t:,.0f} /s", f"{t / n * 1e6:.2f} us"))
    for label, fn in (
        ("sweep(): 32 block sizes x 32 register counts", lambda: sweep("sm_90", static_smem=4096)),
        ("max_potential_block_size()", lambda: max_potential_block_size("sm_90", 40, 2048)),
        ("cliffs()", lambda: cliffs("sm_86", 256, 40, 16384)),
    ):
        t = best_cpu(fn, rounds=20)
        rows.append((label, f"{1 / t:,.0f} /s", f"{t * 1e3:.2f} ms"))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':{width}}  {'rate':>14}  {'per call':>10}")
    for label, rate, per in rows:
        print(f"{label:{width}}  {rate:>14}  {per:>10}")


if __name__ == "__main__":
    main()
