"""What nvcc hands to its shell: only names and flags that the shell cannot interpret.

nvcc runs its stages (gcc -E, cicc, ptxas) through `sh -c`, with file names in double quotes
(`$(...)`, backticks and `"` still act) and `-Xcompiler`/`-Xptxas` values and `-D` values not
escaped at all. So every path and flag occlint gives nvcc is made of SAFE characters only:

- a source whose path is not safe is compiled as a copy `u/unit.cu` in the compile's private
  temp folder (a link would not do: nvcc resolves links and passes the real name to its
  shell), with the symlink `d` -> the source's folder first on the include path (so
  `#include "x.h"` still resolves). `Stage.restore` maps the temp names in nvcc's output back.
- an include path, forced include or host compiler with unsafe characters gets a symlink too;
- a `-D`/`-U` with unsafe characters becomes `#define`/`#undef` in a forced-include header;
- `-Xcompiler`-style values are split into safe words (what the shell would do), and any other
  flag with unsafe characters is dropped with a warning.
"""

from __future__ import annotations

import os
import re

from occlint.files import read_regular
from occlint.record import dataclass, field

_SAFE = re.compile(r"[A-Za-z0-9_./+,=@%:-]*\Z")

# options whose value is a path (separate or joined: -Ifoo, --include-path=foo)
_PATH_OPTS = ("-I", "-isystem", "-iquote", "-idirafter", "-include", "--include-path",
              "--system-include", "--pre-include", "-ccbin", "--compiler-bindir")
_DEFINE_OPTS = ("-D", "--define-macro")
_UNDEF_OPTS = ("-U", "--undefine-macro")
_RAW_OPTS = ("-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xcudafe",
             "-Xnvlink", "--linker-options", "-Xarchive")
_WITH_VALUE = set(_PATH_OPTS + _DEFINE_OPTS + _UNDEF_OPTS + _RAW_OPTS)
_MACRO = re.compile(r"[A-Za-z_]\w*(\([\w\s,.]*\))?\Z")


def is_safe(text: str) -> bool:
    """True when `text` reaches nvcc's shell unchanged (empty strings are not safe)."""
    return bool(text) and _SAFE.match(text) is not None and not text.startswith("~")


@dataclass
class Stage:
    """How one compile names its files: the path to give nvcc, flags to add, and the mapping
    from the temp names back to the user's."""
    source: str                                   # what nvcc compiles
    flags: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)   # temp path -> real path

    def restore(self, text: str) -> str:
        """nvcc output (or a path) with every temp name replaced by the user's."""
        if not self.links:
            return text
        names = "|".join(re.escape(t) for t in sorted(self.links, key=len, reverse=True))
        return re.sub(f"(?:{names})(?![\\w.-])", lambda m: self.links[m.group(0)], text)


def _split(arg: str, names: tuple[str, ...]) -> tuple[str, str] | None:
    """(option, value) for a joined option: `-Ifoo`, `--include-path=foo`."""
    for name in names:
        if name.startswith("--"):
            if arg.startswith(name + "="):
                return name, arg[len(name) + 1:]
        elif arg.startswith(name) and len(arg) > len(name):
            value = arg[len(name):]
            return name, value[1:] if value.startswith("=") and len(name) > 2 else value
    return None


def stage(unit: str, flags: list[str], cwd: str, tmp: str) -> Stage:
    """The safe way to compile `unit` (relative to this process's working directory) with
    `flags` (relative to `cwd`, where nvcc runs), using the private folder `tmp`."""
    src = os.path.abspath(unit)
    st = Stage(source=src)
    if not is_safe(tmp):
        raise ValueError(f"temporary folder {tmp!r} has unsafe characters")
    if not is_safe(src):
        # a copy, not a link: nvcc resolves a link to the real name and puts that in its shell
        folder, name = os.path.split(src)
        link_dir = os.path.join(tmp, "d")
        os.symlink(folder, link_dir)
        st.links[link_dir] = folder
        os.mkdir(os.path.join(tmp, "u"))
        suffix = os.path.splitext(name)[1]
        st.source = os.path.join(tmp, "u", name if is_safe(name) else
                                 "unit" + (suffix if is_safe(suffix) else ".cu"))
        with open(st.source, "wb") as fh:
            fh.write(read_regular(src))
        st.links[st.source] = src
        st.flags += ["-I", link_dir]
    st.flags += _safe_flags(flags, cwd, tmp, st)
    return st


def _safe_flags(flags: list[str], cwd: str, tmp: str, st: Stage) -> list[str]:
    out: list[str] = []
    defines: list[str] = []
    i = 0
    while i < len(flags):
        arg = flags[i]
        if arg in _WITH_VALUE and i + 1 < len(flags):
            opt, value, i = arg, flags[i + 1], i + 2
        else:
            i += 1
            if is_safe(arg):
                out.append(arg)
                continue
            joined = _split(arg, _PATH_OPTS + _DEFINE_OPTS + _UNDEF_OPTS) or \
                next(((o, arg[len(o) + 1:]) for o in _RAW_OPTS if arg.startswith(o + "=")), None)
            if joined is None:
                st.warnings.append(f"flag `{arg}` skipped: nvcc would pass it to a shell")
                continue
            opt, value = joined
        if is_safe(value) and is_safe(opt):
            out += [opt, value]
        elif opt in _PATH_OPTS:
            target = os.path.abspath(os.path.join(cwd, value))
            link = os.path.join(tmp, f"p{len(st.links)}")
            if is_safe(os.path.basename(target)):   # keep the name: nvcc reads -ccbin's
                os.mkdir(link)
                link = os.path.join(link, os.path.basename(target))
            os.symlink(target, link)
            st.links[link] = target
            out += [opt, link]
        elif opt in _DEFINE_OPTS + _UNDEF_OPTS:
            name, eq, body = value.partition("=")
            if not _MACRO.match(name) or "\n" in body or "\r" in body or "\\" in body[-1:]:
                st.warnings.append(f"flag `{opt} {value}` skipped: nvcc would pass it to a shell")
                continue
            if opt in _UNDEF_OPTS:
                defines.append(f"#undef {name}")
            else:
                defines.append(f"#define {name} {body if eq else '1'}")
        else:  # raw pass-through: the shell would split on blanks; do that, then check each word
            words = value.split()
            if words and all(is_safe(w) for w in words):
                out += [opt, ",".join(words)]
            else:
                st.warnings.append(f"flag `{opt} {value}` skipped: nvcc would pass it to a shell")
    if defines:
        header = os.path.join(tmp, "defines.h")
        with open(header, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write("\n".join(defines) + "\n")
        out = ["-include", header, *out]
    return out


WARNINGS: set[str] = set()   # flags skipped in this process (collect_usage reports them once)


def private_tmpdir():
    """A fresh private temp folder whose path is shell-safe (else under /tmp); the watchdog
    removes it if occlint dies first."""
    import tempfile

    from occlint.process import temp_folder

    base = tempfile.gettempdir()
    return temp_folder(prefix="occlint-", dir=base if is_safe(base) else "/tmp")
