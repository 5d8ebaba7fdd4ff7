"""Real projects with zero configuration: the compilation database found per file, per-unit
flags and archs, header kernels through dependency lists, library headers from wheels, broken
tools, ptxas's own error lines, `doctor FILE`. The nvcc tests run the real CLI the way pre-commit
does: explicit paths from the repository root, no occlint config."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, run_main

from occlint.config import Config
from occlint.toolchain import database
from occlint.toolchain.flags import archs_in_args, unit_command
from occlint.toolchain.libraries import explain_missing, package_for, wheel_include_dirs
from occlint.toolchain.ptxas import parse_errors


def _db(folder: Path, *entries: tuple[str, str]) -> Path:
    """compile_commands.json in `folder` with (file, extra flags) entries; nvcc from PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    data = [{"directory": str(folder), "file": str(f),
             "command": f"nvcc {flags} -c {f} -o {os.path.basename(str(f))}.o"} for f, flags in entries]
    (folder / "compile_commands.json").write_text(json.dumps(data))
    return folder / "compile_commands.json"


# --- discovery (no nvcc) -----------------------------------------------------------------------


def test_database_is_found_walking_up_from_each_file(tmp_path):
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    unit = tmp_path / "a" / "deep" / "k.cu"
    other = tmp_path / "b" / "o.cu"
    for f in (unit, other):
        f.write_text("")
    root_db = _db(tmp_path / "build-release", (unit, "-DROOT"))
    config = Config(root=str(tmp_path / "b"))     # the config root is not where the file is
    assert database.find_for(str(unit), config) == str(root_db)
    # a database beside a closer ancestor wins; compile_commands.json beats build*/ in one folder
    near = _db(tmp_path / "a" / "build", (unit, "-DNEAR"))
    database.forget_folders()
    assert database.find_for(str(unit), config) == str(near)
    direct = _db(tmp_path / "a", (unit, "-DDIRECT"))
    database.forget_folders()
    assert database.find_for(str(unit), config) == str(direct)
    assert "-DDIRECT" in unit_command(str(unit), config).flags
    # the other folder still walks up to the root's build-release/
    assert database.find_for(str(other), config) == str(root_db)
    # the config's compile-commands wins over discovery
    pinned = Config(root=str(tmp_path), compile_commands="build-release")
    assert database.find_for(str(unit), pinned) == str(root_db)


def test_a_cpp_the_database_compiles_as_cuda_is_a_unit(tmp_path):
    # CMake's `set_source_files_properties(tests.cpp PROPERTIES LANGUAGE CUDA)` (cuda_memtest)
    # and miniBUDE's `-x cu`: `nvcc ... -x cu -c tests.cpp`. Without a database, or with a host
    # compiler's entry, or only a borrowed one, a .cpp is not a CUDA unit
    from occlint.discover import discover, is_unit
    from occlint.toolchain.discover import compiler_from_compile_commands
    from occlint.toolchain.flags import archs_for

    for name in ("tests.cpp", "host.cpp", "near.cc", "k.cu"):
        (tmp_path / name).write_text("__global__ void k() {}\n")
    config = Config(root=str(tmp_path))
    assert not is_unit(str(tmp_path / "tests.cpp"), config)
    _db(tmp_path, (tmp_path / "tests.cpp", "-x cu --generate-code=arch=compute_80,code=sm_80"),
        (tmp_path / "k.cu", "-arch=sm_90"))
    data = json.loads((tmp_path / "compile_commands.json").read_text())
    data.append({"directory": str(tmp_path), "file": str(tmp_path / "host.cpp"),
                 "command": f"g++ -c {tmp_path / 'host.cpp'}"})
    (tmp_path / "compile_commands.json").write_text(json.dumps(data))
    database.forget_folders()
    assert [is_unit(str(tmp_path / n), config) for n in ("tests.cpp", "host.cpp", "near.cc")] == \
        [True, False, False]
    assert not is_unit(str(tmp_path / "tests.cpp"))        # (no config: no database to ask)
    found = sorted(os.path.basename(f) for f in discover([str(tmp_path)], config)[0])
    assert found == ["k.cu", "tests.cpp"]
    assert archs_for(config, data) == ("sm_80", "sm_90")
    assert os.path.basename(compiler_from_compile_commands(data[:1])) == "nvcc"
    assert unit_command(str(tmp_path / "tests.cpp"), config).archs == ("sm_80",)
    assert database.cuda_language(["clang++", "-x", "cuda", "a.cpp"])
    assert not database.cuda_language(["nvcc", "-x", "c++", "a.cpp"])


def test_a_cpp_header_that_writes_global_is_discovered(tmp_path):
    # llama_cu_awq's gpu_kernels.h, xmrig's hash.hpp, miniBUDE's fasten.hpp: kernels and
    # launches in a C++ header a unit includes were never linted by `occlint check`
    from occlint.discover import discover

    (tmp_path / "kernels.h").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    (tmp_path / "vm.hpp").write_text("template <int N> __global__ void v(float* x) {}\n")
    (tmp_path / "plain.h").write_text("int helper(int x);\n// __global__ in a comment only? no\n")
    (tmp_path / "host.hpp").write_text("#pragma once\nstruct S { int x; };\n")
    # moderngpu: every kernel and launch of the library is in a `.hxx` header, its one launch
    # in transform.hxx (no `__global__` there); cuda-samples' helper_image.h prints "<<<"
    (tmp_path / "launch_params.hxx").write_text("template <int N> __global__ void box_k() {}\n")
    (tmp_path / "transform.hxx").write_text("void go() { box_k<1><<<1, 128>>>(); }\n")
    (tmp_path / "image.h").write_text('void f() { printf("folder <%s> <<<\\n"); }  // <<<\n')
    found = sorted(os.path.basename(f) for f in discover([str(tmp_path)], Config(root=str(tmp_path)))[0])
    # (`__global__` is the test: a comment too)
    assert found == ["kernels.h", "launch_params.hxx", "plain.h", "transform.hxx", "vm.hpp"]


