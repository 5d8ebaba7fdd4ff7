"""CUDA inside Python: CuPy RawKernel/RawModule, PyCUDA SourceModule, torch load_inline.

`might_have_cuda(text)` is the cheap text test every `.py` file passes through first (an import
of cupy, pycuda or torch.utils.cpp_extension); only those files are parsed with libcst
(`extract`), compiled (`compile`) and linted (`lint`). `lint_python` is the I/O entry point the
engine and the language server call.
"""

from __future__ import annotations

import os
import re

PY_SUFFIXES = (".py", ".pyi")
_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:cupy|pycuda|torch\.utils\.cpp_extension|torch\.utils)\b"
                     r"|^[ \t]*from[ \t]+torch\.utils[ \t]+import[ \t].*\bcpp_extension\b", re.M)
_CALLS = ("RawKernel", "RawModule", "SourceModule", "load_inline")


def is_python(path: str) -> bool:
    return path.endswith(PY_SUFFIXES)


_QUALIFIED = re.compile(r"\b(?:cupy|cp|pycuda\.compiler|cpp_extension)\.(?:RawKernel|RawModule|SourceModule|load_inline)\b")


def names_a_compile(data: bytes) -> bool:
    """The bytes test before `might_have_cuda`: one of the compile calls is named."""
    return any(c.encode() in data for c in _CALLS)


def might_have_cuda(text: str) -> bool:
    """True when the file names one of the compile calls and imports its framework (or calls it
    qualified, `cupy.RawKernel(...)`, with cupy imported through another module)."""
    return any(c in text for c in _CALLS) and (_IMPORT.search(text) is not None
                                                or _QUALIFIED.search(text) is not None)


def lint_python(text: str, path: str, config, *, cache=None, compile: bool = True):
    """(findings, notices) for one Python file: extract, compile each string per arch, lint."""
    if not might_have_cuda(text):
        return [], []
    from occlint.python.extract import extract
    from occlint.python.lint import lint_python_source, notices_for

    model = extract(text, path)
    if not model.modules:
        return [], notices_for(model)
    usage: dict[int, list] = {}
    errors: dict[int, list] = {}
    notices = notices_for(model)
    if compile:
        usage, errors, said = compiled(model, text, path, config, cache)
        notices += [n for n in said if n not in notices]
    findings = lint_python_source(text, path, model, usage, errors, config)
    return findings, notices


def compiled(model, text: str, path: str, config, cache=None) -> tuple[dict, dict, list[str]]:
    """(usages by module index, compile errors by module index, notices): each CUDA string of
    `model` (extract's) compiled for each arch as its framework compiles it. `check` lints with
    them; `kernels` lists them."""
    from occlint.python.compile import compile_module

    usage: dict[int, list] = {}
    errors: dict[int, list] = {}
    notices: list[str] = []
    for arch in archs(config):
        for mod in model.modules:
            result = compile_module(mod, arch, path, config, cache)
            usage.setdefault(mod.index, []).extend(result.usages)
            errors.setdefault(mod.index, []).extend(result.errors)
            notice = result.notice or result.warning
            if notice and "not found" not in notice:       # about this call: say where
                from occlint.emit.concise import display_path
                notice = f"{display_path(path, '.')}:{_line_col(text, mod.offset)}: {notice}"
            if notice and notice not in notices:
                notices.append(notice)
    return usage, errors, notices


def _line_col(text: str, offset: int) -> str:
    from occlint.fix import make_span

    at = make_span(text, offset, offset)
    return f"{at.line}:{at.column}"


def archs(config) -> tuple[str, ...]:
    """The archs Python kernels are compiled for: the run's arch decision (toolchain.archs_for)."""
    from occlint.toolchain.flags import archs_for
    return tuple(archs_for(config))


_MARKERS = (b"cupy", b"pycuda", b"cpp_extension")


def names_a_framework(path: str) -> bool:
    """The pre-filter discovery applies to every `.py` file: its bytes name cupy, pycuda or
    cpp_extension. Nothing else is done for a file that does not."""
    from occlint.files import read_regular
    try:
        data = read_regular(path)      # never a FIFO or device
    except OSError:
        return True            # let the reader report it
    return any(m in data for m in _MARKERS)


