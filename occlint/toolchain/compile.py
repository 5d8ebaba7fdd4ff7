"""Device-only compiles per (file, arch), cached and in parallel: `collect_usage`."""

from __future__ import annotations

import functools
import os
import re
import struct
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from occlint import record
from occlint.config import Config
from occlint.discover import is_header, is_unit
from occlint.errors import OcclintError
from occlint.files import is_regular, real_path
from occlint.model import CompileError, Usage
from occlint.process import kill_all, thread_map
from occlint.process import run as run_process
from occlint.record import MISSING, asdict, dataclass, field, fields, replace
from occlint.toolchain.cache import Cache, cache_dir, parse_depfile
from occlint.toolchain.database import Database
from occlint.toolchain.devlink import unlinked
from occlint.toolchain.discover import Nvcc, find_nvcc
from occlint.toolchain.failure import Failure, fingerprint, missing_headers
from occlint.toolchain.flags import UnitCommand, archs_for, unit_command
from occlint.toolchain.inputs import non_regular_input
from occlint.toolchain.ptxas import parse_errors, parse_usage
from occlint.toolchain.safe import WARNINGS, private_tmpdir, stage

SKIPPED_CHECKS = "register, spill and static shared memory checks"
NO_NVCC_NOTICE = (
    "occlint: notice: nvcc not found, so the {checks} were skipped (source-only checks ran). "
    "Get nvcc with `pip install 'occlint[cuda]'`, or point `nvcc` in the config at one."
)


@dataclass
class UsageReport:
    """The compiler's figures, errors and dependency lists for a run's units."""

    usages: dict[str, tuple[Usage, ...]] = field(default_factory=dict)  # unit -> all archs
    errors: list[CompileError] = field(default_factory=list)
    notice: str | None = None
    archs: tuple[str, ...] = ()
    includes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # unit -> files it read
    nvcc: Nvcc | None = None
    compiled: int = 0         # compiles run (cache misses)
    cached: int = 0           # results taken from the cache
    unit_archs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # unit -> its archs
    commands: dict[str, UnitCommand] = field(default_factory=dict)        # unit -> how compiled
    borrowed: dict[str, str] = field(default_factory=dict)  # includer compiled for a lone header
    cache: Cache | None = None      # the compile cache the run used (its file hashes are shared)
    extensions: Database | None = None     # the torch extensions' entries (source_views' too)

    @functools.cached_property
    def unique_kernels(self) -> dict[str, list[Usage]]:
        """Kernel name (last `::` part) -> its figures, for the names exactly one unit has (read
        once the compiles are done: `engine.borrowed_usage`)."""
        units: dict[str, set[str]] = {}
        figures: dict[str, list[Usage]] = {}
        for unit, usages in self.usages.items():
            for u in usages:
                name = u.kernel.split("::")[-1]
                units.setdefault(name, set()).add(unit)
                figures.setdefault(name, []).append(u)
        return {n: figures[n] for n, us in units.items() if len(us) == 1}

    @functools.cached_property
    def kernels_by_folder(self) -> dict[str, dict[str, list[str]]]:
        """A unit's folder (real path) -> kernel name (last `::` part) -> the units of that
        folder that have it (`engine.borrowed_usage`)."""
        out: dict[str, dict[str, list[str]]] = {}
        for unit, usages in self.usages.items():
            here = out.setdefault(os.path.dirname(os.path.realpath(unit)), {})
            for name in dict.fromkeys(u.kernel.split("::")[-1] for u in usages):
                here.setdefault(name, []).append(unit)
        return out

    @functools.cached_property
    def failed_paths(self) -> frozenset[str]:
        """Real paths of the units whose compile failed and of the files their errors name."""
        return frozenset(os.path.realpath(p) for e in self.errors for p in (e.unit, e.path) if p)

    @functools.cached_property
    def _failed_archs(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}
        for e in self.errors:
            if e.unit and e.arch:
                key = os.path.realpath(e.unit)
                out[key] = out.get(key, frozenset()) | {e.arch}
        return out

    def failed_archs(self, path: str) -> frozenset[str]:
        """The archs unit `path`'s own compile failed for."""
        return self._failed_archs.get(os.path.realpath(path), frozenset())

    def archs_of(self, path: str) -> tuple[str, ...]:
        """The archs `path` was compiled for: its own, or for a header its includers'."""
        if path in self.unit_archs:
            return self.unit_archs[path]
        target = os.path.realpath(path)
        found = [a for unit, deps in self.includes.items() if target in deps
                 for a in self.unit_archs.get(unit, ())]
        return tuple(dict.fromkeys(found)) or self.archs

    def project_files(self) -> list[str]:
        """The files the compiled units include that belong to the user's project (not the
        toolkit's, the system's or a wheel's): their kernels are visible to the units."""
        from occlint.toolchain.includers import user_files
        return user_files([d for deps in self.includes.values() for d in deps[1:]], self.nvcc)

    def usage_for(self, path: str) -> tuple[Usage, ...]:
        """Usage for a .cu, or for a header: everything from the units that include it."""
        if path in self.usages:
            return self.usages[path]
        target = os.path.realpath(path)
        seen: dict[tuple[str, str], Usage] = {}
        for unit, deps in self.includes.items():
            if target in deps:
                for u in self.usages.get(unit, ()):
                    seen.setdefault((u.mangled, u.arch), u)
        return tuple(seen.values())


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files as given; directories -> their .cu and header files (hidden dirs skipped)."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                out.extend(os.path.join(dirpath, f) for f in sorted(filenames)
                           if is_unit(f) or is_header(f))
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def compile_command(nvcc: Nvcc, path: str, arch: str, flags: list[str], outdir: str) -> list[str]:
    """The device-only compile. The dependency list comes from the device preprocessing pass
    itself (`-Xcompiler=-MD,-MF,...`): nvcc's own `-MD` would add a host preprocessing pass."""
    deps = os.path.join(outdir, "x.d")
    return [nvcc.path, "-cubin", f"-arch={arch}", "-Xptxas", "-v", *flags,
            f"-Xcompiler=-MD,-MF,{deps}", "-o", os.path.join(outdir, "x.cubin"), path]


