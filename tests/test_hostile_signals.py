"""Issue 10 items 6 and 7: every child has a timeout and dies with occlint (SIGTERM, SIGKILL,
Ctrl-C), with its children; no /tmp/occlint-* folder is left; `occlint nvcc --` exits 130 on
Ctrl-C without a traceback. A fake nvcc (a shell script) hangs where we want it to."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import SCALE_100

FAKE_NVCC = """#!/bin/sh
case "$*" in
  *--version*) echo "Cuda compilation tools, release 13.0, V13.0.88" ;;
  *-dryrun*) echo "#\\$ _HERE_=$(dirname "$0")" ;;
  *--list-gpu-arch*) echo compute_90 ;;
  *) sleep 1000 & echo $! >> "{pids}"; wait ;;
esac
"""
HANGING_NVCC = """#!/bin/sh
sleep 1000 >/dev/null 2>&1 & echo $! >> "{pids}"; wait
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:        # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _pids(file) -> list[int]:
    try:
        return [int(x) for x in file.read_text().split()]
    except (OSError, ValueError):
        return []


def _wait(predicate, timeout=30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "k.cu").write_text(SCALE_100)
    pids = tmp_path / "pids"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(FAKE_NVCC.format(pids=pids))
    fake.chmod(0o755)
    (root / "occlint.toml").write_text(f'nvcc = "{fake}"\ncompile-timeout = 600\n')
    env = {**os.environ, "TMPDIR": str(tmp)}
    return root, pids, tmp, env


def _start(root, env, *args):
    return subprocess.Popen([sys.executable, "-m", "occlint", "check", "--no-cache", *args, "."],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL],
                         ids=lambda s: s.name)
def test_signals_kill_the_compiles_and_remove_temp_folders(project, sig):
    root, pids, tmp, env = project
    proc = _start(root, env)
    assert _wait(lambda: _pids(pids), 120), "the fake compile never started"
    assert list(tmp.glob("occlint-*"))             # a compile's folder exists meanwhile
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    if sig != signal.SIGKILL:
        assert proc.returncode == 128 + sig, err
        assert "Traceback" not in err
    assert _wait(lambda: not any(_alive(p) for p in _pids(pids)), 15), "a compile outlived occlint"
    assert _wait(lambda: not list(tmp.glob("occlint-*")), 15), list(tmp.iterdir())


def test_a_hanging_nvcc_probe_obeys_compile_timeout(tmp_path):
    pids = tmp_path / "pids"
    fake = tmp_path / "nvcc"
    fake.write_text(HANGING_NVCC.format(pids=pids))
    fake.chmod(0o755)
    (tmp_path / "k.cu").write_text(SCALE_100)
    (tmp_path / "occlint.toml").write_text(f'nvcc = "{fake}"\ncompile-timeout = 0.5\n')
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "occlint", "check", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2 and "does not run" in proc.stderr, proc.stderr
    assert took < 20, f"the probe took {took:.1f} s with compile-timeout = 0.5"
    assert _pids(pids) and _wait(lambda: not any(_alive(p) for p in _pids(pids)), 10), \
        "the probe's child outlived it"
    # a wrapper that hangs on `-dryrun` is not asked `--version` too (a second timeout)
    assert len(_pids(pids)) == 1, _pids(pids)


def test_nvcc_launcher_ctrl_c_exits_130_without_traceback(tmp_path):
    pids = tmp_path / "pids"
    script = tmp_path / "cc"
    script.write_text(HANGING_NVCC.format(pids=pids))
    script.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "occlint", "nvcc", "--", str(script), "-c",
                             "x.cu"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert _wait(lambda: _pids(pids), 60)
    os.killpg(proc.pid, signal.SIGINT)             # what a Ctrl-C at the terminal does
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    for p in _pids(pids):                          # the script's sleep got the SIGINT too
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def test_a_compile_started_after_the_final_kill_is_killed_at_once(monkeypatch):
    """Ctrl-C or SIGTERM while compiles are queued: a worker thread that took its compile from
    the queue just before the signal starts it after `kill_all` swept; that child must die at
    once, or the exit waits on it (for the compile timeout)."""
    from occlint import process

    monkeypatch.setattr(process, "_CLOSED", False)         # restored for the tests after this
    process.kill_all(final=True)
    start = time.monotonic()
    code, _out, _err = process.run(["sleep", "60"], timeout=120)
    assert time.monotonic() - start < 20 and code != 0


