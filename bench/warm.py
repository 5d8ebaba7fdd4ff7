"""Warm-run speed on a real project, as ratios measured in one run (so machine load cancels):

    python bench/warm.py PROJECT [--file ONE.cu] [--corpus DIR ...] [--reps 5] [--jobs N]

PROJECT is a folder of real CUDA code (for example a checkout of NVIDIA/cuda-samples'
Samples/0_Introduction, with its compile_commands.json found the usual way). Prints one table,
each row with its wall time (median of --reps runs), its CPU time (user + system, best run) and
a ratio to something measured in the same run:

- python start-up (`python -c pass`) and `occlint --version`: the floors every command pays;
- `occlint check PROJECT` warm (target < 0.3 s) and `occlint check ONE.cu` warm (< 0.15 s);
- parse-only throughput, `occlint kernels --no-compile` over the corpus (PROJECT and every
  --corpus folder; target >= 5 MB/s, process start included), against a Python process that
  only parses the same files with tree-sitter (its start included);
- cold `occlint check --no-cache` against the same nvcc commands run directly, same jobs
  (target <= 1.05x), alternated --reps times; and, since a shared host's noise can exceed 5%,
  three figures it hardly moves: when the first compile starts and how long the run lasts
  after the last one (from the interpreter's start, `python -c pass` aside), and occlint's own
  CPU time (its threads, not nvcc's).

The cache lives in a temporary folder; nothing is written into PROJECT. Child processes run
without PYTHONDONTWRITEBYTECODE (a sandbox may set it; users have bytecode caches), so they
start as a user's would.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SUFFIXES = (".cu", ".cuh")
RAW_PARSE = """
import sys, tree_sitter_cuda
from tree_sitter import Language, Parser
p = Parser(Language(tree_sitter_cuda.language()))
for name in sys.stdin.read().splitlines():
    with open(name, "rb") as fh:
        p.parse(fh.read())
"""

# Runs occlint in this process and writes, at exit, what the host's noise hardly moves: when the
# first compile started and the run ended after the last one (seconds from the start of this
# script), and occlint's own CPU time (its threads, not nvcc's).
TIMELINE = """
import atexit, json, resource, subprocess, sys, time
T0 = time.perf_counter()
OUT = sys.argv[1]
spawns, exits = [], []
_init, _comm = subprocess.Popen.__init__, subprocess.Popen.communicate
def init(self, *a, **k):
    _init(self, *a, **k)
    if "-cubin" in (a[0] if a else k.get("args", ())):
        spawns.append(time.perf_counter() - T0)
def comm(self, *a, **k):
    r = _comm(self, *a, **k)
    if "-cubin" in self.args:
        exits.append(time.perf_counter() - T0)
    return r
subprocess.Popen.__init__, subprocess.Popen.communicate = init, comm
def done():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(OUT, "w") as fh:
        json.dump({"first": min(spawns, default=0), "tail": time.perf_counter() - T0
                   - max(exits, default=0), "cpu": r.ru_utime + r.ru_stime}, fh)
