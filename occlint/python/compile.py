"""Compile a Python file's CUDA strings the way their framework does, cached like `.cu` units.

CuPy (`RawKernel`, `RawModule`): NVRTC by default (with the options CuPy adds, `_cupy_options`),
nvcc with `backend="nvcc"`; the call's `options`; `name_expressions` registered so template
instantiations are compiled. PyCUDA's `SourceModule` and torch's `load_inline`: nvcc (PyCUDA
wraps the source in `extern "C" { }` unless `no_extern_c=True`). Registers, spills and shared
memory come from ptxas's `-v` report (NVRTC passes `-Xptxas=-v` to its ptxas) as for `.cu` files,
with the cubin's figures where the log has none. Results are stored in the compile cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import tempfile
import time

from occlint.model import CompileError, Usage
from occlint.python import nvrtc
from occlint.python.extract import Module
from occlint.record import asdict, dataclass, field

_ARCH_OPTION = re.compile(r"^(-arch|--gpu-architecture|-gencode|--generate-code|-code)(=.*)?$")
_NVRTC_DIAG = re.compile(r"^(?P<file>[^\n(]*)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)\s*:?\s*(?P<msg>.*)$")


@dataclass
class Compiled:
    usages: list[Usage] = field(default_factory=list)
    errors: list[CompileError] = field(default_factory=list)
    notice: str | None = None        # why it was not compiled
    cached: bool = False
    warning: str | None = None       # compiled, with a caveat (code that could not be linked)


def cupy_include() -> str | None:
    """CuPy's header folder (`-I` that CuPy adds) when CuPy is installed; not imported."""
    return _package_folder("cupy", "_core", "include")


def pycuda_include() -> str | None:
    """PyCUDA's header folder (`pycuda-complex.hpp`, `pycuda-helpers.hpp`), which SourceModule
    always passes with `-I`, when PyCUDA is installed; not imported."""
    return _package_folder("pycuda", "cuda")


def _package_folder(package: str, *parts: str) -> str | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    folder = os.path.join(os.path.dirname(spec.origin), *parts)
    return folder if os.path.isdir(folder) else None


def cuda_includes() -> list[str]:
    """The CUDA include folders CuPy puts on NVRTC's path (cuComplex.h, curand_kernel.h, ...):
    its CUDA root's (`cupy.cuda.get_cuda_path`: CUDA_PATH, else where nvcc is on PATH, else
    /usr/local/cuda), then the nvidia wheels' headers."""
    import shutil
    import sys

    root = os.environ.get("CUDA_PATH", "")
    if not os.path.exists(root):
        nvcc = shutil.which("nvcc")
        root = os.path.dirname(os.path.dirname(nvcc)) if nvcc else "/usr/local/cuda"
    candidates = [os.path.join(root, "include")]
    candidates += [os.path.join(p, "nvidia", sub, "include") for p in sys.path for sub in ("cu13", "cu12", "cuda_runtime")]
    found = [c for c in candidates if os.path.isfile(os.path.join(c, "cuComplex.h"))]
    return list(dict.fromkeys(os.path.realpath(c) for c in found))


def torch_includes() -> list[str]:
    """torch's own header folders when torch is installed (libraries.torch_folders: found,
    never imported)."""
    from occlint.toolchain.libraries import torch_folders

    return torch_folders()


def torch_flags() -> list[str]:
    """What a torch extension's unit compiles with from its environment: torch's include
    folders, then Python's headers' (setuptools' build_ext adds them to every extension, and
    torch/extension.h includes Python.h); for a CPU build of torch, the define that skips the
    header only CUDA builds have (libraries.torch_defines). None without torch."""
    from occlint.toolchain.libraries import torch_defines, torch_include_dirs

    dirs = torch_include_dirs()
    return [f"-I{d}" for d in dirs] + torch_defines(dirs)


def _cupy_options(mod: Module, opts: list[str]) -> list[str]:
    """The call's options as CuPy's `assemble_cupy_compiler_options` and compiler pass them:
    CuPy's bundled CCCL first, `--std=c++14` unless the call names a standard, CuPy's header
    folder, the CUDA headers (NVRTC has no default include path; nvcc has its own), -ftz=true
    (then `options_for` adds relocatable code for cooperative groups). Without CuPy installed,
    the toolkit's own CCCL (`include/cccl` since CUDA 13) stands in for the bundled copy, under
    NVRTC's default standard: CCCL 3 refuses C++14 (`<cooperative_groups.h>` includes it)."""
    cupy = cupy_include()
    cccl = os.path.join(cupy, "cupy", "_cccl") if cupy else ""
    # a source checkout whose CCCL submodule is not checked out has the folders, empty
    bundled = [os.path.join(cccl, d) for d in ("cub", "thrust", "libcudacxx")] \
        if cupy and os.path.isdir(os.path.join(cccl, "libcudacxx", "cuda")) else []
    out = [f"-I{d}" for d in bundled] + opts
    if bundled and not any("-std=" in o for o in opts):
        out.append("--std=c++14")
    if cupy:
        out.append(f"-I{cupy}")
    cuda = cuda_includes() if mod.backend == "nvrtc" else []
    toolkit_cccl = next((os.path.join(c, "cccl") for c in cuda
                         if os.path.isdir(os.path.join(c, "cccl"))), None)
    if toolkit_cccl and not bundled:
        out.append(f"-I{toolkit_cccl}")
    out += [f"-I{c}" for c in cuda]
    out.append("-ftz=true")
    return out


