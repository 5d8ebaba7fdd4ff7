"""Toolchain benchmark: a generated corpus of .cu files, cold vs direct nvcc, warm, touch-one,
and the launcher's overhead on a CMake + Ninja build.

    python bench/toolchain.py [--files 40] [--jobs N] [--arch sm_90] [--reps 3]

Prints one table. Needs nvcc (and cmake + ninja for the launcher rows).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

COMMON = """\
#pragma once
#include <cstdint>
namespace bench {
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}
template <int BLOCK, typename T>
__global__ void tile_reduce(const T* __restrict__ in, T* __restrict__ out, int n) {
    __shared__ T tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
    for (int s = BLOCK / 2; s > 32; s >>= 1) {
        if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        float v = warp_sum(static_cast<float>(tile[threadIdx.x] + tile[threadIdx.x + 32]));
        if (threadIdx.x == 0) out[blockIdx.x] = static_cast<T>(v);
    }
}
}  // namespace bench
"""

UNIT = """\
#include "common.cuh"
namespace bench{i} {{
constexpr int kTile = {tile};
__global__ void stencil(const float* __restrict__ in, float* __restrict__ out, int n) {{
    __shared__ float halo[kTile + 2];
    int g = blockIdx.x * kTile + threadIdx.x;
    halo[threadIdx.x + 1] = g < n ? in[g] : 0.f;
    if (threadIdx.x == 0) halo[0] = g > 0 ? in[g - 1] : 0.f;
    if (threadIdx.x == kTile - 1) halo[kTile + 1] = g + 1 < n ? in[g + 1] : 0.f;
    __syncthreads();
    if (g < n) out[g] = {a}f * halo[threadIdx.x] + {b}f * halo[threadIdx.x + 1] + {a}f * halo[threadIdx.x + 2];
}}
__global__ void __launch_bounds__(256) saxpy(int n, float a, const float* x, float* y) {{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i] * {b}f;
}}
__global__ void matmul_tile(const float* A, const float* B, float* C, int N) {{
    __shared__ float As[16][16 + {pad}];
    __shared__ float Bs[16][16 + {pad}];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < N / 16; ++t) {{
        As[threadIdx.y][threadIdx.x] = A[row * N + t * 16 + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * 16 + threadIdx.y) * N + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }}
    C[row * N + col] = acc;
}}
}}  // namespace bench{i}
void run{i}(const float* x, float* y, int n) {{
    bench{i}::stencil<<<(n + bench{i}::kTile - 1) / bench{i}::kTile, bench{i}::kTile>>>(x, y, n);
    bench{i}::saxpy<<<128, 256>>>(n, 2.f, x, y);
    bench{i}::matmul_tile<<<dim3(n / 16, n / 16), dim3(16, 16)>>>(x, x, y, n);
    bench::tile_reduce<{tile}, float><<<(n + {tile} - 1) / {tile}, {tile}>>>(x, y, n);
    bench::tile_reduce<{tile2}, double><<<1, {tile2}>>>(nullptr, nullptr, n);
}}
"""


def generate(root: Path, count: int) -> list[str]:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "common.cuh").write_text(COMMON)
    files = []
    for i in range(count):
        tile = (64, 128, 256, 512)[i % 4]
        path = src / f"unit{i:02d}.cu"
        path.write_text(UNIT.format(i=i, tile=tile, tile2=(128, 256)[i % 2], a=0.25 + i / 100,
                                    b=0.5, pad=i % 2))
        files.append(str(path))
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(bench LANGUAGES CXX CUDA)\n"
        f"add_library(corpus STATIC {' '.join('src/' + Path(f).name for f in files)})\n")
    return files


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def direct(commands: list[list[str]], jobs: int) -> float:
    """Run nvcc commands straight from a thread pool of `jobs` workers."""

    def one(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr

    t, _ = timed(lambda: list(ThreadPoolExecutor(jobs).map(one, commands)))
    return t


def commands(nvcc, files: list[str], arch: str, flags: list[str], out: str,
             deps: bool = True) -> list[list[str]]:
    """occlint's own compile commands (compile_command); deps=False drops the -MD part."""
    from occlint.toolchain.compile import compile_command

    cmds = []
    for i, f in enumerate(files):
        d = os.path.join(out, str(i))
        os.makedirs(d, exist_ok=True)
        cmd = compile_command(nvcc, f, arch, flags, d)
        cmds.append(cmd if deps else [a for a in cmd if not a.startswith("-Xcompiler=-MD")])
    return cmds


