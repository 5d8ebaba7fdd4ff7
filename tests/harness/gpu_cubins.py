"""Check occlint's per-kernel compiler figures and its engine against the CUDA driver, on cubins.

    python tests/harness/gpu_cubins.py prepare OUT PATH... [--arch sm_90]   # here, no GPU
    python tests/harness/gpu_cubins.py check OUT                             # on the GPU

`prepare` compiles every .cu under PATH the way `occlint check` does (the unit's database entry,
else its setup.py extension's, through `flags.unit_command`, `compile.compile_command`, ptxas's report through `parse_usage`,
the cubin's attributes through `with_cubin_attributes`), keeps each cubin in OUT and writes
OUT/manifest.json: occlint's Usage of every kernel, by mangled name. It does the same for every
CUDA string of the .py files under PATH (CuPy's RawModule / RawKernel, PyCUDA): each is compiled
by `occlint.python.compile.compile_module`, as `occlint check` compiles it (NVRTC, or nvcc with
backend="nvcc"; with enable_cooperative_groups, relocatable code device-linked by `_linked` or
`compile_one`), and the cubin occlint read its figures from is kept: the device-linked image
where occlint linked one, else the cubin the compiler wrote (one that stays relocatable is linked
by `check`, as a .cu unit's). Its manifest entry has the .cu entries' keys (`compiler` in place
of `nvcc`), the module's index in the file and whether it is cooperative.

`check` needs only the driver (ctypes on libcuda) and occlint's pure engine. For every kernel it
loads the cubin, asks cuFuncGetAttribute for registers, static shared memory, local memory and
max threads per block, and compares them with occlint's Usage (ptxas's registers and shared
memory, the stack frame, the cubin's EIATTR_MAX_THREADS); then it asks
cuOccupancyMaxActiveBlocksPerMultiprocessor over block sizes x dynamic shared memory x the
never-opted-in and the opted-in dynamic limit, and cuOccupancyMaxPotentialBlockSize, and
compares each with occlint's engine fed occlint's own figures. Prints the totals and every
difference; exits 1 on any.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

BLOCKS = (1, 32, 33, 64, 96, 100, 128, 160, 192, 224, 256, 288, 320, 384, 448, 512, 576, 640,
          768, 896, 992, 1024)
DYNAMIC = (0, 1024, 8192, 20000, 40000, 70000, 100000, 160000, 200000)


# --- prepare (no GPU) ----------------------------------------------------------------------------

def prepare(out: Path, paths: list[str], arch: str, jobs: int, timeout: float = 300) -> int:
    from occlint.config import load_config
    from occlint.toolchain import database, libraries
    from occlint.toolchain.compile import (
        _usage_to_json,
        compile_command,
        expand_paths,
        run_with_timeout,
        with_cubin_attributes,
    )
    from occlint.toolchain.discover import find_nvcc
    from occlint.toolchain.flags import unit_command
    from occlint.toolchain.ptxas import parse_usage

    out.mkdir(parents=True, exist_ok=True)
    units = [os.path.abspath(u) for u in expand_paths(paths) if u.endswith(".cu")]  # cwd: the entry's
    config = load_config(start=paths[0])
    db = database.database_for(paths[0], config)
    nvcc = find_nvcc(config, db.raw if db else None)
    if nvcc is None:
        sys.exit("nvcc not found")
    libs = libraries.wheel_include_dirs()
    from occlint.python import build_entries, entries_database
    extensions = entries_database(build_entries(config.root, units))   # setup.py's, as check

    def one(item):
        n, unit = item
        plan = unit_command(unit, config, libs, extensions)
        d = out / f"u{n}"
        d.mkdir(exist_ok=True)
        code, text = run_with_timeout(
            compile_command(nvcc, unit, arch, list(plan.flags), str(d)), plan.cwd, timeout)
        cubin = d / "x.cubin"
        if code != 0 or not cubin.is_file():
            shutil.rmtree(d, ignore_errors=True)
            why = "timed out" if code is None else next(
                (ln.strip() for ln in text.splitlines() if "error" in ln), f"exit {code}")
            print(f"{os.path.relpath(unit)}: not compiled: {why[:200]}", file=sys.stderr)
            return None
        usages = with_cubin_attributes(parse_usage(text, arch, unit), cubin,
                                       link=(arch, nvcc.bin_dir, timeout))
        name = f"u{n}.cubin"
        cubin.rename(out / name)
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
        return {"unit": os.path.relpath(unit), "cubin": name, "arch": arch,
                "nvcc": nvcc.version, "usages": [_usage_to_json(u) for u in usages]}

    with ThreadPoolExecutor(jobs) as pool:
        done = [r for r in pool.map(one, enumerate(units)) if r]
    kernels = sum(len(r["usages"]) for r in done)
    print(f"{len(done)} of {len(units)} units compiled for {arch}: {kernels} kernels")
    modules = python_modules(out, paths, arch, config)
    (out / "manifest.json").write_text(json.dumps(done + modules, indent=1))
    kernels = sum(len(r["usages"]) for r in modules)
    print(f"{len(modules)} Python modules compiled for {arch}: {kernels} kernels; manifest in {out}")
    return 0


def python_files(paths: list[str]) -> list[str]:
    """The .py files as given, and under the directories given (hidden and __ dirs skipped)."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
                out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
        elif p.endswith(".py"):
            out.append(p)
    return out