def lint_python_paths(paths, config, result, reuse: bool = True) -> None:
    """Lint the CUDA of each Python file into `result` (engine.LintResult). A file is read as
    bytes and dropped at once unless it names cupy, pycuda or cpp_extension. A file's findings
    and notices are kept in the cache (`reuse`: read back when the file, the settings and the
    compilers are unchanged)."""
    from occlint.errors import OcclintError
    cache = None
    tools: dict = {}
    for path in paths:
        from occlint.files import read_regular
        try:
            data = read_regular(path)
        except OSError as exc:
            result.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        if not any(m in data for m in _MARKERS):
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            continue            # not a Python source occlint can read; Python would say so
        if not might_have_cuda(text):
            continue
        if cache is None and not config.no_cache:
            from occlint.toolchain.cache import Cache, cache_dir
            cache = Cache(cache_dir(config))
        try:
            key = _lint_key(text, path, config, tools) if cache is not None else None
            kept = _kept_lint(cache, key) if reuse else None
            if kept is None:
                findings, notices = lint_python(text, path, config, cache=cache)
                _keep_lint(cache, key, findings, notices)
            else:
                findings, notices = kept
        except OcclintError as exc:
            result.errors.append(str(exc))
            continue
        except (RecursionError, MemoryError) as exc:   # a pathological file: say so, check the rest
            result.notices.append(f"{path}: CUDA in Python not analysed ({type(exc).__name__})")
            continue
        result.findings.extend(findings)
        result.notices.extend(notices)
        result.files.append(path)
        result.sources[path] = text


def _lint_key(text: str, path: str, config, tools: dict) -> str:
    """The key of a Python file's lint in the compile cache's folder: occlint's code, the
    settings, the file's path and text, the archs, and what compiles its strings (NVRTC, nvcc,
    CuPy's, PyCUDA's and torch's installations; `tools`, filled once per run), as a compile of
    a string is keyed."""
    from occlint import results
    if not tools:
        from occlint.python import nvrtc
        from occlint.toolchain import find_nvcc
        try:
            nvcc = find_nvcc(config)
        except Exception:       # (said where a string needs it, as before)
            nvcc = None
        tools.update(nvrtc=nvrtc.identity(), nvcc=nvcc.identity if nvcc else "none",
                     **{package: _installed(package) for package in ("cupy", "pycuda", "torch")})
    return results.key(["python lint", config, config.extra, path, results.text_hash(text),
                        archs(config), sorted(tools.items())])


