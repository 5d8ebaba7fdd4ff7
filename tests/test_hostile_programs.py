"""Hostile settings: a config file or a compilation database in a stranger's pull request must
not make occlint run a program that the pull request itself ships (an `nvcc` or a `-ccbin`
that git tracks). The user's own environment ($CUDACXX, PATH) still decides freely."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import SCALE_100, run_cli, run_main


def _repo_with_program(tmp_path, name: str, marker) -> str:
    """A git work tree holding a tracked executable `tools/NAME` that leaves `marker` when run."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tools = tmp_path / "tools"
    tools.mkdir()
    prog = tools / name
    prog.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    prog.chmod(0o755)
    (tmp_path / "k.cu").write_text(SCALE_100)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tools", "k.cu"], check=True)
    return str(prog)


def test_config_nvcc_tracked_by_the_repository_is_never_run(tmp_path):
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    _repo_with_program(tmp_path, "nvcc", marker)
    (tmp_path / "occlint.toml").write_text('nvcc = "tools/nvcc"\n')
    proc = run_main("check", ".", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the repository tracks" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()


def test_database_nvcc_tracked_by_the_repository_is_skipped(tmp_path, nvcc_path):
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    prog = _repo_with_program(tmp_path, "nvcc", marker)
    entry = {"directory": str(tmp_path), "file": str(tmp_path / "k.cu"),
             "arguments": [prog, "-c", "k.cu", "-o", "k.o"]}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    proc = run_cli("check", "--output-format", "concise", "--no-cache", "k.cu", cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode == 1, proc.stdout + proc.stderr     # the real nvcc analysed it
    assert "OCC031" in proc.stdout and "OCC900" not in proc.stdout


def test_database_ccbin_tracked_by_the_repository_is_dropped(tmp_path, nvcc_path):
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    prog = _repo_with_program(tmp_path, "g++", marker)
    entry = {"directory": str(tmp_path), "file": str(tmp_path / "k.cu"),
             "arguments": ["nvcc", "-ccbin", prog, "-c", "k.cu", "-o", "k.o"]}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    proc = run_cli("check", "--output-format", "concise", "--no-cache", "k.cu", cwd=tmp_path)
    assert not marker.exists()
    assert "a host compiler the repository tracks is never run" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_an_untracked_wrapper_named_in_the_config_still_runs(tmp_path, nvcc_path):
    """The guard is about what a checkout ships, not about wrappers in general."""
    marker = tmp_path / "ran"
    wrapper = tmp_path / "nvcc-wrapper"
    wrapper.write_text(f"#!/bin/sh\ntouch '{marker}'\nexec '{nvcc_path}' \"$@\"\n")
    wrapper.chmod(0o755)
    (tmp_path / "k.cu").write_text(SCALE_100)
    (tmp_path / "occlint.toml").write_text(f'nvcc = "{wrapper}"\n')
    proc = run_cli("check", "--output-format", "concise", "--no-cache", ".", cwd=tmp_path,
                   env={"PATH": os.environ["PATH"]})
    assert marker.exists()
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def _entry(root, *args):
    entry = {"directory": str(root), "file": str(root / "k.cu"),
             "arguments": ["nvcc", *args, "-c", "k.cu", "-o", "k.o"]}
    (root / "compile_commands.json").write_text(json.dumps([entry]))


def _check_from(cwd, path):
    return run_cli("check", "--output-format", "concise", "--no-cache", "--arch", "sm_90", path,
                   cwd=cwd)


@pytest.mark.parametrize("where", ["entry directory", "another directory"])
def test_relative_ccbin_is_found_from_the_entry_directory(tmp_path, nvcc_path, where):
    """nvcc runs in the entry's `directory`, so a relative `-ccbin` names a file there, wherever
    occlint itself runs; the old guard looked it up from occlint's working directory."""
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    _repo_with_program(tmp_path, "g++", marker)
    _entry(tmp_path, "-ccbin", "tools/g++")
    (tmp_path / "elsewhere").mkdir()
    cwd, path = (tmp_path, "k.cu") if where == "entry directory" else (tmp_path / "elsewhere", "../k.cu")
    proc = _check_from(cwd, path)
    assert not marker.exists()
    assert "dropped `-ccbin tools/g++`: a host compiler the repository tracks" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_an_untracked_relative_ccbin_still_runs_from_another_directory(tmp_path, nvcc_path):
    gxx = shutil.which("g++")
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "g++").symlink_to(gxx)
    (tmp_path / "k.cu").write_text(SCALE_100)
    _entry(tmp_path, "-ccbin", "cc/g++")
    (tmp_path / "elsewhere").mkdir()
    proc = _check_from(tmp_path / "elsewhere", "../k.cu")
    assert "dropped" not in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def _outside_program(tmp_path, name, marker):
    out = tmp_path.parent / f"{tmp_path.name}-outside"
    out.mkdir()
    prog = out / name
    prog.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    prog.chmod(0o755)
    return prog


def test_ccbin_through_a_tracked_symlink_is_dropped(tmp_path, nvcc_path):
    """A tracked `tools/g++` linking to a program outside the checkout is shipped too."""
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    target = _outside_program(tmp_path, "g++", marker)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "g++").symlink_to(target)
    (tmp_path / "k.cu").write_text(SCALE_100)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tools", "k.cu"], check=True)
    _entry(tmp_path, "-ccbin", "tools/g++")
    proc = _check_from(tmp_path, "k.cu")
    assert not marker.exists()
    assert "a host compiler the repository tracks" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_ccbin_that_is_no_compiler_is_dropped(tmp_path, nvcc_path):
    """`-ccbin /usr/bin/perl` would run an interpreter with nvcc's arguments."""
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    prog = _outside_program(tmp_path, "evil-tool", marker)
    (tmp_path / "k.cu").write_text(SCALE_100)
    _entry(tmp_path, f"-ccbin={prog}")
    proc = _check_from(tmp_path, "k.cu")
    assert not marker.exists()
    assert f"dropped `-ccbin {prog}`: not the name of a C++ compiler" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("how", ["tracked symlink", "not called nvcc"])