def python_modules(out: Path, paths: list[str], arch: str, config) -> list[dict]:
    """Manifest entries for the CUDA strings of the .py files under `paths`, compiled by
    `compile_module` (no cache). The cubin it reads is caught on its way through
    `cubin_attributes`, and replaced by the image `devlink.linked_image` returns when it links
    one; modules are compiled one at a time while the two are wrapped."""
    from unittest import mock

    from occlint.python import might_have_cuda, nvrtc
    from occlint.python.compile import compile_module
    from occlint.python.extract import extract
    from occlint.toolchain import compile as toolchain
    from occlint.toolchain import devlink
    from occlint.toolchain.compile import _usage_to_json
    from occlint.toolchain.discover import find_nvcc

    images: list[bytes] = []
    attributes, link = toolchain.cubin_attributes, devlink.linked_image

    def read(usages, cubin, *args, **kwargs):
        images.append(cubin)
        return attributes(usages, cubin, *args, **kwargs)

    def linked(cubin, *args):
        image, why = link(cubin, *args)
        if not why:
            images.append(image)
        return image, why

    nvcc = find_nvcc(config)
    compilers = {"nvrtc": "nvrtc {}.{}".format(*nvrtc.version() or (0, 0)),
                 "nvcc": f"nvcc {nvcc.version}" if nvcc else None}
    done = []
    with mock.patch.object(toolchain, "cubin_attributes", read), \
            mock.patch.object(devlink, "linked_image", linked):
        for path in python_files(paths):
            text = Path(path).read_text(encoding="utf-8")
            if not might_have_cuda(text):
                continue
            for mod in extract(text, path).modules:
                images.clear()
                result = compile_module(mod, arch, path, config)
                if result.notice or result.errors or not result.usages or not images:
                    why = result.notice or (result.errors and result.errors[0].message)
                    print(f"skipped {path} module {mod.index}: {why or 'no kernels'}")
                    continue
                name = f"p{len(done)}.cubin"
                (out / name).write_bytes(images[-1])
                how = ("relocatable, device-linked, " if images[-1][16] == 2 else
                       "relocatable, ") if mod.relocatable else ""
                print(f"{path} module {mod.index}: {compilers[mod.backend]}, {how}"
                      f"{len(result.usages)} kernels")
                done.append({"unit": os.path.relpath(path), "module": mod.index, "cubin": name,
                             "arch": arch, "compiler": compilers[mod.backend],
                             "relocatable": mod.relocatable,
                             "usages": [_usage_to_json(u) for u in result.usages]})
    return done


# --- check (on the GPU) ----------------------------------------------------------------------------

# CUfunction_attribute and CUdevice_attribute values (cuda.h)
MAX_THREADS, SHARED, CONST, LOCAL, NUM_REGS = 0, 1, 2, 3, 4
MAX_DYNAMIC, CLUSTER_W = 8, 11
DEV_SMS, DEV_MAJOR, DEV_MINOR, DEV_OPTIN = 16, 75, 76, 97