def test_a_header_written_with_a_headers_kernel_or_launch_macro_is_discovered(tmp_path):
    # pytorch3d's pulsar: `GLOBAL void fill(...)` with `#define GLOBAL __global__` in
    # global.h, and launches through `LAUNCH_PARALLEL_1D` of gpu/commands.h, reached through
    # include/commands.h: none of its 7 kernels or 10 launches was discovered
    from occlint.discover import discover

    (tmp_path / "gpu").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "global.h").write_text("#ifdef __CUDACC__\n#define GLOBAL __global__\n#else\n"
                                       "#define GLOBAL\n#endif\n")
    (tmp_path / "gpu" / "commands.h").write_text(
        "#define LAUNCH_1D(F, N, TN, ...) F<<<((N) + (TN) - 1) / (TN), TN>>>(__VA_ARGS__)\n")
    (tmp_path / "include" / "commands.h").write_text(
        '#ifdef __CUDACC__\n#include "../gpu/commands.h"\n#else\n'
        "#define LAUNCH_1D(F, N, TN, ...) F(__VA_ARGS__)\n#endif\n")
    (tmp_path / "include" / "fill.device.h").write_text(
        '#include "../global.h"\ntemplate <bool D> GLOBAL void fill(float* x) { x[0] = 1; }\n')
    (tmp_path / "include" / "forward.device.h").write_text(
        '#include "./commands.h"\n#include "./fill.device.h"\n'
        "template <bool D> void forward(float* x, int n) { LAUNCH_1D(fill<D>, n, 256, x); }\n")
    (tmp_path / "include" / "host.h").write_text('#include "../global.h"\nint GLOBALS = 1;\n')
    found = sorted(os.path.relpath(f, tmp_path)
                   for f in discover([str(tmp_path)], Config(root=str(tmp_path)))[0])
    # (global.h and gpu/commands.h write the words themselves; host.h names no macro of its
    # includes; include/commands.h defines, and does not use, its host fallback)
    assert found == ["global.h", "gpu/commands.h", "include/fill.device.h",
                     "include/forward.device.h"], found


def test_a_file_without_an_entry_borrows_the_closest_command(tmp_path):
    src = tmp_path / "src"
    (src / "ops").mkdir(parents=True)
    (tmp_path / "tools").mkdir()
    conv = src / "ops" / "conv.cu"
    gemm = src / "ops" / "gemm.cu"
    tool = tmp_path / "tools" / "t.cu"
    _db(tmp_path / "build", (gemm, "-DGEMM"), (conv, "-DCONV"), (tool, "-DTOOL"))
    config = Config(root=str(tmp_path))
    # a header borrows from the unit with its stem in its folder
    header = src / "ops" / "conv.cuh"
    entry = database.entry_for(str(header), config)
    assert entry.borrowed_from == str(conv) and entry.file == str(header)
    # a new unit borrows from its folder, never from a farther one
    new = src / "ops" / "new.cu"
    assert database.entry_for(str(new), config).borrowed_from in {str(conv), str(gemm)}
    flags = unit_command(str(new), config).flags
    assert "-DTOOL" not in flags and str(conv) not in flags and str(gemm) not in flags
    # no entry in the folder: the longest common path
    (src / "ops" / "x").mkdir()
    assert database.entry_for(str(src / "ops" / "x" / "y.cuh"), config).borrowed_from in {
        str(conv), str(gemm)}
    assert database.entry_for(str(tmp_path / "tools" / "sub" / "z.cu"), config).borrowed_from == str(tool)


def test_a_host_compilers_entry_lends_only_paths_macros_and_the_standard(tmp_path):
    host = tmp_path / "host.cpp"
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([{
        "directory": str(tmp_path / "build"), "file": str(host),
        "command": f"/usr/bin/c++ -DUSE_X=1 -I{tmp_path}/inc -isystem /opt/x -std=gnu++17 -O3 "
                   f"-Wall -fPIC -march=native -c {host} -o host.o"}]))
    flags = unit_command(str(tmp_path / "new.cu"), Config(root=str(tmp_path))).flags
    assert list(flags) == ["-DUSE_X=1", f"-I{tmp_path}/inc", "-isystem", "/opt/x", "-std=c++17"]


