"""The linter: `lint_source` (pure: text, usage, config in; Findings out) and `lint_paths` (I/O).

`lint_source` never spawns nvcc or touches the disk, so the CLI, the tests and the language
server all call the same function. `lint_paths` discovers files, reads them, asks the toolchain
for usage once for all sources, scans build files for OCC040 and lints every file.

Findings from several target archs are reported one per arch (each carries its `arch`);
arch-independent rules (block shape, grid, build files) report once with `arch` None.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from occlint import record
from occlint.config import Config
from occlint.errors import OcclintError
from occlint.model import CompileError, Finding, Fix, SourceFile, Usage
from occlint.record import dataclass, field

if TYPE_CHECKING:
    from occlint import checks
# the rules (checks, facts, aggregate: ~16 ms of imports) load when a file is linted, not when
# its findings come from the findings cache



@dataclass
class LintResult:
    """What a run found, read and compiled."""

    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)          # every file linted
    notices: list[str] = field(default_factory=list)        # e.g. "nvcc not found: ..."
    errors: list[str] = field(default_factory=list)         # files that could not be read
    sources: dict[str, str] = field(default_factory=dict)   # path -> text (for emitters, --fix)
    # what the files were linted with, for the HTML report (occlint.report rebuilds the facts)
    config: Config | None = None
    project: object = None                                       # occlint.project.Project
    usage: dict[str, list[Usage]] = field(default_factory=dict)  # CUDA path -> usage linted with
    compiled: int = 0            # compiles run (compile cache misses)
    cached: int = 0              # compile results taken from the cache
    reused: bool = False         # the CUDA files' findings came from the findings cache


# --- findings --------------------------------------------------------------------------------------


def to_finding(hit: checks.Hit, path: str, group: Sequence[checks.Hit] = ()) -> Finding:
    """One Finding for `hit`; `group`: the hits it stands for when aggregate.merge folded several."""
    from occlint import aggregate, checks, registry
    rule = registry.RULES[hit.code]
    fix = None
    if hit.fix is not None and hit.fix.edits:
        title = registry.render_fix_title(hit.code, hit.fix.variant, **hit.fix.values)
        fix = Fix(title, tuple(hit.fix.edits), hit.fix.applicability)
    message = aggregate.label_message(
        registry.render(hit.code, hit.variant, **hit.values) + checks.notes(hit.values), hit)
    return Finding(code=hit.code, name=rule.name, message=message,
                   path=path, span=hit.span, severity=rule.severity, fix=fix, arch=hit.arch,
                   kernel=hit.kernel, url=rule.url, data=_data(hit),
                   instances=tuple(_instance(h) for h in (group or (hit,))))


def _data(hit: checks.Hit) -> dict:
    return {k: (float(v) if isinstance(v, float) else v if isinstance(v, (int, type(None))) else str(v))
            for k, v in hit.values.items()}


def _instance(hit: checks.Hit) -> dict:
    """One cause a finding stands for: its kernel (with template arguments), arch, place (a
    finding merged across lines stands for several) and message."""
    from occlint import registry
    return {**_data(hit), "kernel": hit.values.get("kernel", hit.kernel), "arch": hit.arch,
            "line": hit.span.line, "column": hit.span.column,
            "message": registry.render(hit.code, hit.variant, **hit.values)}


def finalize(hits: Sequence[checks.Hit], text: str, path: str) -> list[Finding]:
    """Hits -> Findings, minus suppressions, one per (line, code, arch) (occlint.aggregate),
    sorted by (line, column, code, arch)."""
    from occlint import aggregate, noqa
    silenced = noqa.read(text)
    kept = [h for h in hits if not noqa.suppressed(h.code, (h.span.line, *h.noqa_lines), silenced)]
    findings = [to_finding(hit, path, group) for hit, group in aggregate.merge(kept)]
    findings.sort(key=lambda f: (f.span.line, f.span.column, f.code, f.arch or ""))
    return findings


def lint_source(text: str, path: str, usage: Sequence[Usage], config: Config, *,
                source: SourceFile | None = None, compile_errors: Sequence[CompileError] = (),
                project: Sequence[SourceFile] = (),
                failed_archs: frozenset[str] = frozenset()) -> list[Finding]:
    """Lint one CUDA source: pure, no I/O. Findings sorted, suppressions applied, fixes attached.

    `project` (optional): the other parsed files of the run, so that a launch of a kernel defined
    in a header is evaluated with the header's `__launch_bounds__` and `__shared__` arrays.
    `failed_archs`: the archs its own compile failed for although its errors are reported in
    another file of the run (a header it includes).
    """
    return analyse(text, path, usage, config, source=source, compile_errors=compile_errors,
                   project=project, failed_archs=failed_archs)[1]


def analyse(text: str, path: str, usage: Sequence[Usage], config: Config, *,
            source: SourceFile | None = None, compile_errors: Sequence[CompileError] = (),
            project: Sequence[SourceFile] = (), failed_archs: frozenset[str] = frozenset()):
    """(Facts, Findings) for one CUDA source, as `lint_source`: the language server keeps the
    facts for hover instead of building them again."""
    if source is None:
        from occlint.source import parse
        source = parse(text, path)
    from occlint import checks, registry
    from occlint.facts import build_facts
    from occlint.toolchain.flags import archs_for
    archs = archs_for(config, usage=usage)
    facts = build_facts(source, usage, config, archs, compile_errors, project, failed_archs)
    hits: list[checks.Hit] = []
    for code, fn in checks.checks_of("source").items():
        if registry.is_enabled(code, config, path):
            hits.extend(fn(facts))
    return facts, finalize(hits, text, path)


def internal_error(path: str, exc: BaseException) -> str:
    """The error line for a file whose analysis failed inside occlint (a bug): the run goes on
    with the other files and exits 2."""
    from occlint.errors import described
    return (f"{path}: internal error while analysing it: {described(exc)} (set "
            "OCCLINT_DEBUG=1 for a traceback and please report it; the other files were checked)")


def lint_build_file(text: str, path: str, config: Config) -> list[Finding]:
    """The build-file checks (OCC040) for one CMakeLists.txt, Makefile, setup.py, pyproject.toml
    or compile_commands.json: pure, like `lint_source`."""
    from occlint import checks, registry
    from occlint.facts import build_file_facts
    wanted = {code: fn for code, fn in checks.checks_of("build").items()
              if registry.is_enabled(code, config, path)}
    if not wanted:
        return []
    facts = build_file_facts(text, path, config)
    return finalize([hit for fn in wanted.values() for hit in fn(facts)], text, path)


# --- paths -----------------------------------------------------------------------------------------


def read_text(path: str) -> str:
    """A regular file's text (a BOM dropped); OcclintError with one clear line when it cannot be
    read or is not a regular file (a FIFO or device would block). Bytes that are not UTF-8
    (Latin-1 comments) decode as U+FFFD, one character each, so positions stay right;
    `fix.write_fixed` refuses to write such a file."""
    from occlint.files import decode, read_regular

    try:
        data = read_regular(path)
    except OSError as exc:
        raise OcclintError(f"{path}: cannot read: {exc.strerror or exc}; file skipped") from None
    return decode(data)


def usage_of(path: str, usage: Mapping[str, Sequence[Usage]], report,
             all_usage: Sequence[Usage]) -> list[Usage]:
    """The compiler figures one file is analysed with (`check` and `kernels`): its unit's; a
    header's, those of the units that read it in this run (`report`: the compiler's dependency
    lists); with recorded usage only (sidecars), a header gets every unit's. Never another
    unit's kernel of the same name (cuda-samples has a dozen `testKernel`s)."""
    from occlint.discover import is_header

    found = _lookup(usage, path)
    if not found and report is not None:
        found = list(report.usage_for(path))
    elif not found and is_header(path):
        found = list(all_usage)
    return found


