"""`occlint kernels PATH...`: what the source model finds, as text or JSON records.

Each record is a dict with `kind` ("kernel", "shared", "launch", "attribute"), `path`, `line`,
`column` and `name`; `records()` builds them, `format_record()` prints one. A kernel record may
carry a `usage` mapping (arch -> compiler figures) added by a later step; it is printed as is.
"""

from __future__ import annotations

import json
import os
import re
import sys
from json.encoder import encode_basestring_ascii as _escape

from occlint.commands.options import add_config_arguments, load
from occlint.commands.summary import plural
from occlint.discover import CUDA_SUFFIXES
from occlint.emit.concise import display_path
from occlint.units import format_size


def add_arguments(parser):
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="CUDA files or directories (searched for "
                             f"{', '.join(CUDA_SUFFIXES)}, and .py files that compile CUDA; "
                             "default: the working directory, as `check`)")
    parser.set_defaults(lints_paths=True, paths_here=True)
    parser.add_argument("--json", action="store_true", help="print a JSON list of records")
    parser.add_argument("--no-compile", action="store_true",
                        help="source model only: do not run nvcc for registers and occupancy")
    parser.add_argument("--nvcc", metavar="PATH", help="use this nvcc (as check --nvcc)")
    add_config_arguments(parser)


def discover(paths: list[str], config) -> tuple[list[str], list[str]]:
    """(CUDA and Python files, error lines) by `occlint check`'s discovery (suffixes,
    .gitignore, `exclude`, a `.py` file's framework), path by path: a missing path is one error
    line and the others are still listed."""
    from occlint.discover import discover_each

    given = paths or [os.curdir]        # (`load` gives the working directory: other callers)
    here = [p for p in given if os.path.exists(p)]
    present = set(here)
    errors = [f"no such file or directory: {p}" for p in given if p not in present]
    # a file two paths name is listed once, as `check` lists it
    return discover_each(here, config, config.jobs), errors


def _dims(d) -> list:
    return [d.x, d.y, d.z]


def records(sf) -> list[dict]:
    """JSON-ready records for one parsed file, in source order within each kind."""
    out = []
    for k in sf.kernels:
        lb = k.launch_bounds
        out.append({
            "kind": "kernel", "path": sf.path, "line": k.span.line, "column": k.span.column,
            "name": k.name, "qualname": k.qualname,
            "template_params": list(k.template_params),
            "launch_bounds": None if lb is None else {
                "max_threads": lb.max_threads, "min_blocks": lb.min_blocks,
                "max_blocks_per_cluster": lb.max_blocks_per_cluster, "text": lb.text},
            "maxnreg": k.maxnreg,
            "cluster_dims": None if k.cluster_dims is None else list(k.cluster_dims),
            "extern_c": k.extern_c, "is_definition": k.is_definition,
            "macro": k.in_macro,
        })
    for s in sf.shared:
        out.append({
            "kind": "shared", "path": sf.path, "line": s.span.line, "column": s.span.column,
            "name": s.name, "kernel": s.kernel, "element_type": s.element_type,
            "dims": list(s.dims), "element_size": s.element_size, "bytes": s.size_bytes,
            "extern": s.extern, "template_dependent": s.template_dependent,
            "indices": [{"text": i.text, "line": i.span.line, "thread_derived": i.thread_derived,
                         "axis": i.axis, "dim": i.dim, "constant": i.constant}
                        for i in s.indices],
            "other_uses": s.other_uses,
        })
    for la in sf.launches:
        out.append({
            "kind": "launch", "path": sf.path, "line": la.span.line, "column": la.span.column,
            "name": la.callee, "launch_kind": la.kind,
            "block": la.block.total, "grid": la.grid.total, "dynamic_smem": la.dynamic_smem,
            "block_dims": _dims(la.block), "grid_dims": _dims(la.grid),
            "block_text": la.block.text, "grid_text": la.grid.text,
            "dynamic_smem_text": la.dynamic_smem_text,
            "template_args": list(la.template_args), "template_values": list(la.template_values),
            "function": la.function, "runtime_block": la.runtime_block, "call_text": None,
            "block_template": list(la.block_template),
            "smem_template": list(la.smem_template),
            "block_choices": sorted({b for b, _smem in la.choices} |
                                    {b for _values, b, _smem in la.bindings}),
            "bindings": [{"template_values": list(values), "block": b, "dynamic_smem": smem}
                         for values, b, smem in la.bindings],
            "block_parameter": la.block_parameter,
        })
    for a in sf.attributes:
        out.append({
            "kind": "attribute", "path": sf.path, "line": a.span.line, "column": a.span.column,
            "name": a.kernel, "attribute": a.attribute, "value": a.value,
            "value_text": a.value_text, "template_args": list(a.template_args),
            "function": a.function,
        })
    out.sort(key=lambda r: (r["line"], r["column"]))
    return out


def _n(v) -> str:
    return "?" if v is None else str(v)


def launch_text(r: dict) -> str:
    """The launch as written: `k<128><<<grid, block, smem>>>`, `cudaLaunchKernel(k, ...)`, or
    a Python call (CuPy, PyCUDA) as its file has it."""
    if r.get("call_text"):
        return r["call_text"]
    name = r["name"] + (f"<{', '.join(r['template_args'])}>" if r["template_args"] else "")
    config = [r["grid_text"], r["block_text"]]
    if r["dynamic_smem_text"]:
        config.append(r["dynamic_smem_text"])
    if r["launch_kind"] == "chevron":
        return f"{name}<<<{', '.join(config)}>>>"
    return f"{r['launch_kind']}({', '.join((name, *(c for c in config if c)))})"


NOT_COMPILED = "not compiled (--no-compile, or no nvcc): no registers or shared memory figures"
COMPILE_FAILED = ("nvcc failed on this file (its warning above says why): no registers or "
                  "shared memory figures")