atexit.register(done)
from occlint.cli import run
sys.argv = ["occlint", *sys.argv[2:]]
run()                   # the `occlint` command's entry: its exit skips the interpreter's teardown
"""


def timed(cmd: list[str], cwd: str, ok=(0, 1), stdin: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, input=stdin)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(cmd: list[str], cwd: str, reps: int, stdin: str | None = None) -> tuple[float, float]:
    """(median wall, best CPU) over `reps` runs."""
    runs = [timed(cmd, cwd, stdin=stdin) for _ in range(reps)]
    return statistics.median(w for w, _c in runs), min(c for _w, c in runs)


def nvcc_commands(project: str, cache: str, out: str):
    """The compiles a cold `occlint check` runs: occlint's own flags and compile_command."""
    from occlint.config import load_config
    from occlint.toolchain import database, libraries
    from occlint.toolchain.compile import compile_command, expand_paths
    from occlint.toolchain.discover import find_nvcc
    from occlint.toolchain.flags import unit_command

    config = load_config(start=project)
    db = database.database_for(project, config)
    nvcc = find_nvcc(config, db.raw if db else None)
    libs = libraries.wheel_include_dirs()
    cmds = []
    for n, unit in enumerate(f for f in expand_paths([project]) if f.endswith(".cu")):
        plan = unit_command(unit, config, libs)          # the flags and archs check uses
        for arch in plan.archs:
            d = os.path.join(out, f"{n}-{arch}")
            os.makedirs(d, exist_ok=True)
            cmds.append((compile_command(nvcc, unit, arch, list(plan.flags), d), plan.cwd))
    return cmds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project")
    ap.add_argument("--file", help="the one unchanged file (default: the project's first .cu)")
    ap.add_argument("--corpus", action="append", default=[],
                    help="more folders of CUDA code for the parse-only row (repeatable)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--parse-only", action="store_true",
                    help="only the floors and the parse-only rows (no compiles)")
    ap.add_argument("--no-cold", action="store_true",
                    help="skip the cold rows (each compiles the project twice more)")
    args = ap.parse_args()
    project = os.path.abspath(args.project)
    sources = sorted(p for p in Path(project).rglob("*") if p.suffix in SUFFIXES and p.is_file())
    one = os.path.abspath(args.file) if args.file else str(next(
        p for p in sources if p.suffix == ".cu"))
    corpus = [project, *(os.path.abspath(c) for c in args.corpus)]
    corpus_files = sorted({str(p) for c in corpus for p in Path(c).rglob("*")
                           if p.suffix in SUFFIXES and p.is_file()})
    mb = sum(os.path.getsize(p) for p in corpus_files) / 1e6
    tmp = tempfile.mkdtemp(prefix="occlint-warm-")
    cache = os.path.join(tmp, "cache")
    occ = [sys.executable, "-m", "occlint"]
    # --cache-dir, as a user names a cache folder: an inline --config would import tomllib
    # (~8 ms) that a run without a config file never loads
    conf = ["--cache-dir", cache, "-j", str(args.jobs)]
    rows = []

    t_python = median([sys.executable, "-c", "pass"], project, args.reps)
    rows.append(("python -c pass", t_python, "", ""))
    t_version = median([*occ, "--version"], project, args.reps)
    rows.append(("occlint --version", t_version, f"{t_version[0] / t_python[0]:.1f}x python start",
                 ""))

    if not args.no_cold and not args.parse_only:
        # cold: direct nvcc first (it also warms the disk cache for both), then occlint --no-cache
        cmds = nvcc_commands(project, cache, os.path.join(tmp, "direct"))

        def direct() -> float:
            start = time.perf_counter()
            list(ThreadPoolExecutor(args.jobs).map(
                lambda c: subprocess.run(c[0], cwd=c[1], capture_output=True), cmds))
            return time.perf_counter() - start

        direct()
        # alternated, --reps times each, so a slow spell of the machine hits both alike
        line = os.path.join(tmp, "timeline.json")
        pairs, lines = [], []
        for _ in range(args.reps):
            pairs.append((direct(), timed([sys.executable, "-c", TIMELINE, line, "check",
                                           project, "--no-cache", "--exit-zero", *conf],
                                          project)))
            with open(line) as fh:
                lines.append(json.load(fh))
        t_direct = statistics.median(d for d, _c in pairs)
        t_cold = (statistics.median(c[0] for _d, c in pairs), min(c[1] for _d, c in pairs))
        ratios = sorted(c[0] / d for d, c in pairs)
        rows.append((f"direct nvcc, occlint's {len(cmds)} commands", (t_direct, float("nan")),
                     "", ""))
        rows.append(("occlint check --no-cache (cold)", t_cold,
                     f"{statistics.median(ratios):.3f}x direct nvcc "
                     f"({ratios[0]:.3f}-{ratios[-1]:.3f})", "<= 1.05x"))
        for key, what in (("first", "cold: the first compile starts"),
                          ("tail", "cold: the end after the last compile"),
                          ("cpu", "cold: occlint's own CPU (not nvcc's)")):
            value = statistics.median(x[key] for x in lines)
            rows.append((what, (value, float("nan")), "", ""))

    if not args.parse_only:
        timed([*occ, "check", project, "--exit-zero", *conf], project)          # fill the cache
        t_warm = median([*occ, "check", project, "--exit-zero", *conf], project, args.reps)
        rows.append((f"occlint check, warm ({len(sources)} files)", t_warm,
                     f"{t_warm[0] / t_version[0]:.1f}x occlint --version", "< 0.3 s"))
        t_one = median([*occ, "check", one, "--exit-zero", *conf], project, args.reps)
        rows.append((f"occlint check {os.path.relpath(one, project)}, warm", t_one,
                     f"{t_one[0] / t_version[0]:.1f}x occlint --version", "< 0.15 s"))
    t_raw = median([sys.executable, "-c", RAW_PARSE], project, args.reps,
                   stdin="\n".join(corpus_files))
    rows.append((f"tree-sitter parse only, own process ({mb:.2f} MB)", t_raw,
                 f"{mb / t_raw[0]:.2f} MB/s", ""))
    t_parse = median([*occ, "kernels", *corpus, "--no-compile", "--json"], project, args.reps)
    rows.append((f"occlint kernels --no-compile ({mb:.2f} MB)", t_parse,
                 f"{mb / t_parse[0]:.2f} MB/s, {t_parse[0] / t_raw[0]:.1f}x tree-sitter",
                 ">= 5 MB/s"))

    print(f"occlint warm bench: {project} (+{len(args.corpus)} corpus folders), "
          f"{len(sources)} files, jobs={args.jobs}, load average {os.getloadavg()[0]:.1f}; "
          "children run without PYTHONDONTWRITEBYTECODE")
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'wall s':>7}  {'cpu s':>6}  {'ratio':<34}  target")
    for name, (wall, cpu), ratio, target in rows:
        print(f"{name:<{width}}  {wall:>7.3f}  {cpu:>6.3f}  {ratio:<34}  {target}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
