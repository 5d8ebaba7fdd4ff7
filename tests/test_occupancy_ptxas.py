"""launch_bounds_register_cap() against real ptxas: a kernel that wants every register it can get,
given many `__launch_bounds__(T, B)` (.maxntid/.minnctapersm in PTX); ptxas must land exactly on our cap, and warn that
it ignores `minBlocks` exactly where we return None."""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

from occlint.occupancy import launch_bounds_register_cap

BOUNDS = [(1024, 1), (1024, 2), (512, 3), (256, 1), (256, 3), (256, 5), (256, 7), (160, 3),
          (160, 5), (96, 16), (96, 7), (384, 3), (128, 10), (672, 2), (100, 5), (65, 15),
          (65, 16), (33, 32), (200, 7), (32, 32)]
ARCHS = ["sm_75", "sm_86", "sm_90", "sm_120"]
LIVE = 264   # values kept live across a loop: more than the 255 registers ptxas may use


def _ptx(arch: str) -> str:
    """Hand-written PTX (no front end to wait for): LIVE values loaded, mixed in a loop, summed."""
    out = [".version 8.7", f".target {arch}", ".address_size 64", ""]
    for t, b in BOUNDS:
        name = f"k_{t}_{b}"
        out += [f".visible .entry {name}(.param .u64 pin, .param .u64 pout, .param .u32 piters)",
                f".maxntid {t}, 1, 1", f".minnctapersm {b}", "{",
                f"  .reg .f32 %f<{LIVE}>;", "  .reg .b64 %rd<4>;", "  .reg .b32 %r<4>;",
                "  .reg .pred %p1;",
                "  ld.param.u64 %rd1, [pin];", "  ld.param.u64 %rd2, [pout];",
                "  ld.param.u32 %r1, [piters];", "  cvta.to.global.u64 %rd1, %rd1;",
                "  cvta.to.global.u64 %rd2, %rd2;", "  mov.u32 %r2, %tid.x;",
                "  mul.wide.u32 %rd3, %r2, 4;", "  add.s64 %rd1, %rd1, %rd3;",
                "  add.s64 %rd2, %rd2, %rd3;"]
        out += [f"  ld.global.f32 %f{i}, [%rd1+{i * 4096}];" for i in range(LIVE)]
        out += ["  mov.u32 %r3, 0;", f"L_{name}:", "  setp.ge.s32 %p1, %r3, %r1;",
                f"  @%p1 bra D_{name};"]
        out += [f"  fma.rn.f32 %f{i}, %f{i}, %f{(i + 1) % LIVE}, %f{(i + 7) % LIVE};"
                for i in range(LIVE)]
        out += ["  add.s32 %r3, %r3, 1;", f"  bra L_{name};", f"D_{name}:"]
        out += [f"  add.f32 %f0, %f0, %f{i};" for i in range(1, LIVE)]
        out += ["  st.global.f32 [%rd2], %f0;", "  ret;", "}", ""]
    return "\n".join(out)


def _ptxas_report(ptxas: str, arch: str, out_dir) -> dict[str, tuple[int, bool]]:
    """kernel -> (registers used, minnctapersm ignored)."""
    src = out_dir / f"{arch}.ptx"
    src.write_text(_ptx(arch))
    proc = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", str(out_dir / f"{arch}.cubin"),
                           str(src)], capture_output=True, text=True, check=True)
    report: dict[str, tuple[int, bool]] = {}
    current = None
    ignored = set()
    for line in proc.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"for entry (\w+) is out of range", line)
        if m:
            ignored.add(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            report[current] = (int(m.group(1)), current in ignored)
    return report


def test_launch_bounds_cap_matches_ptxas(nvcc_path, tmp_path):
    ptxas = os.path.join(os.path.dirname(nvcc_path), "ptxas")
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = dict(zip(ARCHS, pool.map(
            lambda arch: _ptxas_report(ptxas, arch, tmp_path), ARCHS), strict=True))
    wrong = []
    for arch, report in reports.items():
        assert len(report) == len(BOUNDS), (arch, report)
        for t, b in BOUNDS:
            used, ignored = report[f"k_{t}_{b}"]
            cap = launch_bounds_register_cap(arch, t, b)
            if cap is None:
                if not ignored:
                    wrong.append((arch, t, b, "ptxas honoured minBlocks", used))
            elif ignored or used != cap:
                wrong.append((arch, t, b, cap, used))
    assert not wrong, wrong
