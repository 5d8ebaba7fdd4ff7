"""NVRTC through ctypes: CuPy's default compiler, from the `nvidia-cuda-nvrtc` wheel (or a system CUDA).

`compile_program` compiles one source string the way `cupy.RawModule` does (NVRTC, the call's
`options`, `name_expressions` registered before compiling) and returns the cubin, the log and the
lowered (mangled) name of every name expression. No process is spawned.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading

from occlint.record import dataclass, field

_LOCK = threading.Lock()
_LIB: ctypes.CDLL | None | bool = False     # False: not looked up yet; None: not found


class NvrtcError(RuntimeError):
    pass


@dataclass
class Program:
    ok: bool
    log: str
    cubin: bytes = b""
    ptx: str = ""
    lowered: dict[str, str] = field(default_factory=dict)   # name expression -> mangled name


def _candidates() -> list[str]:
    out: list[str] = []
    env = os.environ.get("OCCLINT_NVRTC")
    if env:
        out.append(env)
    for base in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib", "nvidia/cu12/lib"):
            out.extend(sorted(glob.glob(os.path.join(base, sub, "libnvrtc.so.*")), reverse=True))
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            out.extend(sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")), reverse=True))
    out.extend(["libnvrtc.so"])
    return [p for p in dict.fromkeys(out) if not p.endswith((".alt.so", "-builtins.so"))]


def library() -> ctypes.CDLL | None:
    """The NVRTC shared library, or None when none is installed."""
    global _LIB
    with _LOCK:
        if _LIB is False:
            _LIB = None
            for path in _candidates():
                try:
                    lib = ctypes.CDLL(path)
                    lib.nvrtcVersion
                except (OSError, AttributeError):
                    continue
                _LIB = lib
                _LIB._occlint_path = path
                break
        return _LIB


def toolkit_bin() -> str | None:
    """The bin folder of the toolkit NVRTC came with when it holds nvlink (a pip wheel's
    `nvidia/cu13/bin`, a system CUDA's `bin`): a linker as new as NVRTC's cubins."""
    lib = library()
    path = getattr(lib, "_occlint_path", None)
    if not path or not os.path.isabs(path):
        return None
    folder = os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(path)), os.pardir, "bin"))
    return folder if os.path.isfile(os.path.join(folder, "nvlink")) else None


def version() -> tuple[int, int] | None:
    lib = library()
    if lib is None:
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def supported_archs() -> tuple[str, ...]:
    lib = library()
    if lib is None or not hasattr(lib, "nvrtcGetSupportedArchs"):
        return ()
    n = ctypes.c_int()
    lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
    arr = (ctypes.c_int * n.value)()
    lib.nvrtcGetSupportedArchs(arr)
    return tuple(f"sm_{a}" for a in arr)


def identity() -> str:
    """What the cache key names for the compiler: the library and its version."""
    lib = library()
    return f"nvrtc {version()} {getattr(lib, '_occlint_path', '')}" if lib else "nvrtc none"


def _check(lib, code: int, what: str) -> None:
    if code != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise NvrtcError(f"{what}: {lib.nvrtcGetErrorString(code).decode()}")


def compile_program(source: str, options: list[str], name: str = "kernel.cu",
                    name_expressions: list[str] = ()) -> Program:
    """Compile `source` with NVRTC. `options` as NVRTC takes them (`-arch=sm_90` gives a cubin)."""
    lib = library()
    if lib is None:
        raise NvrtcError("NVRTC not found (pip install nvidia-cuda-nvrtc)")
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode("utf-8"), name.encode(),
                                       0, None, None), "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(lib, lib.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        code = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode("utf-8", "replace")
        if code != 0:
            return Program(False, log)
        cubin = b""
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        if size.value:
            cbuf = ctypes.create_string_buffer(size.value)
            _check(lib, lib.nvrtcGetCUBIN(prog, cbuf), "nvrtcGetCUBIN")
            cubin = cbuf.raw
        ptx = ""
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        if size.value:
            pbuf = ctypes.create_string_buffer(size.value)
            if lib.nvrtcGetPTX(prog, pbuf) == 0:
                ptx = pbuf.value.decode("utf-8", "replace")
        lowered = {}
        for expr in name_expressions:
            out = ctypes.c_char_p()
            if lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)) == 0 and out.value:
                lowered[expr] = out.value.decode()
        return Program(True, log, cubin, ptx, lowered)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
