"""`occlint calc`: the occupancy calculator for one launch configuration."""

from __future__ import annotations

import argparse

from occlint.commands.summary import plural


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--arch", help="sm_90, 9.0, compute_90, ...; a comma list gives one answer "
                                       "per arch (default: the GPU's)")
    parser.add_argument("--gpu", help="a named GPU (h100, a100, rtx4090, ...): arch and SM count "
                                      "(default: the project config's `gpu`, else h100)")
    parser.add_argument("--regs", required=True, help="registers per thread (ptxas \"Used N registers\")")
    parser.add_argument("--block", help="threads per block (default 256)")
    parser.add_argument("--smem", default="0", help="static shared memory per block: 16384, 16K, 16KiB")
    parser.add_argument("--dynamic-smem", default="0", help="dynamic shared memory per launch")
    parser.add_argument("--max-dynamic-smem", default=None,
                        help="cudaFuncAttributeMaxDynamicSharedMemorySize (default: opted in to the "
                             "device maximum; a kernel that never set it has 48K minus static)")
    parser.add_argument("--carveout", default=None,
                        help="cudaFuncAttributePreferredSharedMemoryCarveout in percent, 0..100")
    parser.add_argument("--cache-config", default="none",
                        help="none, prefer_shared, prefer_l1 or prefer_equal")
    parser.add_argument("--barriers", default="1", help="barriers used (ptxas \"used N barriers\")")
    parser.add_argument("--sweep", action="store_true",
                        help="also print occupancy over block sizes and register counts")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--plot", metavar="FILE.svg",
                        help="also draw occupancy against block size, registers and shared memory "
                             "(current point and nearest cliffs marked) to an SVG file")


def _int(text: str, what: str) -> int:
    from occlint.errors import OcclintError

    text = str(text).strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        raise OcclintError(f"{what} must be an integer, not {text!r}") from None


def _inputs(args) -> dict:
    from occlint import gpus
    from occlint.errors import OcclintError
    from occlint.units import parse_size

    if args.arch is None and args.gpu is None:       # as `check` does: the config's GPU
        from occlint.config import load_config

        args.gpu = load_config(start=".").gpu
    gpu = gpus.gpu(args.gpu) if args.gpu else gpus.default_gpu(args.arch)
    arch = gpus.arch(args.arch) if args.arch else gpu.limits
    if args.arch and args.gpu and gpu.arch != arch.name:
        raise OcclintError(f"--gpu {args.gpu} is {gpu.arch}, not {arch.name}; give one of them")
    carveout = None
    if args.carveout is not None and args.carveout.strip().lower() not in ("", "default", "-1"):
        carveout = _int(args.carveout.rstrip("%"), "--carveout")
    return {
        "arch": arch, "gpu": gpu,
        "block_size": _int(args.block, "--block") if args.block is not None else 256,
        "regs_per_thread": _int(args.regs, "--regs"),
        "static_smem": parse_size(args.smem), "dynamic_smem": parse_size(args.dynamic_smem),
        "max_dynamic_smem": None if args.max_dynamic_smem is None else parse_size(args.max_dynamic_smem),
        "carveout": carveout, "cache_config": args.cache_config.strip().lower(),
        "barriers": _int(args.barriers, "--barriers"),
    }


def _occ_dict(occ) -> dict:
    return {
        "active_blocks": occ.active_blocks, "active_warps": occ.active_warps,
        "max_warps": occ.max_warps, "occupancy": occ.occupancy,
        "limiters": sorted(occ.limiters), "binding": sorted(occ.binding),
        "block_limits": occ.block_limits,
        "allocated_regs_per_block": occ.allocated_regs_per_block,
        "allocated_smem_per_block": occ.allocated_smem_per_block,
        "smem_config": occ.smem_config,
    }


def _step_dict(step) -> dict | None:
    if step is None:
        return None
    return {"value": step.value, "delta": step.delta, "active_blocks": step.result.active_blocks,
            "occupancy": step.result.occupancy}


