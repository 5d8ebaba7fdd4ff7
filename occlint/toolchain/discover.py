"""Find nvcc: config -> compile_commands.json -> $CUDACXX -> $CUDA_HOME/$CUDA_PATH -> PATH ->
/usr/local/cuda -> pip wheels. Always resolved to the real binary, paired with its own ptxas."""

from __future__ import annotations

import os
import re
import shutil
import threading
from functools import cached_property
from pathlib import Path

from occlint.config import Config
from occlint.errors import OcclintError
from occlint.record import dataclass, field
from occlint.toolchain import probe

_LAUNCHERS = {"ccache", "sccache", "distcc", "buildcache", "occlint", "env"}


@dataclass
class Nvcc:
    """The nvcc a run uses, and its host compiler."""

    path: str                 # the real nvcc binary (symlinks and wrapper scripts resolved)
    version: str              # "13.5.37"
    found_by: str = ""        # which discovery step found it
    host_compiler: str | None = None   # the g++ nvcc calls (PATH), real path
    probe_cache: str | None = field(default=None, repr=False)   # where probe answers are kept
    timeout: float = 30.0     # seconds for each probe (the config's compile-timeout if less)
    _archs: tuple[str, ...] | None = field(default=None, repr=False)

    @property
    def bin_dir(self) -> str:
        return os.path.dirname(self.path)

    @property
    def ptxas(self) -> str:
        """The same toolkit's ptxas (never another version's)."""
        return os.path.join(self.bin_dir, "ptxas")

    @cached_property
    def host_version(self) -> str:
        _await_prefetch(self)
        return self._probe_host()

    @property
    def archs(self) -> tuple[str, ...]:
        """`sm_XX` targets this nvcc compiles, from `nvcc --list-gpu-arch`."""
        if self._archs is None:
            _await_prefetch(self)
            found = re.findall(r"compute_(\w+)", self._probe_archs())
            self._archs = tuple(f"sm_{a}" for a in sorted(set(found), key=_arch_key))
        return self._archs

    # the two probes `_prefetch` starts ahead (their answers are remembered: probe.run)
    def _probe_archs(self) -> str:
        return _list_archs(self.path, self.probe_cache, self.timeout)

    def _probe_host(self) -> str:
        return host_compiler_version(self.host_compiler, self.probe_cache, self.timeout)

    @property
    def identity(self) -> str:
        """What a cache key needs to know about the toolchain."""
        return f"nvcc {self.path} {self.version}; host {self.host_compiler} {self.host_version}"


def _arch_key(a: str) -> tuple[int, str]:
    digits = re.match(r"\d+", a)
    return (int(digits.group()) if digits else 0, a)


PROBE_TIMEOUT = 30.0     # seconds for a probe; less when compile-timeout is less


def _run(cmd: list[str], cache: str | None = None, depends_on: tuple[str, ...] = (),
         timeout: float = PROBE_TIMEOUT, failed=""):
    """A tool probe's output, remembered in the cache folder while the binary is unchanged;
    `failed` when it cannot run or times out."""
    return probe.run(cmd, cache, depends_on=depends_on, timeout=timeout, failed=failed)


def _list_archs(nvcc: str, cache: str | None, timeout: float) -> str:
    return _run([nvcc, "--list-gpu-arch"], cache, timeout=timeout)


def host_compiler_version(path: str | None, cache: str | None = None,
                          timeout: float = PROBE_TIMEOUT) -> str:
    if not path:
        return ""
    return _run([path, "-dumpfullversion", "-dumpversion"], cache, timeout=timeout).strip()


def _is_exe(path: str | os.PathLike) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


_PREFETCH: dict[str, list[threading.Thread]] = {}   # real nvcc -> the threads probing ahead


def _prefetch(real: str, host: str | None, cache: str | None, timeout: float) -> None:
    """Ask `--list-gpu-arch` of the real nvcc and the host compiler's version, each in a
    thread, as soon as the real nvcc is known: while its `--version` runs and the caller plans
    the compiles (a cold run waited for each in turn before its first compile). `archs` and
    `host_version` wait for them, and the answers are remembered (probe.run)."""
    if real in _PREFETCH:
        return
    threads = [threading.Thread(target=job, args=args, name="occlint-probe", daemon=True)
               for job, args in ((_list_archs, (real, cache, timeout)),
                                 (host_compiler_version, (host, cache, timeout)))]
    _PREFETCH[real] = threads
    for thread in threads:
        thread.start()


def _await_prefetch(nvcc: Nvcc) -> None:
    for thread in _PREFETCH.pop(nvcc.path, ()):
        thread.join()


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:        # a regular file: _is_exe checked it
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


