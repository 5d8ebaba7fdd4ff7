"""Read kernel usage from cubins: the `.nv_fatbin` section of an object -> fatbin entries ->
cubin ELF. Figures: registers (EIATTR_REGCOUNT, else `.text.<k>` sh_info >> 24), barriers
(EIATTR_NUM_BARRIERS in `.nv.info.<k>`), static shared memory (size of `.nv.shared.<k>`, less
the 1 KiB of reserved system shared memory that sm_90+ cubins place in it, marked by a
`.nv.shared.reserved.*` section, or in an nvlink-linked image by the `.nv.reservedSmem*`
symbol), stack frame (EIATTR_FRAME_SIZE). The ELF does not record spill stores/loads: those
stay 0 and the sidecar lists them under "lacks". A relocatable cubin (-rdc) has its shared
memory laid out only by the device link (`needs_link`, toolchain.devlink).

What ptxas decided about the kernel's launch, from `.nv.info.<k>` (ATTRIBUTES):
  max_threads         EIATTR_MAX_THREADS (x*y*z): `__launch_bounds__`'s first argument; else
                      EIATTR_REQNTID (an exact block shape); None when neither is set
  max_registers       EIATTR_MAXREG_COUNT: the register budget ptxas honoured (255 uncapped;
                      lower under `__launch_bounds__(T, B)`, `__maxnreg__`, `-maxrregcount`)
  cluster_dims        EIATTR_CTA_PER_CLUSTER: `__cluster_dims__(x, y, z)`, else None
  max_cluster_blocks  EIATTR_MAX_CLUSTER_RANK: `__launch_bounds__`'s third argument, else None
"""

from __future__ import annotations

import struct
from collections import namedtuple

# Kept free of occlint.model and the demangler: `occlint nvcc` runs this once per compile.

FATBIN_MAGIC = 0xBA55ED50
KIND_ELF = 2
FLAG_COMPRESSED_LZ4 = 0x2000
FLAG_COMPRESSED_ZSTD = 0x8000
EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CTA_PER_CLUSTER = 0x3D
EIATTR_MAX_CLUSTER_RANK = 0x3F
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C
RESERVED_SMEM = 1024
EIFMT_SVAL = 4
STO_CUDA_ENTRY = 0x10                     # st_other bit of an entry function's symbol
LACKS = ("spill_stores", "spill_loads")   # figures a cubin does not carry


class CubinError(ValueError):
    pass


Section = namedtuple("Section", "name type flags offset size link info")


def sections(data: bytes) -> list[Section]:
    """Section headers of a little-endian ELF64 file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CubinError("not a little-endian ELF64 file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = []
    for i in range(shnum):
        name, typ, flags, _addr, off, size, link, info = struct.unpack_from(
            "<IIQQQQII", data, shoff + i * shentsize)
        raw.append((name, typ, flags, off, size, link, info))
    stroff = raw[shstrndx][3]
    out = []
    for name, typ, flags, off, size, link, info in raw:
        end = data.index(b"\0", stroff + name)
        out.append(Section(data[stroff + name:end].decode("utf-8", "replace"), typ, flags, off,
                           size, link, info))
    return out


class FatbinScan:
    def __init__(self, cubins: list[tuple[str, bytes]], compressed: list[str]) -> None:
        self.cubins = cubins           # (arch "sm_90", cubin ELF)
        self.compressed = compressed   # archs of ELF entries skipped because compressed


def _decompress(payload: bytes, flags: int, size: int) -> bytes | None:
    """A zstd-compressed entry (nvcc -compress-mode / -Xfatbin -compress-all), when the optional
    `zstandard` module is installed; LZ4 entries (older toolkits) are not read."""
    if flags & FLAG_COMPRESSED_ZSTD:
        try:
            import zstandard
        except ImportError:
            return None
        try:
            out = zstandard.ZstdDecompressor().decompress(payload, max_output_size=size or 1 << 30)
        except zstandard.ZstdError:
            return None
        return out if out[:4] == b"\x7fELF" else None
    return None


def fatbin_cubins(fatbin: bytes) -> FatbinScan:
    """ELF entries of a fatbin blob (one or more concatenated fatbins)."""
    scan = FatbinScan([], [])
    pos = 0
    while pos + 16 <= len(fatbin):
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", fatbin, pos)
        if magic != FATBIN_MAGIC:
            break
        p, end = pos + hsize, pos + hsize + fsize
        while p + 64 <= end:
            kind, _v, ehsize, psize = struct.unpack_from("<HHIQ", fatbin, p)
            arch = struct.unpack_from("<I", fatbin, p + 28)[0]
            flags = struct.unpack_from("<Q", fatbin, p + 40)[0]
            packed = struct.unpack_from("<I", fatbin, p + 16)[0]   # compressed size, else 0
            full = struct.unpack_from("<Q", fatbin, p + 56)[0]     # uncompressed size
            payload = fatbin[p + ehsize:p + ehsize + psize]
            if kind == KIND_ELF:
                name = f"sm_{arch}"
                if flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD):
                    plain = _decompress(payload[:packed or psize], flags, full)
                    if plain is None:
                        scan.compressed.append(name)
                    else:
                        scan.cubins.append((name, plain))
                else:
                    scan.cubins.append((name, payload))
            if ehsize == 0:
                break
            p += ehsize + psize
        pos = (end + 7) & ~7
    return scan


def object_cubins(obj: bytes) -> FatbinScan:
    """Cubins embedded in a host object (`.nv_fatbin`), or the file itself if it is a cubin
    or a fatbin."""
    if obj[:4] == struct.pack("<I", FATBIN_MAGIC):
        return fatbin_cubins(obj)
    secs = sections(obj)
    fat = [s for s in secs if s.name in (".nv_fatbin", "__nv_relfatbin")]   # the latter: -rdc
    if not fat:
        if any(s.name.startswith(".nv.info") for s in secs):
            return FatbinScan([(cubin_arch(obj), obj)], [])
        return FatbinScan([], [])
    s = fat[0]
    return fatbin_cubins(obj[s.offset:s.offset + s.size])


def relocatable(cubin: bytes) -> bool:
    """An ELF ET_REL cubin: what ptxas writes for relocatable device code (-rdc, -dc)."""
    return cubin[:4] == b"\x7fELF" and struct.unpack_from("<H", cubin, 16)[0] == 1


def needs_link(cubin: bytes) -> bool:
    """Whether the device link can change a kernel's figures in this cubin: it is relocatable
    and its code refers to symbols (shared variables, called functions, globals). One with no
    relocations in its code links to the same kernels."""
    return relocatable(cubin) and any(
        s.name.startswith((".rela.text.", ".rel.text.")) for s in sections(cubin))


def cubin_arch(cubin: bytes) -> str:
    """sm_XX from the cubin ELF header's e_flags (the low byte holds the SM number)."""
    e_flags = struct.unpack_from("<I", cubin, 0x30)[0]
    sm = e_flags & 0xFF
    if sm < 30:  # newer layout keeps it in bits 8..15
        sm = (e_flags >> 8) & 0xFF
    return f"sm_{sm}"


