"""Time and size of the HTML report for a project of many kernels (targets: < 2 s, < 5 MB).

    python bench/report.py [--kernels 100] [--archs sm_80,sm_90] [--repeat 3] [--no-browser]

Writes a generated project (10 kernels per .cu file: templated, with launch bounds, static
shared memory, constant and runtime launches, so every evaluation basis and most rules occur)
with recorded compiler figures (no nvcc, so the numbers are the report's own cost), lints it
once, then times building the report's model, rendering the page, and loading it in headless
Chromium (when `chromium` is installed) until the load event, and prints a table. On a shared
machine the CPU time is the steadier figure; the browser's is wall time only.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

KERNEL = """
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) tile_{i}(const float* in, float* out, int n) {{
    __shared__ float tile[{tile}];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * BLOCK + t];
    __syncthreads();
    out[blockIdx.x * BLOCK + t] = tile[BLOCK - 1 - t];
}}

__global__ void plain_{i}(float* x, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}}
"""

LAUNCHES = """
void run_{i}(const float* in, float* out, float* x, int n, int threads) {{
    tile_{i}<{block}><<<n / {block}, {block}>>>(in, out, n);
    tile_{i}<{block2}><<<n / {block2}, {block2}>>>(in, out, n);
    plain_{i}<<<n / threads, threads>>>(x, n);
}}
"""


def make_project(folder: Path, kernels: int, archs: list[str], seed: int) -> dict:
    """Sources under `folder` and the usage a compiler would report for them."""
    from occlint.model import Usage

    rng = random.Random(seed)
    usage: dict[str, list] = {}
    per_file = 10
    for f in range(0, kernels // 2, per_file // 2):
        path = folder / f"k{f:03d}.cu"
        parts = []
        recs = []
        for i in range(f, min(f + per_file // 2, kernels // 2)):
            block, block2 = rng.choice([(128, 256), (256, 512), (64, 1024), (96, 384)])
            tile = rng.choice([256, 1024, 4096, 8192])
            parts.append(KERNEL.format(i=i, tile=tile))
            parts.append(LAUNCHES.format(i=i, block=block, block2=block2))
            for arch in archs:
                for b in (block, block2):
                    recs.append(Usage(f"tile_{i}", arch, rng.randint(16, 96), tile * 4,
                                      barriers=1, spill_stores=rng.choice([0, 0, 0, 8]),
                                      template_args=(str(b),), source="recorded"))
                recs.append(Usage(f"plain_{i}", arch, rng.randint(8, 64), 0, source="recorded"))
        path.write_text("\n".join(parts))
        usage[str(path)] = recs
    return usage


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--archs", default="sm_80,sm_90")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()

    import dataclasses

    from occlint import report
    from occlint.config import load_config
    from occlint.emit import html
    from occlint.engine import lint_paths

    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        usage = make_project(folder, args.kernels, archs, args.seed)
        config = dataclasses.replace(load_config(None, start=tmp), arch=tuple(archs))
        t = time.perf_counter()
        result = lint_paths([tmp], config, usage=usage)
        lint_s = time.perf_counter() - t
        model_s, page_s, cpu_s = [], [], []
        for _ in range(args.repeat):
            report.curves_mod._cached.cache_clear()      # no help from the previous round
            c, t = time.process_time(), time.perf_counter()
            model = report.build(result, root=tmp)
            model_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            page = html.page(model)
            page_s.append(time.perf_counter() - t)
            cpu_s.append(time.process_time() - c)
        out = folder / "report.html"
        out.write_text(page, encoding="utf-8")
        size = out.stat().st_size
        charts = page.count('class="chart"')
        load_s = None
        if not args.no_browser:
            load_s = _browser_load(out, folder, args.repeat)

    rows = [
        ("kernels in the report", f"{len(model.kernels)}", ""),
        ("archs", ",".join(archs), ""),
        ("charts", f"{charts}", ""),
        ("findings", f"{len(model.findings)}", ""),
        ("lint (recorded usage, for reference)", f"{lint_s:.3f} s", ""),
        ("report model: sites, curves (best of %d)" % args.repeat, f"{min(model_s):.3f} s", ""),
        ("render HTML (best of %d)" % args.repeat, f"{min(page_s):.3f} s", ""),
        ("model + render, wall", f"{min(model_s) + min(page_s):.3f} s", "target < 2 s"),
        ("model + render, CPU time", f"{min(cpu_s):.3f} s", "(steadier on a loaded machine)"),
        ("file size", f"{size / 1e6:.2f} MB", "target < 5 MB"),
    ]
    if load_s is not None:
        rows.append(("Chromium: navigate to load event (best of %d)" % args.repeat,
                     f"{min(load_s):.3f} s", "target < 2 s"))
    elif not args.no_browser:
        rows.append(("Chromium", "not installed", ""))
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'value':>10}  note")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>10}  {note}")
    return 0


def _browser_load(page: Path, folder: Path, repeat: int) -> list[float] | None:
    import shutil

    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from harness.cdp import Browser

    times = []
    with Browser(chromium, folder / "profile", timeout=120) as b:
        p = b.open_page(offline=True)
        p.set_viewport(1280, 800)
        for _ in range(repeat):
            p.goto("about:blank")
            t = time.perf_counter()
            p.goto(page.as_uri())
            times.append(time.perf_counter() - t)
    return times


if __name__ == "__main__":
    sys.exit(main())