_EXEC = re.compile(r'exec\s+("?)(/[^"\s]+/nvcc)\1\s+"\$@"')


def _exec_target(script: str) -> str | None:
    """The nvcc binary a wrapper script only hands its arguments to (`#!/bin/sh`, then `exec
    /usr/local/cuda-13.0/bin/nvcc "$@"` and nothing else but comments): found without running
    it (nvcc -dryrun took 26 ms of a cold run's start); None for any other script."""
    try:
        with open(script, "rb") as fh:
            data = fh.read(4097)
    except OSError:
        return None
    if len(data) > 4096 or not data.startswith(b"#!"):
        return None
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()[1:]]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    m = _EXEC.fullmatch(lines[0]) if len(lines) == 1 else None
    if m is None:
        return None
    target = os.path.realpath(m.group(2))
    return target if _is_exe(target) and _is_elf(target) else None


def _real_nvcc(candidate: str, cache: str | None = None, timeout: float = PROBE_TIMEOUT,
               known=None) -> tuple[str, str] | None:
    """(real path, version) for a working nvcc, or None. nvcc's own `_HERE_` names its real
    directory, which sees through symlinks and wrapper scripts alike; nvcc itself (an ELF
    binary after symlinks) needs no asking: its `_HERE_` is its own folder, nor does a script
    that only execs one (`_exec_target`). The version probe
    also depends on the real nvcc, so an in-place upgrade behind a wrapper is noticed.
    `known(real)` is called once the real nvcc is known, before `--version` runs."""
    if not _is_exe(candidate):
        return None
    real = os.path.realpath(candidate)
    here = None
    script = not _is_elf(real)
    target = _exec_target(real) if script else None
    if target is not None:          # `exec /usr/local/cuda/bin/nvcc "$@"`: that nvcc
        real = target
    elif script:
        out = _run([candidate, "-dryrun", "-E", "-x", "cu", os.devnull], cache,
                   timeout=timeout, failed=None)
        if out is None:     # it cannot run, or it hangs: `--version` would wait out the timeout again
            return None
        here = re.search(r"^#\$ _HERE_=(.*)$", out, re.M)
    if here and _is_exe(os.path.join(here.group(1).strip(), "nvcc")):
        real = os.path.realpath(os.path.join(here.group(1).strip(), "nvcc"))
    if known is not None:
        known(real)
    version = re.search(r"release [\d.]+, V([\d.]+)",
                        _run([candidate, "--version"], cache, depends_on=(real,), timeout=timeout))
    if not version:
        return None
    return real, version.group(1)


def compiler_from_compile_commands(entries: list[dict]) -> str | None:
    """The CUDA compiler the build uses (after any launcher such as ccache or `occlint nvcc --`)."""
    from occlint.toolchain.database import cuda_language
    from occlint.toolchain.flags import entry_arguments

    for entry in entries:
        args = entry_arguments(entry)
        if not str(entry.get("file", "")).endswith(".cu") and not cuda_language(args):
            continue
        for i, arg in enumerate(args):
            if os.path.basename(arg).startswith("nvcc"):
                from occlint.toolchain.vet import program_path
                return program_path(arg, str(entry.get("directory", ".")))
            if os.path.basename(arg) not in _LAUNCHERS and arg != "--" and i > 0:
                break
    return None


def _pip_candidates() -> list[str]:
    out = []
    try:
        import nvidia  # namespace package from the cuda-toolkit wheels

        for base in getattr(nvidia, "__path__", []):
            for sub in sorted(Path(base).glob("cu*/bin/nvcc"), reverse=True):
                out.append(str(sub))
            out.append(str(Path(base) / "cuda_nvcc" / "bin" / "nvcc"))
    except ImportError:
        pass
    try:  # cuda-pathfinder, when installed
        from cuda import pathfinder

        find = getattr(pathfinder, "find_nvidia_binary_utility", None)
        if find:
            found = find("nvcc")
            if found:
                out.append(str(found))
    except Exception:
        pass
    return out


def candidates(config: Config | None, compile_commands: list[dict] | None) -> list[tuple[str, str]]:
    """(step, path) in discovery order."""
    out: list[tuple[str, str]] = []
    if config is not None and config.nvcc:
        out.append(("config", config.nvcc))
    if compile_commands:
        cc = compiler_from_compile_commands(compile_commands)
        if cc:
            out.append(("compile_commands.json", cc))
    if os.environ.get("CUDACXX"):
        out.append(("$CUDACXX", os.environ["CUDACXX"]))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            out.append((f"${var}", os.path.join(os.environ[var], "bin", "nvcc")))
    on_path = shutil.which("nvcc")
    if on_path:
        out.append(("PATH", on_path))
    out.append(("/usr/local/cuda", "/usr/local/cuda/bin/nvcc"))
    out.extend(("pip", p) for p in _pip_candidates())
    return out


