"""Compile flags for a device-only compile: from compile_commands.json, else from the config."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from occlint import record
from occlint.config import Config
from occlint.errors import OcclintError
from occlint.model import Usage
from occlint.record import dataclass
from occlint.toolchain.database import Database, Entry, entry_arguments
from occlint.toolchain.libraries import include_flags

# options dropped with their value (separate argument or `=value`)
_DROP_WITH_VALUE = {
    "-o", "--output-file", "-MF", "--dependency-output", "-MT", "-MQ", "--dependency-target-name",
    "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code",
    "--options-file", "-optf",
}
# options dropped alone
_DROP = {
    "-c", "--compile", "-M", "-MM", "-MD", "-MMD", "-MP", "--generate-dependencies",
    "--generate-nonsystem-dependencies", "--generate-dependencies-with-compile",
    "--generate-nonsystem-dependencies-with-compile", "--generate-dependency-targets",
    "-E", "--preprocess", "-cubin", "--cubin", "-ptx", "--ptx", "-fatbin", "--fatbin",
    "-dlink", "--device-link", "-lib", "--lib", "-link", "--link", "-keep", "--keep",
    "-save-temps", "--save-temps", "-dryrun", "--dryrun", "-v", "--verbose",
}
# options kept together with a separate value (so the value is never mistaken for an option)
_KEEP_WITH_VALUE = {
    "-Xptxas", "--ptxas-options", "-Xcompiler", "--compiler-options", "-Xcudafe", "-Xnvlink",
    "--linker-options", "-Xarchive", "-ccbin", "--compiler-bindir", "-isystem", "-I", "-D", "-U",
    "-include", "--pre-include", "-x", "--x", "-std", "-maxrregcount", "--maxrregcount", "-idirafter",
    "-iquote", "--include-path", "--define-macro", "--undefine-macro", "--system-include",
}
_SOURCE_EXT = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".o", ".obj")


def find_compile_commands(config: Config, path: str | None = None) -> str | None:
    """The compile_commands.json that governs `path` (default: the project root), found as
    clangd finds it: the config's `compile-commands`, else walking up (`database.find_for`)."""
    from occlint.toolchain.database import find_for
    return find_for(path or config.root, config)


def load_compile_commands(path: str | None) -> list[dict]:
    if not path:
        return []
    from occlint.toolchain.database import load
    return list(load(path).raw)


def _compiler_index(args: list[str]) -> int:
    """Index of the compiler in a command that may start with launchers."""
    for i, arg in enumerate(args):
        if os.path.basename(arg).startswith("nvcc"):
            return i
    return 0


_OPTIONS_FILE = ("--options-file", "-optf")
MAX_OPTIONS_FILE_BYTES = 1 << 20


def with_options_files(args: list[str], directory: str, depth: int = 0) -> list[str]:
    """`args` with each nvcc `--options-file FILE` (`-optf`, `=FILE`, comma lists) and each
    `@FILE` response file replaced by the arguments FILE holds, read as nvcc reads it (shell
    words; relative to the entry's `directory`), two levels deep: CMake puts every CUDA include
    folder in `includes_CUDA.rsp` (darknet: 11 of 11 units lost theirs). A file that cannot be
    read (missing, not a regular file, over 1 MiB) is left out, as before; what it holds is
    vetted with the other flags."""
    if not any(a.startswith(("--options-file", "-optf", "@")) for a in args):
        return args                 # (most commands have none)
    from occlint.files import read_regular
    from occlint.toolchain.database import split_command

    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        names: list[str] | None = None
        if arg in _OPTIONS_FILE and i + 1 < len(args):
            names, i = args[i + 1].split(","), i + 1
        elif arg.split("=", 1)[0] in _OPTIONS_FILE and "=" in arg:
            names = arg.split("=", 1)[1].split(",")
        elif arg.startswith("@") and len(arg) > 1:
            names = [arg[1:]]
        i += 1
        if names is None:
            out.append(arg)
            continue
        for name in names:
            if not name or depth >= 2:
                continue
            try:
                data = read_regular(os.path.join(directory, name))
                if len(data) > MAX_OPTIONS_FILE_BYTES:
                    continue
                words = split_command(data.decode("utf-8", "replace"), strict=True)
            except (OSError, ValueError):
                continue
            out += with_options_files(words, directory, depth + 1)
    return out


