"""Whether a compile would read a file that never ends: a device, FIFO or socket.

The host compiler reads what `#include` names without asking what it is: `#include "/dev/zero"`
(or a committed symlink `x.h -> /dev/zero`, or `-include /dev/zero` in a database) makes cc1
grow by about 1 GB a second until the compile timeout. Before a compile, `non_regular_input`
follows the unit's `#include`/`#embed` lines as the preprocessor would find them (the including
file's folder, then `-iquote`, `-I`, `-isystem`, `-idirafter`; absolute paths as written) and the
forced includes, through every header it finds, and names the first one that is not a regular
file, or is a file of /proc or /sys. Conditional blocks are not evaluated (a dead `#include` of
a device is refused too) and `#include MACRO` is not followed.
"""

from __future__ import annotations

import os
import re
import stat

from occlint.files import kind, read_regular
from occlint.toolchain.vet import option_words

_DIRECTIVE = re.compile(rb'^[ \t]*#[ \t]*(?:include|include_next|import|embed)[ \t]*([<"])([^">\r\n]+)[">]',
                        re.M)
_QUOTE_DIRS = ("-iquote",)
_DIRS = ("-I", "--include-path", "-isystem", "--system-include", "-idirafter")
_FORCED = ("-include", "--pre-include", "-imacros")
MAX_FILES = 2000            # headers followed per unit, at most


def non_regular_input(unit: str, flags: list[str], cwd: str) -> tuple[str, int | None, str] | None:
    """(file, line, message) for the first input of compiling `unit` with `flags` (nvcc runs
    in `cwd`) that is not a regular file, or None."""
    quote_dirs, dirs, forced = _search_path(flags, cwd)
    todo, seen = [os.path.abspath(unit)], set()
    for name in forced:
        bad = _not_regular(os.path.join(cwd, name))
        if bad:
            return unit, None, f"`-include {name}` names {bad}, which a compile would read forever"
        todo.append(os.path.join(cwd, name))
    while todo and len(seen) < MAX_FILES:
        path = todo.pop()
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            data = read_regular(real)
        except OSError:                 # NotRegular included: nvcc names what is missing
            continue
        for m in _DIRECTIVE.finditer(data):
            name = os.fsdecode(m.group(2).strip())
            here = [os.path.dirname(path), *quote_dirs] if m.group(1) == b'"' else []
            for cand in ([name] if os.path.isabs(name) else
                         [os.path.join(d, name) for d in here + dirs]):
                bad = _not_regular(cand)
                if bad:
                    line = data.count(b"\n", 0, m.start()) + 1
                    return path, line, f"`#include {name}` names {bad}, which a compile would read forever"
                if os.path.isfile(cand):
                    todo.append(cand)
                    break
    return None


def _not_regular(path: str) -> str | None:
    """What `path` is when it exists and is neither a regular file nor a folder, or is a file
    of /proc or /sys (where "regular" files can be endless: /proc/kcore)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if os.path.realpath(path).startswith(("/proc/", "/sys/")):
        return "a file of /proc or /sys"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return kind(mode)


def _search_path(flags: list[str], cwd: str) -> tuple[list[str], list[str], list[str]]:
    """(-iquote folders, -I/-isystem/-idirafter folders, forced includes) of nvcc `flags`."""
    quote_dirs: list[str] = []
    dirs: list[str] = []
    forced: list[str] = []
    i = 0
    while i < len(flags):
        arg = flags[i]
        i += 1
        name, eq, value = arg.partition("=")
        if name in ("-Xcompiler", "--compiler-options"):   # the host compiler's own words
            if not eq and i < len(flags):
                value, i = flags[i], i + 1
            more = _search_path(option_words(value), cwd)
            for into, got in zip((quote_dirs, dirs, forced), more, strict=True):
                into += got
            continue
        for opts, into in ((_QUOTE_DIRS, quote_dirs), (_DIRS, dirs), (_FORCED, forced)):
            opt = next((o for o in opts if arg == o or arg.startswith(o)), None)
            if opt is None:
                continue
            value = arg[len(opt):]
            if not value and i < len(flags):
                value, i = flags[i], i + 1
            value = value[1:] if value.startswith("=") else value
            if value:
                into.append(value if into is forced else os.path.join(cwd, value))
            break
    return quote_dirs, dirs, forced