def _symbols(data: bytes, secs: list[Section]) -> list[tuple[str, int]]:
    """(name, st_other) of every symbol, in index order."""
    symtab = next((s for s in secs if s.type == 2), None)  # SHT_SYMTAB
    if symtab is None:
        return []
    strtab = secs[symtab.link]
    out = []
    for off in range(symtab.offset, symtab.offset + symtab.size, 24):
        name, _info, other = struct.unpack_from("<IBB", data, off)
        start = strtab.offset + name
        out.append((data[start:data.index(b"\0", start)].decode("utf-8", "replace"), other))
    return out


def callees(cubin: bytes) -> dict[str, list[str]]:
    """Entry function -> the functions it calls, through calls ptxas did not inline: in a
    whole-program cubin each is a copy in the kernel's code named `$<kernel>$<callee>`; in a
    relocatable one, `.nv.callgraph` lists (caller, callee) symbol indices (with markers of
    0xfffffff0 and up). Transitively, in first-seen order."""
    secs = sections(cubin)
    syms = _symbols(cubin, secs)
    direct: dict[str, list[str]] = {}
    for name, _other in syms:
        if name.startswith("$") and name.count("$") >= 2:
            _, caller, callee = name.split("$", 2)
            direct.setdefault(caller, []).append(callee)
    for sec in secs:
        if sec.name != ".nv.callgraph" or sec.size % 8:
            continue
        for off in range(sec.offset, sec.offset + sec.size, 8):
            a, b = struct.unpack_from("<II", cubin, off)
            if a and b < 0xFFFFFFF0 and a < len(syms) and b < len(syms):
                direct.setdefault(syms[a][0], []).append(syms[b][0])
    out: dict[str, list[str]] = {}
    for caller in direct:
        seen: dict[str, None] = {}
        todo = list(direct[caller])
        while todo and len(seen) < 256:
            f = todo.pop(0)
            if f not in seen and f != caller:
                seen[f] = None
                todo += direct.get(f, [])
        out[caller] = list(seen)
    return out


def _attributes(data: bytes, sec: Section):
    """(attribute, payload bytes) records of an .nv.info section."""
    p, end = sec.offset, sec.offset + sec.size
    while p + 4 <= end:
        fmt, attr, value = struct.unpack_from("<BBH", data, p)
        p += 4
        if fmt == EIFMT_SVAL:
            yield attr, data[p:p + value]
            p += value
        else:
            yield attr, struct.pack("<H", value)


def cubin_usage(cubin: bytes, arch: str | None = None, unit: str = "") -> list:
    """model.Usage for every kernel (entry function) in a cubin."""
    return [usage_from_record(r, unit) for r in cubin_records(cubin, arch)]