def run_with_timeout(cmd: list[str], cwd: str, timeout: float,
                     started=None, slot=None, tmp: str | None = None) -> tuple[int | None, str]:
    """(exit code or None on timeout, stdout+stderr). nvcc runs in its own process group, and
    the whole group is killed on timeout and dies with occlint (occlint.process). `slot`: a
    semaphore held while it runs. `tmp`: the compile's private folder, also nvcc's TMPDIR, so
    the `tmpxft_*` files of a compile killed on timeout or Ctrl-C are removed with it."""
    code, out, _ = run_process(cmd, timeout=timeout, cwd=cwd, started=started, slot=slot,
                               tmpdir=tmp)
    return code, out.decode("utf-8", "replace")


def _display_path(reported: str, cwd: str, unit: str) -> str:
    """The compiler's path for a diagnostic, as the user named the unit when it is the unit.
    Called while the temp links exist: realpath sees through them to the user's files."""
    full = os.path.realpath(os.path.join(cwd, reported))
    if full == os.path.realpath(unit):
        return unit
    rel = os.path.relpath(full)
    return full if rel.startswith("..") else rel


def compile_one(nvcc: Nvcc, unit: str, arch: str, flags: list[str], cwd: str, timeout: float,
                *, failures: bool = False, started=None, memo: dict | None = None,
                warnings: list[str] | None = None, slot=None
                ) -> tuple[list[Usage], list[CompileError], list[str] | Failure | None]:
    """Compile `unit` for `arch`: (usages, errors, files read; None when not cacheable; with
    `failures`, a Failure when a header is missing: one more preprocessing run finds it).
    `started()` is called once nvcc runs. `memo`: one run's answers that are the same for
    every arch of a unit (its inputs' kinds, its resolved dependency lists). `warnings`: where
    the compile's caveats go (a flag kept from the shell, code that could not be linked), so
    that its cache entry can say them again; default, the run's WARNINGS. `slot`: a semaphore
    nvcc holds while it runs (one per job; nvlink's short device link, when a cubin needs one,
    runs outside it).
    nvcc sees only shell-safe names and flags (`safe.stage`); its output is mapped back. A
    unit that would read a device or FIFO is not compiled (`inputs.non_regular_input`)."""
    memo = {} if memo is None else memo
    key = ("inputs", unit, tuple(flags), cwd)
    if key not in memo:
        memo[key] = non_regular_input(unit, flags, cwd)
    found = memo[key]
    if found:
        return [], [CompileError(found[0], found[1], None, found[2], arch, "fatal", None, unit)], None
    with private_tmpdir() as tmp:
        try:
            st = stage(unit, flags, cwd, tmp)
        except OSError as exc:
            return [], [CompileError(unit, None, None, f"cannot prepare the compile: {exc}", arch,
                                     "nvcc", None, unit)], None
        note = warnings.append if warnings is not None else WARNINGS.add
        for text in st.warnings:
            note(text)
        cmd = compile_command(nvcc, st.source, arch, st.flags, tmp)
        try:
            code, out = run_with_timeout(cmd, cwd, timeout, started, slot, tmp)
        except OSError as exc:
            return [], [CompileError(unit, None, None, f"cannot run nvcc: {exc}", arch, "nvcc",
                                     None, unit)], None
        if code is None:
            msg = f"compiling for {arch} timed out after {timeout:g} s"
            return [], [CompileError(unit, None, None, msg, arch, "timeout", None, unit)], None
        usages = with_cubin_attributes(parse_usage(out, arch, unit), Path(tmp, "x.cubin"),
                                       link=(arch, nvcc.bin_dir, timeout),
                                       warn=lambda why: note(unlinked(unit, arch, why)),
                                       report=out)
        errors = [
            CompileError(_display_path(st.restore(e.path), cwd, unit), e.line, e.column, st.restore(e.message),
                         e.arch, e.kind, e.kernel, unit, included_from=None if e.included_from is None
                         else (_display_path(st.restore(e.included_from[0]), cwd, unit),
                               e.included_from[1]))
            for e in parse_errors(out, st.source, arch)
        ]
        if code != 0 and not errors:
            last = next((ln for ln in reversed(out.splitlines()) if ln.strip()), "")
            errors.append(CompileError(unit, None, None,
                                       st.restore(f"nvcc exited with {code}: {last.strip()}")[:500],
                                       arch, "nvcc", None, unit))
        # A result is cacheable only with a complete list of the files it read: the depfile
        # exists once preprocessing succeeded; a missing header (fatal) leaves none, and is
        # remembered with what could make it pass (toolchain.failure).
        if any(e.kind in ("fatal", "nvcc") for e in errors):
            names = missing_headers(errors) if failures else None
            if names is None:
                return usages, errors, None
            return usages, errors, _failure(nvcc, st, arch, cwd, tmp, timeout, names, slot)
        try:
            deps = parse_depfile(Path(tmp, "x.d").read_text(encoding="utf-8",
                                                            errors="surrogateescape"))
        except OSError:
            return usages, errors, None
        # real paths while the temp links exist; files occlint made in `tmp` are not inputs
        key = ("deps", cwd, tuple(deps))
        listed = deps
        deps = memo.get(key)
        if deps is None:
            deps = [_realpath(os.path.join(cwd, d), tmp) for d in listed]
            real_tmp = os.path.realpath(tmp) + os.sep
            deps = [d for d in deps if not d.startswith(real_tmp)]
            if not any(d.startswith(tmp) for d in listed):     # else the key is this compile's
                memo[key] = deps
    return usages, errors, list(dict.fromkeys([os.path.realpath(unit), *deps]))