def without_compiler(args: list[str]) -> list[str]:
    """The arguments after the compiler (and any launcher before it)."""
    return args[_compiler_index(args) + 1:]


def filter_flags(args: list[str], source: str | None = None) -> list[str]:
    """Keep what changes device code (-I -D -U -std --expt-* -Xptxas -maxrregcount
    --use_fast_math -rdc -isystem -ccbin ...); drop outputs, deps, archs and the source.
    `args` excludes the compiler itself."""
    src = os.path.basename(source) if source else None
    out: list[str] = []
    skip = keep = False
    for arg in args:
        if skip:
            skip = False
            continue
        if keep:
            keep = False
            out.append(arg)
            continue
        if arg in _KEEP_WITH_VALUE:
            keep = True
            out.append(arg)
            continue
        name = arg.split("=", 1)[0]
        if arg in _DROP_WITH_VALUE:
            skip = True
            continue
        if name in _DROP_WITH_VALUE or name in _DROP:
            continue
        if arg in ("-dc", "--device-c"):
            out.append("-rdc=true")
            continue
        if re.fullmatch(r"-arch=?\S*|-gencode=?\S*|-code=\S*", arg):
            continue
        if not arg.startswith("-") and arg.endswith(_SOURCE_EXT) and (
            src is None or os.path.basename(arg) == src or arg.endswith(".o")
        ):
            continue
        out.append(arg)
    return out


def vetted(flags: list[str], cwd: str, nvrtc: bool = False) -> list[str]:
    """`flags` without anything that would make nvcc (or NVRTC) run a program or write a file
    outside its temp folder (`vet.vet`/`vet.vet_nvrtc`, the one place that decides); each
    dropped flag is named in one warning per process. `cwd` is where nvcc runs them."""
    from occlint.toolchain.vet import vet, vet_nvrtc

    kept, warnings = vet_nvrtc(flags) if nvrtc else vet(flags, cwd)
    for text in warnings:
        if text not in _WARNED:
            import sys

            _WARNED.add(text)
            print(f"occlint: warning: {text}", file=sys.stderr)
    return kept


_WARNED: set[str] = set()


def config_flags(config: Config) -> list[str]:
    root = Path(config.root)
    out = []
    for inc in config.include_dirs:
        p = Path(inc)
        out.append("-I" + str(p if p.is_absolute() else root / p))
    out.extend("-D" + d for d in config.defines)
    out.extend(filter_flags(list(config.nvcc_flags)))
    return vetted(out, os.getcwd())       # nvcc runs them in the working directory


@dataclass(frozen=True)
class UnitCommand:
    """How occlint compiles one unit: decided here, read by `collect_usage` and `doctor`."""
    flags: tuple[str, ...]        # the build's flags (or the config's), then library headers
    cwd: str
    archs: tuple[str, ...]        # this unit's targets (its own command's, unless overridden)
    entry: Entry | None           # the database entry (own or borrowed) the flags came from
    library_dirs: tuple[str, ...] = ()


def unit_command(path: str, config: Config, library_dirs: Sequence[str] = (),
                 extra: Database | None = None) -> UnitCommand:
    """Flags, working directory and archs for compiling `path`: from its compilation database
    entry (found per file, `database.entry_for`; `extra`, e.g. a setup.py's extension units, is
    asked when the database has no entry of the file's own), else from the config; the library
    include folders from Python wheels come last."""
    flags, cwd, entry = _flags(path, config, library_dirs, extra)
    if entry is None:
        return UnitCommand(flags, cwd, archs_for(config), None, tuple(library_dirs))
    raw = {"file": entry.source if entry.source.endswith(".cu") else path,
           "arguments": list(entry.arguments)}
    return UnitCommand(flags, cwd, archs_for(config, [raw]), entry, tuple(library_dirs))