def _installed(package: str) -> str:
    """Which installation of `package` this Python finds (its path, size and mtime), found and
    not imported; "" when there is none."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return ""
    try:
        st = os.stat(spec.origin)
    except OSError:
        return spec.origin
    return f"{spec.origin}\0{st.st_size}\0{st.st_mtime_ns}"


def _kept_lint(cache, key: str | None) -> tuple[list, list[str]] | None:
    """(findings, notices) a run with the same key kept, else None."""
    if cache is None or key is None:
        return None
    from occlint import results
    from occlint.toolchain.cache import FINDINGS
    kept = cache.note(key, FINDINGS)
    try:
        if kept is not None and all(isinstance(n, str) for n in kept["notices"]):
            return [results._finding(d) for d in kept["findings"]], list(kept["notices"])
    except (KeyError, TypeError, ValueError):
        pass
    return None


def _keep_lint(cache, key: str | None, findings, notices) -> None:
    if cache is not None and key is not None:
        from occlint import results
        from occlint.toolchain.cache import FINDINGS
        cache.keep(key, FINDINGS,
                   {"findings": [results._to_json(f) for f in findings], "notices": notices})


def setups(root: str, files=()) -> list[str]:
    """The `setup.py` files pip would build the run's CUDA files with: the project root's, and
    the nearest one above each file (up to the root, or to the folder holding `.git`): a
    config in a parent folder or given with `--config` elsewhere moves the root, not the
    extension's setup.py."""
    found = [os.path.join(root, "setup.py")] if os.path.isfile(os.path.join(root, "setup.py")) \
        else []
    top = os.path.abspath(root)
    seen: set[str] = set()
    for f in files:
        start = folder = os.path.dirname(os.path.abspath(f))
        inside = folder == top or folder.startswith(top.rstrip(os.sep) + os.sep)
        chain: list[str] = []       # the folders from the file's up to where the walk stops
        for _ in range(32):
            if folder in seen:
                break
            seen.add(folder)
            chain.append(folder)
            parent = os.path.dirname(folder)
            if folder == top or parent == folder or os.path.exists(os.path.join(folder, ".git")):
                break
            folder = parent
        else:
            chain = chain[:1]
        if not chain:               # (its folder was walked for an earlier file)
            continue
        if not inside and not os.path.exists(os.path.join(chain[-1], ".git")):
            chain = [start] if chain and chain[0] == start else []   # (no repository above a
        for folder in chain:                                         # file outside the root:
            setup = os.path.join(folder, "setup.py")                 # its own folder only,
            if os.path.isfile(setup):                                # never `/setup.py`)
                found.append(setup)
                break
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def build_entries(root: str, cuda=(), python=(), config=None) -> list[dict]:
    """The compile-database entries a run's `setup.py` files (`setups`) and its Python files'
    `CUDAExtension`/`load(...)` calls give its CUDA files: what `check`, `kernels` and `doctor`
    compile them with when no database has an entry of their own. libcst only when there is
    something to read that the cache of `config` (none with --no-cache) does not answer."""
    found = setups(root, cuda)
    if not python and not found:
        return []
    from occlint.files import read_regular

    cache = None
    if config is not None and not config.no_cache:
        from occlint.toolchain.cache import Cache, cache_dir
        cache = Cache(cache_dir(config))
    out: list[dict] = []
    seen: set[str] = set()
    for path in [*found, *python]:
        if os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        try:
            data = read_regular(path)           # never a FIFO or device
        except OSError:
            continue
        if path not in found and b"cpp_extension" not in data and b"CUDAExtension" not in data:
            continue
        try:        # a setup.py that is not UTF-8 gives none; another Python file is read anyway
            text = data.decode("utf-8") if path in found else data.decode("utf-8", "replace")
        except UnicodeDecodeError:
            continue
        out += _extension_entries(path, text, cache)
    return out


def expand_glob(pattern: str, root: str) -> list[str]:
    """`glob.glob(pattern)` as the build would see it from `root`, relative to `root`."""
    import glob

    full = pattern if os.path.isabs(pattern) else os.path.join(root, pattern)
    return sorted(os.path.relpath(p, root) for p in glob.glob(full, recursive=True))


ENTRIES = ".ext"        # a Python file's extension entries in the compile cache's folder


def _extension_entries(path: str, text: str, cache) -> list[dict]:
    """`extensions.extension_entries(path, text)`, kept in `cache` under a key of occlint's code,
    the file's path and text and the installed torch; a hit also needs every `glob.glob` the
    file's calls were read with to find the same files (a new `.cu` in a globbed folder)."""
    key = None
    if cache is not None:
        from occlint import results
        key = results.key(["extension entries", os.path.abspath(path), _installed("torch"),
                           results.text_hash(text)])
        kept = cache.note(key, ENTRIES)
        try:
            if kept is not None and _entries_ok(kept["entries"]) and all(
                    expand_glob(pattern, root) == found for pattern, root, found in kept["globs"]):
                return list(kept["entries"])
        except (KeyError, TypeError, ValueError):
            pass
    from occlint.python.extensions import extension_entries
    globs: list = []
    entries = extension_entries(path, text, globs=globs)
    if key is not None:
        cache.keep(key, ENTRIES, {"entries": entries, "globs": globs})
    return entries


def _entries_ok(entries) -> bool:
    """Are these kept entries what `extension_entries` writes (a damaged note is a miss)?"""
    return isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("directory"), str)
        and isinstance(e.get("file"), str) and isinstance(e.get("arguments"), list)
        and all(isinstance(a, str) for a in e["arguments"])
        and isinstance(e.get("occlint_warning", ""), str) for e in entries)


def entries_database(entries):
    """`build_entries`' entries as the compilation database named `setup.py` that `check` and
    `doctor` consult after the project's own (None when there are none)."""
    if not entries:
        return None
    from occlint.toolchain.database import Database
    return Database("setup.py", list(entries))
