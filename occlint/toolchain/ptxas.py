"""Parse `ptxas -v` reports and nvcc/gcc/ptxas diagnostics.

Tolerant by design: unknown lines are skipped, and a "Function properties" block is attached
only to the entry function of the same name (never to a non-entry `__device__` function).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from occlint import record
from occlint.model import CompileError, Usage
from occlint.toolchain.demangle import demangle, split_name

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")
# ptxas error   : ...     ptxas /tmp/x.ptx, line 20; error   : ...   (the line is the PTX's)
_PTXAS_DIAG = re.compile(r"^ptxas (?:(\S+, line \d+); )?(error|fatal)\s*:\s*(.*)$")
_ABORTED = "Ptx assembly aborted due to errors"
_ENTRY_IN_MSG = re.compile(r"(?:Entry|entry) function '([^']+)'")


def parse_usage(text: str, arch: str | None = None, unit: str = "") -> list[Usage]:
    """Usage for every entry function in a `ptxas -v` report, in report order."""
    entries: dict[tuple[str, str], dict] = {}
    frames = function_frames(text)
    current: dict | None = None       # the entry whose "Used ..." line comes next
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = {"mangled": m.group(1), "arch": m.group(2)}
            entries[(m.group(1), m.group(2))] = current
            continue
        m = _USED.search(line)
        if m and current is not None and "registers" not in current:
            current["registers"] = int(m.group(1))
            b = _BARRIERS.search(line)
            s = _SMEM.search(line)
            cmem = [int(x) for x in _CMEM.findall(line)]
            current["barriers"] = int(b.group(1)) if b else 0
            current["static_smem"] = int(s.group(1)) if s else 0
            current["cmem"] = sum(cmem) if cmem else None
            current = None
    out = []
    for (mangled, entry_arch), e in entries.items():
        if "registers" not in e:
            continue
        name, args = split_name(mangled)
        stack, stores, loads = frames.get(mangled, (0, 0, 0))
        out.append(Usage(
            kernel=name, arch=arch or entry_arch, registers=e["registers"],
            static_smem=e["static_smem"], barriers=e["barriers"], stack_frame=stack,
            spill_stores=stores, spill_loads=loads, cmem=e["cmem"], mangled=mangled,
            template_args=args, source="ptxas", unit=unit,
        ))
    return out


@lru_cache(maxsize=16)
def function_frames(text: str) -> dict[str, tuple[int, int, int]]:
    """(stack frame, spill stores, spill loads) of every function a `ptxas -v` report gives
    "Function properties" for, entry or not, by mangled name (read once per report: its usage
    and its callees' spills both ask; the dict is only read)."""
    frames: dict[str, tuple[int, int, int]] = {}
    pending: str | None = None
    for line in text.splitlines():
        m = _PROPS.search(line)
        if m:
            pending = m.group(1)
            continue
        m = _FRAME.search(line)
        if m and pending is not None:
            frames[pending] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        pending = None
    return frames


# f.cu(4): error: ...   f.cu(4): catastrophic error: ...
_FRONT = re.compile(r"^(.+?)\((\d+)\): (?:catastrophic )?(error|fatal error)(?: #[\w-]+)?: (.*)$")
# f.cu:1:10: fatal error: ...
_GCC = re.compile(r"^(.+?):(\d+):(?:(\d+):)? (error|fatal error): (.*)$")
_NVCC = re.compile(r"^nvcc (?:fatal|error)\s*:\s*(.*)$")
# the host compiler's include chain before an error: "In file included from inc/mid.h:2," then
# "                 from app/a.cu:4:"
_INCLUDED = re.compile(r"^(?:In file included|\s+) from (.+?):(\d+)[,:]$")
# the front end's "detected during: instantiation of ... at line 8 of vec.cu" under an error
_AT_LINE = re.compile(r"^\s+(?:detected during\s+)?(?:instantiation|implicit generation)\b.* at line "
                      r"(\d+) of (.+?)\s*$")


_DIAGNOSTIC = re.compile(r"^(.+?):\d+:(?:\d+:)? (?:warning|error|fatal error|note):")


def _outermost(chain: list, chain_of: dict, line: str) -> tuple[str, int] | None:
    """The outermost frame of the include chain that leads to the diagnostic on `line`: the
    chain printed just before it; else the one printed for an earlier diagnostic in its file
    (GCC prints a file's chain once: tiny-cuda-nn's `#warning` then `#error` in common.h); a
    chain that stops at a header GCC has already shown the way to (it leaves out frames it
    printed) continues with that header's."""
    m = _DIAGNOSTIC.match(line)
    if chain:
        outer = chain[-1]
        if outer[0] in chain_of:
            outer = chain_of[outer[0]]
        for frame_file, _line in chain[:-1]:        # (the headers on the way, not the unit)
            chain_of.setdefault(frame_file, outer)
        if m:
            chain_of[m.group(1)] = outer
        return outer
    return chain_of.get(m.group(1)) if m else None


def parse_errors(text: str, unit: str, arch: str | None = None) -> list[CompileError]:
    """Errors (never warnings) from nvcc's front end, the host compiler, ptxas and nvcc itself."""
    out: list[CompileError] = []
    ptx_lines: set[str] = set()
    origins: dict[int, tuple[str, int]] = {}     # error index -> the outermost instantiation
    chain: list[tuple[str, int]] = []            # the include chain being read, innermost first
    chain_of: dict[str, tuple[str, int]] = {}    # a file -> the outermost frame of its chain
    for line in text.splitlines():
        line = line.rstrip()
        m = _INCLUDED.match(line)
        if m:
            chain.append((m.group(1), int(m.group(2))))
            continue
        outer = _outermost(chain, chain_of, line)
        chain = []
        m = _FRONT.match(line)
        if m:
            kind = "fatal" if "catastrophic" in line or m.group(3) == "fatal error" else "error"
            out.append(CompileError(m.group(1), int(m.group(2)), None, m.group(4).strip(),
                                    arch, kind, None, unit))
            continue
        m = _AT_LINE.match(line)
        if m and out and out[-1].kind in ("error", "fatal"):
            origins[len(out) - 1] = (m.group(2), int(m.group(1)))
            continue
        m = _GCC.match(line)
        if m and not line.startswith(("ptxas", "nvcc")):
            col = int(m.group(3)) if m.group(3) else None
            kind = "fatal" if m.group(4) == "fatal error" else "error"
            out.append(CompileError(m.group(1), int(m.group(2)), col, m.group(5).strip(),
                                    arch, kind, None, unit, included_from=outer))
            continue
        m = _PTXAS_DIAG.match(line)
        if m:
            msg = m.group(3).strip()
            if m.group(1) in ptx_lines:
                continue        # a second wording of the error on the same PTX line
            if m.group(1):
                ptx_lines.add(m.group(1))
            if msg == _ABORTED and any(e.kind == "ptxas" for e in out):
                continue        # the summary of the errors quoted above
            if any(e.kind == "ptxas" and e.message == msg for e in out):
                continue
            kernel = None
            e = _ENTRY_IN_MSG.search(msg)
            if e:
                kernel = split_name(e.group(1))[0]
                msg = msg.replace(e.group(1), demangle(e.group(1)))
            out.append(CompileError(unit, None, None, msg, arch, "ptxas", kernel, unit))
            continue
        m = _NVCC.match(line)
        if m:
            out.append(CompileError(unit, None, None, m.group(1).strip(), arch, "nvcc", None, unit))
    return _at_instantiations(out, origins)


def _at_instantiations(errors: list[CompileError], origins: dict) -> list[CompileError]:
    """An error inside a header that a template instantiation of another file led to is that
    file's, at the instantiating line (`std::vector<undefined_t>` errs in libstdc++'s headers,
    instantiated at line 8 of the unit), the header's place kept in the message; dropped when
    that line has an error of its own, which caused it. An error about an `<error-type>` (one
    an earlier error made up) is dropped while another error remains."""
    own = {(os.path.realpath(e.path), e.line) for i, e in enumerate(errors) if i not in origins}
    out = []
    for i, e in enumerate(errors):
        where = origins.get(i)
        if where is not None and os.path.realpath(where[0]) != os.path.realpath(e.path):
            if (os.path.realpath(where[0]), where[1]) in own:
                continue
            e = record.replace(e, path=where[0], line=where[1], column=None,
                                    message=f"{e.path}:{e.line}: {e.message}")
        out.append(e)
    real = [e for e in out if "<error-type>" not in e.message]
    return real if real else out