UNREGISTERED = """
import os, signal, sys, threading, time
from occlint import process
send = process.WATCHDOG.send          # occlint dies between a child's start and its "+g"
process.WATCHDOG.send = lambda op, arg: None if op == "+g" else send(op, arg)
threading.Thread(target=process.run, daemon=True, kwargs={{"timeout": 600}},
                 args=(["sh", "-c", "sleep 1000 & echo $! > {pids}; wait"],)).start()
while not os.path.exists("{pids}") or not open("{pids}").read().strip():
    time.sleep(0.01)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_child_killed_before_it_was_registered_dies_with_occlint(tmp_path):
    """Children start with a plain vfork (nothing runs between fork and exec), so occlint can
    be SIGKILLed after a child started and before it told the watchdog the child's group. The
    watchdog then finds the child, and its children, by the token in their environment."""
    pids = tmp_path / "pids"
    proc = subprocess.run([sys.executable, "-c", UNREGISTERED.format(pids=pids)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _pids(pids)
    assert _wait(lambda: not any(_alive(p) for p in _pids(pids)), 15), "a compile outlived occlint"


def test_children_are_started_without_a_preexec_function(monkeypatch):
    """A `preexec_fn` makes Python fork (copying occlint's page tables, 2-5 ms per compile)
    instead of vfork; each child carries the watchdog's token instead."""
    import subprocess as sp

    from occlint import process

    seen = []
    real = sp.Popen.__init__

    def init(self, *args, **kwargs):
        command = args[0] if args else kwargs.get("args")
        if command[:1] == ["sh"]:       # (not the watchdog, when this test starts it first)
            seen.append(kwargs.get("preexec_fn"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(sp.Popen, "__init__", init)
    code, out, _err = process.run(["sh", "-c", "echo $OCCLINT_WATCHDOG"], timeout=30)
    assert code == 0 and seen == [None]
    assert out.strip() and out.strip().decode() == os.environ["OCCLINT_WATCHDOG"]


@pytest.mark.parametrize(("patched", "argv", "code"), [
    ("run", "['check', '.']", 130),               # the command: exit 130
    ("once", "['check', '--watch', '.']", 0),     # --watch: Ctrl-C stops it, exit 0
])
def test_an_interrupt_raised_inside_exec_keeps_the_exit_code(tmp_path, patched, argv, code):
    """CPython marks a KeyboardInterrupt raised inside exec() of a string as unhandled even when
    it is caught, and `python -m` then ends by SIGINT instead of the exit code. dataclasses
    builds methods with exec(), so a Ctrl-C during an import (the linter loads while nvcc
    runs) landed there about once in twenty runs under load."""
    (tmp_path / "interrupted.py").write_text(
        "import sys\n"
        "import occlint.commands.check as check\n"
        "def interrupted(*args):\n"
        "    exec('raise KeyboardInterrupt')\n"
        f"check.{patched} = interrupted\n"
        "from occlint.cli import main\n"
        f"sys.exit(main({argv}))\n")
    proc = subprocess.run([sys.executable, "-m", "interrupted"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr


JOBS_NVCC = """#!/bin/sh
case "$*" in
  *--version*) echo "Cuda compilation tools, release 13.0, V13.0.88" ;;
  *--list-gpu-arch*) printf 'compute_80\\ncompute_86\\ncompute_89\\ncompute_90\\n' ;;
  *-cubin*) touch "{running}/$$"; ls "{running}" | wc -l >> "{log}"; sleep 0.1
            rm -f "{running}/$$"; exit 1 ;;
esac
"""


def test_jobs_bounds_the_compiles_running_at_once(tmp_path):
    """`--jobs 2`: never more than two nvcc at once, although one thread more than jobs stages
    the next compile (a semaphore slot per running nvcc hands it over at exit)."""
    from occlint.config import Config
    from occlint.toolchain import collect_usage

    running, log = tmp_path / "running", tmp_path / "log"
    running.mkdir()
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text(JOBS_NVCC.format(running=running, log=log))
    fake.chmod(0o755)
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_text(SCALE_100)
    config = Config(root=str(tmp_path), nvcc=str(fake), no_cache=True,
                    arch=("sm_80", "sm_86", "sm_89", "sm_90"))
    report = collect_usage([str(tmp_path / "a.cu"), str(tmp_path / "b.cu")], config, jobs=2)
    seen = [int(n) for n in log.read_text().split()]
    assert len(seen) == 8 and report.compiled == 8
    assert max(seen) == 2, seen