_REAL: dict[str, str] = {}      # one run's resolved dependency paths (collect_usage clears it)


def _realpath(path: str, tmp: str) -> str:
    """os.path.realpath, remembered for the run outside `tmp`: every arch of a unit, and most
    units, read the same toolkit headers (a realpath is an lstat per folder of the path)."""
    if path.startswith(tmp):
        return os.path.realpath(path)
    return real_path(path, _REAL)


def _failure(nvcc: Nvcc, st, arch: str, cwd: str, tmp: str, timeout: float,
             names: list[str], slot=None) -> Failure | None:
    """The same device preprocessing with `-M -MG -v`: every file it reads (missing headers
    listed, not fatal) and the folders it searches (toolchain.failure). It runs in a job's
    `slot`, as the compile did."""
    depfile = os.path.join(tmp, "m.d")
    cmd = [nvcc.path, "-E", "-cubin", f"-arch={arch}", *st.flags, "-Xcompiler=-M,-MG,-v",
           "-o", depfile, st.source]
    try:
        code, out = run_with_timeout(cmd, cwd, timeout, slot=slot, tmp=tmp)
    except OSError:
        return None
    if code != 0:
        return None
    return fingerprint(names, out, depfile, cwd, tmp)


def with_cubin_attributes(usages: list[Usage], cubin: Path,
                          link: tuple[str, str, float] | None = None, warn=None,
                          report: str = "") -> list[Usage]:
    """`cubin_attributes` of the cubin file ptxas wrote; `usages` unchanged when it is missing
    or unreadable."""
    try:
        data = cubin.read_bytes()
    except OSError:
        return usages
    return cubin_attributes(usages, data, link, warn, report)