def probe_cache(config: Config | None) -> str | None:
    """The cache folder that keeps probe answers (none with --no-cache or without a config)."""
    if config is None or config.no_cache:
        return None
    from occlint.toolchain.cache import cache_dir

    return str(cache_dir(config))


_FOUND: dict[tuple, Nvcc | None] = {}

# Steps whose path comes from a file in the checkout (a stranger's pull request can write them).
_FROM_FILES = ("config", "compile_commands.json")


def shipped_by_repository(path: str) -> bool:
    """Whether `path`, or any symlink met on the way to the file it names, is a file some git
    repository tracks: a program the checkout itself ships (a tracked `tools/g++` linking to a
    system interpreter counts). occlint never runs such a program because a config file or a
    compilation database names it; the user's environment ($CUDACXX, PATH) still may."""
    if os.sep not in path and "/" not in path:
        path = shutil.which(path) or path       # a command name: the file PATH gives
    *links, real = path_hops(os.path.join(os.getcwd(), path))   # no normpath: `..` after a link
    if os.path.isdir(real):                     # -ccbin may name the folder of the compiler
        real = os.path.join(real, "g++")
    return any(_tracked(p) for p in [*links, real])


def path_hops(path: str) -> list[str]:
    """Every symlink the system meets while it resolves the absolute `path` (each named by its
    resolved folder), then the path it ends at. Unlike realpath, the links are kept."""
    hops: list[str] = []
    pending = [p for p in path.split("/") if p]
    cur, budget = "/", 40
    while pending:
        part = pending.pop(0)
        if part == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, part) if part != "." else cur
        if part != "." and os.path.islink(nxt) and budget:
            budget -= 1
            hops.append(nxt)
            target = os.readlink(nxt)
            cur = "/" if target.startswith("/") else cur
            pending = [p for p in target.split("/") if p] + pending
        else:
            cur = nxt
    return [*hops, cur]


def _tracked(path: str) -> bool:
    """Whether the git work tree containing `path` (the nearest folder above it with a `.git`)
    tracks it (a file or a symlink). Git is told that repository: left to discover one, it
    would take a folder of the checkout that looks like a bare repository (HEAD, objects/,
    refs/, all committable) as the repository, and see nothing tracked."""
    top = os.path.dirname(path)
    while not os.path.exists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            return False            # in no work tree
        top = parent
    from occlint.process import run

    try:
        code, _, _ = run(["git", "--git-dir", os.path.join(top, ".git"), "--work-tree", top,
                          "ls-files", "--error-unmatch", "--", os.path.relpath(path, top)],
                         timeout=10, cwd=top)
    except OSError:                 # no git: it cannot tell, so nothing is known to be shipped
        return False
    return code == 0


def _not_runnable(path: str) -> str | None:
    """Why a `nvcc` that a file in the checkout names must not run, or None: it must be called
    nvcc (as named and after symlinks, so no system interpreter is run with nvcc's arguments)
    and must not be shipped by the repository."""
    names = (os.path.basename(path), os.path.basename(os.path.realpath(shutil.which(path) or path)))
    if not all("nvcc" in n for n in names):
        return "is not called nvcc"
    if shipped_by_repository(path):
        return "is a file the repository tracks"
    return None


def find_nvcc(config: Config | None = None, compile_commands: list[dict] | None = None) -> Nvcc | None:
    """The first working nvcc in discovery order, or None. A `nvcc` named in the config that
    does not work is an error (the user asked for it); other steps fall through."""
    cands = candidates(config, compile_commands)
    cache = probe_cache(config)
    key = (*cands, cache)
    if key in _FOUND:
        return _FOUND[key]
    found = None
    timeout = min(PROBE_TIMEOUT, config.compile_timeout) if config is not None else PROBE_TIMEOUT
    host = shutil.which("g++")
    host = os.path.realpath(host) if host else None
    for step, path in cands:
        if step in _FROM_FILES:
            why = _not_runnable(path)
            if why and step == "config":
                raise OcclintError(f"nvcc `{path}` {why}; occlint does not run programs a "
                                   "checkout names or ships (name it in $CUDACXX to use it)")
            if why:
                continue
        got = _real_nvcc(path, cache, timeout,
                         known=lambda real: _prefetch(real, host, cache, timeout))
        if got is None:
            if step == "config":
                raise OcclintError(f"nvcc `{path}` (from the config or --nvcc) does not run")
            continue
        real, version = got
        found = Nvcc(path=real, version=version, found_by=step, host_compiler=host,
                     probe_cache=cache, timeout=timeout)
        break
    _FOUND[key] = found
    return found
