"""Argument parsing and sub-command dispatch; no logic.

Each sub-command is a module `occlint.commands.<name>` with `add_arguments(parser)` and
`run(args) -> int`. Modules keep heavy imports inside `run` so that `--help` stays fast.
"""

from __future__ import annotations

import os
import sys

from occlint import __version__
from occlint.errors import OcclintError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "lint CUDA sources and build files (default: the project root)"),
    "fix": ("fix", "check and apply safe fixes (same as `check --fix`)"),
    "calc": ("calc", "occupancy calculator: one configuration, cliffs and sweeps"),
    "kernels": ("kernels", "list kernels, shared memory and launch sites found in sources"),
    "doctor": ("doctor", "show the nvcc, host compiler, archs and cache occlint would use"),
    "clean": ("clean", "remove the compile cache"),
    "nvcc": ("nvcc", "compiler launcher: run an nvcc command and record kernel usage beside the object"),
    "report": ("report", "write the HTML report (--html FILE), or lint with the usage `occlint nvcc` recorded in a build tree (BUILD_DIR)"),
    "rule": ("rule", "explain one rule"),
    "rules": ("rules", "list all rules"),
    "baseline": ("baseline", "write the current findings to a baseline file"),
    "lock": ("lock", "write per-kernel resource usage to occlint.lock"),
    "server": ("server", "run the language server on stdio"),
}


def build_parser(only: str | None = None):
    """The parser; with `only`, just that sub-command's module is imported (the launcher runs
    once per compile, and one command's import error must not break the others)."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="occlint", description="A CUDA occupancy linter."
    )
    parser.add_argument("--version", action="version", version=f"occlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        if only is not None and name != only:
            continue
        mod = importlib.import_module(f"occlint.commands.{module}")
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:           # what argparse's version action prints, without the parser
        print(f"occlint {__version__}")
        return 0
    if argv[:1] == ["nvcc"] and argv[1:2] not in (["-h"], ["--help"]):
        try:
            from occlint.commands.nvcc import launch  # once per compile: skip argparse
            return launch(argv[1:])
        except KeyboardInterrupt:               # before the compiler started: nothing to wait for
            return _interrupted()
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    if not argv:
        parser.print_help()
        return 2
    args, unknown = parser.parse_known_args(argv)
    if unknown:       # the sub-command's usage, not the top level's (argparse's default)
        sub = next((a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"), None)
        command = sub.choices.get(argv[0]) if sub is not None and argv[0] in COMMANDS else None
        (command or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    from occlint.process import Terminated, handle_sigterm, kill_all

    handle_sigterm()            # SIGTERM (timeout, CI cancellation) is handled like Ctrl-C
    try:
        return int(args._run(args) or 0)
    except OcclintError as exc:
        print(f"occlint: error: {exc}", file=sys.stderr)
        return 2
    except Terminated as exc:
        kill_all(final=True)
        return 128 + exc.signum
    except KeyboardInterrupt:
        kill_all(final=True)
        return _interrupted()
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback for users; OCCLINT_DEBUG=1 shows one
        if os.environ.get("OCCLINT_DEBUG"):
            raise
        from occlint.errors import described
        print(f"occlint: internal error: {described(exc)}", file=sys.stderr)
        print("occlint: set OCCLINT_DEBUG=1 for a traceback and please report it", file=sys.stderr)
        return 2


def run() -> None:
    """The `occlint` command (and `python -m occlint`): `main`, then an exit that skips the
    interpreter's teardown (freeing every parsed tree and module: 40-50 ms after a listing of
    a large project) once the output is flushed and the exit handlers have run. With a
    non-daemon thread still alive, or under a profiler or tracer, the ordinary exit."""
    import atexit
    import gc
    import threading

    # a collection every 20000 allocations, not 700: imports and parsing make many objects and
    # few cycles (~5 ms before a cold one-unit run's first compile; the same peak memory)
    gc.set_threshold(20000, 20, 20)
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):      # a reader that went away, a closed stream
        pass
    if sys.getprofile() is not None or sys.gettrace() is not None or any(
            t.is_alive() and not t.daemon for t in threading.enumerate()
            if t is not threading.main_thread()):
        sys.exit(code)          # a profiler or tracer writes its results at the ordinary exit
    atexit._run_exitfuncs()
    os._exit(code)


def _interrupted() -> int:
    """130, a Ctrl-C's exit code (`process.interrupt_handled` first)."""
    from occlint.process import interrupt_handled

    interrupt_handled()
    return 130