def borrowed_usage(path: str, text: str | bytes, own: Sequence[Usage], report,
                   defined: frozenset[str] | set[str] = frozenset()) -> list[Usage]:
    """Figures of kernels another unit compiled that `path` names without compiling them
    itself: a template its header declares and another unit instantiates (bitsandbytes'
    ops.cu launches what kernels.cu instantiates), a kernel of an `-rdc` program's other unit.
    Only names exactly one unit has, or exactly one unit of the file's own folder (never a
    same-named kernel of two units there), none the file defines itself (`defined`: llm.c's
    matmul.cuh and dev/cuda's copy of its kernel), and none for a file whose own compile
    failed."""
    if report is None or not report.usages or os.path.realpath(path) in report.failed_paths:
        return []
    unique = report.unique_kernels
    mine = {u.kernel.split("::")[-1] for u in own}
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    named = {w.decode() for w in re.findall(rb"[A-Za-z_]\w*", data)} - mine - set(defined)
    out = [u for name in sorted(named & unique.keys()) for u in unique[name]]
    # a name several units have, one of them in the file's own folder (cuda-samples'
    # vectorAddDrv.cpp loads VecAdd_kernel from its folder's vectorAdd_kernel.cu; two other
    # samples have one): that unit's
    beside = report.kernels_by_folder.get(os.path.dirname(os.path.realpath(path)), {})
    for name in sorted((named & beside.keys()) - unique.keys()):
        if len(beside[name]) == 1:
            out += [u for u in report.usages[beside[name][0]] if u.kernel.split("::")[-1] == name]
    return out