def _cliff_lines(cl) -> list[str]:
    def step(s, kind: str, unit: str, shed: bool) -> str:
        if s is None:
            return f"no change of {kind} {'raises' if shed else 'lowers'} it"
        r = s.result
        if unit == "threads":
            move = f"{s.value} threads ({s.delta:+d})"
        elif shed:
            move = f"{s.value} {unit} (shed {s.delta})"
        else:
            move = f"{s.value} {unit} (+{s.delta})"
        return f"{move} -> {plural(r.active_blocks, 'block')}, {r.occupancy:.1%}"

    out = []
    for name, label, unit in (("registers", "registers", "registers/thread"),
                              ("shared_memory", "shared memory", "bytes/block"),
                              ("block_size", "block size", "threads")):
        c = getattr(cl, name)
        out.append(f"  {label + ':':15} gain: {step(c.gain, label, unit, True)}")
        out.append(f"  {'':15} loss: {step(c.loss, label, unit, False)}")
    return out


def _table(rows, key: str, key_label: str) -> list[str]:
    from occlint.occupancy import LIMITERS

    out = [f"  {key_label:>9}  blocks  warps  occupancy  limited by"]
    for row in rows:
        occ = row.result
        lim = ", ".join(k.replace("_", " ") for k in LIMITERS if k in occ.binding)
        out.append(f"  {getattr(row, key):>9}  {occ.active_blocks:>6}  {occ.active_warps:>5}  "
                   f"{occ.occupancy:>9.1%}  {lim}")
    return out


def run(args) -> int:
    archs = [a.strip() for a in (args.arch or "").split(",") if a.strip()]
    if len(archs) > 1:       # `--arch sm_80,sm_90` as in every other command: one answer each
        import contextlib
        import copy
        import io
        import json

        outs = []
        for a in archs:
            one = copy.copy(args)
            one.arch = a
            if getattr(one, "plot", None):
                root, dot, ext = one.plot.rpartition(".")
                one.plot = f"{root}-{a}.{ext}" if dot else f"{one.plot}-{a}"
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                single(one)
            outs.append(buf.getvalue())
        if args.json:
            print(json.dumps([json.loads(o) for o in outs], indent=2))
        else:
            print("\n".join(o.rstrip("\n") + "\n" for o in outs), end="")
        return 0
    return single(args)