INCLUDER_FAILED = ("nvcc failed on {}, {} this file (its warning above says why): no "
                   "registers or shared memory figures")
NO_FIGURES = ("nvcc reported no figures for this file's kernels (defined in a file not listed, "
              "or not compiled for these archs)")


def why_no_occupancy(r: dict, compiled: bool, kernels_measured: set[str],
                     bounds: dict[str, int] | None = None,
                     not_compiled: str = NOT_COMPILED, templates: set[str] | None = None,
                     failed: bool = False) -> str | None:
    """Why a launch record has no occupancy (None when it has one). `bounds`: kernel name ->
    its `__launch_bounds__` max threads, for the kernels of the launch's file; `not_compiled`:
    what to say when nothing was compiled; `templates`: the names of the template kernels the
    file (or a header it includes) defines; `failed`: nvcc failed on the file (or the units that
    include it), which `not_compiled` says, the answer for every launch of it."""
    if r.get("occupancy"):
        return None
    if failed:
        return not_compiled     # no figure at any size until it compiles (the cause to fix first)
    if r["runtime_block"]:
        return ("the block size is chosen at run time by "
                "cudaOccupancyMaxPotentialBlockSize")
    if r["block"] is None and r.get("block_template"):
        fn = r["function"] or "its function"
        if r["block_template"] == [r["block_text"]]:
            return (f"the block size `{r['block_text']}` is a template parameter of `{fn}`: one "
                    "size per instantiation of it, which occlint does not list")
        names = ", ".join(f"`{n}`" for n in r["block_template"])
        return (f"the block size `{r['block_text']}` depends on template parameters of `{fn}` "
                f"({names}), and the calls of `{fn}` in this file do not give it one value (each "
                "instantiation has its own; a call from another file is not read)")
    if r["block"] is None and r.get("block_parameter"):
        return PARAMETER.format(r["block_text"], r["function"] or "its function")
    if r["block"] is None and not r.get("block_choices"):
        return NOT_CONSTANT.format(r["block_text"]) if r["block_text"] else \
            "the block size is not a compile-time constant (its launch configuration is not read)"
    if r["dynamic_smem"] is None and not (r.get("block_choices") and all(
            b["dynamic_smem"] is not None for b in r.get("bindings", ()))):
        if r.get("smem_template"):
            fn = r["function"] or "its function"
            names = ", ".join(f"`{n}`" for n in r["smem_template"])
            return (f"the dynamic shared memory `{r['dynamic_smem_text']}` depends on template "
                    f"parameters of `{fn}` ({names}), and the calls of `{fn}` in this file do "
                    "not give it one value (each instantiation has its own; a call from another "
                    "file is not read)")
        return (f"the dynamic shared memory `{r['dynamic_smem_text']}` is not a compile-time "
                "constant")
    block = r["block"] if r["block"] is not None else max(r["block_choices"])   # the largest
    if block > 1024:
        return f"a block of {block} threads is more than a block may have (1024): the launch fails"
    limit = (bounds or {}).get(r["name"].split("::")[-1])
    if limit is not None and block > limit:
        return (f"a block of {block} threads is more than the kernel's __launch_bounds__ "
                f"({limit}): the launch fails")
    if not compiled:
        return not_compiled
    if r["name"].split("::")[-1] not in kernels_measured:
        if r["name"].split("::")[-1] in (templates or ()):
            fn = f" (the launch is in `{r['function']}`)" if r.get("function") else ""
            return (f"`{r['name']}` is a template that no compiled unit instantiates{fn}: nvcc "
                    "made no code for it, so there are no figures")
        return (f"nvcc reported no figures for `{r['name']}` (defined in a file not listed, "
                "or not compiled for these archs)")
    return "the launch could not be matched to one compiled instantiation"


def _bounds(recs: list[dict]) -> dict[str, int]:
    """Kernel name -> the max threads its `__launch_bounds__` allow, for a file's records."""
    return {r["name"]: r["launch_bounds"]["max_threads"] for r in recs
            if r["kind"] == "kernel" and r["launch_bounds"] and r["launch_bounds"]["max_threads"]}


