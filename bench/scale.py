"""Time per kernel as one file grows: occlint's rules must stay linear (issue 10, item 5).

    python bench/scale.py [--sizes 1000,2000,4000,8000,16000,32000] [--mb 20]

Each size is one generated .cu file with that many kernels (plain, namespaced and templated ones,
shared tiles, `cudaFuncSetAttribute` calls, launches, one per kernel) plus recorded nvcc usage for
every kernel, linted with `lint_source` (parse + facts + every rule), one core; and listed as
`occlint kernels` lists it (records, compiler figures, occupancy, why a launch has none, text).
The last row is a file of about `--mb` MB made the same way. Prints a table: kernels, MB,
seconds and microseconds per kernel for each; flat microseconds per kernel means linear time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PLAIN = """\
__global__ void __launch_bounds__(256) k{i}(const float* in, float* out, int n) {{
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    out[blockIdx.x * 256 + t] = tile[255 - t];
}}
"""
NAMESPACED = """\
namespace ns{i} {{
__global__ void k{i}(float* x, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}}
}}
"""
TEMPLATED = """\
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) k{i}(float* x) {{
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = dyn[BLOCK - 1 - threadIdx.x];
}}
"""
LAUNCH = {
    0: "    k{i}<<<n / 256, 256>>>(in, out, n);\n",
    1: "    ns{i}::k{i}<<<(n + 127) / 128, 128>>>(out, n);\n",
    2: "    cudaFuncSetAttribute(k{i}<128>, cudaFuncAttributeMaxDynamicSharedMemorySize, 512);\n"
       "    k{i}<128><<<64, 128, 512>>>(out);\n",
}


def generate(n: int) -> tuple[str, list]:
    """(source with `n` kernels, recorded Usage for each)."""
    from occlint.model import Usage

    defs, calls, usage = [], [], []
    for i in range(n):
        kind = i % 3
        defs.append((PLAIN, NAMESPACED, TEMPLATED)[kind].format(i=i))
        calls.append(LAUNCH[kind].format(i=i))
        name = (f"k{i}", f"ns{i}::k{i}", f"k{i}")[kind]
        usage.append(Usage(kernel=name, arch="sm_90", registers=32 + i % 64,
                           static_smem=1024 if kind == 0 else 0, barriers=1,
                           template_args=("128",) if kind == 2 else (), mangled=f"_Z{i}"))
    host = "void run(const float* in, float* out, int n) {\n" + "".join(calls) + "}\n"
    return "".join(defs) + host, usage


def measure(n: int) -> tuple[float, float, int]:
    """(seconds, MB, findings) for one lint of a file with `n` kernels."""
    from occlint.config import Config
    from occlint.engine import lint_source

    text, usage = generate(n)
    config = Config(arch=("sm_90",))
    start = time.process_time()
    findings = lint_source(text, "scale.cu", usage, config)
    return time.process_time() - start, len(text.encode()) / 1e6, len(findings)


def measure_listing(n: int) -> float:
    """CPU seconds of `occlint kernels`' listing of the same file (one process, no compile)."""
    from occlint.commands.kernels import _listing
    from occlint.config import Config

    text, usage = generate(n)
    start = time.process_time()
    _listing(["scale.cu"], ["scale.cu"], {"scale.cu": text.encode()}, Config(arch=("sm_90",)),
             None, usage, ("sm_90",), False, {})
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000,16000,32000")
    parser.add_argument("--mb", type=float, default=20.0, help="size of the last file (0: skip it)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.mb:
        per_kernel = len(generate(300)[0].encode()) / 300
        sizes.append(int(args.mb * 1e6 / per_kernel))
    print(f"{'kernels':>8} {'MB':>6} {'CPU s':>8} {'us/kernel':>10} {'findings':>9} "
          f"{'listing s':>10} {'us/kernel':>10}")
    for n in sizes:
        seconds, mb, found = measure(n)
        listing = measure_listing(n)
        print(f"{n:>8} {mb:>6.1f} {seconds:>8.2f} {seconds / n * 1e6:>10.0f} {found:>9} "
              f"{listing:>10.2f} {listing / n * 1e6:>10.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