def _flags(path: str, config: Config, library_dirs: Sequence[str] = (),
           extra: Database | None = None) -> tuple[tuple[str, ...], str, Entry | None]:
    """`unit_command`'s (flags, working directory, entry), without the archs."""
    from occlint.toolchain.database import entry_for

    entry = entry_for(path, config)
    if extra is not None and (entry is None or entry.borrowed_from):
        entry = extra.entries.get(os.path.realpath(path)) or entry
    libs = include_flags(list(library_dirs))
    if entry is None:
        return tuple(config_flags(config) + libs), os.getcwd(), None
    args = with_options_files(without_compiler(list(entry.arguments)), entry.directory)
    flags = filter_flags(args, entry.source)
    if not _is_nvcc_command(entry.arguments):   # a host compiler's command: its paths and macros
        flags = host_portable(flags)
    # the config's include folders, macros and flags add to the build's (what an OCC900 for a
    # missing header advises: `include-dirs`), after them
    return (tuple(vetted(flags, entry.directory) + config_flags(config) + libs), entry.directory,
            entry)


def _is_nvcc_command(args: Sequence[str]) -> bool:
    return any(os.path.basename(a).startswith("nvcc") for a in args[:4])


_PORTABLE = ("-I", "-isystem", "-D", "-U", "-include", "-std", "-iquote", "-idirafter")


def host_portable(flags: list[str]) -> list[str]:
    """The flags of a host compiler's command that mean the same to nvcc (include folders,
    macros, the language standard); warnings, optimization and codegen options are dropped."""
    out: list[str] = []
    keep_next = False
    for flag in flags:
        if keep_next:
            out.append(flag)
            keep_next = False
        elif flag in _PORTABLE:
            out.append(flag)
            keep_next = True
        elif flag.startswith("-std="):   # nvcc knows only c++NN (a C command's c11 is no use)
            if re.fullmatch(r"-std=(?:gnu|c)\+\+\w+", flag):
                out.append(flag.replace("gnu++", "c++"))
        elif flag.startswith(_PORTABLE):
            out.append(flag)
    return out


def flags_for(path: str, config: Config, extra: Database | None = None) -> tuple[list[str], str]:
    """(flags, working directory) for compiling `path` (see `unit_command`; `extra`: the torch
    extensions' entries, as there)."""
    flags, cwd, _ = _flags(path, config, (), extra)
    return list(flags), cwd


_ARCH_RE = re.compile(r"(?:sm|compute)_(\d+[a-z]?)")


def archs_in_args(args: list[str]) -> list[str]:
    """sm_ targets one nvcc command compiles for, in order: each `-gencode`/`--generate-code`
    (its `code=` sm_ targets, else its virtual `arch=`), and `-arch`/`--gpu-architecture` (with
    `-code`/`--gpu-code`: those sm_ targets). Feature suffixes stay (`sm_90a`, `sm_100f`);
    `-arch=native`, `all` and `all-major` name no arch here (the caller picks the default)."""
    found: list[str] = []
    text = " ".join(args)
    for m in re.finditer(r"(?:^|\s)(?:-gencode|--generate-code)[= ](\S+)", text):
        spec = m.group(1)
        code = re.search(r"code=\[?([^\]\s]+)", spec)
        sms = re.findall(r"sm_(\d+[a-z]?)", code.group(1)) if code else []
        if not sms:
            arch = re.search(r"arch=(?:compute|sm)_(\d+[a-z]?)", spec)
            sms = [arch.group(1)] if arch else []
        found.extend(f"sm_{s}" for s in sms)
    codes = [s for m in re.finditer(r"(?:^|\s)(?:-code|--gpu-code)[= ](\S+)", text)
             for s in re.findall(r"sm_(\d+[a-z]?)", m.group(1))]
    for m in re.finditer(r"(?:^|\s)(?:-arch|--gpu-architecture|--cuda-gpu-arch|"
                         r"--offload-arch)[= ](\S+)", text):
        named = _ARCH_RE.findall(m.group(1))
        found.extend(f"sm_{s}" for s in (codes or named))
    return list(dict.fromkeys(found))


def archs_for(config: Config, compile_commands: list[dict] | None = None,
              usage: Iterable[Usage] = ()) -> tuple[str, ...]:
    """The archs a run evaluates, decided here and nowhere else: the CLI/config `arch`, else a
    configured `gpu`'s arch, else the archs nvcc's figures were recorded for (`usage`: sidecars,
    an editor's compile), else the archs in the build's flags, else the default GPU's ("sm_90").
    `check`, `kernels`, `doctor`, the lockfile and the language server all ask this function."""
    if config.arch:
        return tuple(normalize_arch(a) for a in config.arch)
    if config.gpu != Config.gpu:
        return _gpu_arch(config.gpu)
    recorded = sorted({u.arch for u in usage})
    if recorded:
        return tuple(recorded)
    found: list[str] = []
    from occlint.toolchain.database import cuda_language

    for entry in compile_commands or []:
        args = entry_arguments(entry)
        if str(entry.get("file", "")).endswith(".cu") or cuda_language(args):
            found.extend(archs_in_args(args))
    if found:
        return tuple(dict.fromkeys(found))
    return _gpu_arch(config.gpu)