def cmake_build(root: Path, build: Path, nvcc: str, arch: str, jobs: int, launcher: bool) -> float:
    shutil.rmtree(build, ignore_errors=True)
    cmd = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
           f"-DCMAKE_CUDA_COMPILER={nvcc}", f"-DCMAKE_CUDA_ARCHITECTURES={arch[3:]}"]
    if launcher:
        cmd.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};-m;occlint;nvcc;--")
    subprocess.run(cmd, check=True, capture_output=True)
    t, _ = timed(lambda: subprocess.run(["ninja", "-C", str(build), f"-j{jobs}"], check=True,
                                        capture_output=True))
    return t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the cheap rows (min taken)")
    args = ap.parse_args()

    from occlint.config import Config
    from occlint.toolchain import collect_usage, find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc not found", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="occlint-bench-"))
    files = generate(root, args.files)
    inc = ["-I" + str(root / "src")]
    config = Config(root=str(root), arch=(args.arch,), include_dirs=(str(root / "src"),),
                    jobs=args.jobs)
    rows = []

    out = tempfile.mkdtemp(prefix="occlint-bench-out-")
    same = commands(nvcc, files, args.arch, inc, out)
    direct(same[:args.jobs], args.jobs)  # warm the disk cache
    t_direct = direct(same, args.jobs)
    t_nodeps = direct(commands(nvcc, files, args.arch, inc, out, deps=False), args.jobs)
    t_cold, cold = timed(lambda: collect_usage(files, config))
    assert cold.compiled == len(files) and not cold.errors, cold.errors
    kernels = sum(len(v) for v in cold.usages.values())
    rows.append(("direct nvcc, occlint's exact commands", t_direct, f"{len(files)} compiles"))
    rows.append(("direct nvcc, without the -MD dependency flag", t_nodeps,
                 f"{t_nodeps / t_direct:.2f}x the above"))
    rows.append(("occlint cold (collect_usage)", t_cold,
                 f"{t_cold / t_direct:.2f}x direct; {kernels} kernels"))

    warm_cmd = [sys.executable, "-c",
                "import sys; from occlint.config import Config; "
                "from occlint.toolchain import collect_usage; "
                f"r = collect_usage(sys.argv[1:], Config(root={str(root)!r}, arch=({args.arch!r},),"
                f" include_dirs=({str(root / 'src')!r},))); "
                "print(r.compiled, r.cached)", *files]
    warm_times = []
    for _ in range(args.reps):
        t, proc = timed(lambda: subprocess.run(warm_cmd, capture_output=True, text=True,
                                               check=True))
        warm_times.append(t)
        assert proc.stdout.split() == ["0", str(len(files))], proc.stdout
    t_warm_inproc = min(timed(lambda: collect_usage(files, config))[0] for _ in range(args.reps))
    rows.append(("occlint warm, new process (discovery + hashing)", min(warm_times),
                 f"{min(warm_times) / t_cold:.1%} of cold"))
    rows.append(("occlint warm, in process", t_warm_inproc, f"{t_warm_inproc / t_cold:.1%} of cold"))

    # what a key on the preprocessed TU would cost on every warm run
    pre = [[nvcc.path, "-E", f"-arch={args.arch}", *inc, "-o", os.path.join(out, f"{i}.ii"), f]
           for i, f in enumerate(files)]
    t_pre = min(direct(pre, args.jobs) for _ in range(args.reps))
    rows.append(("alternative key: nvcc -E of every file", t_pre, "per warm run; not used"))

    target = Path(files[len(files) // 2])
    target.write_text(target.read_text() + "\n// touched\n")
    t_touch, touch = timed(lambda: collect_usage(files, config))
    rows.append(("touch one file, rerun", t_touch, f"{touch.compiled} recompiled"))

    # the launcher's cost per compile: interleaved pairs on one file, medians (robust to load)
    obj = os.path.join(out, "one.o")
    compile_one = [nvcc.path, f"-arch={args.arch}", *inc, "-c", files[0], "-o", obj]
    plain_t, launch_t = [], []
    for _ in range(5 * args.reps):
        plain_t.append(timed(lambda: subprocess.run(compile_one, check=True))[0])
        launch_t.append(timed(lambda: subprocess.run(
            [sys.executable, "-m", "occlint", "nvcc", "--", *compile_one], check=True))[0])
    mp, ml = statistics.median(plain_t), statistics.median(launch_t)
    rows.append(("one nvcc -c, plain (median)", mp, f"{len(plain_t)} interleaved runs"))
    rows.append(("one nvcc -c, via occlint nvcc (median)", ml, f"{ml / mp - 1:+.1%}"))

    if shutil.which("cmake") and shutil.which("ninja"):
        plain, launched = [], []
        for _ in range(max(1, args.reps - 1)):
            plain.append(cmake_build(root, root / "b-plain", nvcc.path, args.arch, args.jobs, False))
            launched.append(cmake_build(root, root / "b-launch", nvcc.path, args.arch, args.jobs,
                                        True))
        sidecars = len(list((root / "b-launch").rglob("*.occlint.json")))
        rows.append(("CMake+Ninja build, plain", min(plain), f"-j{args.jobs}"))
        rows.append(("CMake+Ninja build, occlint nvcc launcher", min(launched),
                     f"{min(launched) / min(plain) - 1:+.1%}; {sidecars} sidecars"))

    print(f"occlint toolchain bench: {len(files)} files, {args.arch}, jobs={args.jobs}, "
          f"nvcc {nvcc.version}, load average {os.getloadavg()[0]:.1f}")
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'wall s':>8}  note")
    for name, secs, note in rows:
        print(f"{name:<{width}}  {secs:>8.3f}  {note}")
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
