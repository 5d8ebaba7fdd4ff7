"""Tool probes (nvcc --version, -dryrun, --list-gpu-arch, g++ -dumpfullversion) are remembered in
the cache folder, keyed on each binary's path, size and mtime: a warm run spawns none of them."""

from __future__ import annotations

import os
import stat

import pytest
from conftest import SCALE_100, run_cli

from occlint.config import Config
from occlint.toolchain import discover, probe


def _forget():
    for threads in list(discover._PREFETCH.values()):     # probes still running from before
        for thread in threads:
            thread.join()
    discover._PREFETCH.clear()
    discover._FOUND.clear()
    probe._memo.clear()
    probe._stores.clear()


@pytest.fixture
def spawned(monkeypatch):
    calls: list[list[str]] = []
    real = probe._run

    def counting(cmd, timeout):
        calls.append(cmd)
        return real(cmd, timeout)

    monkeypatch.setattr(probe, "_run", counting)
    _forget()
    yield calls
    _forget()


def _find(tmp_path, nvcc_path, **kw):
    found = discover.find_nvcc(Config(root=str(tmp_path), nvcc=nvcc_path, **kw))
    return found, found.archs, found.host_version


def test_second_process_spawns_no_probe(tmp_path, nvcc_path, spawned):
    first = _find(tmp_path, nvcc_path)
    kinds = {c[1] for c in spawned}
    assert {"--version", "--list-gpu-arch", "-dumpfullversion"} <= kinds
    # nvcc itself needs no -dryrun to name its folder; a wrapper script does (the next test)
    assert ("-dryrun" in kinds) == (not discover._is_elf(os.path.realpath(nvcc_path)))
    assert (tmp_path / ".occlint_cache" / "probes.db").is_file()
    assert (tmp_path / ".occlint_cache" / "CACHEDIR.TAG").is_file()
    _forget()                          # a new process: only the cache folder is left
    spawned.clear()
    second = _find(tmp_path, nvcc_path)
    assert spawned == []
    assert (second[0].path, second[0].version, second[1], second[2]) == (
        first[0].path, first[0].version, first[1], first[2])


def test_changed_binary_is_probed_again(tmp_path, nvcc_path, spawned):
    wrapper = tmp_path / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexport OCCLINT_TEST=1\nexec "{nvcc_path}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    _find(tmp_path, str(wrapper))
    _forget()
    spawned.clear()
    st = wrapper.stat()
    os.utime(wrapper, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    _find(tmp_path, str(wrapper))
    assert [c[1] for c in spawned if c[0] == str(wrapper)] == ["-dryrun", "--version"]


def test_a_script_that_only_execs_nvcc_is_read_not_run(tmp_path, nvcc_path, spawned):
    # /usr/local/bin/nvcc as `#!/bin/sh` `exec /usr/local/cuda-13.0/bin/nvcc "$@"`: its
    # `-dryrun` (26 ms before a cold run's first compile) told what the script's text says
    real = discover.find_nvcc(Config(root=str(tmp_path), nvcc=nvcc_path, no_cache=True)).path
    _forget()
    spawned.clear()
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\n# a comment\n\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    found = _find(tmp_path, str(wrapper))[0]
    assert found.path == real
    assert [c[1] for c in spawned if c[0] == str(wrapper)] == ["--version"]
    assert discover._exec_target(str(tmp_path / "bin" / "absent")) is None
    for body in (f'exec {real} "$@" --extra', f'exec {real}', f'{real} "$@"'):
        wrapper.write_text(f"#!/bin/sh\n{body}\n")
        assert discover._exec_target(str(wrapper)) is None, body
    wrapper.write_text(f'#!/bin/sh\nexec "{tmp_path}/bin/nvcc" "$@"\n')   # itself: no ELF
    assert discover._exec_target(str(wrapper)) is None


def test_no_cache_writes_nothing_and_garbage_is_a_miss(tmp_path, nvcc_path, spawned):
    _find(tmp_path, nvcc_path, no_cache=True)
    assert not (tmp_path / ".occlint_cache").exists()
    (tmp_path / ".occlint_cache").mkdir()
    (tmp_path / ".occlint_cache" / "probes.db").write_text("{not json")
    _forget()
    found = _find(tmp_path, nvcc_path)
    assert found[0].version and found[1]


def test_warm_check_runs_no_nvcc(tmp_path, nvcc_path):
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{nvcc_path}" "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "k.cu").write_text(SCALE_100)
    (tmp_path / "pyproject.toml").write_text(f'[tool.occlint]\nnvcc = "{wrapper}"\n')
    first = run_cli("check", "k.cu", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    assert log.read_text().count("\n") >= 2               # --version and -dryrun
    log.write_text("")
    second = run_cli("check", "k.cu", cwd=tmp_path)
    assert second.stdout == first.stdout
    assert log.read_text() == ""


def test_probes_answered_together_are_all_saved(tmp_path, monkeypatch):
    """Two prefetch threads finish together: each saved the store, and the file written last
    could lack the other's answer (a second process probed again: flaky in CI). The first
    writer is made slow here, so the other one's file is replaced by the first's."""
    import json
    import shutil
    import threading
    import time

    _forget()
    root = tmp_path / ".occlint_cache"          # made by the first save
    echo = shutil.which("echo")
    real, calls = os.replace, []

    def slow_first(src, dst):
        calls.append(dst)
        if len(calls) == 1:
            time.sleep(0.1)
        real(src, dst)

    monkeypatch.setattr(probe.os, "replace", slow_first)
    first = threading.Thread(target=probe.run, args=([echo, "probe-a"], str(root)))
    first.start()
    while not calls:
        time.sleep(0.01)
    probe.run([echo, "probe-b"], str(root))
    first.join()
    saved = json.loads((root / "probes.db").read_text())["probes"]
    assert len(saved) == 2
    _forget()
