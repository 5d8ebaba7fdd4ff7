"""`check --watch`: lint, then lint again whenever a linted file (or a config file) changes.

Polls modification times twice a second (no extra dependency); Ctrl-C stops it with exit 0,
SIGTERM with 143 as any command.
"""

from __future__ import annotations

import os
import sys
import time


def _snapshot(args) -> dict[str, tuple[int, int]]:
    from occlint.commands.options import load
    from occlint.config import CONFIG_NAMES
    from occlint.discover import discover

    config = load(args)
    python: list[str] = []
    cuda, builds = discover([p for p in args.paths or [] if p != "-"], config, python)
    watched = {*cuda, *builds, *python}
    watched.update(os.path.join(config.root, name) for name in CONFIG_NAMES)
    out = {}
    for path in watched:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[path] = (st.st_mtime_ns, st.st_size)
    return out


def watch(args, lint, *, interval: float = 0.5, rounds: int | None = None) -> int:
    """Run `lint(args)` now and after every change; `rounds` bounds the runs (tests)."""
    from occlint.errors import OcclintError

    if "-" in (args.paths or []):
        raise OcclintError("--watch cannot read stdin")
    runs = 0
    try:
        while True:
            before = _snapshot(args)
            print("[occlint] Starting linter in watch mode..." if runs == 0 else
                  "[occlint] File change detected...", file=sys.stderr, flush=True)
            try:
                lint(args)
            except OcclintError as exc:
                print(f"occlint: error: {exc}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            runs += 1
            if rounds is not None and runs >= rounds:
                return 0
            while _snapshot(args) == before:
                time.sleep(interval)
    except KeyboardInterrupt as exc:
        from occlint.process import Terminated, interrupt_handled

        if isinstance(exc, Terminated):
            raise               # SIGTERM: the command's 128 + signal, not a Ctrl-C's stop
        interrupt_handled()
        return 0
