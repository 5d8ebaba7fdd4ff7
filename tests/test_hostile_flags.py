"""Hostile build flags: a compilation database or config file from a stranger's pull request
must not make a compile run a program or write a file outside occlint's temp folder.

nvcc hands `-Xcompiler` words (and, with `-forward-unknown-to-host-compiler`, options it does
not know) to the host compiler, `-Xptxas` words to ptxas, `-Xcudafe` words to cicc, and has
options of its own that run or write (`--run`, `-time`, `--keep-dir`). `toolchain.vet` keeps
only what is known to be harmless; real projects' flags pass unchanged."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import pytest
from conftest import SCALE_100, run_cli, run_main

from occlint.toolchain.flags import filter_flags
from occlint.toolchain.vet import vet

# (flags as a database has them, the word that reaches another program): each one loads code,
# runs a program or writes a file when nvcc runs it.
HOSTILE = [
    ("-Xcompiler -fplugin=/tmp/evil.so", "-fplugin=/tmp/evil.so"),
    ("-Xcompiler=-fplugin=/tmp/evil.so", "-fplugin=/tmp/evil.so"),
    ("--compiler-options -fPIC,-fplugin=/tmp/evil.so", "-fplugin=/tmp/evil.so"),
    ("-forward-unknown-to-host-compiler -fplugin=/tmp/evil.so", "-fplugin=/tmp/evil.so"),
    ("-Xcompiler -B/tmp/evil", "-B/tmp/evil"),
    ("-Xcompiler -specs=/tmp/evil.specs", "-specs=/tmp/evil.specs"),
    ("-Xcompiler -wrapper,/tmp/evil", "-wrapper /tmp/evil"),
    ("-Xcompiler @/tmp/evil.opts", "@/tmp/evil.opts"),
    ("-Xcompiler -save-temps", "-save-temps"),
    ("-Xcompiler -fdump-tree-all", "-fdump-tree-all"),
    ("-Xcompiler -o,/tmp/evil.out", "-o /tmp/evil.out"),
    ("-Xcompiler -aux-info,/tmp/evil.out", "-aux-info /tmp/evil.out"),
    ("-Xcompiler -Xclang,-load", "-Xclang"),
    ("-forward-unknown-to-host-compiler -Wp,-MD,/tmp/evil.d", "-Wp,-MD,/tmp/evil.d"),
    ("-forward-unknown-to-host-compiler -fmodule-mapper=/tmp/evil", "-fmodule-mapper=/tmp/evil"),
    ("-Xcompiler /Fo/tmp/evil.obj", "/Fo/tmp/evil.obj"),
    ("-Xptxas -o,/tmp/evil.cubin", "-o /tmp/evil.cubin"),
    ("-Xptxas --output-file=/tmp/evil.cubin", "--output-file=/tmp/evil.cubin"),
    ("-Xcudafe --gen_c_file_name=/tmp/evil.c", "--gen_c_file_name=/tmp/evil.c"),
    ("-Xcicc --gen_c_file_name=/tmp/evil.c", "--gen_c_file_name=/tmp/evil.c"),
    ("--run", None),
    ("-time /tmp/evil.csv", None),
    ("-fdevice-time-trace /tmp/evil.json", None),
    ("--keep-dir /tmp/evil", None),
    ("-odir /tmp/evil", None),
]

# Flags real projects put in their databases (cuda-samples, ggml, CUDALibrarySamples, CMake and
# Makefile projects): every one passes unchanged and silently.
REAL = [
    "-forward-unknown-to-host-compiler -Wno-deprecated-gpu-targets -lineinfo --extended-lambda "
    "-Xcompiler=-fPIE -std=c++17 -x cu -rdc=true",
    "-O3 -DNDEBUG -isystem=/usr/local/cuda/include -Xcompiler=-fPIC -use_fast_math "
    "-extended-lambda -compress-mode=size -std=c++17",
    "-Xcompiler -fPIC -Xcompiler -Wall,-Wextra,-fopenmp,-O3,-march=native,-pthread",
    "-G -g --expt-relaxed-constexpr --use_fast_math -maxrregcount=64 -Xptxas -v,-O3,--warn-on-spills",
    "-Xptxas --allow-expensive-optimizations=true -Xptxas -dlcm=ca -Xcudafe --diag_suppress=177",
    "-Xcompiler /MD -Xcompiler /W3,/wd4819,/EHsc,/Zc:__cplusplus,/bigobj,/utf-8,/permissive-",
    "-Xcompiler -fvisibility=hidden,-fno-strict-aliasing,-Wno-unused-function,-ffast-math",
    "-forward-unknown-to-host-compiler -Wall -fopenmp -fsanitize=address -fno-omit-frame-pointer",
    "-Xcompiler -isystem,/usr/include/eigen3 -include /abs/config.h -I../include -Dfoo=1 -Ubar",
    "--default-stream per-thread -rdc=true --ftz=true --prec-div=false -Werror all-warnings",
    # a PyTorch extension (torch.utils.cpp_extension) and llm.c's Makefile
    "-D__CUDA_NO_HALF_OPERATORS__ --expt-relaxed-constexpr --compiler-options '-fPIC' -O3 "
    "--use_fast_math -DTORCH_API_INCLUDE_EXTENSION_H '-DPYBIND11_COMPILER_TYPE=\"_gcc\"' "
    "-D_GLIBCXX_USE_CXX11_ABI=1 -std=c++17",
    "-O3 -t=0 --use_fast_math -std=c++17 -Xcompiler -fopenmp -DENABLE_BF16 --threads 4",
    # CUDALibrarySamples' cmake: nvc++ (EDG) diagnostics and MSVC's, through -Xcompiler
    "-Xcompiler=--display_error_number -Xcompiler=--diag_suppress941 -Xcompiler=/Zc:preprocessor "
    "-Xcompiler=/wd5105 -Xcompiler=/WX -Xcompiler --sysroot=/opt/fs -Xptxas -O1",
]


@pytest.mark.parametrize("flags, word", HOSTILE)
def test_vet_drops_what_runs_or_writes_with_one_warning_each(flags, word):
    kept, warnings = vet(filter_flags(shlex.split(flags)), "/tmp")
    assert "evil" not in " ".join(kept) and "-load" not in kept, kept
    assert len(warnings) == 1 and "dropped `" in warnings[0], warnings


@pytest.mark.parametrize("flags", REAL)
def test_real_projects_flags_pass_unchanged(flags):
    args = filter_flags(shlex.split(flags))
    assert vet(args, "/tmp") == (args, [])


def test_link_and_dependency_options_are_dropped_silently():
    """A device-only compile never links and occlint writes its own depfile: no warning."""
    args = shlex.split("-Xlinker -Map=/tmp/m -Xnvlink --dump -Xcompiler -MD,-MF,/tmp/d "
                       "-Xfatbin -compress-all "
                       "-forward-unknown-to-host-compiler -Wl,-rpath,/opt/x -O3")
    assert vet(args, "/tmp") == (["-forward-unknown-to-host-compiler", "-O3"], [])


@pytest.mark.parametrize("flags, word", [h for h in HOSTILE if h[1]])
def test_nvcc_dryrun_would_hand_the_word_to_another_program(flags, word, nvcc_path, tmp_path):
    """The real nvcc (`-dryrun`) shows each dropped word in a host compiler, cicc or ptxas
    command line, and nothing of it once vetted."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")

    def commands(args):
        out = subprocess.run([nvcc_path, "-dryrun", "-cubin", "-arch=sm_90", *args, "-o",
                              str(tmp_path / "x.cubin"), str(src)], capture_output=True,
                             text=True, cwd=tmp_path).stderr
        return [ln for ln in out.splitlines() if ln.startswith("#$ ") and "=" not in ln[3:9]]

    args = filter_flags(shlex.split(flags))
    before = commands(args)
    assert any(word in cmd for cmd in before), before
    after = commands(vet(args, str(tmp_path))[0])
    assert after and not any(word in cmd for cmd in after), after