def usage_from_record(record: dict, unit: str = ""):
    """A sidecar/cubin record (mangled name and figures) -> model.Usage, demangled."""
    from occlint.model import Usage
    from occlint.toolchain.demangle import split_name

    name, args = split_name(record["mangled"])
    attrs = launch_attributes(record)
    return Usage(kernel=name, template_args=args, source="cubin", unit=unit,
                 **{k: record[k] for k in FIGURES}, **attrs, arch=record["arch"],
                 mangled=record["mangled"])


FIGURES = ("registers", "static_smem", "barriers", "stack_frame")
ATTRIBUTES = ("max_threads", "max_registers", "cluster_dims", "max_cluster_blocks")


def launch_attributes(record: dict) -> dict:
    """The ATTRIBUTES of a record (cubin, sidecar or cache entry), checked: missing or odd
    values are None (an older sidecar has none of them)."""
    out = {}
    for key in ATTRIBUTES:
        v = record.get(key)
        if key == "cluster_dims":
            ok = isinstance(v, (list, tuple)) and len(v) == 3 and \
                all(type(x) is int and x > 0 for x in v)
            out[key] = tuple(v) if ok else None
        else:
            out[key] = v if type(v) is int and v > 0 else None
    return out


def _dims(payload: bytes) -> tuple[int, int, int] | None:
    if len(payload) < 12:
        return None
    dims = struct.unpack_from("<III", payload)
    return dims if all(dims) else None


def cubin_records(cubin: bytes, arch: str | None = None) -> list[dict]:
    """{mangled, arch, registers, static_smem, barriers, stack_frame, max_threads, max_registers,
    cluster_dims, max_cluster_blocks} per entry function (absent attributes are None)."""
    secs = sections(cubin)
    arch = arch or cubin_arch(cubin)
    syms = _symbols(cubin, secs)
    by_name = {s.name: s for s in secs}
    regcount: dict[str, int] = {}
    frame: dict[str, int] = {}
    max_stack: dict[str, int] = {}
    for sec in secs:
        if sec.name != ".nv.info":
            continue
        for attr, payload in _attributes(cubin, sec):
            if len(payload) < 8:
                continue
            sym, val = struct.unpack_from("<II", payload)
            name = syms[sym][0] if sym < len(syms) else None
            if name is None:
                continue
            if attr == EIATTR_REGCOUNT:
                regcount[name] = val
            elif attr == EIATTR_FRAME_SIZE:
                frame[name] = val
            elif attr == EIATTR_MAX_STACK_SIZE:
                max_stack[name] = val
    entries = {name for name, other in syms if other & STO_CUDA_ENTRY}
    # the reserve sits in `.nv.shared.<k>`: ptxas marks it with a section; nvlink, which
    # merges that section, leaves the symbol (a relocatable cubin has the symbol, not the
    # reserve)
    reserved = any(s.name.startswith(".nv.shared.reserved.") for s in secs) or (
        not relocatable(cubin) and any(n.startswith(".nv.reservedSmem") for n, _o in syms))
    out = []
    for sec in secs:
        if not sec.name.startswith(".nv.info."):
            continue  # one .nv.info.<k> per entry function
        mangled = sec.name[len(".nv.info."):]
        text = by_name.get(f".text.{mangled}")
        if text is None or mangled not in entries:  # -rdc cubins have .nv.info for callees too
            continue
        regs = regcount.get(mangled, text.info >> 24)
        barriers = 0
        launch: dict = {}
        for attr, payload in _attributes(cubin, sec):
            if attr == EIATTR_NUM_BARRIERS and len(payload) >= 2:
                barriers = struct.unpack_from("<H", payload)[0]
            elif attr in (EIATTR_MAX_THREADS, EIATTR_REQNTID):
                dims = _dims(payload)
                if dims and (attr == EIATTR_MAX_THREADS or "max_threads" not in launch):
                    launch["max_threads"] = dims[0] * dims[1] * dims[2]
            elif attr == EIATTR_MAXREG_COUNT and len(payload) >= 2:
                launch["max_registers"] = struct.unpack_from("<H", payload)[0]
            elif attr == EIATTR_CTA_PER_CLUSTER:
                dims = _dims(payload)
                if dims:
                    launch["cluster_dims"] = list(dims)
            elif attr == EIATTR_MAX_CLUSTER_RANK and len(payload) >= 4:
                launch["max_cluster_blocks"] = struct.unpack_from("<I", payload)[0]
        shared = by_name.get(f".nv.shared.{mangled}")
        smem = shared.size if shared else 0
        if reserved and smem >= RESERVED_SMEM:
            smem -= RESERVED_SMEM
        out.append({"mangled": mangled, "arch": arch, "registers": regs, "static_smem": smem,
                    "barriers": barriers,
                    "stack_frame": frame.get(mangled, max_stack.get(mangled, 0)),
                    **{k: launch.get(k) for k in ATTRIBUTES}})
    return out