def test_options_files_of_an_entry_are_its_flags(tmp_path):
    # darknet with CMake: `nvcc ... --options-file CMakeFiles/darknet.dir/includes_CUDA.rsp`
    # holds every include folder; the flag was dropped, and 11 of 11 units failed on darknet.h
    build = tmp_path / "build"
    (build / "CMakeFiles").mkdir(parents=True)
    (build / "CMakeFiles" / "includes_CUDA.rsp").write_text(
        f'-I{tmp_path}/inc "-I{tmp_path}/with space" --options-file=more.rsp\n')
    (build / "more.rsp").write_text("-DFROM_NESTED=1 -optf more.rsp\n")   # (a loop: 2 levels)
    (build / "hostile.rsp").write_text("-Xcompiler -fplugin=/tmp/evil.so\n")
    unit = tmp_path / "k.cu"
    (build / "compile_commands.json").write_text(json.dumps([{
        "directory": str(build), "file": str(unit),
        "command": f"nvcc -DNDEBUG --options-file CMakeFiles/includes_CUDA.rsp -optf missing.rsp "
                   f"@hostile.rsp --options-file /dev/zero -x cu -c {unit} -o k.o"}]))
    flags = list(unit_command(str(unit), Config(root=str(tmp_path))).flags)
    assert flags[:4] == ["-DNDEBUG", f"-I{tmp_path}/inc", f"-I{tmp_path}/with space",
                         "-DFROM_NESTED=1"]
    assert not any("evil" in f or "rsp" in f or "zero" in f for f in flags), flags