def _lookup(usage: Mapping[str, Sequence[Usage]], path: str) -> list[Usage]:
    for key in (path, os.path.abspath(path), os.path.realpath(path)):
        if key in usage:
            return list(usage[key])
    return []


def lint_paths(paths: Sequence[str], config: Config, *, usage: Mapping[str, Sequence[Usage]] | None = None,
               jobs: int | None = None, includes: Sequence[str] = (), reuse: bool = False) -> LintResult:
    """Discover, read, compile (when `usage` is None) and lint every file under `paths`.
    `includes`: files the units include (with `usage` from sidecars: their dependency lists).
    `reuse`: take the CUDA files' findings from the findings cache (occlint.results) when
    nothing they came from changed; `result.project` is then None."""
    from occlint.source.preproc import one_run

    with one_run():         # a header is read once for the run, however many files include it
        return _lint_paths(paths, config, usage, jobs, includes, reuse)


def _lint_paths(paths, config, usage, jobs, includes, reuse) -> LintResult:
    from occlint.discover import discover

    result = LintResult()
    python: list[str] = []
    sources, builds = discover(paths, config, python)
    texts: dict[str, str] = {}
    for path in [*sources, *builds]:
        try:
            texts[path] = read_text(path)
        except OcclintError as exc:
            result.errors.append(str(exc))
    cuda = [p for p in sources if p in texts]
    errors_by_file: dict[str, list[CompileError]] = {}
    report = None
    if usage is None:
        report = _collect(cuda, config, jobs, result, python, {p: texts[p] for p in cuda})
        usage = dict(report.usages) if report else {}
        errors_by_file = errors_by_file_of(report.errors if report else [], cuda, texts)
    per_unit = not config.arch and report is not None and bool(report.unit_archs)
    all_usage = [u for us in usage.values() for u in us]
    if not config.arch:      # decided once for the run: every file evaluates the same archs
        from occlint.toolchain.flags import archs_for
        archs = report.archs if report is not None and report.archs else archs_for(config, usage=all_usage)
        config = record.replace(config, arch=tuple(archs))
    from occlint.project import Project
    from occlint.toolchain.flags import source_views
    from occlint.toolchain.includers import user_files
    # the units a header given alone was compiled through are read too: their launches of its
    # kernels count (a header alone said "no constant launch" for one its includer launches)
    deps = [*user_files(includes), *(report.project_files() if report is not None else ()),
            *(report.borrowed if report is not None else ())]
    included = _included(deps, cuda)
    unit_reads = report.includes if report is not None else None     # unit -> the files it read
    memo: dict = {}                 # the views' findings, shared by the key's and the lint's
    result.config = config
    inputs = []
    lent: dict[str, tuple[list[Usage], list[Usage]]] = {}    # path -> (its own, borrowed)
    for path in cuda:
        own = usage_of(path, usage, report, all_usage)
        lent[path] = own, borrowed_usage(path, texts[path], own, report)
        file_usage = own + lent[path][1]            # (all of them in the findings-cache key)
        result.usage[path] = file_usage
        # each unit is evaluated for the archs its own command compiles (a header: its includers')
        file_config = record.replace(config, arch=report.archs_of(path)) if per_unit else config
        inputs.append((path, file_usage, file_config, errors_by_file.get(path, ()),
                       report.failed_archs(path) if report is not None else frozenset()))
    cache = reuse and report is not None and report.cache
    if cache:
        from occlint import results
    # the key holds what each file's view is made of; a hit's recorded files include those the
    # views' walks read, so only a miss walks the includers to make the views
    extra = report.extensions if report is not None else None   # a setup.py's flags
    entry = _results_key(inputs, texts, included, source_views(
        [*cuda, *included], config, unit_reads, memo=memo, walks=False, extra=extra),
        config) if cache else None
    found = results.load(cache, entry) if entry else None
    result.reused = found is not None
    if report is not None:
        result.compiled, result.cached = report.compiled, report.cached
    if found is None:
        views = source_views([*cuda, *included], config, unit_reads, memo=memo, extra=extra)
        project = Project.read({**included, **{path: texts[path] for path in cuda}}, views)
        result.project = project
        found = []
        failed = False
        for path, file_usage, file_config, errors, failed_archs in inputs:
            try:
                own, borrowed = lent[path]
                if borrowed:                # borrowed figures, less the file's own kernels
                    defined = {k.name for k in project[path].kernels if k.is_definition}
                    file_usage = own + [u for u in borrowed
                                        if u.kernel.split("::")[-1] not in defined]
                found.extend(lint_source(texts[path], path, file_usage, file_config,
                                         source=project[path], compile_errors=errors,
                                         project=project, failed_archs=failed_archs))
            except Exception as exc:    # one file's failure is its error; the others are checked
                if os.environ.get("OCCLINT_DEBUG"):
                    raise
                failed = True
                result.errors.append(internal_error(path, exc))
        if entry and not failed:
            from occlint.source.preproc import READ
            results.store(cache, entry, found, READ)
    result.findings.extend(found)
    for path in cuda:
        result.files.append(path)
        result.sources[path] = texts[path]
    for path in builds:
        if path not in texts:
            continue
        result.findings.extend(lint_build_file(texts[path], path, config))
        result.files.append(path)
        result.sources[path] = texts[path]
    if python:
        from occlint.python import lint_python_paths
        lint_python_paths(python, config, result, reuse=reuse)
    return result