def with_callee_spills(usages: list[Usage], cubin: bytes, report: str) -> list[Usage]:
    """`usages` with the spills of the functions each kernel calls that ptxas did not inline
    (their "Function properties" in `report`, ptxas's -v output; the calls from the cubin):
    flash-attention's `compute_attn_1rowblock`, 1292 B of spill stores under a kernel that
    reports 0."""
    from occlint.toolchain.demangle import split_name
    from occlint.toolchain.ptxas import function_frames

    frames = function_frames(report)
    if not any(f[1] or f[2] for f in frames.values()):
        return usages
    from occlint.toolchain.cubin import callees

    calls = callees(cubin)
    out = []
    for u in usages:
        spilling = [(frames[c][1] + frames[c][2], c) for c in calls.get(u.mangled, ())
                    if c in frames and (frames[c][1] or frames[c][2])]
        if not spilling:
            out.append(u)
            continue
        worst = max(spilling)[1]
        out.append(record.replace(
            u, callee_spill_stores=sum(frames[c][1] for _b, c in spilling),
            callee_spill_loads=sum(frames[c][2] for _b, c in spilling),
            spilling_callee=split_name(worst.split("$", 1)[0])[0] or worst))
    return out


def cubin_attributes(usages: list[Usage], cubin: bytes,
                     link: tuple[str, str, float] | None = None, warn=None,
                     report: str = "") -> list[Usage]:
    """ptxas's usages, each with its launch attributes from `cubin` (matched by mangled name);
    unchanged when the cubin cannot be read. With `link` (arch, the toolkit's bin folder,
    timeout), a relocatable cubin whose code refers to symbols is linked first
    (`devlink.linked_image`), and the linked kernels' registers, static shared memory, barriers
    and stack frame replace ptxas's (its spill figures stay). `warn(why)`: told why a cubin
    could not be linked (its figures then stay ptxas's)."""
    from occlint.toolchain.cubin import (
        FIGURES,
        CubinError,
        cubin_records,
        launch_attributes,
        needs_link,
    )

    ptxas_cubin = cubin
    try:
        linked = False
        if link is not None and usages and needs_link(cubin):    # (no kernel: nothing to read)
            from occlint.toolchain.devlink import linked_image

            cubin, why = linked_image(cubin, *link)
            linked = not why
            if why and warn is not None:
                warn(why)
        records = {r["mangled"]: r for r in cubin_records(cubin)}
    except (OSError, CubinError, struct.error, ValueError, IndexError):
        return usages
    out = []
    for u in usages:
        r = records.get(u.mangled)
        if r is None:
            out.append(u)
        else:
            figures = {k: r[k] for k in FIGURES} if linked else {}
            out.append(replace(u, **figures, **launch_attributes(r)))
    try:
        return with_callee_spills(out, ptxas_cubin, report) if report else out
    except (CubinError, struct.error, ValueError, IndexError):
        return out