def test_a_command_with_an_open_quote_is_its_words_and_is_read_only_when_used(tmp_path):
    # no shell would run `nvcc -c "a.cu`; its entry still lends its words (was: an internal
    # error for every file of the project), and an entry nobody asks for is never split
    (tmp_path / "a.cu").write_text("__global__ void k() {}\nvoid h() { k<<<1, 2>>>(); }\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "command": 'nvcc -DN=4 -c "a.cu', "file": "a.cu"},
        {"directory": str(tmp_path), "command": "nvcc -c b.cu", "file": "b.cu"}]))
    db = database.load(str(tmp_path / "compile_commands.json"))
    assert all(not isinstance(v, database.Entry) for v in dict.values(db.entries))
    entry = db.entry_for(str(tmp_path / "a.cu"))
    assert entry.arguments == ("nvcc", "-DN=4", "-c", '"a.cu')
    assert sum(isinstance(v, database.Entry) for v in dict.values(db.entries)) == 1
    r = run_main("kernels", "a.cu", "--no-compile", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [x["name"] for x in json.loads(r.stdout)] == ["k", "k"]



@pytest.mark.parametrize(("args", "archs"), [
    (["nvcc", "-arch=sm_90a", "-c", "x.cu"], ["sm_90a"]),
    (["nvcc", "-arch", "sm_100a", "x.cu"], ["sm_100a"]),
    (["nvcc", "--gpu-architecture=sm_100f"], ["sm_100f"]),
    (["nvcc", "-arch=compute_80", "-code=sm_80,sm_86"], ["sm_80", "sm_86"]),
    (["nvcc", "--generate-code=arch=compute_75,code=[compute_75]",
      "--generate-code=arch=compute_86,code=[sm_86]", "-gencode", "arch=compute_120a,code=sm_120a",
      "-gencode=arch=compute_90a,code=[compute_90a,sm_90a]"], ["sm_75", "sm_86", "sm_120a", "sm_90a"]),
    (["nvcc", "-arch=native"], []),
    (["nvcc", "-arch=all-major"], []),
])
def test_archs_of_one_command(args, archs):
    assert archs_in_args(args) == archs


def test_each_unit_gets_its_own_commands_archs_and_overrides_win(tmp_path):
    hopper = tmp_path / "hopper.cu"
    blackwell = tmp_path / "blackwell.cu"
    native = tmp_path / "native.cu"
    _db(tmp_path, (hopper, "-arch=sm_90a"), (blackwell, "-gencode arch=compute_100a,code=sm_100a"),
        (native, "-arch=native"))
    config = Config(root=str(tmp_path))
    assert unit_command(str(hopper), config).archs == ("sm_90a",)
    assert unit_command(str(blackwell), config).archs == ("sm_100a",)
    assert unit_command(str(native), config).archs == ("sm_90",)       # the default GPU's
    assert unit_command(str(native), Config(root=str(tmp_path), gpu="a100")).archs == ("sm_80",)
    forced = Config(root=str(tmp_path), arch=("sm_86",))
    assert {unit_command(str(f), forced).archs for f in (hopper, blackwell, native)} == {("sm_86",)}


# --- library headers (no nvcc) -------------------------------------------------------------------


def _wheels(site: Path) -> tuple[Path, Path]:
    """A site-packages with a CUDA 12 cuBLAS wheel and a CUDA 13 wheel's merged include folder."""
    cu12 = site / "nvidia" / "cublas" / "include"
    cu13 = site / "nvidia" / "cu13" / "include"
    for folder in (cu12, cu13, site / "nvidia" / "cuda_runtime" / "include"):
        folder.mkdir(parents=True)
    return cu12, cu13


def test_wheel_include_dirs_cu12_and_cu13_layouts_without_the_toolkits_own(tmp_path):
    cu12, cu13 = _wheels(tmp_path / "site-packages")
    (cu13 / "cuda_runtime.h").write_text("")
    # nvidia/cu13/include holding only the pip toolkit's headers is not a library folder
    assert wheel_include_dirs([str(tmp_path / "site-packages")]) == [str(cu12)]
    (cu13 / "cublasLt.h").write_text("")
    assert wheel_include_dirs([str(tmp_path / "site-packages")]) == [str(cu13), str(cu12)]


def test_a_library_torchs_cuda_headers_include_names_them_all():
    # detectron2 with a CPU build of torch and a toolkit without the math libraries: cuSPARSE,
    # then cuBLAS, then cuSOLVER were missing one run at a time from ATen/cuda's context header
    at = "/env/torch/include/ATen/cuda/CUDAContextLight.h"
    msg = 'cannot open source file "cublas_v2.h"'
    assert explain_missing(msg, 13, at=at) == (
        "`cublas_v2.h` not found: part of cuBLAS; torch's CUDA headers include cuSPARSE, cuBLAS "
        "and cuSOLVER's (`pip install nvidia-cusparse nvidia-cublas nvidia-cusolver`, as a CUDA "
        "build of torch has them), or add their folders to `include-dirs`")
    assert "nvidia-cusolver-cu12`" in explain_missing(msg, 12, at=at)
    assert explain_missing(msg, 13, at="/src/gemm.cu") == (     # a unit's own include: one
        "`cublas_v2.h` not found: part of cuBLAS (`pip install nvidia-cublas`), or add its "
        "folder to `include-dirs`")


def test_missing_header_names_the_package():
    msg = 'app.cu(3): catastrophic error: cannot open source file "cublas_v2.h"'
    assert explain_missing(msg, 13) == ("`cublas_v2.h` not found: part of cuBLAS "
                                        "(`pip install nvidia-cublas`), or add its folder to "
                                        "`include-dirs`")
    assert "nvidia-cudnn-cu12" in explain_missing("cudnn.h: No such file or directory", 12)
    assert package_for("cutlass/gemm/device/gemm.h") == ("CUTLASS", "nvidia-cutlass")
    # a PyTorch extension's headers (Dao-AILab/causal-conv1d without torch installed)
    assert package_for("c10/util/BFloat16.h") == package_for("<torch/extension.h>") == \
        package_for("ATen/cuda/CUDAContext.h") == ("PyTorch", "torch")
    assert package_for("pybind11/pybind11.h") == ("pybind11", "pybind11")
    assert package_for("torch_helpers.h") is None
    assert "`helper_cuda.h` not found" in explain_missing(
        'x.cu(1): catastrophic error: cannot open source file "helper_cuda.h"')
    assert explain_missing("expected a ;") == "expected a ;"


# --- ptxas's own lines (recorded output) ---------------------------------------------------------


def test_ptxas_failure_quotes_ptxas_line_not_the_summary():
    out = ("ptxas /tmp/tmpxft_1-6_w.ptx, line 20; error   : Instruction 'wgmma.fence' not "
           "supported on .target 'sm_100a'\n"
           "ptxas /tmp/tmpxft_1-6_w.ptx, line 20; error   : Instruction 'wgmma.fence' cannot be "
           "compiled for architecture 'sm_100a'\n"
           "ptxas fatal   : Ptx assembly aborted due to errors\n")
    (err,) = parse_errors(out, "w.cu", "sm_100a")
    assert err.message == "Instruction 'wgmma.fence' not supported on .target 'sm_100a'"
    assert err.kind == "ptxas"


# --- the real CLI and nvcc, pre-commit style ---------------------------------------------------------

KERN = """\
#pragma once
__global__ void __launch_bounds__(256) scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""
MAIN = """\
#include "kern.cuh"
#include <sizes.h>
void run(float* x) {
    scale<<<4096, 1024>>>(x, 2.0f, SIZE);
}
"""
WGMMA = '__global__ void fence() { asm volatile("wgmma.fence.sync.aligned;"); }\n'
BLACKWELL = "__global__ void plain(float* p) { p[threadIdx.x] = 1.0f; }\n"


@pytest.fixture
def repo(tmp_path, nvcc_path):
    """A CMake-style tree: sources under src/, the database in build/, an include folder only
    the database names; sm_90a and sm_100a units side by side."""
    (tmp_path / ".git").mkdir()
    src = tmp_path / "src"
    (src / "arch").mkdir(parents=True)
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "sizes.h").write_text("#define SIZE 409600\n")
    (src / "kern.cuh").write_text(KERN)
    (src / "main.cu").write_text(MAIN)
    (src / "arch" / "hopper.cu").write_text(WGMMA)
    (src / "arch" / "blackwell.cu").write_text(BLACKWELL)
    build = tmp_path / "build"
    build.mkdir()
    inc = f"-I{tmp_path / 'include'}"
    (build / "compile_commands.json").write_text(json.dumps([
        {"directory": str(build), "file": str(src / "main.cu"),
         "command": f"{nvcc_path} {inc} -arch=sm_80 -x cu -c {src / 'main.cu'} -o main.o"},
        {"directory": str(build), "file": str(src / "arch" / "hopper.cu"),
         "command": f"{nvcc_path} -gencode arch=compute_90a,code=sm_90a -c "
                    f"{src / 'arch' / 'hopper.cu'} -o hopper.o"},
        {"directory": str(build), "file": str(src / "arch" / "blackwell.cu"),
         "command": f"{nvcc_path} -arch=sm_100a -c {src / 'arch' / 'blackwell.cu'} -o blackwell.o"},
    ]))
    return tmp_path


def _json(cwd, *args, env=None):
    r = run_cli("check", "--output-format", "json", *args, cwd=cwd, env=env)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout), r


def test_pre_commit_style_run_uses_each_units_database_entry_and_archs(repo):
    findings, r = _json(repo, "src/main.cu", "src/arch/hopper.cu", "src/arch/blackwell.cu")
    codes = {(f["filename"].split("/")[-1], f["code"]) for f in findings}
    assert not [f for f in findings if f["code"] == "OCC900"], r.stdout
    # the header's __launch_bounds__ is seen through main.cu's dependency list
    assert ("main.cu", "OCC032") in codes
    # sm_80 from main.cu's own command, not the union of every command
    assert {f["arch"] for f in findings if f["filename"].endswith("main.cu")} <= {"sm_80", None}


def test_a_header_given_alone_is_measured_through_its_includers(repo, monkeypatch):
    from occlint.config import load_config
    from occlint.toolchain import collect_usage

    monkeypatch.chdir(repo)
    report = collect_usage(["src/kern.cuh"], load_config(start="src/kern.cuh"))
    assert report.borrowed == {"src/main.cu": "src/kern.cuh"}
    (usage,) = report.usage_for("src/kern.cuh")
    assert (usage.kernel, usage.arch) == ("scale", "sm_80")
    assert report.archs_of("src/kern.cuh") == ("sm_80",)


def test_missing_library_header_names_the_package_then_a_wheel_provides_it(repo, tmp_path_factory):
    (repo / "src" / "blas.cu").write_text('#include <cublas_v2.h>\n__global__ void k(float* p) '
                                          '{ p[0] = BLAS_OK; }\n')
    findings, _ = _json(repo, "src/blas.cu")
    (err,) = [f for f in findings if f["code"] == "OCC900"]
    assert "`cublas_v2.h` not found: part of cuBLAS (`pip install nvidia-cublas" in err["message"]
    # a cu12-layout wheel on the path: found after the build's own -I folders
    site = tmp_path_factory.mktemp("env") / "site-packages"
    cu12, _cu13 = _wheels(site)
    (cu12 / "cublas_v2.h").write_text("#define BLAS_OK 1.0f\n")
    (cu12 / "sizes.h").write_text('#error "the wheel must not shadow the build\'s -I"\n')
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    findings, r = _json(repo, "src/blas.cu", "src/main.cu", env=env)
    assert not [f for f in findings if f["code"] == "OCC900"], r.stdout
    doctor = run_cli("doctor", env=env, cwd=repo)
    assert str(cu12) in doctor.stdout


def test_ptxas_error_quotes_ptxas(repo):
    findings, _ = _json(repo, "--arch", "sm_100a", "src/arch/hopper.cu")
    (err,) = [f for f in findings if f["code"] == "OCC900"]
    assert "Instruction 'wgmma.fence' not supported on .target 'sm_100a'" in err["message"]
    assert "aborted" not in err["message"]


def test_no_host_compiler_is_one_error_and_exit_2(repo, tmp_path_factory, nvcc_path):
    bare = tmp_path_factory.mktemp("bin")      # a PATH with nvcc but no g++/gcc
    os.symlink(nvcc_path, bare / "nvcc")
    for tool in ("sh", "dirname", "uname", "cat", "env"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bare / tool)
    r = run_cli("check", "src/main.cu", cwd=repo, env={"PATH": str(bare)})
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("occlint: error:")]
    assert len(errors) == 1 and "host compiler" in errors[0], r.stderr
    assert "OCC900" not in r.stdout


def test_a_missing_ccbin_in_the_build_is_a_broken_tool_not_a_finding(repo):
    db = repo / "build" / "compile_commands.json"
    data = json.loads(db.read_text())
    data[0]["command"] = data[0]["command"].replace(" -arch", " -ccbin /nonexistent/g++ -arch")
    db.write_text(json.dumps(data))
    r = run_cli("check", "--no-cache", "src/main.cu", cwd=repo)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Failed to preprocess host compiler properties" in r.stderr
    assert "OCC900" not in r.stdout


def test_an_unsupported_host_compiler_is_a_broken_tool():
    from occlint.errors import OcclintError
    from occlint.model import CompileError
    from occlint.toolchain.compile import _raise_if_tool_broken
    from occlint.toolchain.discover import Nvcc

    nvcc = Nvcc("/cuda/bin/nvcc", "13.0.88", host_compiler="/usr/bin/g++-15")
    text = "#error -- unsupported GNU version! gcc versions later than 14 are not supported!"
    with pytest.raises(OcclintError, match="unsupported GNU version"):
        _raise_if_tool_broken([CompileError("/cuda/include/crt/host_config.h", 143, None, text,
                                            "sm_90", "error", None, "k.cu")], nvcc)
    _raise_if_tool_broken([CompileError("k.cu", 3, None, 'identifier "x" is undefined', "sm_90",
                                        "error", None, "k.cu")], nvcc)     # the user's error


def test_doctor_file_prints_the_exact_command_and_the_entry(repo, nvcc_path):
    r = run_cli("doctor", "src/main.cu", "src/kern.cuh", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert f"{repo / 'build' / 'compile_commands.json'}: this file's own" in out
    assert "-arch=sm_80 -x cu -c" in out                               # the entry, as written
    assert "-cubin -arch=sm_80 -Xptxas -v" in out and f"-I{repo / 'include'}" in out
    assert f"borrowed from {repo / 'src' / 'main.cu'}" in out          # the header's entry
    assert "nvcc found" in out and "<- chosen" in out


def test_pre_commit_hooks_run_serially_on_every_suffix_discovery_covers(tmp_path, monkeypatch):
    """pre-commit's own manifest loader and file classifier (types from `identify`)."""
    from types import SimpleNamespace

    from pre_commit.clientlib import load_manifest
    from pre_commit.commands.run import Classifier

    from occlint.discover import CUDA_SUFFIXES

    names = [f"src/k{suffix}" for suffix in CUDA_SUFFIXES] + [
        "CMakeLists.txt", "build/compile_commands.json", "kernels.py", "README.md", "k.cpp",
        "host.cc", "notes.txt"]
    monkeypatch.chdir(tmp_path)
    for name in names:
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text("x\n")
    hooks = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert {h["id"] for h in hooks} == {"occlint", "occlint-fix"}
    for hook in hooks:
        assert hook["require_serial"] is True
        picked = Classifier(names).filenames_for_hook(SimpleNamespace(**hook))
        # (C++ sources too: a database may compile one as CUDA, or it launches through the
        # driver API; discovery decides, one with neither finds nothing)
        assert set(picked) == set(names) - {"README.md", "notes.txt"}, hook["id"]


def test_a_lone_header_is_measured_the_same_cold_and_warm(tmp_path, monkeypatch, nvcc_path):
    """ggml: convert.cu reaches mmq.cuh through another header and instantiates none of its
    templates; mmq.cu includes it and does. With convert.cu and the header given, the header's
    kernel is measured through mmq.cu on a cold cache and on a warm one (where the recorded
    dependency lists know that convert.cu reads the header)."""
    from occlint.config import Config
    from occlint.toolchain import collect_usage

    (tmp_path / "mmq.cuh").write_text(
        "template <int N> __global__ void mul(float* x) { x[threadIdx.x] *= N; }\n")
    (tmp_path / "common.cuh").write_text('#include "mmq.cuh"\n')
    (tmp_path / "convert.cu").write_text(
        '#include "common.cuh"\n__global__ void convert(float* x) { x[threadIdx.x] = 1.0f; }\n')
    (tmp_path / "mmq.cu").write_text(
        '#include "mmq.cuh"\nvoid run(float* x) { mul<4><<<100, 128>>>(x); }\n')
    _db(tmp_path, (tmp_path / "convert.cu", "-arch=sm_90"), (tmp_path / "mmq.cu", "-arch=sm_90"))
    monkeypatch.chdir(tmp_path)
    config = Config(root=str(tmp_path), cache_dir=str(tmp_path / "cache"), nvcc=nvcc_path)
    runs = []
    for _ in range(2):                 # cold, then warm (the includers index is written)
        report = collect_usage(["convert.cu", "mmq.cuh"], config)
        runs.append(sorted({u.kernel for u in report.usage_for("mmq.cuh")}))
    assert runs[0] == runs[1], runs
    assert "mul" in runs[0], runs


def test_a_missing_header_the_project_has_names_its_folder(tmp_path):
    # moderngpu without its CMake database: "`moderngpu/kernel_scan.hxx` not found: add its
    # folder" when the folder to add is the project's `src`; cudpp's cuda_util.h is in two
    (tmp_path / "src" / "moderngpu").mkdir(parents=True)
    (tmp_path / "src" / "moderngpu" / "kernel_scan.hxx").write_text("")
    for d in ("src/cudpp", "apps/common/include"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "cuda_util.h").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "kernel_scan.hxx").write_text("")     # hidden folders are not looked in
    (tmp_path / "src" / "include").mkdir(parents=True)
    (tmp_path / "src" / "include" / "nccl_device.h").write_text("")

    def msg(name):
        return explain_missing(f'x.cu(1): catastrophic error: cannot open source file "{name}"',
                               13, root=str(tmp_path))

    assert msg("moderngpu/kernel_scan.hxx") == (
        "`moderngpu/kernel_scan.hxx` not found: this project has it below `src`: add that folder "
        "to `include-dirs` (or build with CMake and export compile_commands.json)")
    assert "below `apps/common/include` and `src/cudpp`: add the one the build uses" in msg("cuda_util.h")
    # with a database entry the build's own flags missed it: no advice to export one (darknet)
    assert explain_missing('x.cu(1): catastrophic error: cannot open source file '
                           '"moderngpu/kernel_scan.hxx"', 13, root=str(tmp_path),
                           database=True).endswith(
        "add that folder to `include-dirs` (the compilation database's entry for this unit does "
        "not give it)")
    assert "this project" not in msg("absent.h") and "part of cuBLAS" in msg("cublas_v2.h")
    # NCCL's own src/include/nccl_device.h: the project's copy, not another NCCL's wheel
    assert msg("nccl_device.h").startswith("`nccl_device.h` not found: this project has it below "
                                           "`src/include`")