def _results_key(inputs, texts, included, views, config) -> str:
    """occlint.results' key for linting `inputs` (path, usage, config, compile errors, the archs
    its compile failed for) with the project files `included` and the preprocessor `views`."""
    from occlint import results

    distinct: dict = {}         # each view once, files by its number: a header's view holds the
    parts: list[object] = [config, config.extra]    # macros in force (tiny-cuda-nn: 358 views,
    for path, file_usage, file_config, errors, failed_archs in inputs:    # 24 distinct, 12 MB)
        parts += [path, results.text_hash(texts[path]), file_usage, file_config.arch, errors,
                  sorted(failed_archs), distinct.setdefault(views.get(path), len(distinct))]
    for path, text in included.items():
        parts += [path, results.text_hash(text), distinct.setdefault(views.get(path), len(distinct))]
    return results.key([*parts, *distinct])


def _included(deps: Sequence[str], linted: Sequence[str]) -> dict[str, str]:
    """path -> text of the project files the compiled units include (from their dependency
    lists) that are not linted in this run: part of the Project only so that their kernels are
    visible to the units' launches."""
    from occlint.discover import is_cuda, is_header
    seen = {os.path.realpath(p) for p in linted}
    out: dict[str, str] = {}
    for dep in dict.fromkeys(deps):
        if dep in seen or not (is_cuda(dep) or is_header(dep)):
            continue
        try:
            out[dep] = read_text(dep)
        except (OcclintError, OSError):
            continue
    return out