def _usage_to_json(u: Usage) -> dict:
    d = asdict(u)
    d["template_args"] = list(u.template_args)
    d["cluster_dims"] = list(u.cluster_dims) if u.cluster_dims else None
    return d


def _from_json(cls, d, unit: str):
    """`cls(**d)` for a stored entry, checked field by field: a missing or extra field or a
    wrong type (another occlint's format, a hand edit) raises ValueError, and the caller
    treats the entry as a miss."""
    names, required, types = _shape(cls)
    if not isinstance(d, dict) or not required <= d.keys() <= names:
        raise ValueError(f"not a stored {cls.__name__}")
    d = {**d, "unit": unit}
    for key, value in d.items():
        allowed = types[key]
        if isinstance(value, list) and tuple in allowed:      # JSON has no tuples
            value = d[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            if key == "template_args" and not all(isinstance(a, str) for a in value):
                raise ValueError("template_args")
        if isinstance(value, int) and float in allowed and not isinstance(value, bool):
            continue
        if isinstance(value, bool) is not (bool in allowed) or not isinstance(value, allowed):
            raise ValueError(f"{cls.__name__}.{key}")
    return cls(**d)


@functools.cache
def _shape(cls) -> tuple[set, set, dict]:
    """(field names, required names, name -> the types a value may have) of a dataclass,
    worked out once per class (typing.get_type_hints evaluates every annotation)."""
    import typing

    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is MISSING} - {"unit"}
    types = {}
    for key in names:
        hint = hints[key]
        allowed = typing.get_args(hint) if typing.get_origin(hint) is not tuple else (tuple,)
        types[key] = tuple(typing.get_origin(t) or t for t in allowed or (hint,))
    return names, required, types


def usage_from_json(d: dict, unit: str) -> Usage:
    u = _from_json(Usage, d, unit)
    if u.kernel.startswith("__nv_static_"):
        # an entry written before `static __global__` names were demangled: name it again
        from occlint.toolchain.demangle import split_name
        name, args = split_name(u.mangled or u.kernel)
        u = replace(u, kernel=name, template_args=tuple(args))
    return u


def _error_from_json(d: dict, unit: str) -> CompileError:
    return _from_json(CompileError, d, unit)


def _stored(entry: dict | None, unit: str):
    """(usages, errors, deps, warnings) of a cache entry, or None when it is missing or not
    what this occlint writes (any unexpected or missing field is a miss, never a crash)."""
    if entry is None:
        return None
    try:
        said = entry["warnings"]
        if not isinstance(said, list) or not all(isinstance(w, str) for w in said):
            return None
        return ([usage_from_json(u, unit) for u in entry["usages"]],
                [_error_from_json(e, unit) for e in entry["errors"]],
                None if "failure" in entry else _paths(entry["deps"]), said)
    except (KeyError, TypeError, ValueError):
        return None


_PATHS: dict[int, tuple[list, tuple[str, ...]]] = {}


def _paths(deps: list) -> tuple[str, ...]:
    """The paths of a stored dependency list (the cache checked they are strings), made once per
    list: a unit's archs share one (9 archs x ~350 headers)."""
    hit = _PATHS.get(id(deps))
    if hit is None or hit[0] is not deps:
        if len(_PATHS) > 4096:
            _PATHS.clear()
        hit = _PATHS[id(deps)] = (deps, tuple(p for p, _h in deps))
    return hit[1]