def source_for(mod: Module) -> str:
    """What the framework hands to its compiler."""
    text = mod.code.text
    if mod.framework == "pycuda" and mod.extern_c:
        return 'extern "C" {\n' + text + "\n}\n"
    if mod.framework == "torch":
        return text
    return text


def options_for(mod: Module) -> list[str]:
    """The compiler options the framework passes (without the arch)."""
    opts = [o for o in mod.options if not _ARCH_OPTION.match(o)]
    if mod.framework == "cupy":
        opts = _cupy_options(mod, opts)
    opts += [f"-I{d}" for d in mod.include_dirs]
    folder = pycuda_include() if mod.framework == "pycuda" else None
    if folder:
        opts.append(f"-I{folder}")
    if mod.framework == "torch":
        opts += torch_flags()
    if mod.relocatable:      # relocatable device code, then linked with cudadevrt
        opts.append("--device-c" if mod.backend == "nvrtc" else "-rdc=true")
    return opts


def _line_shift(mod: Module) -> int:
    return 1 if mod.framework == "pycuda" and mod.extern_c else 0


def parse_nvrtc_log(log: str, path: str, arch: str, shift: int = 0) -> list[CompileError]:
    out = []
    for line in log.splitlines():
        m = _NVRTC_DIAG.match(line.strip())
        if not m or m.group("kind") == "warning":
            continue
        out.append(CompileError(path, max(1, int(m.group("line")) - shift), None, m.group("msg").strip(),
                                arch, "error" if m.group("kind") == "error" else "fatal",
                                compiler="NVRTC"))
    return out


def _key(mod: Module, backend: str, identity: str, options: list[str], arch: str, source: str) -> str:
    h = hashlib.sha256()
    for part in ("python-6", backend, identity, "\0".join(options), arch, "\0".join(mod.name_expressions), source):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\x1f")
    return h.hexdigest()


def compile_module(mod: Module, arch: str, path: str, config, cache=None) -> Compiled:
    """Usage and errors for one CUDA string on one arch (positions are lines of the string)."""
    from occlint.toolchain.compile import (
        _error_from_json,
        _explained,
        _major,
        _usage_to_json,
        usage_from_json,
    )

    if mod.code is None or mod.code.unknown:
        return Compiled()
    backend = mod.backend if mod.backend in ("nvrtc", "nvcc") else None
    if backend is None:
        return Compiled(notice=f"backend {mod.backend!r} is not known; {mod.api} source not compiled")
    source = source_for(mod)
    options = options_for(mod)
    if mod.rewritten:
        return Compiled(notice=f"CuPy rewrites this source before compiling ({mod.rewritten}); not compiled")
    if mod.framework == "torch" and not torch_includes():
        return Compiled(notice="torch is not importable, so load_inline sources were not compiled")
    if "<cupy/" in source and cupy_include() is None:
        return Compiled(notice="the source includes CuPy headers and CuPy is not installed; not compiled")
    if backend == "nvrtc":
        if nvrtc.library() is None:
            return Compiled(notice="NVRTC not found, so CuPy kernels were not compiled "
                                   "(pip install 'occlint[cuda]' or nvidia-cuda-nvrtc)")
        supported = nvrtc.supported_archs()
        if supported and arch.rstrip("af") not in supported:
            return Compiled(notice=f"NVRTC {nvrtc.version()} cannot compile for {arch}")
        identity = nvrtc.identity()
    else:
        from occlint.toolchain import find_nvcc
        nvcc = find_nvcc(config)
        if nvcc is None:
            return Compiled(notice="nvcc not found, so nvcc-compiled Python kernels were not compiled")
        identity = nvcc.identity
    key = _key(mod, backend, identity, options, arch, source)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return Compiled([usage_from_json(u, path) for u in hit["usages"]],
                            [_error_from_json(e, path) for e in hit["errors"]], cached=True,
                            warning=hit.get("warning") if isinstance(hit.get("warning"), str) else None)
    if backend == "nvrtc":
        result = _with_nvrtc(mod, source, options, arch, path, config)
        major = (nvrtc.version() or (None,))[0]
    else:
        result = _with_nvcc(mod, source, options, arch, path, nvcc, config)
        major = _major(nvcc.version)
    # a missing header: its package, and how a call adds a folder (`include-dirs` is for .cu files)
    result.errors = [_explained(e, major, "pass its folder with `-I` in the call's options")
                     for e in result.errors]
    if cache is not None and not result.notice:
        cache.put(key, [], {"usages": [_usage_to_json(u) for u in result.usages],
                            "errors": [asdict(e) for e in result.errors], "time": time.time(),
                            "warning": result.warning})
    return result