def test_an_api_a_newer_cuda_removed_says_what_replaced_it():
    # inducer/pycuda's texture examples, cudpp's multisplit (__shfl) and simpleCUDPP (clockRate)
    from occlint.toolchain.libraries import explain_removed

    assert explain_removed("texture is not a template") == (
        "texture is not a template (texture references were removed in CUDA 12: use texture "
        "objects (cudaCreateTextureObject))")
    assert "use the _sync forms" in explain_removed('identifier "__shfl_up" is undefined')
    assert "__ballot_sync" in explain_removed('identifier "__ballot" is undefined')
    assert "cudaDeviceGetAttribute" in explain_removed('class "cudaDeviceProp" has no member "clockRate"')
    # Rodinia (11 units): CUDA 13 removed the cudaThread* calls
    assert "use cudaDeviceSynchronize" in explain_removed(
        'identifier "cudaThreadSynchronize" is undefined')
    assert explain_removed('identifier "__shfl_up_sync" is undefined') == \
        'identifier "__shfl_up_sync" is undefined'


def test_the_configs_include_dirs_and_macros_add_to_a_build_entry(tmp_path):
    """An OCC900 for a missing header advises `include-dirs`: it applies to a unit with a
    database (or setup.py) entry too, after the entry's own flags (it was ignored there)."""
    unit = tmp_path / "k.cu"
    unit.write_text("")
    _db(tmp_path / "build", (unit, "-DFROM_BUILD -Iown"))
    database.forget_folders()
    config = Config(root=str(tmp_path), include_dirs=("inc",), defines=("EXTRA=1",))
    flags = list(unit_command(str(unit), config).flags)
    build, added = flags.index("-DFROM_BUILD"), flags.index("-I" + str(tmp_path / "inc"))
    assert build < added and "-DEXTRA=1" in flags
    assert "-I" + str(tmp_path / "inc") not in unit_command(str(unit), Config(root=str(tmp_path))).flags


