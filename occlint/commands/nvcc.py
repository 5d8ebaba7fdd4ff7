"""`occlint nvcc -- <nvcc command>`: a compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER, Make,
Bazel). Runs the command unchanged (same output, exit code and object), then records the
kernels' usage from the cubins in the object as `<object>.occlint.json`. An occlint problem is
one warning on stderr; it never changes the compiler's exit code."""

from __future__ import annotations

import os
import sys


def add_arguments(parser):
    import argparse

    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the real compiler command, after `--`")


_OUTPUT = ("-o", "--output-file")
_VALUE_OPTS = {"-o", "--output-file", "-MF", "-MT", "-MQ", "-x", "-ccbin", "-I", "-D", "-U",
               "-Xcompiler", "-Xptxas", "-Xcudafe", "-Xnvlink", "-isystem", "-include",
               "--dependency-output", "--compiler-bindir", "-gencode", "-arch", "-code",
               "--generate-code", "--gpu-architecture", "--options-file", "-optf"}
_NO_OBJECT = {"-E", "-M", "-MM", "-ptx", "--ptx", "--preprocess", "-link", "-lib", "-dlink",
              "--version", "-V", "--help", "-h", "--dryrun", "-dryrun", "--list-gpu-arch",
              "--list-gpu-code"}


def output_and_sources(cmd: list[str]) -> tuple[str | None, list[str]]:
    """(object file, sources) of an nvcc compile command; object None when it makes none."""
    args = cmd[1:]
    out = None
    sources = []
    skip = False
    compiles = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in _NO_OBJECT:
            return None, []
        if arg in ("-c", "--compile", "-dc", "--device-c", "-cubin", "--cubin", "-fatbin",
                   "--fatbin"):
            compiles = True
        if arg in _OUTPUT and i + 1 < len(args):
            out = args[i + 1]
        elif arg.startswith(("-o=", "--output-file=")):
            out = arg.split("=", 1)[1]
        if arg in _VALUE_OPTS:
            skip = True
            continue
        if not arg.startswith("-") and arg.endswith((".cu", ".cpp", ".cc", ".cxx", ".c")):
            sources.append(arg)
    if not compiles or not sources:
        return None, sources
    if out is None and len(sources) == 1:
        out = os.path.splitext(os.path.basename(sources[0]))[0] + ".o"
    return out, sources


def record(cmd: list[str]) -> str | None:
    """Write the sidecar for a finished compile; returns its path, or None if nothing to record."""
    obj, sources = output_and_sources(cmd)
    if obj is None or not os.path.isfile(obj):
        return None
    with open(obj, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF" and data[:4] != b"\x50\xed\x55\xba":
        return None
    from occlint.toolchain.cubin import LACKS, cubin_records, needs_link, object_cubins
    from occlint.toolchain.sidecar import write_sidecar
    scan = object_cubins(data)
    records = []
    for arch, cubin in scan.cubins:
        if needs_link(cubin):           # -rdc: the figures are the device link's
            from occlint.toolchain.devlink import linked_image, unlinked

            cubin, why = linked_image(cubin, arch, _bin_dir(cmd[0]), 60.0)
            if why:
                print(f"occlint: warning: {unlinked(obj, arch, why)}", file=sys.stderr)
        records.extend(cubin_records(cubin, arch))
    path = write_sidecar(obj, sources, records, LACKS, scan.compressed, depfile_includes(cmd))
    if scan.compressed:
        print(f"occlint: warning: {obj}: compressed cubins for {', '.join(scan.compressed)} "
              "skipped (install `zstandard` to read them)", file=sys.stderr)
    return path


def _bin_dir(compiler: str) -> str:
    """The folder of the real nvcc the build ran (its nvlink is beside it)."""
    import shutil

    return os.path.dirname(os.path.realpath(shutil.which(compiler) or compiler))


def depfile_includes(cmd: list[str]) -> list[str]:
    """The files the compile read, from the build's own dependency file (`-MF FILE` or
    `--dependency-output FILE`, read before Ninja consumes it), as absolute paths."""
    dep = None
    for i, arg in enumerate(cmd):
        if arg in ("-MF", "--dependency-output") and i + 1 < len(cmd):
            dep = cmd[i + 1]
        elif arg.startswith(("-MF=", "--dependency-output=")):
            dep = arg.split("=", 1)[1]
    if not dep or not os.path.isfile(dep):
        return []
    from occlint.toolchain.cache import parse_depfile
    with open(dep, encoding="utf-8", errors="replace") as fh:
        paths = parse_depfile(fh.read())
    return [os.path.realpath(p) for p in paths[1:]]


def run(args) -> int:
    return launch(list(args.command))


def launch(cmd: list[str]) -> int:
    """Run the compiler command, then record usage. cli.main calls this directly (no argparse)
    to keep the per-compile cost low."""
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("occlint: error: usage: occlint nvcc -- <nvcc command...>", file=sys.stderr)
        return 2
    try:
        code = _call(cmd)
    except OSError as exc:
        print(f"occlint: error: cannot run {cmd[0]}: {exc}", file=sys.stderr)
        return 127
    if code < 0:  # killed by a signal: report it as a shell would
        return 128 - code
    if code != 0:
        return code
    try:
        record(cmd)
    except Exception as exc:  # never fail the build because of occlint
        print(f"occlint: warning: kernel usage not recorded: {type(exc).__name__}: {exc}",
              file=sys.stderr)
    return code


def _call(cmd: list[str]) -> int:
    """The exit status (negative for a signal), with stdio inherited; posix_spawn where it
    exists, which spares the launcher subprocess's import on every compile. Ctrl-C and SIGTERM
    go to the compiler too (a Ctrl-C at the terminal reaches it by itself), and the launcher
    exits as the compiler did: no traceback."""
    import signal

    if not hasattr(os, "posix_spawnp"):
        import subprocess
        return subprocess.call(cmd)
    got: list[int] = []
    child: list[int] = []

    def forward(signum, _frame):
        got.append(signum)
        for pid in child:
            try:
                os.kill(pid, signum)
            except OSError:
                pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        pid = os.posix_spawnp(cmd[0], cmd, os.environ)
        child.append(pid)
        for signum in got:          # arrived while the compiler was being started
            try:
                os.kill(pid, signum)
            except OSError:
                pass
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    code = os.waitstatus_to_exitcode(status)
    if got and code == 0:
        return -got[0]        # interrupted, though the compiler finished: not a success
    return code