def _gpu_arch(name: str) -> tuple[str, ...]:
    from occlint import gpus
    return (gpus.arch_name(gpus.gpu(name).arch),)


def normalize_arch(arch: str) -> str:
    """"90", "sm_90", "compute_90", "9.0" -> "sm_90"."""
    a = arch.strip().lower()
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)\.(\d)", a)
    if m:
        return f"sm_{m.group(1)}{m.group(2)}"
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+[a-z]?)", a)
    if not m:
        raise OcclintError(f"unknown arch `{arch}` (expected e.g. sm_90)")
    return f"sm_{m.group(1)}"


MAX_PREFIX_INCLUDERS = 4


def source_views(paths: Iterable[str], config: Config,
                 includes: dict[str, tuple[str, ...]] | None = None, *,
                 only: Iterable[str] | None = None, memo: dict | None = None,
                 walks: bool = True, extra: Database | None = None) -> dict:
    """path -> the preprocessor View its source is parsed with (source.preproc): a unit's own
    -D/-U/-I (its compile command, else the configured flags, as occlint compiles it); a
    header's from the configured flags, not complete (the units that include it may add more),
    with the macros its includers have in force at their `#include` (`View.prefix`: the ones
    up to MAX_PREFIX_INCLUDERS agree on). `includes`: unit -> the files it read (the compiler's
    dependency lists); without them, units among `paths` that name the header in an #include.
    `only`: the views of these of `paths` (a share of a run's files), the others still searched
    for includers; `memo`: a dict kept between the calls for the shares of one run.
    `walks=False`: a header's view is what it is made of, not made: (the configured flags' view,
    each includer with its view), for the findings key (the entry's files, which the walks
    read, are checked on a hit), so a warm run walks no includer (tiny-cuda-nn: ~0.3 s).
    `extra`: the torch extensions' entries a unit is compiled with when the database has none
    of its own (`UsageReport.extensions`): a setup.py's `include_dirs` find the headers."""
    from occlint.discover import is_header
    from occlint.source.preproc import common_macros, macros_at_all, read_header, view_from_flags

    paths = list(paths)
    wanted = paths if only is None else list(only)
    memo = {} if memo is None else memo
    units: dict[str, object] = memo.setdefault("units", {})

    def unit_view(unit: str):
        if unit not in units:
            flags, cwd, entry = _flags(unit, config, (), extra)
            view = view_from_flags(flags, cwd)
            units[unit] = view if entry is not None else _with_project_folders(unit, view, config)
        return units[unit]

    out = {}
    named: dict[str, list] = memo.setdefault("named", {})   # an #include name -> its units
    frags = memo.setdefault("fragments", {})     # `.cu` files another file includes: headers
    asked = memo.setdefault("fragments asked", set())
    new = [p for p in wanted if p not in asked]
    if new:                                       # (a share's own: a listing's copies split it)
        from occlint.toolchain.includers import fragments
        frags.update(fragments(new, config))
        asked.update(new)
    for path in wanted:
        if not is_header(path) and path not in frags:
            out[path] = unit_view(path)
    headers = [p for p in wanted if is_header(p) or p in frags]
    if not headers:
        return out
    base = view_from_flags(config_flags(config), config.root, complete=False)   # a header's
    given = base.predefined()
    readers = memo.get("readers")
    if readers is None and includes:             # each file a unit read -> those units
        readers = memo["readers"] = {}
        for unit, deps in includes.items():
            for dep in deps:
                readers.setdefault(dep, []).append(unit)
    includers = {path: _includers(path, paths, readers, config, named,
                                  frags.get(path), memo)[:MAX_PREFIX_INCLUDERS]
                 for path in headers}
    if not walks:
        for path in headers:
            out[path] = (base, tuple((u, unit_view(u)) for u in includers[path]))
        return out
    wanted_at: dict[str, set[str]] = {}         # unit -> the headers to read its macros at
    for path, readers_of in includers.items():
        for unit in readers_of:
            wanted_at.setdefault(unit, set()).add(os.path.realpath(path))
    at: dict = memo.setdefault("macros_at", {})  # (unit, header) -> table: one walk per unit
    for unit, targets in wanted_at.items():
        missing = [h for h in targets if (unit, h) not in at]
        data = read_header(unit) if missing else None
        found = macros_at_all(data, unit, unit_view(unit), missing) if data else {}
        for h in missing:
            at[(unit, h)] = found.get(h)
    for path in headers:
        tables, dirs = [], list(base.include_dirs)
        for unit in includers[path]:
            view = unit_view(unit)
            table = at.get((unit, os.path.realpath(path)))
            if table is not None:
                tables.append(table)
                dirs += [d for d in view.include_dirs if d not in dirs]
        prefix = tuple((k, v) for k, v in common_macros(tables) if given.get(k) != v)
        out[path] = record.replace(base, include_dirs=tuple(dirs), prefix=prefix)
    return out