def test_a_cpp_compiled_as_cuda_is_found_compiled_and_linted(tmp_path, nvcc_path):
    # cuda_memtest (CMake's LANGUAGE CUDA) and miniBUDE: every kernel lives in a .cpp that the
    # database compiles with `-x cu`; `occlint check` found no file, and a .cpp named on the
    # command line was parsed but never compiled ("nvcc reported no figures")
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests.cpp").write_text(KERN.replace("#pragma once\n", "") +
                                        "void run(float* x) { scale<<<4096, 1024>>>(x, 2.0f, 9); }\n")
    (tmp_path / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": str(tmp_path / "tests.cpp"),
         "command": f"{nvcc_path} -forward-unknown-to-host-compiler "
                    f"--generate-code=arch=compute_80,code=[compute_80,sm_80] -x cu "
                    f"-c {tmp_path / 'tests.cpp'} -o tests.o"}]))
    r = run_main("check", "--output-format", "json", "--no-cache", cwd=tmp_path)
    got = {(f["code"], f["filename"].rsplit("/", 1)[-1]) for f in json.loads(r.stdout)}
    assert ("OCC032", "tests.cpp") in got, r.stdout + r.stderr     # 1024 threads, bounds 256
    r = run_main("kernels", "--json", "tests.cpp", cwd=tmp_path)
    (kernel,) = [x for x in json.loads(r.stdout) if x["kind"] == "kernel"]
    assert set(kernel["usage"]) == {"sm_80"}, r.stderr


