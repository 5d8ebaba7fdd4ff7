"""Every child process occlint starts: a timeout, its own process group, and death with occlint.

- `run(cmd, timeout=...)` starts the command in a new session (so a Ctrl-C at the terminal goes
  to occlint alone, which then kills the whole group: nvcc, cicc, ptxas), and kills the group
  when the timeout passes. It sets nothing up between fork and exec, so Python can use vfork
  (a fork with a `preexec_fn` copied occlint's page tables: 2-5 ms a compile).
- A watchdog (one small process per run, started with the first child) holds the read end of a
  pipe from occlint. When occlint ends in any way, SIGKILL included, the pipe closes and the
  watchdog kills every process group still registered and removes every temp folder still
  registered (`/tmp/occlint-*`). So no compile outlives occlint and no temp folder is left.
  A child occlint started but had not yet registered (killed in between) is found by the
  watchdog's token, which every child inherits in its environment (`OCCLINT_WATCHDOG`).
- `kill_all()` kills the groups in flight (Ctrl-C, SIGTERM); `kill_all(final=True)` also kills
  any child a worker thread starts after it, so the exit never waits on a late compile.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading

_RUNNING: set[subprocess.Popen] = set()
_LOCK = threading.Lock()

_WATCHDOG = r"""
import os, shutil, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups, dirs, pending = set(), set(), 0
for line in sys.stdin.buffer:            # ends when occlint's end of the pipe closes
    op, arg = line[:2], line[2:].rstrip(b"\n")
    if op == b"+s": pending += 1
    elif op == b"-s": pending -= 1
    elif op == b"+g": groups.add(int(arg)); pending -= 1
    elif op == b"-g": groups.discard(int(arg))
    elif op == b"+d": dirs.add(arg)
    elif op == b"-d": dirs.discard(arg)
if pending > 0:                          # a child started but not registered: its token says
    mark = b"\0OCCLINT_WATCHDOG=" + sys.argv[1].encode() + b"\0"
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/" + pid + "/environ", "rb") as fh:
                if mark in b"\0" + fh.read() + b"\0":
                    groups.add(os.getpgid(int(pid)))
        except (OSError, ValueError):
            pass
for g in groups:
    try: os.killpg(g, signal.SIGKILL)
    except OSError: pass
for d in dirs:
    shutil.rmtree(d, ignore_errors=True)