def test_nvcc_dryrun_shows_run_executing_the_output(nvcc_path, tmp_path):
    """`--run` makes even a `-cubin` compile execute a program."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    out = subprocess.run([nvcc_path, "-dryrun", "-cubin", "-arch=sm_90", "--run", "-o",
                          str(tmp_path / "x.cubin"), str(src)], capture_output=True, text=True,
                         cwd=tmp_path).stderr
    assert out.splitlines()[-1].startswith('#$ "/'), out    # the last step runs a built file


def _project(tmp_path, args: list[str]):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "k.cu").write_text(SCALE_100)
    entry = {"directory": str(root), "file": str(root / "k.cu"),
             "arguments": ["nvcc", *args, "-c", "k.cu", "-o", "k.o"]}
    (root / "compile_commands.json").write_text(json.dumps([entry]))
    return root


def _check(root):
    return run_cli("check", "--output-format", "concise", "--no-cache", "--arch", "sm_90",
                   "k.cu", cwd=root)


def test_host_compiler_prefix_from_a_database_never_runs(tmp_path, nvcc_path):
    """`-Xcompiler -B<dir>` makes gcc run `<dir>/cc1plus`: the database's program."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil"
    evil.mkdir()
    for prog in ("cc1plus", "cc1", "as"):
        (evil / prog).write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
        (evil / prog).chmod(0o755)
    wrapper = tmp_path / "wrap"
    wrapper.write_text(f"#!/bin/sh\ntouch '{marker}'\nexec \"$@\"\n")
    wrapper.chmod(0o755)
    root = _project(tmp_path, ["-Xcompiler", f"-B{evil}/", "-Xcompiler", f"-wrapper,{wrapper}",
                               "-Xcompiler", "-fPIC"])
    proc = _check(root)
    assert not marker.exists()
    assert f"dropped `-Xcompiler -B{evil}/`" in proc.stderr
    assert f"dropped `-Xcompiler -wrapper {wrapper}`" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_a_plugin_from_a_database_is_never_loaded(tmp_path, nvcc_path):
    """A real gcc plugin (its constructor leaves a marker) named by `-fplugin=`, forwarded by
    `-forward-unknown-to-host-compiler`, as CMake writes databases."""
    marker = tmp_path / "loaded"
    src = tmp_path / "plugin.c"
    src.write_text('#include <stdio.h>\nint plugin_is_GPL_compatible;\n'
                   '__attribute__((constructor)) static void hit(void) '
                   f'{{ fclose(fopen("{marker}", "w")); }}\n'
                   "int plugin_init(void *a, void *b) { return 0; }\n")
    plugin = tmp_path / "evil.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(src)], check=True)
    root = _project(tmp_path, ["-forward-unknown-to-host-compiler", f"-fplugin={plugin}"])
    proc = _check(root)
    assert not marker.exists()
    assert f"dropped `-fplugin={plugin}`" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_nvcc_options_that_write_files_are_dropped(tmp_path, nvcc_path):
    """`-fdevice-time-trace F` made nvcc write `F.json` into the entry's directory."""
    root = _project(tmp_path, ["-fdevice-time-trace", "trace.json", "--keep-dir", "kept"])
    (root / "kept").mkdir()
    proc = _check(root)
    assert sorted(os.listdir(root)) == ["compile_commands.json", "k.cu", "kept"]
    assert not os.listdir(root / "kept")
    assert "dropped `-fdevice-time-trace trace.json`" in proc.stderr
    assert "dropped `--keep-dir kept`" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_time_drops_its_file_name_too(tmp_path, nvcc_path):
    """`-time F` writes a CSV; dropping only `-time` left `F` as a second input (OCC900)."""
    root = _project(tmp_path, ["-time", "times.csv"])
    proc = _check(root)
    assert sorted(os.listdir(root)) == ["compile_commands.json", "k.cu"]
    assert "dropped `-time times.csv`" in proc.stderr
    assert "OCC900" not in proc.stdout and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_config_nvcc_flags_are_vetted_the_same_way(tmp_path, nvcc_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "cc1plus").write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    (evil / "cc1plus").chmod(0o755)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "k.cu").write_text(SCALE_100)
    (root / "occlint.toml").write_text(f'nvcc-flags = ["-Xcompiler=-B{evil}/", "-lineinfo"]\n')
    proc = _check(root)
    assert not marker.exists()
    assert f"dropped `-Xcompiler -B{evil}/`" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_nvrtc_options_in_a_python_file_write_no_file(tmp_path, nvrtc_lib):
    """CuPy's `options=` reach NVRTC, which writes `--time=F`, `--fdevice-time-trace=F` and
    `--create-pch=F` wherever F says."""
    out = tmp_path / "out"
    out.mkdir()
    opts = (f"--time={out}/t.csv", f"--fdevice-time-trace={out}/trace", f"--create-pch={out}/x.pch",
            "-Xptxas=-v,--output-file=" + f"{out}/o.cubin")
    (tmp_path / "kern.py").write_text(
        "import cupy\nk = cupy.RawKernel(r'''__global__ void k(float* x) { x[threadIdx.x] = 1; }''',"
        f" 'k', options={opts!r})\nk((4096,), (100,), (None,))\n")
    proc = run_main("check", "--output-format", "concise", "--no-cache", "--arch", "sm_90",
                   "kern.py", cwd=tmp_path)
    assert not os.listdir(out)
    for opt in opts[:3]:
        assert f"dropped `{opt}`" in proc.stderr, proc.stderr
    assert f"dropped `-Xptxas --output-file={out}/o.cubin`" in proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_nvcc_options_in_a_python_file_are_vetted(tmp_path, nvrtc_lib, nvcc_path):
    """`backend="nvcc"` hands the options to nvcc: `-Xcompiler=-B<dir>` would run <dir>/cc1plus."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "cc1plus").write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    (evil / "cc1plus").chmod(0o755)
    (tmp_path / "kern.py").write_text(
        "import cupy\nk = cupy.RawKernel(r'''__global__ void k(float* x) { x[threadIdx.x] = 1; }''',"
        f" 'k', options=('-Xcompiler=-B{evil}/',), backend='nvcc')\nk((4096,), (100,), (None,))\n")
    proc = run_cli("check", "--output-format", "concise", "--no-cache", "--arch", "sm_90",
                   "kern.py", cwd=tmp_path)
    assert not marker.exists()
    assert f"dropped `-Xcompiler -B{evil}/`" in proc.stderr, proc.stderr
    assert proc.returncode == 1 and "OCC031" in proc.stdout, proc.stdout + proc.stderr


def test_include_search_reads_host_compiler_words_too(tmp_path):
    from occlint.toolchain.inputs import non_regular_input

    (tmp_path / "k.cu").write_text("#include <x.h>\n")
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "x.h").symlink_to("/dev/zero")
    assert non_regular_input(str(tmp_path / "k.cu"), ["-Xcompiler", "-isystem,inc"],
                             str(tmp_path))[1] == 1
    assert non_regular_input(str(tmp_path / "k.cu"), [], str(tmp_path)) is None
    found = non_regular_input(str(tmp_path / "k.cu"), ["-Xcompiler=-include,/dev/zero"],
                              str(tmp_path))
    assert found and "-include /dev/zero" in found[2]
    (tmp_path / "p.cu").write_text('#include "/proc/self/status"\n')      # /proc/kcore is endless
    assert "/proc" in non_regular_input(str(tmp_path / "p.cu"), [], str(tmp_path))[2]


@pytest.mark.parametrize("how", ["symlink to /dev/zero", "FIFO", "forced include"])
def test_an_include_that_never_ends_is_not_compiled(tmp_path, nvcc_path, how):
    """gcc reads an included device or FIFO forever (about 1 GB a second of /dev/zero) until
    the compile timeout: such a unit is one OCC900 at once, other units still compile."""
    root = tmp_path / "proj"
    (root / "inc").mkdir(parents=True)
    (root / "ok.cu").write_text(SCALE_100)
    flags = []
    if how == "symlink to /dev/zero":
        (root / "inc" / "x.h").symlink_to("/dev/zero")
    elif how == "FIFO":
        os.mkfifo(root / "inc" / "x.h")
    else:
        flags = ["-include", "/dev/zero"]
    (root / "k.cu").write_text('#include "inc/x.h"\n' + SCALE_100 if how != "forced include"
                               else SCALE_100)
    entries = [{"directory": str(root), "file": str(root / f),
                "arguments": ["nvcc", *(flags if f == "k.cu" else []), "-c", f, "-o", "x.o"]}
               for f in ("k.cu", "ok.cu")]
    (root / "compile_commands.json").write_text(json.dumps(entries))
    (root / "occlint.toml").write_text("compile-timeout = 3\n")
    proc = run_cli("check", "--output-format", "concise", "--no-cache", "--arch", "sm_90",
                   "k.cu", "ok.cu", cwd=root, timeout=120)
    assert "timed out" not in proc.stdout, proc.stdout
    assert "which a compile would read forever" in proc.stdout, proc.stdout + proc.stderr
    where = "k.cu:1:" if how != "forced include" else "k.cu:"
    assert any(ln.startswith(where) and "OCC900" in ln for ln in proc.stdout.splitlines())
    assert "ok.cu:7:" in proc.stdout and "OCC031" in proc.stdout


@pytest.mark.parametrize("name", ["g++", "x86_64-linux-gnu-g++-12", "clang++-17", "cc", "c++",
                                  "x86_64-conda-linux-gnu-c++", "mpicxx", "nvc++", "cl.exe",
                                  "ccache", "icpx", "xlc++_r"])
def test_host_compilers_by_their_names_may_run(name):
    from occlint.toolchain.vet import host_compiler

    assert host_compiler(f"/opt/nowhere/bin/{name}", "/") is None


@pytest.mark.parametrize("name", ["python3", "perl", "sh", "bash", "env", "make", "evil-tool"])
def test_other_programs_never_run_as_the_host_compiler(name):
    from occlint.toolchain.vet import host_compiler

    assert host_compiler(f"/usr/bin/{name}", "/") == "not the name of a C++ compiler"
