"""CUDA library headers installed as Python wheels, and which package ships a missing header.

Every PyTorch environment has cuBLAS, cuDNN, NCCL, ... headers in site-packages: the CUDA 12
wheels under `nvidia/<library>/include` (nvidia-cublas-cu12 -> nvidia/cublas/include), the CUDA
13 wheels merged under `nvidia/cu13/include` (nvidia-cublas). Their folders are added to every
compile after the build's own include folders (`-idirafter`, so they never shadow the toolkit's
or the build's headers).
"""

from __future__ import annotations

import functools
import os
import re
import site
import sys

# Folders that hold the toolkit itself (runtime, compiler, CCCL): never added, they would mix a
# wheel's CUDA version with the nvcc in use.
_TOOLKIT = {"cuda_runtime", "cuda_nvcc", "cuda_crt", "cuda_cccl", "cuda_nvrtc", "nvvm",
            "cuda_cupti", "cuda_nvml_dev", "cuda_culibos"}

# header (or first path part) -> (library, pip package for CUDA 13, for CUDA 12)
_PACKAGES: list[tuple[str, str, str, str]] = [
    (r"cublas(Lt|Xt|_v2|_api)?\.h|cublas.*\.h", "cuBLAS", "nvidia-cublas", "nvidia-cublas-cu12"),
    (r"curand.*\.h", "cuRAND", "nvidia-curand", "nvidia-curand-cu12"),
    (r"cufft.*\.h", "cuFFT", "nvidia-cufft", "nvidia-cufft-cu12"),
    (r"cusparseLt\.h", "cuSPARSELt", "nvidia-cusparselt-cu13", "nvidia-cusparselt-cu12"),
    (r"cusparse.*\.h", "cuSPARSE", "nvidia-cusparse", "nvidia-cusparse-cu12"),
    (r"cusolver.*\.h", "cuSOLVER", "nvidia-cusolver", "nvidia-cusolver-cu12"),
    (r"cudnn.*\.h", "cuDNN", "nvidia-cudnn-cu13", "nvidia-cudnn-cu12"),
    (r"nccl.*\.h", "NCCL", "nvidia-nccl-cu13", "nvidia-nccl-cu12"),
    (r"nvshmem.*\.h", "NVSHMEM", "nvidia-nvshmem-cu13", "nvidia-nvshmem-cu12"),
    (r"npp.*\.h", "NPP", "nvidia-npp", "nvidia-npp-cu12"),
    (r"nvjpeg.*\.h", "nvJPEG", "nvidia-nvjpeg", "nvidia-nvjpeg-cu12"),
    (r"nvrtc\.h", "NVRTC", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"),
    (r"cupti.*\.h", "CUPTI", "nvidia-cuda-cupti", "nvidia-cuda-cupti-cu12"),
    (r"cufile\.h", "cuFile", "nvidia-cufile", "nvidia-cufile-cu12"),
    (r"cutensor.*\.h", "cuTENSOR", "cutensor-cu13", "cutensor-cu12"),
    (r"nvtx3/.*|nvToolsExt.*\.h", "NVTX", "nvidia-nvtx", "nvidia-nvtx-cu12"),
    (r"cutlass/.*|cute/.*", "CUTLASS", "nvidia-cutlass", "nvidia-cutlass"),
    # a PyTorch extension's headers: with torch installed, every unit searches its folders
    # (torch_include_dirs), so one still missing is not the installed torch's (_torch_hint)
    (r"(?:torch|ATen|c10|caffe2|THC)/.*", "PyTorch", "torch", "torch"),
    (r"pybind11/.*", "pybind11", "pybind11", "pybind11"),
    (r"pycuda-.*\.hpp", "PyCUDA", "pycuda", "pycuda"),     # SourceModule passes its folder
]


def site_dirs() -> list[str]:
    """site-packages folders of the running Python (venv first), then `nvidia`'s own paths."""
    dirs: list[str] = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:       # some embedded interpreters
        pass
    try:
        user = site.getusersitepackages()
        if isinstance(user, str):
            dirs.append(user)
    except AttributeError:
        pass
    dirs.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return list(dict.fromkeys(os.path.realpath(d) for d in dirs if os.path.isdir(d)))


def wheel_include_dirs(bases: list[str] | None = None) -> list[str]:
    """Library include folders from the nvidia wheels (and CUTLASS's), in a stable order:
    the CUDA 13 merged folders (`nvidia/cu13/include`, newest first), then each CUDA 12
    library's `nvidia/<lib>/include`."""
    out: list[str] = []
    for base in bases if bases is not None else site_dirs():
        root = os.path.join(base, "nvidia")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            names = []
        merged = sorted((n for n in names if re.fullmatch(r"cu\d+", n)),
                        key=lambda n: -int(n[2:]))
        for name in merged + [n for n in names if n not in merged and n not in _TOOLKIT]:
            inc = os.path.join(root, name, "include")
            # a merged folder (nvidia/cu13) is also the pip toolkit's own: only worth searching
            # when a library wheel has added its headers there
            if os.path.isdir(inc) and (name not in merged or _has_library(inc)):
                out.append(inc)
        cutlass = os.path.join(base, "cutlass_library", "source", "include")
        if os.path.isdir(cutlass):
            out.append(cutlass)
    out += torch_include_dirs(bases)
    return list(dict.fromkeys(out))


def torch_folders(bases: list[str] | None = None) -> list[str]:
    """The installed torch's own header folders, as `torch.utils.cpp_extension.include_paths()`
    lists them (`include`, `include/torch/csrc/api/include`, and an older torch's `TH`/`THC`),
    found without importing torch (its import runs code: a stranger's `torch/` beside the
    project must not run, and a real one takes seconds): the torch this Python would import, or
    the first in `bases` (site folders). [] without torch."""
    import importlib.util

    if bases is None:
        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            spec = None
        bases = [os.path.dirname(os.path.dirname(spec.origin))] if spec and spec.origin else []
    for base in bases:
        inc = os.path.join(base, "torch", "include")
        if os.path.isfile(os.path.join(inc, "torch", "extension.h")):
            return [inc, os.path.join(inc, "torch", "csrc", "api", "include"),
                    *(d for d in (os.path.join(inc, "TH"), os.path.join(inc, "THC"))
                      if os.path.isdir(d))]
    return []


def torch_include_dirs(bases: list[str] | None = None) -> list[str]:
    """`torch_folders` and Python's header folders (`torch/extension.h` includes `Python.h`;
    setuptools' build_ext adds them to every extension): what a PyTorch extension's unit
    compiles with from its environment, and what a unit checked without its build (pre-commit,
    a `.cu` no setup.py names) searches last. [] without torch."""
    import sysconfig

    dirs = torch_folders(bases)
    if dirs:
        py = [sysconfig.get_path(k) for k in ("include", "platinclude")]
        dirs += [d for d in dict.fromkeys(py) if d and os.path.isdir(d)]
    return dirs


def _has_library(folder: str) -> bool:
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any((package_for(n) or ("", ""))[0] not in ("", "NVRTC", "CUPTI", "NVTX")
               for n in names if n.endswith(".h") or n in ("cutlass", "cute"))


def include_flags(dirs: list[str]) -> list[str]:
    """nvcc flags that search `dirs` after every other include folder (so a wheel's copy of a
    header never hides the system's or the project's), and for a CPU build of torch among them
    the define its c10/cuda headers need (TORCH_NO_CUDA_MACROS)."""
    return [f"-Xcompiler=-idirafter,{d}" for d in dirs if "," not in d] + torch_defines(dirs)


def package_for(header: str, cuda_major: int | None = None) -> tuple[str, str] | None:
    """(library, pip package) that ships `header` (as written in the #include), or None."""
    name = header.strip().strip('"<>')
    base = os.path.basename(name)
    for pattern, library, cu13, cu12 in _compiled():
        if pattern.fullmatch(name) or pattern.fullmatch(base):
            return library, (cu12 if cuda_major is not None and cuda_major < 13 else cu13)
    return None


@functools.cache
def _compiled() -> list[tuple[re.Pattern, str, str, str]]:
    """_PACKAGES with each pattern compiled (a wheel folder's every header is asked)."""
    return [(re.compile(pattern), *rest) for pattern, *rest in _PACKAGES]


_MISSING = [
    re.compile(r'cannot open source file "([^"]+)"'),
    re.compile(r"^([^\s:]+): No such file or directory"),
]


def missing_header(message: str) -> str | None:
    """The header a compiler message says is missing, or None."""
    for pattern in _MISSING:
        m = pattern.search(message)
        if m:
            return m.group(1)
    return None


# the CUDA libraries torch's ATen/cuda/CUDAContextLight.h includes, in its order: a CPU build
# of torch with a toolkit that lacks them misses one at a time
_TORCH_CUDA_LIBRARY_HEADERS = ("cusparse.h", "cublas_v2.h", "cublasLt.h", "cusolverDn.h")


def explain_missing(message: str, cuda_major: int | None = None, add: str | None = None,
                    root: str | None = None, database: bool = False, cache=None,
                    at: str | None = None) -> str:
    """A missing-header message rewritten to name the header and, when known, its package, or
    the project folder that holds it (`root`: the project's root, searched once per process;
    `cache`: where its file list is kept between runs, project_files). `at`: the file whose
    #include failed (torch's CUDA headers name every library they need at once).
    `add`: how to add a folder to the include path, where it is not `include-dirs` (a Python
    file's CUDA string)."""
    header = missing_header(message)
    if header is None:
        return message
    # the project's own copy first (NCCL's src/include/nccl_device.h: a wheel would bring
    # another NCCL's headers), then a package that ships it
    here = project_folders(header, root, cache) if root and not add else []
    known = package_for(header, cuda_major) if not here else None
    if header == TORCH_CUDA_MACROS:
        return f"`{header}` not found: {_torch_cpu_hint()}"
    if known and known[0] == "PyTorch" and not add:
        return f"`{header}` not found: part of PyTorch's C++ headers: {_torch_hint()}"
    if known and header in _TORCH_CUDA_LIBRARY_HEADERS and at and \
            at.replace(os.sep, "/").endswith("ATen/cuda/CUDAContextLight.h"):
        found = [package_for(h, cuda_major) for h in _TORCH_CUDA_LIBRARY_HEADERS]
        packages = list(dict.fromkeys(p[1] for p in found if p))
        libraries = list(dict.fromkeys(p[0] for p in found if p))
        return (f"`{header}` not found: part of {known[0]}; torch's CUDA headers include "
                f"{', '.join(libraries[:-1])} and {libraries[-1]}'s "
                f"(`pip install {' '.join(packages)}`, as a CUDA build of torch has them), or "
                "add their folders to `include-dirs`")
    if known:
        library, package = known
        return (f"`{header}` not found: part of {library} (`pip install {package}`), "
                f"or {add or 'add its folder to `include-dirs`'}")
    if add:
        return f"`{header}` not found: {add}"
    # (with a database entry, the build's own flags did not find it either)
    tail = " (the compilation database's entry for this unit does not give it)" if database \
        else " (or build with CMake and export compile_commands.json)"
    if len(here) == 1:
        return (f"`{header}` not found: this project has it below `{here[0]}`: add that folder "
                f"to `include-dirs`{tail}")
    if here:
        return (f"`{header}` not found: this project has it below "
                f"{' and '.join(f'`{h}`' for h in here)}: add the one the build uses to "
                f"`include-dirs`{tail}")
    return f"`{header}` not found: add its folder to `include-dirs`{tail}"


# A CPU build of torch (a lint job's usual install) ships c10/cuda's headers but not the one its
# CUDA builds generate, which defines only C10_CUDA_BUILD_SHARED_LIBS (read by Windows' export
# macros alone); torch's own switch for builds without that file skips its include.
TORCH_CUDA_MACROS = "c10/cuda/impl/cuda_cmake_macros.h"
TORCH_NO_CUDA_MACROS = "C10_CUDA_NO_CMAKE_CONFIGURE_FILE"


def torch_defines(dirs) -> list[str]:
    """The define a CPU build of torch among the include folders `dirs` needs for CUDA code
    (TORCH_NO_CUDA_MACROS), as a flag; [] otherwise."""
    return [f"-D{TORCH_NO_CUDA_MACROS}"] if any(torch_cpu_build(d) for d in dirs) else []


def torch_cpu_build(include_dir: str) -> bool:
    """Is `include_dir` (torch's `include` folder) a CPU build's, whose c10/cuda headers
    include a file it lacks?"""
    return os.path.isfile(os.path.join(include_dir, "c10", "cuda", "CUDAMacros.h")) and \
        not os.path.isfile(os.path.join(include_dir, *TORCH_CUDA_MACROS.split("/")))


def _torch_cpu_hint() -> str:
    return (f"this torch is a CPU build, whose headers lack `{TORCH_CUDA_MACROS}` (CUDA builds "
            f"generate it; it only sets an export macro Windows reads): add "
            f"`{TORCH_NO_CUDA_MACROS}` to `defines`, which skips its include, or install a CUDA "
            "build of torch")


def _torch_hint() -> str:
    """What to do about a missing PyTorch header: the installed torch's folders are searched
    already (torch_include_dirs), so it is not one of its headers; without torch, how to get
    them (pre-commit runs occlint in an environment of its own)."""
    dirs = torch_include_dirs()
    if dirs:
        return (f"the installed torch's headers (`{dirs[0]}`), which occlint searches, do not "
                "have it: another release of torch may")
    return ("install torch where occlint runs (a CPU build will do; pre-commit: "
            "`additional_dependencies: [torch]`), or add the folders "
            "`torch.utils.cpp_extension.include_paths()` gives to `include-dirs`")


_PROJECT_FILES: dict[str, list[str]] = {}     # root -> its files, relative, in walk order
_FILE_NAMES: dict[str, dict[str, list[str]]] = {}      # root -> file name -> relative paths


def _memos() -> tuple[dict, dict]:
    """(_PROJECT_FILES, _FILE_NAMES) for one run (`preproc.one_run`: a language server's next
    request sees a file added since), else for the process."""
    from occlint.source.preproc import run_memo

    files, names = run_memo("project files"), run_memo("project file names")
    return (_PROJECT_FILES if files is None else files, _FILE_NAMES if names is None else names)


_MAX_PROJECT_FILES = 100_000


def project_files(root: str, cache=None) -> list[str]:
    """The project's files (relative to `root`), walked once per run and root as discovery
    walks it (hidden and tool folders skipped), folders and names sorted, at most
    _MAX_PROJECT_FILES: the one walk behind the missing-header and undefined-name hints.
    `cache` (toolchain.cache.Cache): the list is kept there with each folder's modification
    time, and taken back while every folder's is unchanged (a file added, removed or renamed
    changes its folder's): a warm run stats the folders instead of listing them."""
    memo = _memos()[0]
    files = memo.get(root)
    if files is not None:
        return files
    key = None
    if cache is not None:
        import hashlib  # (3 ms of a start: only when there is a cache)

        key = hashlib.sha256(os.fsencode(root)).hexdigest()
        files = _kept_files(root, cache.note(key, ".files"))
    if files is None:
        files, folders = _walk(root)
        # a folder changed in the last 2 s may change again within its clock's tick,
        # unseen: then the list is not kept (git's racy-index rule)
        from occlint.toolchain.cache import settled
        if cache is not None and settled(*folders.values()):
            cache.keep(key, ".files", {"root": root, "folders": folders, "files": files})
    memo[root] = files
    return files


def _walk(root: str) -> tuple[list[str], dict[str, int]]:
    """(project_files' list, each folder walked -> its st_mtime_ns)."""
    from occlint.discover import SKIP_DIRS

    files: list[str] = []
    folders: dict[str, int] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(folder, root)     # once per folder, not per file (4x faster)
        try:
            folders[rel] = os.stat(folder).st_mtime_ns
        except OSError:
            folders[rel] = -1
        files += (n if rel == "." else os.path.join(rel, n) for n in sorted(names))
        if len(files) > _MAX_PROJECT_FILES:
            break
    return files, folders


def _kept_files(root: str, kept: dict | None) -> list[str] | None:
    """The list `kept` holds when it is `root`'s and none of its folders changed since."""
    if not kept or kept.get("root") != root or not isinstance(kept.get("folders"), dict) or \
            not isinstance(kept.get("files"), list):
        return None
    for rel, when in kept["folders"].items():
        try:
            if os.stat(os.path.join(root, rel)).st_mtime_ns != when:
                return None
        except (OSError, TypeError, ValueError):
            return None
    files = kept["files"]
    return files if all(isinstance(f, str) for f in files) else None


def project_folders(header: str, root: str, cache=None) -> list[str]:
    """The folders of the project (relative to `root`, `/`-separated) that an `#include` of
    `header` (`moderngpu/kernel_scan.hxx`) would find it in (`src`); none when no file, or
    more than 3 folders, match. `cache`: as project_files'."""
    name = header.strip().strip('"<>').replace("\\", "/")
    names = _memos()[1]
    by_name = names.get(root)
    if by_name is None:
        by_name = names[root] = {}
        for rel in project_files(root, cache):
            by_name.setdefault(os.path.basename(rel), []).append(rel)
    found = {rel.replace(os.sep, "/")[:-len(name)].rstrip("/") or "."
             for rel in by_name.get(os.path.basename(name), ())
             if rel.replace(os.sep, "/") == name or rel.replace(os.sep, "/").endswith("/" + name)}
    return sorted(found) if len(found) <= 3 else []


# Compiler errors of code written for an older CUDA, and what replaced the API (old projects,
# pre-commit runs on them): one hint appended to the compiler's own words.
_REMOVED: list[tuple[re.Pattern, str]] = [(re.compile(p), hint) for p, hint in (
    (r"texture is not a template|identifier \"texture\" is undefined",
     "texture references were removed in CUDA 12: use texture objects (cudaCreateTextureObject)"),
    (r"identifier \"__shfl(?:_up|_down|_xor)?\" is undefined",
     "__shfl, __shfl_up, __shfl_down and __shfl_xor without _sync were removed: use the _sync "
     "forms with a lane mask"),
    (r"identifier \"__(?:any|all|ballot)\" is undefined",
     "__any, __all and __ballot were removed: use __any_sync, __all_sync, __ballot_sync"),
    (r"identifier \"cudaThread(?:Synchronize|Exit)\" is undefined",
     "cudaThreadSynchronize and cudaThreadExit were removed in CUDA 13: use "
     "cudaDeviceSynchronize and cudaDeviceReset"),
    (r"class \"cudaDeviceProp\" has no member",
     "CUDA 13 removed some cudaDeviceProp fields (clockRate, memoryClockRate, ...): ask "
     "cudaDeviceGetAttribute"),
)]


# an identifier's prefix -> (library, the header that declares it)
_DECLARED_BY: list[tuple[re.Pattern, str, str]] = [(re.compile(p), lib, h) for p, lib, h in (
    (r"cublasLt", "cuBLASLt", "cublasLt.h"), (r"cublas|CUBLAS_", "cuBLAS", "cublas_v2.h"),
    (r"cusparse|CUSPARSE_", "cuSPARSE", "cusparse.h"), (r"cufft|CUFFT_", "cuFFT", "cufft.h"),
    (r"curand|CURAND_", "cuRAND", "curand.h or curand_kernel.h"),
    (r"cusolver|CUSOLVER_", "cuSOLVER", "cusolverDn.h"), (r"cudnn|CUDNN_", "cuDNN", "cudnn.h"),
    (r"nccl|NCCL_", "NCCL", "nccl.h"), (r"nvshmem|NVSHMEM_", "NVSHMEM", "nvshmem.h"),
    (r"MPI_", "MPI", "mpi.h"), (r"nvtx", "NVTX", "nvtx3/nvToolsExt.h"),
)]
_UNDEFINED = re.compile(r'identifier "(\w+)" is undefined')


def explain_undefined(message: str, root: str | None = None, cache=None) -> str:
    """An undefined identifier of a CUDA library (or MPI) names the header that declares it:
    the build may include it under a `-D` occlint was not given (ParRes' PRK_USE_CUBLAS). One a
    project header `#define`s inside a conditional names the header and the condition
    (darknet's `BLOCK`, under `#ifdef GPU` in dark_cuda.h, which its build always defines).
    `cache`: as project_files'."""
    m = _UNDEFINED.search(message)
    if m is None or "declared by" in message or "is defined in" in message:
        return message
    for pattern, lib, header in _DECLARED_BY:
        if pattern.match(m.group(1)):
            return (f"{message} (declared by {lib}'s {header}, which this compile did not "
                    "include: the build may include it under a -D; see `nvcc-flags`)")
    guarded = _guarded_defines(root, cache).get(m.group(1).encode()) if root else None
    if guarded:
        where, line, condition = guarded
        return (f"{message} (`{m.group(1)}` is defined in {where}:{line} under `#"
                f"{condition}`, which this compile does not meet: the build may define it; "
                "see `defines`)")
    return message


_GUARDED: dict[str, dict[bytes, tuple[str, int, str]]] = {}
_CONDITION = re.compile(rb"\s*(\w+)\s*(.*)")


def _guarded_defines(root: str, cache=None) -> dict[bytes, tuple[str, int, str]]:
    """Macro name -> (header relative to `root`, line, its innermost condition: `ifdef GPU`)
    for the `#define`s of the project's headers that sit inside a conditional; the headers
    read once per process and root (the tree walked as discovery walks it), at most 4000."""
    got = _GUARDED.get(root)
    if got is not None:
        return got
    from occlint.discover import HEADER_SUFFIXES
    from occlint.files import read_regular
    from occlint.source.preproc import _directives

    got = _GUARDED[root] = {}
    for rel in [f for f in project_files(root, cache) if f.endswith(HEADER_SUFFIXES)][:4000]:
        path = os.path.join(root, rel)
        try:
            data = read_regular(path)[:1 << 20]
        except OSError:
            continue
        if b"#" not in data:
            continue
        stack: list[str] = []
        for start, _end, word, rest in _directives(data):
            if word in (b"if", b"ifdef", b"ifndef"):
                stack.append((word + b" " + b" ".join(rest.split())).decode(
                    "utf-8", "replace")[:80])
            elif word in (b"elif", b"else") and stack:
                stack[-1] = "not " + stack[-1] if word == b"else" else \
                    ("elif " + " ".join(rest.decode("utf-8", "replace").split()))[:80]
            elif word == b"endif" and stack:
                stack.pop()
            elif word == b"define" and stack:
                m = _CONDITION.match(rest)
                inner = stack[-1]
                if m and not inner.startswith(("ifndef", "not ")) and \
                        not inner.endswith("_H") and not inner.endswith("_H_"):
                    got.setdefault(m.group(1), (
                        rel.replace(os.sep, "/"),
                        data.count(b"\n", 0, start) + 1, inner))
    return got


def explain_removed(message: str) -> str:
    """The compiler's message, with what replaced an API a newer CUDA removed, when it is one."""
    for pattern, hint in _REMOVED:
        if pattern.search(message) and hint not in message:
            return f"{message} ({hint})"
    return message