"""


class _Watchdog:
    def __init__(self) -> None:
        self.fd: int | None = None
        self.tried = False

    def _start(self) -> None:
        self.tried = True
        try:      # posix_spawn, not Popen: no object to warn that it is "still running"
            read, write = os.pipe()
            token = f"{os.getpid()}-{os.urandom(8).hex()}"
            os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", _WATCHDOG, token], os.environ,
                           file_actions=[(os.POSIX_SPAWN_DUP2, read, 0),
                                         (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                         (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
                           setsid=True)
            os.close(read)
            self.fd = write       # not inheritable: only the watchdog holds the read end
            os.environ["OCCLINT_WATCHDOG"] = token     # every child from now on carries it
        except (OSError, AttributeError, NotImplementedError):
            self.fd = None

    def start(self) -> None:
        with _LOCK:
            if not self.tried:
                self._start()

    def send(self, op: str, arg: str | bytes) -> None:
        with _LOCK:
            if not self.tried:
                self._start()
            if self.fd is None:
                return
            data = (op.encode() + (arg if isinstance(arg, bytes) else os.fsencode(arg))
                    + b"\n")
            try:
                os.write(self.fd, data)
            except OSError:
                self.fd = None


WATCHDOG = _Watchdog()


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


_CLOSED = False      # occlint is ending: a child started from now on is killed at once


def kill_all(final: bool = False) -> None:
    """Kill every child process group in flight (on Ctrl-C or SIGTERM). `final`: occlint is
    ending, so a child that a worker thread starts afterwards (it took its compile from the queue
    just before the signal) is killed too; otherwise the exit would wait for it."""
    global _CLOSED
    _CLOSED = _CLOSED or final          # before the sweep: a child added later sees it
    for proc in list(_RUNNING):
        kill_group(proc)


def run(cmd: list[str], *, timeout: float, cwd: str | None = None,
        stderr_to_stdout: bool = True, started=None, slot=None,
        tmpdir: str | None = None) -> tuple[int | None, bytes, bytes]:
    """(exit code, or None when `timeout` passed; stdout; stderr). The command's whole process
    group is killed on timeout, and with occlint. `started()` is called once it runs. `slot`: a
    semaphore held until the command exits (not while the caller reads its report), so a
    thread waiting for it starts the next compile the moment one ends. `tmpdir`: its TMPDIR (a
    private folder occlint removes, so what a killed nvcc leaves there goes with it)."""
    if slot is not None:
        slot.acquire()
    try:
        proc = _start(cmd, cwd, stderr_to_stdout, tmpdir)
        if _CLOSED:                     # started after the final sweep
            kill_group(proc)
        if started is not None:
            started()
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            return None, b"", b""
        except BaseException:
            kill_group(proc)
            raise
        finally:
            _RUNNING.discard(proc)
            WATCHDOG.send("-g", str(proc.pid))
    finally:
        if slot is not None:            # the command is over: the next one may start
            slot.release()
    return proc.returncode, out or b"", err or b""


def _start(cmd: list[str], cwd: str | None, stderr_to_stdout: bool,
           tmpdir: str | None = None) -> subprocess.Popen:
    """The child, in its own session, registered as running and with the watchdog."""
    WATCHDOG.send("+s", "")             # before the fork: a child not yet registered is found
    env = {**os.environ, "TMPDIR": tmpdir} if tmpdir else None     # (with the watchdog's token)
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT if stderr_to_stdout else subprocess.PIPE,
                                start_new_session=True, env=env)
    except BaseException:
        WATCHDOG.send("-s", "")
        raise
    _RUNNING.add(proc)
    WATCHDOG.send("+g", str(proc.pid))
    return proc


class temp_folder:
    """A private temp folder (like tempfile.TemporaryDirectory) that the watchdog removes if
    occlint dies before it does."""

    def __init__(self, prefix: str = "occlint-", dir: str | None = None) -> None:
        import tempfile

        self.path = tempfile.mkdtemp(prefix=prefix, dir=dir)
        WATCHDOG.send("+d", self.path)

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc) -> None:
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)
        WATCHDOG.send("-d", self.path)


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `timeout` and CI cancellation send), handled like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def handle_sigterm() -> None:
    """Turn SIGTERM (and SIGHUP) into Terminated in the main thread: cleanup runs as for Ctrl-C."""
    def raise_terminated(signum, _frame):
        raise Terminated(signum)

    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) in (signal.SIG_DFL, None):
            try:
                signal.signal(sig, raise_terminated)
            except (ValueError, OSError):    # not the main thread
                pass


def interrupt_handled() -> None:
    """Say that a KeyboardInterrupt was caught. CPython marks one raised inside exec() of a
    string as unhandled even once it is caught (dataclasses builds its methods that way, so a
    Ctrl-C during an import can land there), and `python -m` then ends the process by SIGINT
    instead of its exit code; a later exec() clears the mark."""
    exec("pass")


class thread_map:
    """`fn` over `items` in `workers` threads; iterating yields the results in order (an item's
    exception is raised at its turn). `stop()` drops the items not yet started. Lighter than
    concurrent.futures, whose import cost a cold run ~8 ms before its first compile."""

    def __init__(self, fn, items: list, workers: int) -> None:
        self._fn, self._items = fn, items
        self._results: list = [None] * len(items)
        self._done = [threading.Event() for _ in items]
        self._next = 0
        self._lock = threading.Lock()
        self._stopped = False
        self._threads = [threading.Thread(target=self._work, daemon=True, name="occlint-work")
                         for _ in range(max(1, min(workers, len(items))))]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                i = self._next
                if self._stopped or i >= len(self._items):
                    return
                self._next += 1
            try:
                self._results[i] = (True, self._fn(self._items[i]))
            except BaseException as exc:        # raised in the caller's thread, at its turn
                self._results[i] = (False, exc)
            self._done[i].set()

    def __iter__(self):
        for i, done in enumerate(self._done):
            while not done.wait(0.5):
                if not any(t.is_alive() for t in self._threads) and not done.is_set():
                    raise RuntimeError("a worker thread ended without a result")
            ok, value = self._results[i]
            if not ok:
                raise value
            yield value

    def all_started(self) -> bool:
        """Every item has been taken by a worker."""
        return self._next >= len(self._items)

    def finished(self) -> bool:
        return all(done.is_set() for done in self._done)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def join(self) -> None:
        for thread in self._threads:
            thread.join()


def fork_map(fn, items: list, workers: int | None = None,
             regions: list[list[int]] | None = None) -> list:
    """[fn(item) for item in items], shared by this process and `workers` - 1 forked copies of
    it (default: one per item): each takes the next item not yet taken when it is done with one,
    so a slow item does not hold the rest up. `regions`: the items' numbers in `workers` runs,
    each process's own first (items that share work, such as one folder's files and their
    headers, stay in one process), then the others' in turn. fn's result must be what `marshal`
    writes (strings, numbers, lists, dicts: it comes back through a pipe from a copy of this
    interpreter; 6x faster than JSON both ways). An item a copy took but did not return (it
    failed), or a platform without fork, or a process with threads running (a fork copies only
    the calling thread), is done here instead: the result is the same."""
    import marshal

    _reap()
    workers = len(items) if workers is None else min(workers, len(items))
    if workers < 2 or not hasattr(os, "fork") or threading.active_count() > 1 or \
            len(items) > _MAX_TICKETS:
        return [fn(item) for item in items]
    if regions is None or len(regions) != workers:
        regions = [list(range(len(items)))]
    takes = []                            # a pipe per region of the items' numbers, 4 bytes each,
    for region in regions:                # read one by one: all written before any copy reads,
        take, tickets = os.pipe()         # so each read(4) is one whole number, and an empty
        os.write(tickets, b"".join(i.to_bytes(4, "big") for i in region))  # read: none left
        os.close(tickets)
        takes.append(take)
    children = []
    gc.freeze()     # the heap the copies inherit is not walked by their collectors (nor copied
    try:            # page by page as it would be): 2% of a parse-only listing
        for k in range(1, workers):
            order = takes[k % len(takes):] + takes[:k % len(takes)]
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:                  # the copy: take, compute, write, leave without cleanup
                code = 1
                try:
                    os.close(r)
                    data = marshal.dumps(_take_all(fn, items, order))
                    with os.fdopen(w, "wb") as fh:
                        fh.write(data)
                    code = 0
                except BaseException:
                    pass
                finally:
                    os._exit(code)
            os.close(w)
            children.append((pid, r))
        done = _take_all(fn, items, takes)
    finally:
        for take in takes:
            os.close(take)
        gc.unfreeze()
    for pid, r in children:
        with os.fdopen(r, "rb") as fh:
            data = fh.read()
        _EXITING.append(pid)    # reaped later: its exit (freeing its memory) took ~10 ms here
        try:                    # a copy that failed wrote nothing, or a cut record: redone here
            got = marshal.loads(data)
            done.update((int(i), v) for i, v in got.items())
        except (ValueError, EOFError, TypeError, AttributeError):
            pass
    _reap()
    return [done[i] if i in done else fn(item) for i, item in enumerate(items)]


_EXITING: list[int] = []        # fork_map's copies that have written their results


def _reap(wait: bool = False) -> None:
    """Collect the copies that have exited (`wait`: all of them, at occlint's exit: by then
    they have, and their CPU time is counted as occlint's)."""
    if _EXITING and not _REAPER:
        import atexit

        _REAPER.append(atexit.register(_reap, True))
    for pid in list(_EXITING):
        try:
            if os.waitpid(pid, 0 if wait else os.WNOHANG)[0] == 0:
                continue
        except ChildProcessError:
            pass
        _EXITING.remove(pid)


_REAPER: list = []


_MAX_TICKETS = 4096       # 16 KiB of numbers: within any pipe's buffer, so writing never blocks


def _take_all(fn, items: list, takes: list[int]) -> dict:
    """{number: fn(item)} for each item this process takes from the `takes` pipes, each until
    none is left, in order."""
    out = {}
    for take in takes:
        while True:
            got = os.read(take, 4)
            if len(got) < 4:
                break
            i = int.from_bytes(got, "big")
            out[i] = fn(items[i])
    return out