def format_record(r: dict) -> str:
    where = f"{r['path']}:{r['line']}:{r['column']}:"
    kind = r["kind"]
    if kind == "kernel":
        text = f"kernel {r['qualname']}"
        if r["template_params"]:
            text += f"<{', '.join(r['template_params'])}>"
        lb = r["launch_bounds"]
        if lb is not None:
            vals = [lb["max_threads"], lb["min_blocks"], lb["max_blocks_per_cluster"]]
            vals = vals[:lb["text"].count(",") + 1]
            text += f" {lb['text']} = ({', '.join(_n(v) for v in vals)})"
        if r["maxnreg"] is not None:
            text += f" __maxnreg__({r['maxnreg']})"
        if r["cluster_dims"] is not None:
            text += f" __cluster_dims__({', '.join(_n(v) for v in r['cluster_dims'])})"
        if not r["is_definition"]:
            text += " (declaration)"
        if r.get("macro"):
            text += f" (defined by {r['macro']}(...))"
        for inst in sorted(r.get("instantiations") or [],
                           key=lambda i: (i["arch"], i["template_args"])):
            name = r["qualname"] + (f"<{', '.join(inst['template_args'])}>"
                                    if inst["template_args"] else "")
            text += (f"\n    {inst['arch']} {name}: {plural(inst['registers'], 'register')}, "
                     f"{format_size(inst['spill_stores'])} spill stores, "
                     f"{format_size(inst['spill_loads'])} spill loads, "
                     f"{format_size(inst['static_smem'])} static shared memory, "
                     f"{plural(inst['barriers'], 'barrier')}")
            if inst.get("callee_spill_stores") or inst.get("callee_spill_loads"):
                text += (f"; and in functions it calls that ptxas did not inline (most in "
                         f"`{inst['spilling_callee']}`): "
                         f"{format_size(inst['callee_spill_stores'])} spill stores, "
                         f"{format_size(inst['callee_spill_loads'])} spill loads")
        for arch, o in sorted((r.get("occupancy") or {}).items()):
            how = {"launch": "at its launch", "launch_bounds": "at its __launch_bounds__",
                   "best": "best over block sizes"}[o["basis"]]
            text += (f"\n    {arch} occupancy {o['occupancy']:.1%} at {o['block_size']} "
                     f"threads/block ({plural(o['active_blocks'], 'block')}/SM, {how}), "
                     f"limited by {o['limiter'].replace('_', ' ')}")
        return f"{where} {text}"
    if kind == "shared":
        shape = "".join(f"[{_n(d)}]" for d in r["dims"]) or ("[]" if r["extern"] else "")
        size = ("dynamic" if r["extern"] else "? bytes" if r["bytes"] is None
                else format_size(r["bytes"]))
        owner = f" in {r['kernel']}" if r["kernel"] else " at file scope"
        text = f"{where} shared {r['element_type']} {r['name']}{shape}: {size}{owner}"
        if r["indices"]:
            derived = sum(1 for i in r["indices"] if i["thread_derived"])
            text += f"; {derived}/{len(r['indices'])} subscripts thread-derived"
        if r["other_uses"]:
            text += f"; {plural(r['other_uses'], 'other use')}"
        return text
    if kind == "launch":
        block = "runtime" if r["runtime_block"] else _n(r["block"]) \
            if r["block"] is not None or not r.get("block_choices") else \
            "|".join(str(b) for b in r["block_choices"])         # one of these
        text = (f"{where} launch {launch_text(r)} grid={_n(r['grid'])} block={block} "
                f"smem={_n(r['dynamic_smem'])}")
        for arch, o in sorted((r.get("occupancy") or {}).items()):
            text += (f"\n    {arch}: occupancy {o['occupancy']:.1%} "
                     f"({plural(o['active_blocks'], 'block')}/SM), {o['limiter_words']}")
            if o.get("instantiations"):
                text += (f" (the lowest of the {o['instantiations']} instantiations it may run: "
                         f"{o['instantiation']})")
        if r.get("no_occupancy"):
            text += f"\n    no occupancy: {r['no_occupancy']}"
        return text
    return f"{where} attribute {r['name']} {r['attribute']} = {_n(r['value'])}"


def add_compiler_figures(recs: list[dict], sf, usages, config, archs, project=()) -> None:
    """Kernel records gain `usage` (arch -> figures) and `instantiations`; launch records gain
    `occupancy` (arch -> occupancy, blocks/SM, limiter) at their evaluated configuration.
    `project`: other parsed files that define kernels `sf` launches (its headers)."""
    from occlint import occupancy
    from occlint.facts import build_facts, primary_limiter
    from occlint.link import Usages
    from occlint.toolchain import usage_by_arch

    usages = Usages(usages)
    kernels = {(r["line"], r["column"]): r for r in recs if r["kind"] == "kernel"}
    for k in sf.kernels:
        mine = usages.of(k)
        rec = kernels.get((k.span.line, k.span.column))
        if rec is None or not mine:
            continue
        rec["usage"] = usage_by_arch(mine)
        rec["instantiations"] = [
            {"arch": u.arch, "template_args": list(u.template_args), "registers": u.registers,
             "spill_stores": u.spill_stores, "spill_loads": u.spill_loads,
             "callee_spill_stores": u.callee_spill_stores,
             "callee_spill_loads": u.callee_spill_loads, "spilling_callee": u.spilling_callee,
             "static_smem": u.static_smem, "barriers": u.barriers, "mangled": u.mangled,
             "max_threads": u.max_threads, "max_registers": u.max_registers,
             "cluster_dims": list(u.cluster_dims) if u.cluster_dims else None,
             "max_cluster_blocks": u.max_cluster_blocks}
            for u in mine]
    launches = {(r["line"], r["column"]): r for r in recs if r["kind"] == "launch"}
    facts = build_facts(sf, usages, config, archs, project=project)
    _kernel_occupancy(kernels, facts)
    for site in facts.sites:
        rec = launches.get((site.launch.span.line, site.launch.span.column)) if site.launch else None
        if rec is None or site.occ is None or site.usage is None:
            continue        # no figures for this instantiation: no occupancy (why_no_occupancy)
        occ = site.occ
        limiter = primary_limiter(occ, site.usage is not None)
        prev = rec.setdefault("occupancy", {}).get(site.arch)
        if prev is not None:        # a launch that may run several instantiations: the lowest
            prev["instantiations"] = prev.get("instantiations", 1) + 1
            if prev["occupancy"] <= round(occ.occupancy, 4):
                continue
        rec["occupancy"][site.arch] = {
            "occupancy": round(occ.occupancy, 4), "active_blocks": occ.active_blocks,
            "active_warps": occ.active_warps, "limiter": limiter,
            "limiter_words": occupancy.LIMITER_WORDS.get(limiter, limiter),
            "registers": site.usage.registers if site.usage else None,
            "static_smem": site.static_smem, "instantiation": site.label,
            **({"instantiations": prev["instantiations"]} if prev is not None else {})}