def single(args) -> int:
    import json

    from occlint import occupancy
    from occlint.units import format_size

    inp = _inputs(args)
    if args.plot:
        _check_plot_path(args.plot)
    a, gpu = inp["arch"], inp["gpu"]
    kw = {k: inp[k] for k in ("max_dynamic_smem", "carveout", "cache_config", "barriers")}
    block, regs = inp["block_size"], inp["regs_per_thread"]
    static, dynamic = inp["static_smem"], inp["dynamic_smem"]
    occ = occupancy.compute(a, block, regs, static, dynamic, **kw)
    cl = occupancy.cliffs(a, block, regs, static, dynamic, **kw)
    best = occupancy.max_potential_block_size(a, regs, static, dynamic, sm_count=gpu.sm_count, **kw)
    rows_block = rows_regs = None
    if args.sweep:
        rows_block = occupancy.sweep(a, regs, static, dynamic, registers=[regs], **kw)
        rows_regs = occupancy.sweep(a, None, static, dynamic, block_sizes=[block],
                                    registers=range(8, 256, 8) if regs > 255 else sorted(
                                        {*range(8, 256, 8), 255, regs}), **kw)

    if args.plot:
        _plot(args.plot, inp, kw, occ)
    if args.json:
        doc = {
            "arch": a.name, "gpu": gpu.name, "sm_count": gpu.sm_count,
            "input": {k: v for k, v in inp.items() if k not in ("arch", "gpu")},
            "result": _occ_dict(occ), "words": occ.words,
            "cliffs": {name: {"gain": _step_dict(getattr(cl, name).gain),
                              "loss": _step_dict(getattr(cl, name).loss)}
                       for name in ("registers", "shared_memory", "block_size")},
            "max_potential_block_size": {"block_size": best.block_size,
                                         "min_grid_size": best.min_grid_size,
                                         "active_blocks": best.active_blocks},
        }
        if args.sweep:
            doc["sweep"] = {
                "block_sizes": [{"block_size": r.block_size, **_occ_dict(r.result)} for r in rows_block],
                "registers": [{"regs_per_thread": r.regs_per_thread, **_occ_dict(r.result)}
                              for r in rows_regs],
            }
        print(json.dumps(doc, indent=2))
        return 0

    label = f"{gpu.label or gpu.name}, {gpu.sm_count} SMs" if args.gpu else a.family
    lines = [
        f"{a.name} ({label}): {block} threads/block, {regs} registers/thread, "
        f"{format_size(static)} static + {format_size(dynamic)} dynamic shared memory",
        "",
        "  limiter         blocks/SM  warps/SM",
    ]
    for name in occupancy.LIMITERS:
        lim = occ.block_limits[name]
        blocks = "-" if lim is None else str(lim)
        warps = "-" if lim is None else str(lim * occ.warps_per_block)
        mark = "  <- binding" if name in occ.binding else ""
        lines.append(f"  {name.replace('_', ' '):14}  {blocks:>9}  {warps:>8}{mark}")
    per_warp = occ.allocated_regs_per_block // max(occ.warps_per_block, 1)
    reserved = a.smem_reserved_per_block
    lines += [
        "",
        f"allocated per block: {occ.allocated_regs_per_block} registers ({per_warp} per warp x "
        f"{occ.warps_per_block} warps), {format_size(occ.allocated_smem_per_block)} shared memory"
        + (f" (incl. {format_size(reserved)} reserved)" if reserved else ""),
        f"shared memory per SM: {format_size(occ.smem_config)} (carveout configuration used)",
        f"active: {plural(occ.active_blocks, 'block')}, {occ.active_warps} of {occ.max_warps} "
        "warps per SM",
        f"occupancy: {occ.occupancy:.1%}" + (f", {occ.words}" if occ.words else ""),
        *(f"cannot launch: {why}" for why in (occupancy.zero_block_reasons(
            a, block, regs, static, dynamic, max_dynamic_smem=kw["max_dynamic_smem"])
            if occ.active_blocks == 0 else ())),
        "",
        "nearest cliffs:",
        *_cliff_lines(cl),
        "",
        f"max potential block size: {best.block_size} threads "
        f"({plural(best.active_blocks, 'block')}, {best.occupancy:.1%}), min grid size "
        f"{best.min_grid_size} for {best.sm_count} SMs ({gpu.label or gpu.name})"
        if best.block_size else
        "max potential block size: none (no block size fits one block with these registers "
        "and shared memory)",
    ]
    if args.sweep:
        lines += ["", f"block sizes at {regs} registers/thread:",
                  *_table(rows_block, "block_size", "block"),
                  "", f"register counts at {block} threads/block:",
                  *_table(rows_regs, "regs_per_thread", "registers")]
    print("\n".join(lines))
    return 0


def _check_plot_path(path: str) -> None:
    import os

    from occlint.errors import OcclintError

    if os.path.splitext(path)[1].lower() != ".svg":
        raise OcclintError(f"--plot writes SVG: give a file ending in .svg, not {path!r} (occlint "
                           "draws plain SVG; a browser or `rsvg-convert -o out.png out.svg` makes a PNG)")


def _plot(path: str, inp: dict, kw: dict, occ) -> None:
    from occlint import plot
    from occlint.curves import curves
    from occlint.errors import OcclintError
    from occlint.units import format_size

    a = inp["arch"]
    cs = curves(a, inp["block_size"], inp["regs_per_thread"], inp["static_smem"],
                inp["dynamic_smem"], **kw)
    smem = inp["static_smem"] + inp["dynamic_smem"]
    heading = (f"{a.name}: {inp['block_size']} threads/block, {inp['regs_per_thread']} registers/thread, "
               f"{format_size(smem)} shared memory/block")
    words = f"occupancy {occ.occupancy:.1%}" + (f", {occ.words}" if occ.words else "")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(plot.standalone(cs, heading, words))
    except OSError as exc:
        raise OcclintError(f"cannot write {path}: {exc.strerror or exc}") from None
