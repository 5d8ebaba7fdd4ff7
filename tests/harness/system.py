"""System programs the tests need beyond Python and g++ (a browser, an editor), installed by the
test suite itself rather than by hand.

    path = ensure_debian_package("chromium", "chromium")   # the binary's path, or raises

On Debian/Ubuntu as root, a missing binary is installed with `apt-get install -y PACKAGE`
(after one `apt-get update` when the package lists lack it). Anything else (not root, no apt,
no network) raises `Unavailable`; tests turn that into a skip, or a failure when CI=true.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile

import pytest


class Unavailable(RuntimeError):
    """The program is missing and could not be installed here."""


def _apt(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=600", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def ensure_debian_package(package: str, binary: str, *, timeout: float = 900) -> str:
    """The path of `binary`, installing Debian's `package` first when it is not on PATH."""
    found = shutil.which(binary)
    if found:
        return found
    # one install at a time across the suite's worker processes (dpkg holds a lock, and a
    # second apt-get fails at once instead of waiting); the first may install it for us
    with open(os.path.join(tempfile.gettempdir(), "occlint-tests-apt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shutil.which(binary) is None:
            install_debian_package(package, timeout=timeout)
    found = shutil.which(binary)
    if found is None:
        raise Unavailable(f"apt-get installed {package} but `{binary}` is not on PATH")
    return found


def install_debian_package(package: str, *, timeout: float = 900) -> None:
    """`apt-get install -y --no-install-recommends PACKAGE` (after one `apt-get update` when the
    package lists lack it); raises Unavailable when that cannot be done here."""
    if shutil.which("apt-get") is None:
        raise Unavailable(f"apt-get is not available to install {package}")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise Unavailable(f"install {package} with `apt-get install {package}` (needs root)")
    try:
        done = _apt("install", "-y", "--no-install-recommends", package, timeout=timeout)
        if done.returncode != 0:
            _apt("update", timeout=timeout)
            done = _apt("install", "-y", "--no-install-recommends", package, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"apt-get install {package} failed: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"apt-get install {package} failed: {' | '.join(tail)}")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def missing(reason: str):
    """A test's tool is missing: skip on a developer's machine, fail under CI=true (CI must run
    every test that needs nvcc, NVRTC, CMake, a browser or an editor)."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: required)")
    pytest.skip(reason)


def require(package: str, binary: str) -> str:
    """`ensure_debian_package` for a test: skip when it cannot be had, fail instead when CI=true."""
    try:
        return ensure_debian_package(package, binary)
    except Unavailable as exc:
        missing(str(exc))
