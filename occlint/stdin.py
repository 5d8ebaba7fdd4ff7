"""`occlint check -` with `--stdin-filename PATH`: lint an editor's buffer as if it were PATH.

PATH decides everything but the text: its config (found from its folder), its compile database
entry and flags, and its archs. The buffer is compiled from a private temporary copy with PATH's
folder first on the include path (so `#include "local.cuh"` resolves as in the tree); nothing
is written into the user's tree and the compile cache is not used (the copy's path changes).
Without `--stdin-filename` the buffer is linted as `-`, a .cu file with the default flags.
"""

from __future__ import annotations

import os

from occlint import record
from occlint.config import Config
from occlint.engine import LintResult
from occlint.errors import OcclintError

STDIN = "-"


def decode(data: bytes, name: str) -> str:
    """The buffer as text, decoded as a file is (a byte that is not UTF-8 is one U+FFFD)."""
    from occlint.files import decode as lossy

    return lossy(data)


def _compile(text: str, filename: str, config: Config, result: LintResult):
    """(usages, compile errors, archs) for the buffer compiled as `filename`."""
    from occlint.toolchain import database, find_nvcc, libraries
    from occlint.toolchain.compile import NO_NVCC_NOTICE, SKIPPED_CHECKS, compile_one
    from occlint.toolchain.flags import unit_command
    from occlint.toolchain.safe import private_tmpdir

    where = os.path.abspath(filename if filename != STDIN else "stdin.cu")
    cmd = unit_command(where, config, libraries.wheel_include_dirs())   # as `check` compiles PATH
    archs = tuple(config.arch) or tuple(cmd.archs)
    db = database.database_for(where, config)
    nvcc = find_nvcc(config, db.raw if db else None)
    if nvcc is None:
        result.notices.append(NO_NVCC_NOTICE.format(checks=SKIPPED_CHECKS))
        return [], [], archs
    flags, cwd = ["-I", os.path.dirname(where), *cmd.flags], cmd.cwd
    usages, errors = [], []
    with private_tmpdir() as tmp:
        copy = os.path.join(tmp, os.path.basename(where) if where.endswith(".cu") else "stdin.cu")
        with open(copy, "w", encoding="utf-8") as fh:
            fh.write(text)
        for arch in archs:
            got, errs, _deps = compile_one(nvcc, copy, arch, flags, cwd, config.compile_timeout)
            usages += got
            for e in errs:
                same = e.path in (copy, os.path.basename(copy)) or (
                    tmp in e.path and e.path.endswith(os.sep + os.path.basename(copy)))
                errors.append(record.replace(e, path=filename if same else e.path,
                                                  unit=filename,
                                                  message=e.message.replace(copy, filename)))
    return usages, errors, archs


def lint_stdin(data: bytes, filename: str | None, config: Config) -> LintResult:
    from occlint.buildfiles import is_build_file
    from occlint.discover import is_cuda, is_unit
    from occlint.engine import lint_build_file, lint_source
    from occlint.project import Project

    name = filename or STDIN
    result = LintResult()
    text = decode(data, name)
    result.sources[name] = text
    result.files.append(name)
    if filename and is_build_file(filename):
        result.findings.extend(lint_build_file(text, name, config))
        return result
    if filename and not is_cuda(filename):
        raise OcclintError(f"{filename}: not a CUDA source or build file occlint reads")
    usages, errors, archs = [], [], tuple(config.arch)
    if name == STDIN or is_unit(name):
        usages, errors, archs = _compile(text, name, config, result)
    config = record.replace(config, arch=archs) if archs else config
    project = Project.read({name: text})
    result.config, result.project, result.usage[name] = config, project, usages
    result.findings.extend(lint_source(text, name, usages, config, source=project[name],
                                       compile_errors=errors, project=project))
    return result