def test_config_nvcc_through_a_link_or_by_another_name_is_never_run(tmp_path, how):
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "k.cu").write_text(SCALE_100)
    if how == "tracked symlink":
        (tmp_path / "tools").mkdir()
        (tmp_path / "tools" / "nvcc").symlink_to(_outside_program(tmp_path, "nvcc", marker))
        subprocess.run(["git", "-C", str(tmp_path), "add", "tools"], check=True)
        (tmp_path / "occlint.toml").write_text('nvcc = "tools/nvcc"\n')
    else:
        prog = _outside_program(tmp_path, "build-helper", marker)
        (tmp_path / "occlint.toml").write_text(f'nvcc = "{prog}"\n')
    proc = run_main("check", ".", cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode == 2 and "occlint does not run programs" in proc.stderr, proc.stderr


def test_a_folder_that_looks_like_a_bare_repository_does_not_hide_a_tracked_ccbin(tmp_path, nvcc_path):
    """`git -C tools ls-files` took a committed bare-repository layout in tools/ (HEAD,
    objects/, refs/) for the repository, where g++ is not tracked: the guard let it run."""
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    _repo_with_program(tmp_path, "g++", marker)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "tools")], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "tools"], check=True)
    _entry(tmp_path, "-ccbin", "tools/g++")
    proc = _check_from(tmp_path, "k.cu")
    assert not marker.exists()
    assert "a host compiler the repository tracks" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_a_torch_package_in_the_project_is_never_imported(tmp_path):
    """A stranger's `torch/` beside a setup.py that builds a CUDAExtension: `python -m occlint`
    puts the working directory on sys.path, and occlint imported torch for its include folders,
    running that package's code. torch's folders are found, not imported."""
    marker = tmp_path.parent / f"{tmp_path.name}-ran"
    pkg = tmp_path / "torch"
    (pkg / "include" / "torch").mkdir(parents=True)
    (pkg / "include" / "torch" / "extension.h").write_text("#pragma once\n")
    (pkg / "utils").mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (pkg / "utils" / "__init__.py").write_text("")
    (pkg / "utils" / "cpp_extension.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef include_paths(**k):\n    return []\n")
    (tmp_path / "k.cu").write_text(SCALE_100)
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "CUDAExtension(name='e', sources=['k.cu'])\n")
    for args in (("check", "--no-cache", "k.cu", "setup.py"), ("doctor", "k.cu")):
        proc = run_cli(*args, cwd=tmp_path, env={"PATH": "/nonexistent"})
        assert "Traceback" not in proc.stderr, proc.stderr
        assert not marker.exists(), args