def test_an_entry_whose_folder_is_gone_is_one_error_and_exit_2(tmp_path, nvcc_path):
    # xmrig-cuda with its build/ moved away: every unit was an OCC900 "cannot run nvcc:
    # [Errno 2]" at 1:1 (exit 1); a broken setup is one error line and exit 2
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[0] = 1; }\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path / "gone"), "file": str(tmp_path / "k.cu"),
         "command": f"{nvcc_path} -arch=sm_80 -c {tmp_path / 'k.cu'} -o k.o"}]))
    r = run_main("check", "--no-cache", "k.cu", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("occlint: error:")]
    assert "which does not exist: regenerate the database" in line and "OCC900" not in r.stdout


HEAVY = """\
#pragma once
__global__ void heavy(const float4 *in, float4 *out)
{
    float4 r[15];
#pragma unroll
    for (int i = 0; i < 15; ++i) r[i] = in[threadIdx.x + i * 32 + blockIdx.x * 640];
    float4 acc = make_float4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 15; ++j)
#pragma unroll
        for (int i = 0; i < 15; ++i) {
            acc.x += r[i].x * r[j].y; acc.y += r[i].z * r[j].w;
            acc.z += r[i].x * r[j].w; acc.w += r[i].y * r[j].z;
        }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def test_a_header_alone_sees_its_includers_launches(tmp_path, nvcc_path):
    # xmrig's KawPow_dag.h named alone (pre-commit, only the header changed): "with no constant
    # launch, its best occupancy ... at 768 threads" for a kernel its includer launches at 32;
    # the finding belongs to the includer's launch, and the same files give the same verdict
    (tmp_path / "heavy.cuh").write_text(HEAVY)
    (tmp_path / "b.cu").write_text('#include "heavy.cuh"\nvoid entry(const float4 *i, float4 *o) '
                                   "{ constexpr int threads = 32; heavy<<<8192, threads>>>(i, o); }\n")
    alone = run_main("check", "--arch", "sm_80", "--no-cache", "--output-format", "json",
                     "heavy.cuh", cwd=tmp_path)
    both = run_main("check", "--arch", "sm_80", "--no-cache", "--output-format", "json",
                    "heavy.cuh", "b.cu", cwd=tmp_path)
    assert json.loads(alone.stdout) == [], alone.stdout
    assert [(f["filename"].rsplit("/", 1)[-1], f["code"]) for f in json.loads(both.stdout)] == \
        [("b.cu", "OCC001")], both.stdout


def test_a_headers_macros_are_read_through_include_cycles_and_long_chains(tmp_path):
    # pulsar: a header first reached deep in the run (its includes cut at the depth limit) was
    # remembered without them, and a later file that uses its routed launch macro was skipped
    from occlint.toolchain.includers import uses_included_macro

    (tmp_path / "gpu.h").write_text("#define LAUNCH(F, N) F<<<N, 256>>>()\n")
    (tmp_path / "cmd.h").write_text('#include "gpu.h"\n#include "cmd.h"\n')      # a cycle
    chain = 40
    for i in range(chain):
        nxt = f'#include "c{i + 1}.h"\n' if i + 1 < chain else '#include "cmd.h"\n'
        (tmp_path / f"c{i}.h").write_text(nxt)
    near = b'#include "cmd.h"\nvoid g() { LAUNCH(k, 2); }\n'
    for first in (38, 0):           # cmd.h reached 3 levels down, then 41 (past the limit)
        memo: dict = {}
        deep = b'#include "c%d.h"\nvoid f() { LAUNCH(k, 1); }\n' % first
        assert uses_included_macro(str(tmp_path / "deep.cu"), deep, memo) == (first == 38)
        assert uses_included_macro(str(tmp_path / "near.cu"), near, memo)


def test_a_cu_file_a_host_cpp_file_includes_is_still_a_unit(tmp_path):
    # xgboost's CPU-build trick: `regression_obj.cc` does `#if !defined(XGBOOST_USE_CUDA)`
    # `#include "regression_obj.cu"`; the .cu was read as a fragment of the .cc (compiled by the
    # host compiler: "`__global__` does not name a type"), and its own missing header was lost
    from occlint.toolchain.includers import fragments

    (tmp_path / "kern.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "kern.cc").write_text('#if !defined(USE_CUDA)\n#include "kern.cu"\n#endif\n')
    (tmp_path / "frag.cu").write_text("__global__ void f() {}\n")
    (tmp_path / "main.cu").write_text('#include "frag.cu"\nint main() { return 0; }\n')
    found = fragments([str(tmp_path / "kern.cu"), str(tmp_path / "frag.cu")],
                      Config(root=str(tmp_path)))
    assert {os.path.basename(k): [os.path.basename(u) for u in v] for k, v in found.items()} == \
        {"frag.cu": ["main.cu"]}



def test_an_undefined_identifier_a_header_defines_under_a_condition_names_it(tmp_path):
    # darknet without -DGPU: 72 x "identifier "BLOCK" is undefined", no hint that dark_cuda.h
    # defines it under `#ifdef GPU`, which its build always passes
    from occlint.toolchain.libraries import explain_undefined

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "dark_cuda.h").write_text(
        "#ifndef DARK_CUDA_H\n#define DARK_CUDA_H\n#ifdef GPU\n#define BLOCK 512\n#endif\n"
        "#if defined(USE_X) && X > 2\n#define WIDTH 4\n#else\n#define HEIGHT 8\n#endif\n#endif\n")
    msg = 'k.cu(2): error: identifier "{}" is undefined'
    assert explain_undefined(msg.format("BLOCK"), str(tmp_path)).endswith(
        "(`BLOCK` is defined in src/dark_cuda.h:4 under `#ifdef GPU`, which this compile does "
        "not meet: the build may define it; see `defines`)")
    assert "under `#if defined(USE_X) && X > 2`" in explain_undefined(msg.format("WIDTH"),
                                                                      str(tmp_path))
    for name in ("HEIGHT", "DARK_CUDA_H", "absent"):      # an #else's, a guard's, none
        assert explain_undefined(msg.format(name), str(tmp_path)) == msg.format(name)


def test_a_missing_pytorch_header_says_what_to_do(tmp_path, monkeypatch):
    # vllm (built with CMake, not a setup.py extension): "part of PyTorch (`pip install
    # torch`)" did not help, torch was installed. The installed torch's folders are searched
    # (libraries.torch_include_dirs), so a header still missing is not one of its; without
    # torch, how to get them (pre-commit runs occlint in an environment of its own)
    import importlib
    import sys

    from occlint.toolchain.libraries import explain_missing

    message = 'cannot open source file "torch/all.h"'
    saved = sys.path[:]         # (not monkeypatch.setattr: with syspath_prepend below, its undo
    sys.path[:] = [p for p in saved if "site-packages" not in p]    # left sys.path stripped)
    try:
        importlib.invalidate_caches()
        assert explain_missing(message, 13) == (
            "`torch/all.h` not found: part of PyTorch's C++ headers: install torch where "
            "occlint runs (a CPU build will do; pre-commit: `additional_dependencies: [torch]`), "
            "or add the folders `torch.utils.cpp_extension.include_paths()` gives to "
            "`include-dirs`")
    finally:
        sys.path[:] = saved
        importlib.invalidate_caches()
    inc = tmp_path / "torch" / "include"
    (inc / "torch").mkdir(parents=True)
    (inc / "torch" / "extension.h").write_text("")
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert explain_missing(message, 13) == (
        f"`torch/all.h` not found: part of PyTorch's C++ headers: the installed torch's headers "
        f"(`{inc}`), which occlint searches, do not have it: another release of torch may")
    # kaolin's `<THC/THCAtomics.cuh>`, of an older torch: "add its folder to `include-dirs`"
    assert explain_missing('cannot open source file "THC/THCAtomics.cuh"', 13) == (
        f"`THC/THCAtomics.cuh` not found: part of PyTorch's C++ headers: the installed torch's "
        f"headers (`{inc}`), which occlint searches, do not have it: another release of torch may")