def collect_usage(paths: Sequence[str], config: Config, *, jobs: int | None = None,
                  nvcc: Nvcc | None = None, extra_entries: Sequence[dict] | None = None,
                  meanwhile=None) -> UsageReport:
    """ptxas's figures for every kernel in the .cu files of `paths`, each unit compiled with its
    own command (`flags.unit_command`) for its own archs. A header given without any unit that
    includes it is measured through its includers (`includers.for_headers`).
    `extra_entries`: compile-database entries of torch extension units (default: the root's
    setup.py); the compilation database's own entry for a file wins. `meanwhile(read)`: work
    this thread does while the last compiles run (it would wait for them otherwise); `read`:
    the files the compiles done by then read."""
    from occlint.toolchain import database, includers, libraries

    database.forget_folders()
    includers.forget()
    _REAL.clear()
    from occlint.python import build_entries, entries_database
    if extra_entries is None:
        extra_entries = build_entries(config.root, paths, config=config)
    extensions = entries_database(extra_entries)
    files = expand_paths(paths)
    units = [f for f in files if is_unit(f, config) and is_regular(f)]   # never a FIFO or device
    lone_headers = [f for f in files if not is_unit(f, config) and is_regular(f)]
    report = UsageReport(extensions=extensions)
    if not units and not lone_headers:
        return report
    cache = report.cache = None if config.no_cache else Cache(cache_dir(config))
    fragments = includers.fragments(units, config)       # `.cu` files another file includes
    units = [u for u in units if u not in fragments]
    given = {os.path.realpath(u) for u in units}
    extra = [(u, f) for f, roots in fragments.items() for u in roots[:includers.MAX_INCLUDERS]
             if not any(os.path.realpath(r) in given for r in roots)]
    extra += includers.for_headers(lone_headers, units, config, cache) if lone_headers else []
    report.borrowed = {u: h for u, h in extra}
    units = list(dict.fromkeys(units + [u for u, _h in extra]))
    if not units:
        report.archs = archs_for(config)
        return report
    first_db = next((db for db in (database.database_for(u, config) for u in units) if db), extensions)
    nvcc = nvcc or find_nvcc(config, first_db.raw if first_db else None)
    if nvcc is None:
        report.notice = NO_NVCC_NOTICE.format(checks=SKIPPED_CHECKS)
        report.archs = archs_for(config)
        return report
    report.nvcc = nvcc
    libs = libraries.wheel_include_dirs()
    plans = {unit: unit_command(unit, config, libs, extensions) for unit in units}
    check_host_compiler(nvcc, plans.values())
    _check_directories(plans)
    _check_archs(plans, config, nvcc, report)
    report.archs = tuple(dict.fromkeys(a for p in plans.values() for a in p.archs))
    report.unit_archs = {u: p.archs for u, p in plans.items()}
    report.commands = plans
    toolchain = nvcc.identity
    results: dict[tuple[str, str], tuple[list[Usage], list[CompileError]]] = {}
    todo: list[tuple[str, str, list[str], str, str | None]] = []
    said_before: set[str] = set()       # the warnings of the compiles the cache answers
    for unit in units:
        plan = plans[unit]
        flags, cwd = list(plan.flags), plan.cwd
        for arch in plan.archs:
            key = cache.key(toolchain, flags, arch, cwd, os.path.abspath(unit)) if cache else None
            hit = _stored(cache.get(key), unit) if key else None
            if hit is not None:
                results[(unit, arch)] = hit[:2]
                said_before.update(hit[3])
                if hit[2] is not None:          # a remembered failure says nothing of includes
                    report.includes[unit] = hit[2]
                report.cached += 1
            else:
                todo.append((unit, arch, flags, cwd, key))

    # `meanwhile` (Python work) runs once a core is free of nvcc: while every core compiles,
    # its CPU time is taken from the compiles (and its GIL from their staging)
    busy = [0]
    lock = threading.Condition()        # told when a compile starts or ends
    memo: dict = {}
    caveats: dict[tuple[str, str], list[str]] = {}     # (unit, arch) -> its compile's warnings
    read: dict[str, None] = {}          # the files the compiles done so far read

    def work(item):
        unit, arch, flags, cwd, _key = item
        ran = []
        said = caveats[(unit, arch)] = []

        def started():
            with lock:
                busy[0] += 1
                lock.notify()
            ran.append(True)
        try:
            got = compile_one(nvcc, unit, arch, flags, cwd, config.compile_timeout,
                              failures=cache is not None, started=started, memo=memo,
                              warnings=said, slot=slot)
            if isinstance(got[2], list):
                with lock:
                    read.update(dict.fromkeys(got[2]))
            return got
        finally:
            with lock:
                busy[0] -= len(ran)
                lock.notify()

    workers = max(1, min(jobs or config.jobs or os.cpu_count() or 1, len(todo) or 1))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    WARNINGS.clear()
    WARNINGS.update(said_before)
    WARNINGS.update(e["occlint_warning"] for e in extra_entries if e.get("occlint_warning"))
    # one thread more than jobs: it stages its compile while the others run, and starts it
    # the moment one ends (its post-processing comes after)
    slot = threading.Semaphore(workers)
    pool = thread_map(work, todo, workers + 1) if todo else None
    try:
        done = iter(pool) if pool else ()
        if pool and meanwhile is not None:
            with lock:
                while not pool.finished() and not (
                        busy[0] < cores and ((workers < cores and busy[0]) or pool.all_started())):
                    lock.wait(0.05)
            with lock:
                files = list(read)
            meanwhile(files)
        for item, (usages, errors, deps) in zip(todo, done, strict=True):
            unit, arch, _flags, _cwd, key = item
            _raise_if_tool_broken(errors, nvcc)
            results[(unit, arch)] = (usages, errors)
            report.compiled += 1
            said = caveats.get((unit, arch), [])
            WARNINGS.update(said)
            if isinstance(deps, Failure):
                if cache and key:
                    cache.put(key, deps.deps, {
                        "usages": [_usage_to_json(u) for u in usages],
                        "errors": [asdict(e) for e in errors],
                        "failure": deps.to_json(),
                        "warnings": said,
                        "time": time.time(),
                    })
            elif deps is not None:
                report.includes[unit] = tuple(deps)
                if cache and key:
                    cache.put(key, deps, {
                        "usages": [_usage_to_json(u) for u in usages],
                        "errors": [asdict(e) for e in errors],
                        "warnings": said,
                        "time": time.time(),
                    })
    except BaseException:  # Ctrl-C, SIGTERM or a broken tool: drop queued compiles, kill running ones
        if pool:
            pool.stop()
        kill_all()
        raise
    if pool:
        pool.join()
    if cache and cache.refused:
        WARNINGS.add(f"the compile cache is off: {cache.root} is not a folder occlint created "
                     "(no CACHEDIR.TAG from occlint); set `cache-dir` to a folder that does not "
                     "exist yet")
    if WARNINGS:
        report.notice = "\n".join([*([report.notice] if report.notice else []),
                                   *(f"occlint: warning: {w}" for w in sorted(WARNINGS))])
    if cache is not None:
        if not getattr(cache, "refused", False):     # never write into a folder occlint did not create
            includers.remember(cache, report.includes, nvcc)
            cache.hashes.save()
        if cache.writes:
            cache.evict()
    major = _major(nvcc.version)
    for unit in units:
        usages: list[Usage] = []
        for arch in plans[unit].archs:
            got, errors = results[(unit, arch)]
            usages.extend(got)
            from_database = plans[unit].entry is not None
            report.errors.extend(_explained(e, major, root=config.root, database=from_database,
                                            cache=cache)
                                 for e in errors)
        report.usages[unit] = tuple(usages)
    return report