def errors_by_file_of(errors: Sequence[CompileError], files: Sequence[str],
                      texts: Mapping[str, str] | None = None) -> dict[str, list[CompileError]]:
    """Compile errors by the linted file they belong to: the file they name, else (a header that
    is not linted) the unit that was compiled, at the `#include` that leads to the header
    (`texts`: the units' texts; else its first line), with the header's position in the
    message."""
    out: dict[str, list[CompileError]] = {}
    by_real: dict[str, str] = {}                # each file's real path -> the first such file
    for f in files if errors else ():
        by_real.setdefault(os.path.realpath(f), f)

    def match(path: str) -> str | None:
        return by_real.get(os.path.realpath(path)) if path else None

    for err in errors:
        target = match(err.path)
        if target is None:
            target = match(err.unit)
            where = f"{err.path}:{err.line}" if err.line else err.path
            chain = err.included_from
            line = chain[1] if target and chain and match(chain[0]) == target else \
                include_line((texts or {}).get(target), target, err.path) if target else None
            err = record.replace(err, line=line, column=1 if line else None,
                                      message=f"{where}: {err.message}")
        if target is not None:
            out.setdefault(target, []).append(err)
    return out


def include_line(text: str | None, unit: str, header: str) -> int | None:
    """The line of `unit`'s `#include` that leads to `header`: one naming it, else one naming a
    header of the unit's folder that names it; None when neither is found."""
    if not text or not header:
        return None
    from occlint.toolchain.includers import include_lines

    lines = include_lines(text)
    name = os.path.basename(header)
    for number, included in lines:
        if os.path.basename(included) == name:
            return number
    from occlint.files import read_regular

    here = os.path.dirname(os.path.abspath(unit))
    for number, included in lines:
        try:        # a regular file only: a FIFO named by an #include would block the read
            inner = read_regular(os.path.join(here, included))[:1 << 20].decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        if any(os.path.basename(i) == name for _n, i in include_lines(inner)):
            return number
    return None


def _load_the_linter(texts: Mapping[str, str], read: Sequence[str]) -> None:
    """While nvcc runs: import the parser, the facts and the rules, which the lint after the
    compiles needs (~40 ms a cold one-file run waited for), and parse the files of the run
    (`texts`: path -> text) and the other project files the compiles done by then `read` (the
    parses are kept: context._parsed; ~7 ms of a cuda-samples unit's tail)."""
    try:
        from occlint import aggregate, bounds, checks, fix, noqa, occupancy, project, registry  # noqa: F401
        from occlint.emit import encode  # noqa: F401
        from occlint.facts import build_facts  # noqa: F401
        from occlint.source import specialization  # noqa: F401
        from occlint.source.grammar import load_parser
        load_parser()
        occupancy.prepare_all()
        from occlint.source.context import (
            MAX_CONSTANT_HEADER_BYTES,
            MAX_CONSTANT_HEADERS,
            parse_ahead,
        )
        from occlint.source.preproc import read_header
        from occlint.toolchain.includers import user_files
        linted = {os.path.realpath(p) for p in texts}       # (a unit's own file leads its list)
        others = [p for p in user_files(read) if p not in linted][:MAX_CONSTANT_HEADERS]
        headers = [read_header(p) for p in others]
        parse_ahead([*texts.values(), *(h.decode("utf-8", "replace") for h in headers
                                        if h is not None and len(h) <= MAX_CONSTANT_HEADER_BYTES)])
    except Exception:
        pass


def _collect(cuda: Sequence[str], config: Config, jobs: int | None, result: LintResult,
             python: Sequence[str] = (), texts: Mapping[str, str] | None = None):
    """The toolchain's UsageReport; without nvcc its notice says the register rules are off.
    `python`: the run's Python files, whose torch extension calls give units their flags;
    `texts`: the CUDA files' path -> text, parsed while the last compiles run."""
    if not cuda:
        return None
    from occlint.python import build_entries
    from occlint.toolchain import collect_usage
    extra = build_entries(config.root, cuda, python, config)
    report = collect_usage(list(cuda), config, jobs=jobs, extra_entries=extra,
                           meanwhile=lambda read: _load_the_linter(texts or {}, read))
    if report.notice:
        result.notices.append(report.notice)
    return report
