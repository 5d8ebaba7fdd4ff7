"""The device link of relocatable device code (-rdc, -dc).

ptxas compiles such a unit into a relocatable cubin, and its report is what the unit looks like
before nvlink lays out shared memory and resolves calls: cuda-samples' `MatrixMulCUDA<32>`
reports 0 B of static shared memory where the linked kernel has 8192 B, and newdelete's
`containerDelete` 24 registers where the linked kernel has 45 (both as the CUDA driver reports
them on an H200: docs/validation.md). occlint links each such cubin alone, with the toolkit's
device runtime library, and reads the figures from the linked image. A unit whose device code
calls into other units cannot link alone: it keeps ptxas's figures, with a warning.
"""

from __future__ import annotations

import os
import re

from occlint.process import run


def devrt_dir(bin_dir: str) -> str | None:
    """The folder of the toolkit's libcudadevrt.a (system CUDA: lib64; pip's: lib)."""
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        d = os.path.join(bin_dir, os.pardir, sub)
        if os.path.isfile(os.path.join(d, "libcudadevrt.a")):
            return os.path.normpath(d)
    return None


def link(cubin: str, arch: str, bin_dir: str, timeout: float) -> tuple[str | None, str]:
    """(path of the linked cubin beside `cubin`, or None; nvlink's complaint when it failed).
    `arch` is the compile's (sm_90, sm_90a); every path is occlint's own temp file."""
    out = cubin + ".linked"
    nvlink = os.path.join(bin_dir, "nvlink")
    if not os.path.isfile(nvlink):
        return None, f"no nvlink beside nvcc in {bin_dir}"
    cmd = [nvlink, f"-arch={arch}", cubin, "-o", out]
    lib = devrt_dir(bin_dir)
    if lib:
        cmd += ["-L", lib, "-lcudadevrt"]
    try:
        code, text, _ = run(cmd, timeout=timeout)
    except OSError as exc:
        return None, f"cannot run nvlink: {exc}"
    if code == 0 and os.path.isfile(out):
        return out, ""
    said = text.decode("utf-8", "replace")
    # "Undefined reference to 'f' in '/tmp/occlint-.../x.cubin'", "Input file '/tmp/...'
    # newer than toolkit (135 vs 130)": the temp path says nothing
    first = next((re.sub(r" ?(?:in )?'[^']*x\.cubin'", "", m.group(1).strip())
                  for m in re.finditer(r"nvlink (?:error|fatal)\s*:\s*(.*)", said)), None)
    return None, (first or ("timed out" if code is None else f"exit {code}")).strip()[:300]


def unlinked(who: str, arch: str, why: str) -> str:
    """The warning for code that could not be linked: its figures stay ptxas's."""
    return (f"{who}: its relocatable device code (-rdc) does not link alone for {arch} ({why}); "
            "its kernels' figures are ptxas's before the device link, which can add shared "
            "memory and registers")


def linked_image(cubin: bytes, arch: str, bin_dir: str, timeout: float) -> tuple[bytes, str]:
    """(the cubin as the device link leaves it, or unchanged; why it could not be linked, or
    ""), for a cubin that `cubin.needs_link` says the link can change."""
    from occlint.toolchain.safe import private_tmpdir

    with private_tmpdir() as tmp:
        path = os.path.join(tmp, "x.cubin")
        with open(path, "wb") as fh:
            fh.write(cubin)
        out, why = link(path, arch, bin_dir, timeout)
        if out is None:
            return cubin, why
        with open(out, "rb") as fh:
            return fh.read(), ""