def _major(version: str) -> int | None:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _explained(err: CompileError, major: int | None, add: str | None = None,
               root: str | None = None, database: bool = False, cache=None) -> CompileError:
    """A missing header's message names the header and the package that ships it, or the
    project folder that has it (`root`); `add`: how to add an include folder, where it is not
    `include-dirs` (libraries.explain_missing). An API a newer CUDA removed says what replaced
    it (libraries.explain_removed); a CUDA library's undefined identifier names its header
    (libraries.explain_undefined)."""
    from occlint.toolchain.libraries import explain_missing, explain_removed, explain_undefined

    message = explain_undefined(explain_removed(explain_missing(err.message, major, add, root,
                                                                database, cache, err.path)),
                                root, cache)
    return err if message == err.message else record.replace(err, message=message)


def _check_archs(plans: dict, config: Config, nvcc: Nvcc, report: UsageReport) -> None:
    """Archs this nvcc cannot compile: an error when the user asked for them (config, --arch),
    else (a build's flags for another toolkit) dropped from that unit with one notice."""
    if not nvcc.archs:
        return
    dropped: set[str] = set()
    for unit, plan in list(plans.items()):
        bad = [a for a in plan.archs if _base_arch(a) not in nvcc.archs]
        if not bad:
            continue
        if config.arch or config.gpu != Config.gpu or plan.entry is None:
            raise OcclintError(
                f"nvcc {nvcc.version} cannot compile for {', '.join(bad)} "
                f"(it supports {nvcc.archs[0]} to {nvcc.archs[-1]}); choose another --arch")
        dropped.update(bad)
        keep = tuple(a for a in plan.archs if a not in bad) or archs_for(
            record.replace(config, arch=()), None)
        plans[unit] = record.replace(plan, archs=keep)
    if dropped:
        report.notice = (f"occlint: notice: nvcc {nvcc.version} ({nvcc.path}) cannot compile for "
                         f"{', '.join(sorted(dropped))}, which the build's commands name; those "
                         "archs were skipped (point `nvcc` at the build's toolkit)")