class Driver:
    """The few driver calls the check needs, through ctypes."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.call("cuInit", 0)
        dev = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(dev), 0)
        self.dev = dev.value
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), self.dev)
        self.call("cuCtxSetCurrent", ctx)

    def call(self, name: str, *args) -> None:
        err = getattr(self.lib, name)(*args)
        if err:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorName(err, ctypes.byref(msg))
            raise RuntimeError(f"{name}: {msg.value.decode() if msg.value else err}")

    def device(self, attr: int) -> int:
        v = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(v), attr, self.dev)
        return v.value

    def link(self, image: bytes, devrt: str | None) -> bytes:
        """A relocatable cubin (-rdc) linked the way nvlink links a program: with the device
        runtime library, into an executable image."""
        state = ctypes.c_void_p()
        self.call("cuLinkCreate_v2", 0, None, None, ctypes.byref(state))
        try:
            self.call("cuLinkAddData_v2", state, 0, ctypes.c_char_p(image),
                      ctypes.c_size_t(len(image)), b"unit.cubin", 0, None, None)
            if devrt:
                self.call("cuLinkAddFile_v2", state, 4, devrt.encode(), 0, None, None)
            out, size = ctypes.c_void_p(), ctypes.c_size_t()
            self.call("cuLinkComplete", state, ctypes.byref(out), ctypes.byref(size))
            return ctypes.string_at(out, size.value)
        finally:
            self.lib.cuLinkDestroy(state)

    def functions(self, image: bytes, names: list[str], devrt: str | None = None) -> dict:
        if image[16] == 1:                  # ELF ET_REL: compiled with -rdc
            image = self.link(image, devrt)
        mod = ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(image))
        out = {}
        for name in names:
            fn = ctypes.c_void_p()
            try:
                self.call("cuModuleGetFunction", ctypes.byref(fn), mod, name.encode())
                out[name] = fn
            except RuntimeError as exc:
                out[name] = str(exc)
        return out

    def attribute(self, fn, attr: int) -> int:
        v = ctypes.c_int()
        self.call("cuFuncGetAttribute", ctypes.byref(v), attr, fn)
        return v.value

    def set_attribute(self, fn, attr: int, value: int) -> None:
        self.call("cuFuncSetAttribute", fn, attr, value)

    def active_blocks(self, fn, block: int, dyn: int) -> int:
        v = ctypes.c_int()
        self.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(v), fn, block,
                  ctypes.c_size_t(dyn))
        return v.value

    def potential(self, fn) -> tuple[int, int]:
        grid, block = ctypes.c_int(), ctypes.c_int()
        self.call("cuOccupancyMaxPotentialBlockSize", ctypes.byref(grid), ctypes.byref(block),
                  fn, None, ctypes.c_size_t(0), 0)
        return grid.value, block.value


def launchable_threads(arch: str, u: dict) -> int:
    """The most threads a block of this kernel may have (cudaFuncAttributes.maxThreadsPerBlock):
    its max threads (the cubin's, else 1024), less what its registers allow."""
    from occlint.occupancy import compute

    limit = u["max_threads"] or 1024
    for block in (limit, *range(limit // 32 * 32, 0, -32)):
        if compute(arch, block, u["registers"], u["static_smem"]).active_blocks:
            return block
    return 0


def check(out: Path, devrt: str | None) -> int:
    from occlint import gpus
    from occlint.occupancy import compute, max_potential_block_size

    manifest = json.loads((out / "manifest.json").read_text())
    drv = Driver()
    arch = gpus.arch(f"{drv.device(DEV_MAJOR)}.{drv.device(DEV_MINOR)}")
    sms, optin = drv.device(DEV_SMS), drv.device(DEV_OPTIN)
    counts = dict.fromkeys(("kernels", "linked", "registers", "static_smem", "local", "max_threads",
                            "occupancy", "potential"), 0)
    bad = dict.fromkeys(counts, 0)
    skipped: list[str] = []
    records = []

    def differs(what: str, name: str, ours, theirs) -> None:
        counts[what] += 1
        if ours != theirs:
            bad[what] += 1
            print(f"DIFF {what} {name}: occlint {ours}, driver {theirs}")

    for unit in manifest:
        if unit["arch"] != arch.name:
            skipped.append(f"{unit['unit']}: built for {unit['arch']}, device is {arch.name}")
            continue
        usages = {u["mangled"]: u for u in unit["usages"]}
        image = (out / unit["cubin"]).read_bytes()
        try:
            fns = drv.functions(image, list(usages), devrt)
        except RuntimeError as exc:
            skipped.append(f"{unit['unit']}: {exc}")
            continue
        for mangled, u in usages.items():
            fn = fns[mangled]
            if isinstance(fn, str):
                skipped.append(f"{unit['unit']}:{u['kernel']}: {fn}")
                continue
            name = f"{unit['unit']}:{u['kernel']}" + (" (rdc)" if image[16] == 1 else "")
            counts["kernels"] += 1
            counts["linked"] += image[16] == 1
            regs, static = drv.attribute(fn, NUM_REGS), drv.attribute(fn, SHARED)
            local, max_threads = drv.attribute(fn, LOCAL), drv.attribute(fn, MAX_THREADS)
            records.append({"kernel": name, "mangled": mangled, "driver": {
                "registers": regs, "static_smem": static, "local": local,
                "max_threads": max_threads, "const": drv.attribute(fn, CONST)},
                "occlint": u})
            differs("registers", name, u["registers"], regs)
            differs("static_smem", name, u["static_smem"], static)
            differs("local", name, u["stack_frame"], local)
            differs("max_threads", name, launchable_threads(arch.name, u), max_threads)
            if u.get("cluster_dims"):
                skipped.append(f"{name}: cluster dims {u['cluster_dims']} (occupancy per cluster)")
                continue
            if static != u["static_smem"]:
                skipped.append(f"{name}: occupancy not compared (static shared memory differs)")
                continue
            for opted in (False, True):
                limit = max((optin if opted else arch.smem_per_block) - static, 0)
                drv.set_attribute(fn, MAX_DYNAMIC, limit)
                for block in BLOCKS:
                    if block > max_threads:
                        continue
                    for dyn in DYNAMIC:
                        if dyn > limit:
                            continue
                        ours = compute(arch.name, block, u["registers"], u["static_smem"], dyn,
                                       max_dynamic_smem=limit,
                                       barriers=u["barriers"]).active_blocks
                        differs("occupancy", f"{name} block={block} dyn={dyn} "
                                f"max_dyn={limit}", ours, drv.active_blocks(fn, block, dyn))
                r = max_potential_block_size(arch.name, u["registers"], u["static_smem"], 0,
                                             launch_bounds=u["max_threads"], sm_count=sms,
                                             max_dynamic_smem=limit, barriers=u["barriers"])
                differs("potential", f"{name} max_dyn={limit}",
                        (r.min_grid_size, r.block_size), drv.potential(fn))
    (out / "driver.json").write_text(json.dumps(records, indent=1))
    for line in skipped:
        print(f"skipped {line}")
    print(f"device {arch.name}, {sms} SMs; {counts['kernels']} kernels from "
          f"{len(manifest)} cubins ({counts['linked']} kernels of -rdc units, linked with "
          f"{devrt or 'no device runtime'})")
    for what in counts:
        if what not in ("kernels", "linked"):
            print(f"{what:12} {counts[what] - bad[what]} of {counts[what]} agree")
    print("(local: the driver's LOCAL_SIZE_BYTES is the cubin's minimum stack, the frame plus "
          "its deepest callee's; occlint's stack_frame is the kernel's own frame, as ptxas "
          "reports it. Occupancy does not depend on it, and a difference there fails nothing.)")
    return 1 if any(n for what, n in bad.items() if what != "local") else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    p.add_argument("paths", nargs="+")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=300, help="seconds per compile (300)")
    c = sub.add_parser("check")
    c.add_argument("out")
    c.add_argument("--devrt", default=next(
        (p for p in ("/usr/local/cuda/lib64/libcudadevrt.a",
                     "/usr/local/cuda/targets/x86_64-linux/lib/libcudadevrt.a")
         if os.path.isfile(p)), None), help="libcudadevrt.a, linked into -rdc cubins")
    args = ap.parse_args()
    if args.cmd == "prepare":
        return prepare(Path(args.out), args.paths, args.arch, args.jobs, args.timeout)
    return check(Path(args.out), args.devrt)


if __name__ == "__main__":
    sys.exit(main())