def _with_project_folders(unit: str, view, config: Config):
    """`view` (of a unit no compile database describes) with the project folder that holds a
    header the unit's `#include "..."` names and neither its folder nor its flags' folders
    have: a build occlint cannot read (a Makefile's `-I$(ROOT)/include`, ThunderKittens'
    `kittens.cuh`) must find it there when the project has one folder with such a file
    (`libraries.project_folders`). Only for reading the source (its constants and
    conditionals); a compile keeps the build's flags."""
    from occlint.files import inside
    from occlint.source.preproc import read_header
    from occlint.toolchain.cache import existing
    from occlint.toolchain.includers import quoted_includes
    from occlint.toolchain.libraries import project_folders

    root = os.path.realpath(config.root)
    here = os.path.dirname(os.path.abspath(unit))
    if not inside(here, root):
        return view                     # (another project's file: its folders are not ours)
    dirs = list(view.include_dirs)
    for name in quoted_includes(read_header(unit) or b""):
        written = os.fsdecode(name)
        if os.path.isabs(written) or any(os.path.isfile(os.path.join(d, written))
                                         for d in (here, *dirs)):
            continue
        found = project_folders(written, root, existing(config))
        if len(found) == 1:
            dirs.append(os.path.normpath(os.path.join(root, found[0])))
    if len(dirs) == len(view.include_dirs):
        return view
    return record.replace(view, include_dirs=tuple(dirs))


def _includers(header: str, paths: list[str], readers: dict[str, list[str]] | None,
               config: Config, named: dict[str, list] | None = None,
               roots: list[str] | None = None, memo: dict | None = None) -> list[str]:
    """Units that read `header`: from the dependency lists (`readers`: each file a unit read ->
    those units), else, for a `.cu` fragment, its `roots` (`includers.fragments`), else those
    among `paths` whose text has an `#include` of a file of its name
    (`includers.included_names`; nearest folder first), else the database's. `named`: each
    name the units among `paths` include -> those units, filled here on the first call (pass
    the same dict for every header of one run); `memo`: source_views' for the run."""
    from occlint.discover import is_header
    from occlint.source.preproc import read_header
    from occlint.toolchain.includers import included_names, includes_another

    if readers:
        found = sorted(u for u in set(readers.get(os.path.realpath(header), ())) if u != header)
        if found:
            return found
    if roots:
        return roots
    name = os.path.basename(header)
    here = os.path.dirname(os.path.abspath(header))
    named = {} if named is None else named
    if not named:
        named[None] = []            # filled, even when no unit includes anything
        for unit in paths:
            if not is_header(unit):
                text = (read_header(unit) or b"").decode("utf-8", "replace")
                for n in included_names(text):
                    named.setdefault(n, []).append(unit)
    found = [u for u in named.get(name, []) if not includes_another(u, header)]
    if not found:          # none given: the database's units that name it
        from occlint.toolchain.includers import for_headers
        return [unit for unit, _ in for_headers([header], [], config, None, memo)]
    return sorted(found, key=lambda u: (os.path.dirname(os.path.abspath(u)) != here, u))