def _with_nvrtc(mod: Module, source: str, options: list[str], arch: str, path: str, config) -> Compiled:
    from occlint.toolchain.cubin import CubinError, cubin_usage
    from occlint.toolchain.flags import vetted
    from occlint.toolchain.ptxas import parse_usage

    options = vetted(options, "", nvrtc=True)     # a Python file's options are a stranger's too
    try:
        prog = nvrtc.compile_program(source, [f"-arch={arch}", "-Xptxas=-v", *options],
                                     "kernel.cu", list(mod.name_expressions))
    except nvrtc.NvrtcError as exc:
        return Compiled(notice=f"NVRTC failed: {exc}")
    if not prog.ok:
        errors = parse_nvrtc_log(prog.log, path, arch, _line_shift(mod))
        if not errors:
            last = next((ln for ln in reversed(prog.log.splitlines()) if ln.strip()), "compilation failed")
            errors = [CompileError(path, None, None, last.strip()[:500], arch, "nvcc", compiler="NVRTC")]
        return Compiled(errors=errors)
    usages = [_with_unit(u, path) for u in parse_usage(prog.log, arch, path)]
    if not usages and prog.cubin:
        try:
            usages = cubin_usage(prog.cubin, arch, path)
        except CubinError:
            usages = []
    warnings: list[str] = []
    if usages and prog.cubin:
        usages = _linked(usages, prog.cubin, arch, config, f"this {mod.api} source", warnings,
                         prog.log)
    return Compiled(usages, warning="; ".join(warnings) or None)


def _linked(usages: list[Usage], cubin: bytes, arch: str, config, who: str,
            warnings: list[str], report: str = "") -> list[Usage]:
    """NVRTC's usages with the cubin's launch attributes, as for nvcc's (`cubin_attributes`);
    a relocatable cubin (`--device-c`, `-rdc=true`) is device-linked first with the toolkit's
    nvlink and device runtime, as CuPy links it: ptxas's report is the code before the link
    (a template kernel's `__shared__` tile reads 0 B)."""
    from occlint.toolchain.compile import cubin_attributes
    from occlint.toolchain.cubin import needs_link
    from occlint.toolchain.devlink import unlinked

    def warn(why: str) -> None:
        warnings.append(unlinked(who, arch, why))

    link = None
    if needs_link(cubin):           # NVRTC's own toolkit's nvlink (as new), else nvcc's
        bin_dir = nvrtc.toolkit_bin()
        if bin_dir is None:
            from occlint.toolchain import find_nvcc

            nvcc = find_nvcc(config)
            bin_dir = nvcc.bin_dir if nvcc is not None else None
        if bin_dir is not None:
            link = (arch, bin_dir, config.compile_timeout)
        else:
            warn("no nvlink was found beside NVRTC or nvcc")
    return cubin_attributes(usages, cubin, link, warn=warn, report=report)


def _with_unit(u: Usage, path: str) -> Usage:
    from occlint.record import replace
    return replace(u, unit=path)


def _with_nvcc(mod: Module, source: str, options: list[str], arch: str, path: str, nvcc, config) -> Compiled:
    from occlint.toolchain.compile import compile_one
    from occlint.toolchain.flags import vetted  # nothing that runs or writes (vet.py)

    with tempfile.TemporaryDirectory(prefix="occlint-py-") as tmp:
        unit = os.path.join(tmp, "kernel.cu")
        with open(unit, "w", encoding="utf-8") as fh:
            fh.write(source)
        usages, errors, _deps = compile_one(nvcc, unit, arch, vetted(options, tmp), tmp,
                                            config.compile_timeout)
    shift = _line_shift(mod)
    errors = [CompileError(path, max(1, e.line - shift) if e.line else None, e.column, e.message.replace(unit, "kernel.cu"),
                           e.arch, e.kind, e.kernel, path) for e in errors if e.kind != "warning"]
    return Compiled([_with_unit(u, path) for u in usages], errors)
