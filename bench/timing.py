"""Shared timing for the benchmarks: CPU seconds, the best of a few rounds (load on this shared
machine inflates wall time, not the best CPU time)."""

from __future__ import annotations

import time


def best_cpu(fn, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best