def _base_arch(arch: str) -> str:
    """sm_90a -> sm_90, sm_100f -> sm_100: what `nvcc --list-gpu-arch` lists."""
    return re.sub(r"(?<=\d)[af]$", "", arch)


# What nvcc prints when the tool, not the user's code, is broken: the host compiler is missing
# or unusable, or nvcc's own installation is incomplete.
_BROKEN_TOOL = re.compile(
    r"Failed to preprocess host compiler properties|cannot find compiler|"
    r"failed to find (?:the )?host compiler|Could not set up the environment|"
    r"No such file or directory.*(?:cicc|ptxas|cudafe|fatbinary)|"
    r"unsupported (?:GNU|clang) version|'cl\.exe' not found")


def _raise_if_tool_broken(errors: list[CompileError], nvcc: Nvcc) -> None:
    for err in errors:
        if (err.kind == "nvcc" or "unsupported" in err.message) and _BROKEN_TOOL.search(err.message):
            raise OcclintError(
                f"nvcc {nvcc.version} ({nvcc.path}) cannot compile anything: {err.message}"
                f"{host_compiler_hint(nvcc)}")


def _check_directories(plans: dict) -> None:
    """A compile command whose working folder is gone (a moved or deleted build tree) cannot
    run anywhere its relative paths mean the same: a broken setup (exit 2), not a finding per
    unit ("cannot run nvcc: [Errno 2]" at 1:1 of each)."""
    for unit, plan in plans.items():
        if plan.entry is not None and not os.path.isdir(plan.cwd):
            raise OcclintError(
                f"{plan.entry.database}: the entry for {unit} runs in {plan.cwd}, which does not "
                "exist: regenerate the database, or point `compile-commands` at a current one")


def host_compiler_hint(nvcc: Nvcc) -> str:
    if not nvcc.host_compiler:
        return " (no host compiler: nvcc needs g++ on PATH; `occlint doctor` shows the toolchain)"
    return f" (host compiler {nvcc.host_compiler}; `occlint doctor` shows the toolchain)"


def check_host_compiler(nvcc: Nvcc, plans=()) -> None:
    """nvcc preprocesses every file with the host compiler: without one nothing compiles, which
    is a broken tool (exit 2), never a finding in the user's code. (A command that names its own
    with -ccbin is checked by nvcc itself: `_raise_if_tool_broken`.)"""
    names_own = any(f in ("-ccbin", "--compiler-bindir") or f.startswith(("-ccbin=", "--compiler-bindir="))
                    for plan in plans for f in plan.flags)
    if not nvcc.host_compiler and not names_own:
        raise OcclintError(
            f"nvcc {nvcc.version} ({nvcc.path}) needs a host compiler and none was found: "
            "install g++ (it must be on PATH), or set `nvcc-flags = [\"-ccbin\", \"/path/to/g++\"]`; "
            "`occlint doctor` shows the toolchain")


def print_notice(report: UsageReport, stream=None) -> None:
    """The one stderr notice, if any (callers print it once per run)."""
    if report.notice:
        print(report.notice, file=stream or sys.stderr)