def _kernel_occupancy(kernels: dict, facts) -> None:
    """Kernel records gain `occupancy`: arch -> the figure at its launches (the lowest, with
    several), else at its `__launch_bounds__`, else the best over the block sizes it may be
    launched with; `basis` says which (launch | launch_bounds | best)."""
    from occlint.facts import primary_limiter

    worst: dict[tuple, object] = {}
    for site in facts.sites:
        k = site.facts.kernel
        if site.occ is None or site.usage is None or k.path != facts.path:
            continue
        key = ((k.span.line, k.span.column), site.arch)
        if key not in worst or site.occ.occupancy < worst[key].occ.occupancy:
            worst[key] = site
    for (where, arch), site in sorted(worst.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rec = kernels.get(where)
        if rec is None:
            continue
        occ = site.occ
        rec.setdefault("occupancy", {})[arch] = {
            "occupancy": round(occ.occupancy, 4), "block_size": site.block,
            "active_blocks": occ.active_blocks,
            "limiter": primary_limiter(occ, site.usage is not None), "basis": site.basis,
            "instantiation": site.label,
            "bounds_from": None if site.bounds is None or not site.bounds.max_threads else
            ("cubin" if site.bounds_from_cubin else "source")}


def _compile(files: list[str], args, config):
    """(UsageReport, its archs) of the CUDA files; (None, ()) with --no-compile or no file (the
    compiler's modules, and the GPU table, are not even imported: the config has checked `arch`
    and `gpu`)."""
    if not files or args.no_compile:
        return None, ()
    from occlint.python import is_python
    from occlint.toolchain import collect_usage, print_notice

    # units and headers, as `check` compiles them (a header alone through its includers)
    report = collect_usage([f for f in files if not is_python(f)], config, jobs=config.jobs,
                           extra_entries=_extension_entries(files, config))
    print_notice(report)
    return report, tuple(report.archs)


def _extension_entries(files: list[str], config) -> list[dict]:
    """The compile-database entries the run's setup.py files and its Python files'
    `load(...)` calls give its CUDA files, as `check` reads them (engine._collect)."""
    from occlint.python import build_entries, is_python

    return build_entries(config.root, [f for f in files if not is_python(f)],
                         [f for f in files if is_python(f)], config)


def _extensions(files: list[str], config):
    """The torch extensions' entries of a listing that compiles nothing, as a Database (or
    None): what the compiles would read them with."""
    from occlint.python import entries_database

    return entries_database(_extension_entries(files, config))


def _python_files(paths: list[str], texts: dict, config, compile: bool) -> dict[str, tuple]:
    """path -> (text, its model, usages by module index) for each Python file that compiles
    CUDA: extracted once (the listing's processes inherit the models) and, unless --no-compile,
    compiled as `check` compiles it. What `check` would say of a file (a part it could not
    evaluate, a compile error at its call) is said here."""
    from occlint.python import compiled, might_have_cuda

    cache = None
    out = {}
    for path in paths:
        try:
            text = texts[path].decode("utf-8-sig")
        except (AttributeError, UnicodeDecodeError):
            continue            # unreadable (the listing says so) or not a Python source
        if not might_have_cuda(text):
            continue
        # libcst (~0.15 s to import) only once a file names a compile call
        from occlint.python.extract import extract
        from occlint.python.lint import notices_for

        if compile and cache is None and not config.no_cache:
            from occlint.toolchain.cache import Cache, cache_dir
            cache = Cache(cache_dir(config))
        model = extract(text, path)
        notices = notices_for(model)
        usage: dict = {}
        if compile:
            usage, errors, said = compiled(model, text, path, config, cache)
            notices += [n for n in said if n not in notices]
            said_here: set[str] = set()
            for mod in model.modules:
                place = _error_places(text, model, mod) if errors.get(mod.index) else None
                for err in errors.get(mod.index, ()):
                    line = (f"occlint: warning: {display_path(path, '.')}:{place(err.line)}: "
                            f"{err.compiler} ({err.arch}): {err.message}")
                    if line not in said_here:       # each at its line of the string, once
                        said_here.add(line)
                        print(line, file=sys.stderr)
        for notice in notices:
            print(f"occlint: notice: {notice}", file=sys.stderr)
        out[path] = (text, model, usage)
    return out


def _error_places(text: str, model, mod):
    """place(line) -> `line:column` in the .py file of a compile error at `line` of module
    `mod`'s CUDA string, as `check` places its OCC900; the compile call when the error has no
    line. The string's virtual text is built once per module, not once per error."""
    from occlint.python import _line_col
    from occlint.python.lint import build_virtual, python_offset

    at_call = _line_col(text, mod.offset)
    if mod.code is None:
        return lambda _line: at_call
    v = build_virtual(model, mod)
    starts = _line_starts(v.text)

    def place(line: int | None) -> str:
        if not line or line > len(starts) or starts[line - 1] >= v.code_len:
            return at_call
        return _line_col(text, python_offset(v, starts[line - 1]))
    return place


def _line_starts(text: str) -> list[int]:
    return [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]


def _python_records(text: str, model, usages: dict, compiled: bool, config, archs) -> list[dict]:
    """The records of a Python file's CUDA strings, at their places in the .py file. Each string
    is parsed as `check` lints it (its text, then a host function with the file's Python
    launches of its kernels: python.lint.build_virtual) and gets its own compiler figures."""
    from occlint.fix import make_span
    from occlint.python.lint import HOST, build_virtual, python_offset
    from occlint.source import parse

    calls = {ln.start: ln for ln in model.launches}
    out = []
    for mod in model.modules:
        if mod.code is None:
            continue
        v = build_virtual(model, mod)
        sf = parse(v.text, model.path)
        recs = records(sf)
        mine = usages.get(mod.index, [])
        if mine:
            add_compiler_figures(recs, sf, mine, config, archs)
        measured = {u.kernel.split("::")[-1] for u in mine}
        bounds = _bounds(recs)
        starts = _line_starts(v.text)
        for r in recs:
            at = python_offset(v, starts[r["line"] - 1] + r["column"] - 1)
            if r["kind"] == "launch" and r["function"] == HOST and at in calls:
                ln = calls[at]                  # a Python call: its own words, not the C++ text
                r.update(function=None, launch_kind=ln.style, grid_text=_arg(ln.grid),
                         block_text=_arg(ln.block), dynamic_smem_text=_arg(ln.shared),
                         call_text=" ".join(text[ln.start:ln.end].split()))
            if r["kind"] == "launch":
                r["no_occupancy"] = why_no_occupancy(
                    r, bool(mine), measured, bounds,
                    "its CUDA string was not compiled: the notice at its compile call says why"
                    if compiled else NOT_COMPILED)
            span = make_span(text, at, at)
            r["line"], r["column"] = span.line, span.column
            for index in r.get("indices", ()):
                at = python_offset(v, starts[index["line"] - 1])
                index["line"] = make_span(text, at, at).line
        out += recs
    return out


def _arg(arg) -> str:
    """A Python launch argument as written (a 1-tuple's `256,` as `256`)."""
    return " ".join(arg.source.split()).rstrip(",").strip()


MIN_SHARE_BYTES = 256 << 10        # a listing this large is shared among processes (jobs)
PIECES_PER_JOB = 8                 # taken one by one: a process that finishes early takes more


def _shares(files: list[str], sizes: list[int], jobs: int | None
            ) -> tuple[list[list[str]], int, list[list[int]]]:
    """(`files` in consecutive runs, how many processes share them, the runs' numbers in one
    region per process): one run when the listing is small, else `files` cut into one region
    of about equal bytes per process (a folder's files, which share headers, stay in one
    process: each process parses and walks the headers of its own files), each cut into
    PIECES_PER_JOB runs that shrink from first to last (the first five times the last), so the
    runs a process that finished early takes from another's region at the end are small and
    the processes finish close together."""
    total = sum(sizes)
    workers = max(1, min(jobs or os.cpu_count() or 1, total // MIN_SHARE_BYTES, len(files)))
    if workers == 1:
        return [list(files)], 1, [[0]]
    shares: list[list[str]] = []
    regions: list[list[int]] = []
    start, done = 0, 0                      # (done: the bytes of files[:start])
    for k in range(workers):
        end = start
        goal = total * (k + 1) / workers
        while end < len(files) - (workers - 1 - k) and (
                k == workers - 1 or end == start or done < goal):
            done += sizes[end]
            end += 1
        first = len(shares)
        shares += _pieces(files[start:end], sizes[start:end], PIECES_PER_JOB)
        regions.append(list(range(first, len(shares))))
        start = end
    return shares, workers, regions


def _pieces(files: list[str], sizes: list[int], n: int) -> list[list[str]]:
    """`files` in at most `n` consecutive runs whose bytes shrink linearly, 5 to 1."""
    n = min(n, len(files))
    total = sum(sizes)
    weights = [4 * (n - k) + n for k in range(n)]              # 5n down to n + 4, linearly
    ends, acc = [], 0
    for w in weights:
        acc += w
        ends.append(acc * total / sum(weights))
    runs: list[list[str]] = [[] for _ in range(n)]
    done, k = 0, 0
    for i, (f, size) in enumerate(zip(files, sizes)):
        while k < n - 1 and runs[k] and (done >= ends[k] or len(files) - i == n - 1 - k):
            k += 1                          # the next run: this one is full, or each run
        runs[k].append(f)                   # left needs one of the files left
        done += size
    return [r for r in runs if r]


def _read_all(files: list[str]) -> dict[str, bytes | str]:
    """path -> its bytes, or the error line when it cannot be read."""
    from occlint.files import read_regular

    texts: dict[str, bytes | str] = {}
    for path in files:
        try:
            texts[path] = read_regular(path)
        except OSError as exc:
            texts[path] = f"cannot read {path}: {exc.strerror or exc}"
    return texts


def _indented(value, indent: str) -> str:
    """json.dumps(value, indent=1) at nesting `indent`, the same text in a third of the time
    (json's indented encoder is pure Python; the strings go through its C escaper)."""
    if isinstance(value, str):
        return _escape(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    inner = indent + " "
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        if not value:
            return "{}"
        return "{\n" + ",\n".join(f"{inner}{_escape(k)}: {_scalar(v) or _indented(v, inner)}"
                                    for k, v in value.items()) + f"\n{indent}}}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + (_scalar(v) or _indented(v, inner))
                                    for v in value) + f"\n{indent}]"
    return json.dumps(value, indent=1).replace("\n", "\n" + indent)    # floats and the rest


def _scalar(value) -> str:
    """A string, int, bool or None as JSON; "" for anything else (most of a record's values:
    written here without a call of `_indented` each)."""
    kind = value.__class__
    if kind is str:
        return _escape(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    return ""


def _file_records(path: str, texts: dict, views: dict, config, report, all_usage, archs,
                  failed: set[str], python: dict | None,
                  memo: dict) -> list[dict]:
    """A file's records with the figures `check` would lint it with (engine.usage_of: its own
    unit's, a header's includers'), never another unit's kernel of the same name."""
    from occlint.python import is_python
    from occlint.source import parse

    if is_python(path):
        entry = (python or {}).get(path)
        return _python_records(*entry, report is not None, config, archs) if entry else []
    sf = parse(texts[path], path, views.get(path))
    try:
        return _records_of(sf, path, texts, config, report, all_usage, archs, failed, memo)
    finally:
        from occlint.source.build import release
        release(sf)


def _records_of(sf, path, texts, config, report, all_usage, archs, failed, memo) -> list[dict]:
    recs = records(sf)
    if report is not None:      # (the engine's import is a listing's own cost without nvcc)
        from occlint.engine import borrowed_usage, usage_of
    mine = usage_of(path, report.usages, report, all_usage) if report is not None else []
    failed_here = report is not None and os.path.realpath(path) in failed
    headers = _defining_headers(sf, path, report, memo) if report is not None else []
    if report is not None and not failed_here:
        # a kernel another unit compiled (engine.borrowed_usage), that neither this file nor
        # its headers define and that it launches
        defined = {k.name for f in (sf, *headers) for k in f.kernels if k.is_definition}
        launched = {ln.callee.split("::")[-1] for ln in sf.launches}
        mine = mine + [u for u in borrowed_usage(path, texts[path], mine, report, defined)
                       if u.kernel.split("::")[-1] in launched]
    if mine:
        add_compiler_figures(recs, sf, mine, config, archs, headers)
    measured = {u.kernel.split("::")[-1] for u in mine}
    bounds = _bounds(recs)
    unmeasured = NOT_COMPILED if report is None else COMPILE_FAILED if failed_here else NO_FIGURES
    if unmeasured == NO_FIGURES and not mine and report.errors:
        stopped = _failed_includers(path, report, texts)
        if stopped:
            unmeasured = INCLUDER_FAILED.format(
                ", ".join(f"`{u}`" for u in stopped[:3]) +
                (f" and {len(stopped) - 3} more" if len(stopped) > 3 else ""),
                "which includes" if len(stopped) == 1 else "which include")
    pointers = _pointer_callees(sf)
    templates = {k.name for f in (sf, *headers) for k in f.kernels
                 if k.template_params and k.is_definition}
    for r in recs:
        if r["kind"] == "launch":
            r["no_occupancy"] = pointers.get((r["line"], r["column"])) or \
                why_no_occupancy(r, bool(mine), measured, bounds, unmeasured, templates,
                                 failed=report is not None and unmeasured != NO_FIGURES)
            nowhere = _defined_nowhere(sf, r) \
                if r["no_occupancy"] == NOT_CONSTANT.format(r["block_text"]) else None
            if nowhere == r["block_text"]:
                r["no_occupancy"] = DEFINED_NOWHERE.format(nowhere)
            elif nowhere:
                r["no_occupancy"] = DEFINED_NOWHERE_VIA.format(r["block_text"], nowhere)
            elif r["no_occupancy"] == PARAMETER.format(r["block_text"], r["function"]) and \
                    not _called_here(sf, r):
                r["no_occupancy"] = PARAMETER_UNCALLED.format(r["block_text"], r["function"])
    return recs


PARAMETER = ("the block size `{}` is a parameter of `{}`, and not every call of it in this file "
             "passes a constant (a call from another file is not read)")
PARAMETER_UNCALLED = ("the block size `{}` is a parameter of `{}`, which this file does not call "
                      "(another file's call is read only for a dim3 block, in a file beside "
                      "this one that includes the header of its name)")


def _called_here(sf, r: dict) -> bool:
    """Does the file call the launching function `r["function"]` (by its last name)?"""
    from occlint.source.build import parsed_for
    from occlint.source.values import calls_of

    ctx = parsed_for(sf).ctx
    name = (r["function"] or "").split("::")[-1]
    return ctx is None or not name or bool(calls_of(ctx, name.encode()))


NOT_CONSTANT = "the block size `{}` is not a compile-time constant"
DEFINED_NOWHERE = ("the block size `{}` is defined nowhere occlint looked (this file, the project "
                   "headers it includes, the compile flags): if a header defines it, add that "
                   "header's folder to `include-dirs`")


def _defined_nowhere(sf, r: dict) -> str | None:
    """The name no macro, constant or enumerator of the file, its project headers or flags
    defines that the launch's block is (DeepSpeed: a macro of a header occlint did not find),
    directly or as a local declared once from it (cudpp: `unsigned nThreads = CTA_THREADS;`,
    `dim3 threads(CTA_THREADS, 1, 1)`). None when the file's code (comments and strings
    aside) writes that name anywhere but there and in launch configurations."""
    from occlint.source.build import parsed_for
    from occlint.source.text import blank_noise

    name = r["block_text"]
    ctx = parsed_for(sf).ctx
    if ctx is None or not re.fullmatch(r"[A-Za-z_]\w*", name or ""):
        return None
    tx = ctx.tx
    launch = next((la for la in sf.launches if (la.span.line, la.span.column) ==
                   (r["line"], r["column"])), None)
    scope = ctx.scope_of(tx.byte_offset(launch.span.start)) if launch is not None else None
    target = name.encode()
    local = ctx.local(scope, target) if scope is not None else None
    if local is not None:       # a local declared once from one name the file does not declare
        if len(local.decls) != 1 or local.written:
            return None
        decl = local.decls[0][1]
        value = decl.child_by_field_name("value") if decl.type == "init_declarator" else \
            decl.child_by_field_name("parameters") if decl.type == "function_declarator" else None
        if value is None:
            return None
        words = {w for w in re.findall(rb"[A-Za-z_]\w*(?!\w|\s*[(<:])", blank_noise(value.text))
                 if w not in _NOT_NAMES and ctx.local(scope, w) is None}   # (no call, type)
        text = re.sub(rb"\bdim3\b|\bstatic_cast\s*<[\w\s]*>", b"", blank_noise(value.text))
        if re.search(rb"[A-Za-z_]\w*\s*\(|[^\w\s(),*+/-]", text):
            return None         # a call's value (`getThreads()`), a choice, an element: no name
        if len(words) != 1:
            return None
        target = words.pop()
    code = blank_noise(ctx.data)
    root = ctx.tree.root_node
    for m in re.finditer(rb"\b" + re.escape(target) + rb"\b", code):
        node = root.descendant_for_byte_range(m.start(), m.end())
        if node is None or _declares(node):
            return None         # the file declares or assigns it
    env = ctx.env
    if target in env.macros or target in env.fmacros or env.globals.get(target) or \
            env.enums.get(target):
        return None
    word = re.compile(rb"\b" + re.escape(target) + rb"\b")     # a local of a launch macro's body
    if any(word.search(body) for defs in dict.values(env.fmacros) for _params, body in defs
           if b"<<<" in body):      # (pulsar's `unsigned num_threads = ...;`)
        return None
    return target.decode("utf-8", "replace")


def _declares(node) -> bool:
    """Is this occurrence of a name its declaration (a variable, parameter, field, enumerator,
    macro) or an assignment to it?"""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "assignment_expression":
        return parent.child_by_field_name("left") == node
    if parent.type == "init_declarator":
        return parent.child_by_field_name("declarator") == node
    return parent.type in _DECLARING


_DECLARING = frozenset(("declaration", "parameter_declaration", "optional_parameter_declaration",
                        "pointer_declarator", "array_declarator", "reference_declarator",
                        "function_declarator", "field_declaration", "enumerator", "preproc_def",
                        "preproc_function_def", "type_definition", "alias_declaration"))
_NOT_NAMES = frozenset((b"dim3", b"static_cast", b"int", b"unsigned", b"long", b"size_t",
                        b"const", b"constexpr", b"auto", b"uint", b"uint32_t", b"int32_t"))
DEFINED_NOWHERE_VIA = ("the block size `{}` is `{}`, which is defined nowhere occlint looked (this "
                       "file, the project headers it includes, the compile flags): if a header "
                       "defines it, add that header's folder to `include-dirs`")


def _failed_includers(path: str, report, texts: dict) -> list[str]:
    """The units whose compile failed that include `path` (a header with no figures: nvcc
    stopped before it in each of them; xgboost's device_helpers.cuh, every includer missing
    dmlc-core), as given."""
    from occlint.engine import include_line, read_text
    from occlint.errors import OcclintError

    out = []
    for unit in dict.fromkeys(e.unit for e in report.errors if e.unit):
        if os.path.realpath(unit) == os.path.realpath(path):
            continue
        text = texts.get(unit)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if text is None:
            try:
                text = read_text(unit)
            except (OSError, ValueError, OcclintError):
                continue
        if include_line(text, unit, path) is not None:
            out.append(unit)
    return out


def _defining_headers(sf, path: str, report, memo: dict) -> list:
    """The parsed project headers the unit `path` includes that define a kernel it launches
    but does not define itself (a template's `__launch_bounds__` and instantiations are read
    there, as `check` reads them). Each header is parsed once per process (`memo`)."""
    from occlint.link import find_kernel
    from occlint.source import parse
    from occlint.source.preproc import read_header
    from occlint.toolchain.includers import user_files

    wanted = {ln.callee.split("::")[-1] for ln in sf.launches
              if (k := find_kernel(sf, ln)) is None or not k.is_definition}
    deps = report.includes.get(path) or report.includes.get(os.path.realpath(path)) or ()
    if not wanted or len(deps) < 2:
        return []
    parsed = memo.setdefault("headers", {})
    out = []
    for dep in user_files(deps[1:], report.nvcc):
        if dep not in parsed:       # (read once per run, a regular file only)
            data = read_header(dep) or b""
            parsed[dep] = parse(data, dep) if b"__global__" in data else None
        got = parsed[dep]
        if got is not None and any(k.is_definition and k.name in wanted for k in got.kernels):
            out.append(got)
    return out


def _a_variable(ctx, fn, name: str, named: bool) -> bool:
    """Is a driver-API launch's callee its CUfunction variable (a parameter or local of the
    launching function, or one `cuModuleGetFunction` fills), not the kernel name read for it?"""
    word = re.escape(name.encode())
    return named or ctx.local(fn.start_byte, name.encode()) is not None or re.search(
        rb"cuModuleGetFunction\s*\(\s*&?\s*" + word + rb"\b", ctx.tx.data) is not None or \
        re.search(rb"\bCUfunction\b[^;]*\b" + word + rb"\b", ctx.tx.data) is not None


def _pointer_callees(sf) -> dict[tuple[int, int], str]:
    """(line, column) -> why, for the launches whose callee is a variable of the launching
    function (a function-pointer parameter: `void bench(void (*kernel)(int*), ...) {
    kernel<<<g, b>>>(d); }`) or one of its template parameters (`template <auto kernel>`),
    which occlint does not follow to a kernel."""
    from occlint.link import find_kernel
    from occlint.source.build import parsed_for

    out = {}
    ctx = None
    for la in sf.launches:             # (chevrons and launch API calls alike)
        name = la.callee
        if "::" in name or not name or find_kernel(sf, la) is not None:
            continue
        element = "[" in name                   # `fpDeriv[fp]<<<...>>>`: an array's element
        name = name.split("[", 1)[0].strip()
        ctx = ctx or parsed_for(sf).ctx
        start = la.span.start if ctx.tx.ascii else len(sf.text[:la.span.start].encode())
        at = ctx.tx.data.find(name.encode(), start)
        fn = ctx.function_at(at) if at >= 0 else None
        if fn is None:
            continue
        params = fn.child_by_field_name("declarator")
        params = params.child_by_field_name("parameters") if params is not None else None
        named = params is not None and re.search(rb"\b" + re.escape(name.encode()) + rb"\b",
                                                 params.text) is not None
        if element:
            out[(la.span.line, la.span.column)] = (
                f"`{la.callee}` is an element of `{name}`, an array of function pointers, "
                "which occlint does not follow to a kernel")
        elif la.kind.startswith("cuLaunch") and not _a_variable(ctx, fn, name, named):
            continue                # the kernel cuModuleGetFunction named: its usual reason
        elif la.kind.startswith("cuLaunch"):
            from occlint.source.launches import _module_function
            loaded = _module_function(ctx.tx.data, name.encode())
            out[(la.span.line, la.span.column)] = (
                f"`{name}` is the kernel `{loaded}` (cuModuleGetFunction), which no CUDA file of "
                "this folder defines: one compiled at run time (a string NVRTC compiles, a "
                "module from elsewhere) is not measured" if loaded else
                f"`{name}` is a CUfunction whose kernel occlint reads only from "
                f"`cuModuleGetFunction(&{name}, module, \"name\")` in this file (with a name "
                "written as a string)")
        elif not named and name.encode() in ctx._template_names(fn):
            out[(la.span.line, la.span.column)] = (     # ThunderKittens' bind_kernel<kernel>
                f"`{name}` is a template parameter of `{la.function or 'its function'}` (the "
                "kernel each instantiation names), which occlint does not follow to a kernel")
        elif named or ctx.local(fn.start_byte, name.encode()) is not None:
            out[(la.span.line, la.span.column)] = (
                f"`{name}` is a variable of `{la.function or 'its function'}` (a function "
                "pointer), which occlint does not follow to a kernel")
    return out


def _listing(share: list[str], files: list[str], texts: dict, config, report, all_usage,
             archs, as_json: bool, memo: dict, python: dict | None = None,
             extra=None) -> list:
    """The output of each file of `share` (strings: it may come from a forked process): its
    records as `--json` lists them or as lines, each file parsed with its View among all the
    run's `files` (`memo`: what the views of this process's earlier shares found; `python`:
    `_python_files`' entries; `extra`: the torch extensions' entries, `source_views`'). A file
    whose listing failed inside occlint is {"error": line}."""
    from occlint.toolchain.flags import source_views

    includes = report.includes if report is not None else None
    views = source_views(files, config, includes, only=share, memo=memo, extra=extra)
    failed = report.failed_paths if report is not None else frozenset()
    out: list = []
    for path in share:
        try:
            recs = _file_records(path, texts, views, config, report, all_usage, archs,
                                 failed, python, memo)
        except Exception as exc:    # one file's failure is its error line; the others are listed
            if os.environ.get("OCCLINT_DEBUG"):
                raise
            from occlint.engine import internal_error
            out.append({"error": internal_error(path, exc)})
            continue
        if as_json:     # as json.dump(all records, indent=1) writes each: one level in
            out.append(",\n".join(" " + _indented(r, " ") for r in recs))
        else:
            out.append("".join(format_record(r) + "\n" for r in recs))
    return out


def run(args) -> int:
    from occlint.source.preproc import one_run

    with one_run():         # the files are read once each for the whole listing
        return _run(args)


def _run(args) -> int:
    config = load(args)
    files, errors = discover(args.paths, config)
    report, archs = _compile(files, args, config)
    from occlint.python import is_python, names_a_compile

    texts = _read_all(files)
    python = _python_files([f for f in files if is_python(f)], texts, config, report is not None)
    if python and report is not None:       # the archs its strings were compiled for, too
        from occlint.python import archs as python_archs
        archs = tuple(dict.fromkeys((*archs, *python_archs(config))))
    all_usage = [u for us in report.usages.values() for u in us] if report else []
    said: set[str] = set()
    for err in report.errors if report else []:   # listed, not fatal: `check` reports OCC900
        where = display_path(err.path, ".") + (f":{err.line}" if err.line else "")
        line = f"occlint: warning: {where}: {err.compiler}: {err.message}"
        if line not in said:        # once, not once per arch and includer (apex: 784 times)
            said.add(line)
            print(line, file=sys.stderr)
    from occlint.process import fork_map
    from occlint.source.grammar import may_hold_constructs
    from occlint.source.preproc import remember
    for path, data in texts.items():      # read_header answers with these, in every copy
        if isinstance(data, bytes):
            remember(os.path.abspath(path), data)
    # a file without the words a kernel, a shared array, a launch or an API call is written
    # with, or a header's macro for one, lists nothing: it is not parsed (a third of a
    # typical project's files). The headers' macros are read by the process that lists it.
    from occlint.toolchain.includers import uses_included_macro
    parsed = [f for f in files if isinstance(texts[f], bytes) and
              (not is_python(f) or names_a_compile(texts[f]))]
    macros: dict = {}
    memo: dict = {}

    # a unit a setup.py builds is read with its flags (`include_dirs`), as it is compiled
    extra = report.extensions if report is not None else _extensions(files, config)

    def listing(share: list[str]) -> list:
        kept = [f for f in share if is_python(f) or may_hold_constructs(texts[f])
                or uses_included_macro(f, texts[f], macros)]
        got = dict(zip(kept, _listing(kept, files, texts, config, report, all_usage, archs,
                                      args.json, memo, python, extra)))
        return [got.get(f) for f in share]

    shares, workers, regions = _shares(parsed, [len(texts[f]) for f in parsed], config.jobs)
    if workers > 1:     # loaded once, before the copies fork
        import occlint.link  # noqa: F401    (the records' kernel lookup)
        from occlint.source.grammar import load_parser
        from occlint.toolchain.flags import source_views  # noqa: F401
        load_parser()
    found = dict(zip(parsed, (text for part in fork_map(listing, shares, workers, regions)
                              for text in part)))
    parts = []
    for path in files:
        if isinstance(texts[path], str):
            errors.append(texts[path])
        elif isinstance(found.get(path), dict):
            errors.append(found[path]["error"])
        elif found.get(path):
            parts.append(found[path])
    if args.json:
        sys.stdout.write("[\n" + ",\n".join(parts) + "\n]\n" if parts else "[]\n")
    else:
        sys.stdout.write("".join(parts))
    for e in errors:
        print(f"occlint: error: {e}", file=sys.stderr)
    return 2 if errors else 0
