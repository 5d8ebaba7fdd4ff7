"""CUDA inside Python: string values with their position map, extraction, NVRTC against nvcc,
the Python launch sites, suppressions, discovery and the CLI on .py files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
from conftest import run_main

from occlint import record
from occlint.config import config_from_table
from occlint.python import lint_python, might_have_cuda


def extract(src, path):
    """occlint.python.extract.extract, imported on first use: libcst's import (~0.15 s) is then
    paid by the tests that read Python, not by every pytest worker at collection."""
    from occlint.python.extract import extract

    return extract(src, path)


def _cfg(**kw):
    return record.replace(config_from_table({"arch": ["sm_90"]}, root=tempfile.gettempdir()), **kw)


def _code(src: str):
    model = extract(src, "x.py")
    assert model.modules, model.problems
    return model, model.modules[0].code


def _check_map(src: str, code) -> None:
    """Every exact character maps to the same character in the .py text."""
    for ch, pos, lit in zip(code.chars, code.pos, code.lit, strict=True):
        if lit is not None:
            assert src[pos] == ch


# --- string values and their map --------------------------------------------------------------

def test_escapes_concatenation_and_positions():
    src = 'import cupy\nk = cupy.RawKernel("__global__ void k(int* p)"\n  " { p[0] = \'\\\\n\'; }\\n", "k")\n'
    _model, code = _code(src)
    assert code.text == "__global__ void k(int* p) { p[0] = '\\n'; }\n"
    _check_map(src, code)
    i = code.text.index("\\")
    assert code.lit[i] is None and src[code.pos[i]:code.pos[i] + 2] == "\\\\"      # an escape: not exact
    assert code.lit[code.text.index("{")] is not None


def test_dedent_format_fstring_percent_replace():
    src = textwrap.dedent('''\
        import cupy, textwrap
        N = 128
        T = "float"
        a = textwrap.dedent("""
            __global__ void k(T* p) {
                __shared__ T s[N];
            }
        """).replace("T", T).replace("N", str(N))
        b = f"__global__ void f{N // 2}() {{ }}"
        c = "__global__ void %s() { int x = %d; }" % ("g", N)
        d = "__global__ void {name}() {{ }}".format(name="h")
        cupy.RawKernel(a, "k"); cupy.RawKernel(b, "f64"); cupy.RawKernel(c, "g"); cupy.RawKernel(d, "h")
        ''')
    model = extract(src, "x.py")
    texts = [m.code.text for m in model.modules]
    assert texts[0] == "\n__global__ void k(float* p) {\n    __shared__ float s[128];\n}\n"
    assert texts[1] == "__global__ void f64() { }"
    assert texts[2] == "__global__ void g() { int x = 128; }"
    assert texts[3] == "__global__ void h() { }"
    for m in model.modules:
        _check_map(src, m.code)
        assert not m.code.unknown
    # a brace in an f-string or format template is written doubled: never exact
    assert model.modules[1].code.lit[texts[1].index("{")] is None


def test_partly_known_string_says_what_it_could_not_see():
    src = textwrap.dedent('''\
        import cupy
        def make(n):
            code = "__global__ void k(float* p) { __shared__ float s[" + str(n) + "]; p[0] = s[0]; }"
            return cupy.RawKernel(code, "k")
        ''')
    findings, notices = lint_python(src, "x.py", _cfg())
    assert findings == []
    assert any("partly unknown" in n and "`n`" in n for n in notices), notices


def test_exact_edit_rules():
    src = 'import cupy\nk = cupy.RawKernel(r"""__global__ void k() {}""", "k")\n'
    _m, code = _code(src)
    at = code.text.index("k()")
    assert code.exact_edit(at, at, "__launch_bounds__(256) ") is not None
    assert code.exact_edit(at, at, 'x"y') is None            # the quote would end the literal
    assert code.exact_edit(at, at, "a\\n") is None


def test_prefilter():
    assert might_have_cuda("import cupy as cp\nk = cp.RawKernel(src, 'k')\n")
    assert might_have_cuda("from torch.utils.cpp_extension import load_inline\nload_inline('x', '', cuda_sources=s)\n")
    assert not might_have_cuda("import numpy as np\nprint('RawKernel')\n")
    assert not might_have_cuda("import cupy\nx = cupy.zeros(3)\n")


# --- launches ----------------------------------------------------------------------------------

SAXPY = '''\
import cupy as cp
BLOCK = 100
k = cp.RawKernel(r"""
extern "C" __global__ void saxpy(float* y, int n) {  // noqa: OCC011
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
""", "saxpy")
k((4096,), (BLOCK,), (None, 1))
k((4096,), (BLOCK * 2 + 1,), (None, 1))  # noqa: OCC031
k((4096,), (BLOCK + 4,), (None, 1))  # noqa
'''


def test_launch_site_at_the_block_argument_and_python_noqa(nvrtc_lib):
    findings, _ = lint_python(SAXPY, "x.py", _cfg())
    assert [(f.code, f.span.line, f.span.column) for f in findings] == [("OCC031", 9, 13)]
    assert findings[0].fix is None        # the launch is Python: no CUDA edit applies there
    assert findings[0].data["noqa_comment"] == "#"


def test_noqa_inside_the_string(nvrtc_lib):
    src = SAXPY.replace("k((4096,), (BLOCK,), (None, 1))", "k((4096,), (BLOCK,), (None, 1))  # noqa: OCC031")
    src = src.replace("__global__ void saxpy(float* y, int n) {  // noqa: OCC011",
                      "__global__ void saxpy(float* y, int n) {\n    __shared__ float s[4096]; // noqa: OCC020\n"
                      "    s[threadIdx.x] = y[threadIdx.x]; y[threadIdx.x] = s[threadIdx.x];")
    findings, _ = lint_python(src, "x.py", _cfg())
    assert findings == []
    unsuppressed = src.replace("// noqa: OCC020", "")
    findings, _ = lint_python(unsuppressed, "x.py", _cfg())
    assert [(f.code, f.span.line) for f in findings] == [("OCC020", 5)]
    assert findings[0].data["noqa_comment"] == "//"      # the line ends inside the string


def test_kernel_factory_function_and_self_attribute(nvrtc_lib):
    src = textwrap.dedent('''\
        import cupy
        SRC = "extern \\"C\\" __global__ void k(float* p) { p[threadIdx.x] = 0; }"
        @cupy.memoize(for_each_device=True)
        def _kernel():
            return cupy.RawKernel(SRC, "k")
        class Op:
            def __init__(self):
                self.kern = cupy.RawModule(code=SRC).get_function("k")
            def run(self, p):
                self.kern((1,), (2000,), (p,))
        def run(p):
            _kernel()((2,), (48,), (p,))
        ''')
    findings, _ = lint_python(src, "x.py", _cfg())
    assert [(f.code, f.span.line) for f in findings] == [("OCC031", 12), ("OCC034", 10)] or \
        sorted((f.code, f.span.line) for f in findings) == [("OCC031", 12), ("OCC034", 10)]


def test_compile_error_maps_to_the_string_line(nvrtc_lib):
    src = 'import cupy\nk = cupy.RawKernel("""\n__global__ void k(float* p) {\n    p[0] = undefined_name;\n}\n""", "k")\n'
    findings, _ = lint_python(src, "x.py", _cfg())
    assert [(f.code, f.span.line) for f in findings] == [("OCC900", 4)]
    assert "undefined_name" in findings[0].message


# --- compiled the way the framework does -----------------------------------------------------

SPILLY = r"""
extern "C" __global__ void heavy(float* out, const float* in, int n) {
    float acc[24];
#pragma unroll
    for (int j = 0; j < 24; ++j) acc[j] = in[j * n + threadIdx.x];
    for (int i = 0; i < n; ++i) {
#pragma unroll
        for (int j = 0; j < 24; ++j) acc[j] = fmaf(acc[j], acc[(j + 7) % 24], in[i]);
    }
    __shared__ float tile[512];
    tile[threadIdx.x] = acc[0];
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 24; ++j) s += acc[j] * tile[(threadIdx.x + j) % 512];
    out[threadIdx.x] = s;
}
template <int B> __global__ void tpl(float* p) { __shared__ float s[B]; s[threadIdx.x] = p[0]; __syncthreads(); p[1] = s[B - 1]; }
"""


@pytest.mark.parametrize("options", [(), ("-maxrregcount=16",)], ids=["default", "maxrregcount"])
def test_nvrtc_figures_equal_nvcc_cubin(options, nvrtc_lib, nvcc_path, tmp_path):
    """The figures read from NVRTC's cubin/ptxas log equal `nvcc -cubin -Xptxas -v` on the same
    source and options (CuPy's -ftz=true included)."""
    from occlint.python.compile import compile_module
    from occlint.python.extract import Module
    from occlint.python.strings import PyStr
    from occlint.toolchain.ptxas import parse_usage

    mod = Module(0, "RawModule", "cupy", PyStr.synthetic(SPILLY, 0), "", 0, 0, options=options,
                 name_expressions=("tpl<256>",))
    got = compile_module(mod, "sm_90", "x.py", _cfg(nvcc=nvcc_path))
    assert not got.errors and got.usages
    unit = tmp_path / "k.cu"
    unit.write_text(SPILLY + "template __global__ void tpl<256>(float*);\n")
    out = subprocess.run([nvcc_path, "-cubin", "-arch=sm_90", "-Xptxas", "-v", "-ftz=true", *options,
                          "-o", str(tmp_path / "k.cubin"), str(unit)], capture_output=True, text=True, check=True)
    want = parse_usage(out.stdout + out.stderr, "sm_90")

    def figures(us):
        return {(u.mangled, u.registers, u.static_smem, u.spill_stores, u.spill_loads, u.barriers) for u in us}
    assert figures(got.usages) == figures(want)
    if options:
        assert any(u.spill_stores for u in got.usages)     # the case exercises spills


def test_nvrtc_cubin_equals_its_ptxas_log(nvrtc_lib):
    from occlint.python import nvrtc
    from occlint.toolchain.cubin import cubin_usage
    from occlint.toolchain.ptxas import parse_usage

    prog = nvrtc.compile_program(SPILLY, ["-arch=sm_90", "-Xptxas=-v"], name_expressions=["tpl<128>"])
    assert prog.ok and prog.lowered == {"tpl<128>": "_Z3tplILi128EEvPf"}
    log = {(u.mangled, u.registers, u.static_smem, u.barriers) for u in parse_usage(prog.log, "sm_90")}
    cubin = {(u.mangled, u.registers, u.static_smem, u.barriers) for u in cubin_usage(prog.cubin)}
    assert log == cubin


def test_backend_nvcc_and_options_are_honoured(nvrtc_lib, nvcc_path):
    src = 'import cupy\nk = cupy.RawKernel(SRC, "heavy", options=OPTS, backend="nvcc")\nk((1,), (256,), (None, None, 1))\n'
    src = f"SRC = r'''{SPILLY}'''\nOPTS = ('-maxrregcount=16',)\n" + src
    model = extract(src, "x.py")
    assert model.modules[0].backend == "nvcc" and model.modules[0].options == ("-maxrregcount=16",)
    from occlint.python.compile import compile_module
    got = compile_module(model.modules[0], "sm_90", "x.py", _cfg(nvcc=nvcc_path))
    heavy = next(u for u in got.usages if u.kernel == "heavy")
    assert heavy.spill_stores > 0          # -maxrregcount=16 reached ptxas (24 is its floor on sm_90)
    findings, _ = lint_python(src, "x.py", _cfg(nvcc=nvcc_path))
    # the cubin records the register cap ptxas honoured (EIATTR_MAXREG_COUNT): the spill is
    # the cap's, so OCC012 (issue 12), not a bare OCC011
    assert "OCC012" in {f.code for f in findings}


COOPERATIVE = """
template <int N> __global__ void tile(float* x) {
    __shared__ float s[N];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[N - 1 - threadIdx.x];
}
template __global__ void tile<256>(float*);
"""
# what cooperative groups are for: CUDA 13 keeps <cooperative_groups.h>'s CCCL headers in
# include/cccl, which NVRTC (no default include path) found only when occlint put it there
GRID_SYNC = COOPERATIVE + """
#include <cooperative_groups.h>
__global__ void step(float* x) {
    __shared__ float s[128];
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    s[threadIdx.x] = x[g.thread_rank()];
    g.sync();
    x[g.thread_rank()] = s[127 - threadIdx.x];
}
"""


@pytest.mark.parametrize("backend", ["nvrtc", "nvcc"])
@pytest.mark.parametrize("code", [COOPERATIVE, GRID_SYNC], ids=["template", "grid_sync"])
def test_cooperative_cupy_modules_are_linked_as_cupy_links_them(backend, code, nvrtc_lib, nvcc_path,
                                                                tmp_path):
    """enable_cooperative_groups=True: CuPy compiles relocatable code (--device-c / -rdc=true)
    and links it with cudadevrt. ptxas's report is the code before the link (the template's
    1 KiB tile reads 0 B); occlint's figures are the linked image's, the same as nvcc's own
    `-rdc=true` compile and device link of the same source."""
    from occlint.python.compile import compile_module
    from occlint.toolchain.cubin import cubin_usage
    from occlint.toolchain.devlink import devrt_dir

    src = (f"import cupy\nSRC = r'''{code}'''\nm = cupy.RawModule(code=SRC, backend={backend!r}, "
           "enable_cooperative_groups=True)\n")
    mod = extract(src, "x.py").modules[0]
    assert mod.relocatable
    got = compile_module(mod, "sm_90", "x.py", _cfg(nvcc=nvcc_path))
    assert not got.errors and not got.warning, (got.errors, got.warning)
    tile = next(u for u in got.usages if u.kernel == "tile")
    unit = tmp_path / "k.cu"
    unit.write_text(code)
    subprocess.run([nvcc_path, "-arch=sm_90", "-rdc=true", "-cubin", "-o", str(tmp_path / "k.o"), str(unit)],
                   check=True, capture_output=True)
    bin_dir = os.path.dirname(os.path.realpath(nvcc_path))
    subprocess.run([os.path.join(bin_dir, "nvlink"), "-arch=sm_90", str(tmp_path / "k.o"), "-o",
                    str(tmp_path / "linked.cubin"), "-L", devrt_dir(bin_dir), "-lcudadevrt"],
                   check=True, capture_output=True)
    want = next(u for u in cubin_usage((tmp_path / "linked.cubin").read_bytes()) if u.mangled == tile.mangled)
    assert (tile.static_smem, tile.registers) == (want.static_smem, want.registers)
    assert tile.static_smem == 1024                 # ptxas's report of the relocatable code: 0 B
    if code is GRID_SYNC:
        step = next(u for u in got.usages if u.kernel == "step")
        want = next(u for u in cubin_usage((tmp_path / "linked.cubin").read_bytes()) if u.mangled == step.mangled)
        assert (step.static_smem, step.registers) == (want.static_smem, want.registers) and step.static_smem == 512


def test_an_nvrtc_error_is_said_as_nvrtcs(nvrtc_lib):
    src = "import cupy\nk = cupy.RawKernel(r'''__global__ void k(float* x) { x[0] = y; }''', 'k')\n"
    findings, _ = lint_python(src, "x.py", _cfg())
    assert [f.message.split(":")[0] for f in findings if f.code == "OCC900"] == ["NVRTC failed for sm_90"]


def test_a_cooperative_flag_that_cannot_be_read_is_said():
    src = "import cupy\nm = cupy.RawModule(code='__global__ void k() {}', enable_cooperative_groups=FLAG)\n"
    model = extract(src, "x.py")
    assert not model.modules[0].relocatable
    assert any("enable_cooperative_groups `FLAG`" in text for _at, text in model.problems)


def test_compiles_are_cached(nvrtc_lib, tmp_path):
    from occlint.python.compile import compile_module
    from occlint.toolchain.cache import Cache

    model = extract(SAXPY, "x.py")
    cache = Cache(tmp_path / "cache")
    first = compile_module(model.modules[0], "sm_90", "x.py", _cfg(), cache)
    second = compile_module(model.modules[0], "sm_90", "x.py", _cfg(), cache)
    assert not first.cached and second.cached and first.usages == second.usages


# --- the CLI: discovery, outputs, fixes --------------------------------------------------------

def test_check_finds_python_kernels_and_skips_other_python(tmp_path, nvrtc_lib):
    (tmp_path / "kern.py").write_text(SAXPY)
    (tmp_path / "plain.py").write_text("import numpy\nprint('RawKernel')\n")
    proc = run_main("check", "--arch", "sm_90", "--output-format", "concise", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert "kern.py:9:13: OCC031" in proc.stdout and "plain.py" not in proc.stdout


_CHECK_RUN = """
import sys
from occlint.cli import main
try:
    main(["check", "--arch", "sm_90", "--output-format", "concise", *sys.argv[1:]])
except SystemExit:
    pass
print("libcst", "libcst" in sys.modules)
"""


def test_a_warm_check_reads_a_python_files_lint_from_the_cache(tmp_path, nvrtc_lib):
    """A Python file's findings and notices are kept (CuPy's own repository: 17.9 -> 0.6 s warm,
    all of it libcst and compile lookups): an unchanged file is not parsed again; an edit, or
    other settings, lint it again."""
    (tmp_path / "kern.py").write_text(SAXPY)

    def run(*args):
        return subprocess.run([sys.executable, "-c", _CHECK_RUN, *args, str(tmp_path)],
                              cwd=tmp_path, capture_output=True, text=True)

    first, again = run(), run()
    assert "kern.py:9:13: OCC031" in first.stdout and first.stdout.endswith("libcst True\n")
    assert again.stdout == first.stdout.replace("libcst True", "libcst False")
    assert again.stderr == first.stderr
    ignored = run("--ignore", "OCC031")
    assert "OCC031" not in ignored.stdout and ignored.stdout.endswith("libcst True\n")
    (tmp_path / "kern.py").write_text(SAXPY.replace("BLOCK = 100", "BLOCK = 96"))
    edited = run()
    assert edited.stdout.endswith("libcst True\n") and edited.stdout != first.stdout


def test_fix_edits_inside_the_string(tmp_path, nvrtc_lib):
    src = (os.path.join(os.path.dirname(__file__), "..", "fixtures", "python", "OCC010_cupy_name_expressions.py"))
    target = tmp_path / "k.py"
    target.write_text(open(src, encoding="utf-8").read())
    proc = run_main("check", "--arch", "sm_90", "--config", "cliff-margin = 8", "--fix", "--unsafe-fixes", str(target))
    assert "__launch_bounds__(256, 8) accumulate(" in target.read_text(), proc.stdout + proc.stderr


def test_augmented_assignment_builds_the_source():
    src = textwrap.dedent('''\
        import cupy
        def make(flag):
            code = r"""extern "C" __global__ void k(float* p) {"""
            code += r""" p[threadIdx.x] = 1.0f; }"""
            return cupy.RawKernel(code, "k")
        ''')
    model = extract(src, "x.py")
    assert model.modules[0].code.text == 'extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }'
    _check_map(src, model.modules[0].code)


# --- torch extensions: CUDAExtension / load give .cu units their flags -----------------------

EXT_CU = """#include "cfg.h"
__global__ void scale(float* x) {
    __shared__ float tile[TILE];
    tile[threadIdx.x] = x[threadIdx.x] * SCALE;
    __syncthreads();
    x[threadIdx.x] = tile[threadIdx.x];
}
"""


def _extension(tmp_path):
    (tmp_path / "csrc" / "include").mkdir(parents=True)
    (tmp_path / "csrc" / "include" / "cfg.h").write_text("#define SCALE 2.0f\n")
    (tmp_path / "csrc" / "k.cu").write_text(EXT_CU)


def test_setup_py_cuda_extension_flags_compile_the_unit(tmp_path, nvcc_path):
    from occlint.toolchain import collect_usage

    _extension(tmp_path)
    (tmp_path / "setup.py").write_text(textwrap.dedent('''\
        import glob, os
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension
        setup(name="e", ext_modules=[CUDAExtension(
            name="e._C", sources=["csrc/bind.cpp"] + glob.glob("csrc/*.cu"),
            include_dirs=[os.path.join("csrc", "include")], define_macros=[("TILE", "2048")],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-lineinfo"]})],
            cmdclass={"build_ext": BuildExtension})
        '''))
    config = _cfg(root=str(tmp_path), nvcc=nvcc_path, no_cache=True)
    report = collect_usage([str(tmp_path / "csrc" / "k.cu")], config)
    assert not [e for e in report.errors if e.kind != "warning"], report.errors
    assert [u.static_smem for u in report.usages[str(tmp_path / "csrc" / "k.cu")]] == [8192]


def test_setup_py_nvcc_flags_through_a_helper_or_unreadable(tmp_path):
    # mamba: extra_compile_args={"nvcc": append_nvcc_threads([...])} lost every flag silently
    from occlint.python.extensions import extension_entries

    (tmp_path / "k.cu").write_text("")
    setup = tmp_path / "setup.py"
    setup.write_text(textwrap.dedent('''\
        import os
        from setuptools import setup
        from torch.utils.cpp_extension import CUDAExtension
        def append_nvcc_threads(args):
            return args + ["--threads", "4"]
        setup(name="x", ext_modules=[
            CUDAExtension(name="a", sources=["k.cu"], extra_compile_args={
                "nvcc": append_nvcc_threads(["-U__CUDA_NO_HALF_OPERATORS__", "--use_fast_math"])}),
            CUDAExtension(name="b", sources=["k.cu"],
                          extra_compile_args={"nvcc": os.environ["FLAGS"].split()}),
            CUDAExtension(name="c", sources=["k.cu"], extra_compile_args={"nvcc": []})])
        '''))
    a, b, c = extension_entries(str(setup))
    # diff-gaussian-rasterization: "-I" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
    # "third_party/glm/") was unreadable
    glm = tmp_path / "glm_setup.py"
    glm.write_text(textwrap.dedent('''\
        import os
        from torch.utils.cpp_extension import CUDAExtension
        CUDAExtension(name="d", sources=["k.cu"], extra_compile_args={"nvcc": [
            "-I" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "third_party/glm/")]})
        '''))
    (d,) = extension_entries(str(glm))
    assert f"-I{tmp_path}/third_party/glm/" in d["arguments"] and "occlint_warning" not in d
    assert "-U__CUDA_NO_HALF_OPERATORS__" in a["arguments"] and "--use_fast_math" in a["arguments"]
    assert "occlint_warning" not in a and "occlint_warning" not in c
    assert b["occlint_warning"] == ("setup.py:9: the nvcc flags of this extension are not a "
                                    "list occlint can read: it compiles without them")


# torch 2.13's CPU wheel, as a lint job installs it: include_paths(device_type="cuda") raises
# for want of a CUDA_HOME, and c10/cuda's headers include the one file only CUDA builds generate
_CPU_TORCH = """
import os, warnings
warnings.warn("Failed to initialize NumPy: No module named 'numpy'")   # torch's, at import
_INC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
def include_paths(device_type="cpu", torch_include_dirs=True):
    if device_type == "cuda":
        raise OSError("CUDA_HOME environment variable is not set. Please set it to your CUDA "
                      "install root.")
    return [_INC, os.path.join(_INC, "torch", "csrc", "api", "include")]
"""
_CUDA_MACROS_H = """#pragma once
#ifndef C10_CUDA_NO_CMAKE_CONFIGURE_FILE
#include <c10/cuda/impl/cuda_cmake_macros.h>
#endif
#define C10_CUDA_API
"""


def test_setup_py_flags_of_the_cuda_build_beside_a_rocm_branch(tmp_path):
    # mamba: `if HIP_BUILD: extra_compile_args = {...} else: extra_compile_args = {"nvcc":
    # append_nvcc_threads([...] + cc_flag)}` compiled without any flag ("set under a
    # condition"); the CUDA build is the branch a ROCm test leaves, the literal list its flags
    from occlint.python.extensions import extension_entries

    (tmp_path / "k.cu").write_text("")
    setup = tmp_path / "setup.py"
    setup.write_text(textwrap.dedent('''\
        import os, torch
        from torch.utils.cpp_extension import CUDAExtension
        HIP_BUILD = bool(torch.version.hip)
        cc_flag = []
        if os.environ.get("NEW"):
            cc_flag += ["-gencode", "arch=compute_90,code=sm_90"]
        def append_nvcc_threads(args):
            return args + ["--threads", "4"]
        if HIP_BUILD:
            extra = {"nvcc": ["-O3", "--offload-arch=native"]}
        else:
            extra = {"nvcc": append_nvcc_threads(["-O3", "--use_fast_math"] + cc_flag)}
        if not torch.version.hip:
            flags = ["-DCUDA_PATH"]
        else:
            flags = ["-DHIP_PATH"]
        if os.environ.get("DEBUG"):
            other = ["-G"]
        else:
            other = ["-O2"]
        CUDAExtension(name="a", sources=["k.cu"], extra_compile_args=extra)
        CUDAExtension(name="b", sources=["k.cu"], extra_compile_args={"nvcc": flags})
        CUDAExtension(name="c", sources=["k.cu"], extra_compile_args={"nvcc": other})
        gen = ["--generate-code=arch=compute_80,code=compute_80"]     # flash-fft-conv's
        CUDAExtension(name="d", sources=["k.cu"],
                      extra_compile_args={"nvcc": append_nvcc_threads(["-O3"] + gen)})
        '''))
    a, b, c, d = extension_entries(str(setup))
    assert d["arguments"][-2:] == ["-O3", "--generate-code=arch=compute_80,code=compute_80"]
    assert "occlint_warning" not in d
    assert a["arguments"][-2:] == ["-O3", "--use_fast_math"] and "--offload-arch=native" not in a["arguments"]
    assert a["occlint_warning"] == ("setup.py:21: part of the nvcc flags of this extension is "
                                    "not a list occlint can read (`cc_flag`): it compiles with "
                                    "the rest")
    assert b["arguments"][-1] == "-DCUDA_PATH" and "occlint_warning" not in b
    assert "-G" not in c["arguments"] and "-O2" not in c["arguments"]     # (which one: unknown)
    assert c["occlint_warning"].endswith("not a list occlint can read: it compiles without them")


def test_setup_py_read_as_a_cuda_build_on_this_machine(tmp_path):
    # detectron2, kaolin: `extension = CppExtension`, `if torch.cuda.is_available() or
    # FORCE_CUDA: ... extension = CUDAExtension; sources += glob(...cu); define_macros +=
    # [("WITH_CUDA", None)]; extra_compile_args["nvcc"] = [...]`, `if sys.platform == "win32":
    # extra_compile_args["nvcc"] += [...]`, then `extension(...)`: no entry at all, so units
    # lost WITH_CUDA (detectron2's nms_rotated: "name must be a namespace name")
    import sys

    from occlint.python.extensions import extension_entries

    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "k.cu").write_text("")
    (tmp_path / "csrc" / "b.cpp").write_text("")
    setup = tmp_path / "setup.py"
    setup.write_text(textwrap.dedent('''\
        import glob, os, sys, torch
        from torch.utils.cpp_extension import CppExtension, CUDAExtension
        def get_extensions():
            extra_compile_args = {"cxx": []}
            define_macros = []
            sources = glob.glob("csrc/*.cpp")
            is_cuda = torch.cuda.is_available() or os.getenv("FORCE_CUDA", "0") == "1"
            if is_cuda:
                define_macros += [("WITH_CUDA", None)]
                sources += glob.glob("csrc/*.cu")
                extension = CUDAExtension
                extra_compile_args["nvcc"] = ["-O3", "-DCUDA_HAS_FP16=1"]
            else:
                extension = CppExtension
            if sys.platform == "win32":
                extra_compile_args["nvcc"] += ["-Xcompiler", "/Zc:preprocessor"]
            return [extension("pkg._C", sources, define_macros=define_macros,
                              extra_compile_args=extra_compile_args)]
        def mmcv():                     # a chain of backends: only CUDA's is this build's
            define_macros = []
            if os.getenv("MMCV_WITH_DIOPI", "0") == "1":
                extension = CppExtension
            elif torch.cuda.is_available() or os.getenv("FORCE_CUDA", "0") == "1":
                define_macros += [("MMCV_WITH_CUDA", None)]
                extension = CUDAExtension
            elif hasattr(torch, "is_mlu_available") and torch.is_mlu_available():
                define_macros += [("MMCV_WITH_MLU", None)]
                extension = CUDAExtension
            return extension("mmcv._ext", ["csrc/k.cu"], define_macros=define_macros)
        def build(use_cuda):            # a parameter: its caller decides
            if use_cuda:
                flags = ["-DA"]
            else:
                flags = ["-DB"]
            return CUDAExtension("p", ["csrc/k.cu"], extra_compile_args={"nvcc": flags})
        '''))
    first, third, second = extension_entries(str(setup))
    assert third["arguments"][-1] == "-DMMCV_WITH_CUDA"
    windows = ["-Xcompiler", "/Zc:preprocessor"] if sys.platform == "win32" else []
    assert first["file"].endswith("k.cu") and "occlint_warning" not in first
    tail = ["-DTORCH_EXTENSION_NAME=_C", "-O3", "-DCUDA_HAS_FP16=1", *windows, "-DWITH_CUDA"]
    assert first["arguments"][-len(tail):] == tail
    assert "-DA" not in second["arguments"] and "-DB" not in second["arguments"]
    assert second["occlint_warning"].endswith("not a list occlint can read: it compiles without them")


@pytest.fixture
def cpu_torch(monkeypatch):
    """`_cpu_torch`, whose modules leave sys.modules with the test (a later test's
    `find_spec("torch")` would find them)."""
    def torch_modules():
        return {m: sys.modules[m] for m in list(sys.modules) if m.split(".")[0] == "torch"}

    before = torch_modules()
    yield lambda path, generated=False: _cpu_torch(path, monkeypatch, generated)
    for name in torch_modules():
        del sys.modules[name]
    sys.modules.update(before)


def _cpu_torch(tmp_path, monkeypatch, generated: bool = False):
    """A torch package (never a real one) laid out as the CPU wheel is; `generated`: with the
    header a CUDA build generates."""
    import importlib

    base = tmp_path / "site-packages"
    utils = base / "torch" / "utils"
    utils.mkdir(parents=True)
    (base / "torch" / "__init__.py").write_text("")
    (utils / "__init__.py").write_text("")
    (utils / "cpp_extension.py").write_text(_CPU_TORCH)
    cuda = base / "torch" / "include" / "c10" / "cuda"
    (cuda / "impl").mkdir(parents=True)
    (base / "torch" / "include" / "torch" / "csrc" / "api" / "include").mkdir(parents=True)
    (cuda / "CUDAMacros.h").write_text(_CUDA_MACROS_H)
    (base / "torch" / "include" / "torch" / "extension.h").write_text("#pragma once\n")
    if generated:
        (cuda / "impl" / "cuda_cmake_macros.h").write_text("#define C10_CUDA_BUILD_SHARED_LIBS\n")
    for name in [m for m in sys.modules if m.split(".")[0] == "torch"]:
        del sys.modules[name]               # (the fixture puts back what was there)
    monkeypatch.syspath_prepend(str(base))
    importlib.invalidate_caches()
    return base / "torch" / "include"


def _torch_extension(tmp_path):
    (tmp_path / "k.cu").write_text("#include <c10/cuda/CUDAMacros.h>\n"
                                   "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "CUDAExtension(name='e', sources=['k.cu'])\n")


def test_a_cpu_build_of_torch_gives_its_folders_and_the_define_its_headers_need(tmp_path,
                                                                               cpu_torch):
    # mamba in a lint job's environment (torch's CPU wheel): include_paths(device_type="cuda")
    # raised, so the units had no torch folders (`c10/util/BFloat16.h` not found); with them,
    # c10/cuda/CUDAMacros.h includes a header only CUDA builds generate. torch is not imported
    # for its folders (its import ran the package's code and printed its warnings)
    import sysconfig
    import warnings

    from occlint.python.compile import torch_flags, torch_includes
    from occlint.python.extensions import extension_entries

    inc = cpu_torch(tmp_path / "a")
    api = inc / "torch" / "csrc" / "api" / "include"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert torch_includes() == [str(inc), str(api)]
    assert not said and "torch" not in sys.modules      # found, never imported
    # llm-awq: torch/extension.h includes Python.h, whose folder setuptools' build_ext adds
    py = [f"-I{d}" for d in dict.fromkeys(sysconfig.get_path(k) for k in ("include", "platinclude"))]
    assert torch_flags() == [f"-I{inc}", f"-I{api}", *py, "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE"]
    _torch_extension(tmp_path)
    (entry,) = extension_entries(str(tmp_path / "setup.py"))
    assert entry["arguments"][-len(torch_flags()):] == torch_flags()
    inc = cpu_torch(tmp_path / "b", generated=True)     # a CUDA build's headers
    assert torch_flags() == [f"-I{inc}", f"-I{inc}/torch/csrc/api/include", *py]


def test_a_cpu_build_of_torch_compiles_the_extension_units(tmp_path, cpu_torch, nvcc_path):
    from occlint.toolchain import collect_usage

    cpu_torch(tmp_path / "site")
    _torch_extension(tmp_path)
    config = _cfg(root=str(tmp_path), nvcc=nvcc_path, no_cache=True)
    report = collect_usage([str(tmp_path / "k.cu")], config)
    assert not [e for e in report.errors if e.kind != "warning"], report.errors
    assert [u.kernel for u in report.usages[str(tmp_path / "k.cu")]] == ["k"]


def test_a_unit_no_build_names_finds_the_installed_torchs_headers(tmp_path, cpu_torch,
                                                                   monkeypatch, nvcc_path):
    # detectron2 run as pre-commit runs it (its setup.py builds through `extension =
    # CUDAExtension`, which occlint does not read): every unit was "`ATen/ATen.h` not found";
    # the installed torch's folders (found, not imported) and Python's are searched after
    # every other folder, with a CPU build's define
    import sysconfig

    from occlint.toolchain import collect_usage, libraries

    inc = cpu_torch(tmp_path / "env")
    site = str(inc.parent.parent)
    monkeypatch.setattr(libraries, "site_dirs", lambda: [site])
    py = [d for d in dict.fromkeys(sysconfig.get_path(k) for k in ("include", "platinclude"))
          if os.path.isdir(d)]
    dirs = [str(inc), str(inc / "torch" / "csrc" / "api" / "include"), *py]
    assert libraries.wheel_include_dirs() == dirs
    assert libraries.include_flags(dirs)[-1] == "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE"
    assert libraries.torch_include_dirs([str(tmp_path)]) == []      # no torch there
    (tmp_path / "k.cu").write_text("#include <c10/cuda/CUDAMacros.h>\n"
                                   "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    report = collect_usage([str(tmp_path / "k.cu")], _cfg(root=str(tmp_path), nvcc=nvcc_path,
                                                          no_cache=True))
    assert not [e for e in report.errors if e.kind != "warning"], report.errors
    assert [u.kernel for u in report.usages[str(tmp_path / "k.cu")]] == ["k"]


def test_the_header_a_cpu_build_of_torch_lacks_is_explained(tmp_path, cpu_torch):
    from occlint.toolchain.libraries import explain_missing

    inc = cpu_torch(tmp_path)
    hint = explain_missing('cannot open source file "c10/cuda/impl/cuda_cmake_macros.h"', 13)
    assert hint == ("`c10/cuda/impl/cuda_cmake_macros.h` not found: this torch is a CPU build, "
                    "whose headers lack `c10/cuda/impl/cuda_cmake_macros.h` (CUDA builds "
                    "generate it; it only sets an export macro Windows reads): add "
                    "`C10_CUDA_NO_CMAKE_CONFIGURE_FILE` to `defines`, which skips its include, "
                    "or install a CUDA build of torch")
    # (a unit outside a setup.py extension searches the installed torch's folders itself)
    assert explain_missing('cannot open source file "ATen/Other.h"', 13).endswith(
        f"the installed torch's headers (`{inc}`), which occlint searches, do not have it: "
        "another release of torch may")


_ENTRIES_HIT = """
import sys
from occlint.config import Config
from occlint.python import build_entries
root = sys.argv[1]
build_entries(root, [root + "/csrc/a.cu"], (), Config(root=root, cache_dir=root + "/c"))
print("libcst" in sys.modules)
"""


def test_extension_entries_are_kept_until_the_setup_or_its_globs_change(tmp_path, monkeypatch):
    """A warm run reads a setup.py's extension entries from the cache, without libcst (0.5 s of
    causal-conv1d's 0.7 s warm check); an edit of setup.py, or a new file its `glob.glob`
    finds, is read again."""
    from occlint.config import Config
    from occlint.python import build_entries, extensions

    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "a.cu").write_text("__global__ void a() {}\n")
    setup = tmp_path / "setup.py"
    setup.write_text(textwrap.dedent('''\
        import glob
        from torch.utils.cpp_extension import CUDAExtension
        CUDAExtension(name="e", sources=glob.glob("csrc/*.cu"),
                      extra_compile_args={"nvcc": ["-DTILE=512"]})
        '''))
    reads = []
    real = extensions.extension_entries
    monkeypatch.setattr(extensions, "extension_entries",
                        lambda *a, **k: reads.append(1) or real(*a, **k))
    config = Config(root=str(tmp_path), cache_dir=str(tmp_path / "c"))

    def run():
        entries = build_entries(str(tmp_path), [str(tmp_path / "csrc" / "a.cu")], (), config)
        return sorted((e["file"].rsplit("/", 1)[-1],
                       [a for a in e["arguments"] if a.startswith("-DTILE")]) for e in entries)

    a = [("a.cu", ["-DTILE=512"])]
    assert (run(), len(reads)) == (a, 1)
    assert (run(), len(reads)) == (a, 1)            # kept
    (tmp_path / "csrc" / "b.cu").write_text("__global__ void b() {}\n")
    assert (run(), len(reads)) == ([*a, ("b.cu", ["-DTILE=512"])], 2)
    setup.write_text(setup.read_text().replace("512", "256"))
    assert (run(), len(reads)) == ([("a.cu", ["-DTILE=256"]), ("b.cu", ["-DTILE=256"])], 3)
    assert (run(), len(reads)) == ([("a.cu", ["-DTILE=256"]), ("b.cu", ["-DTILE=256"])], 3)
    hit = subprocess.run([sys.executable, "-c", _ENTRIES_HIT, str(tmp_path)],
                         capture_output=True, text=True, check=True)
    assert hit.stdout.split() == ["False"], hit.stdout + hit.stderr     # no libcst on a hit
    import json
    (note,) = [n for n in (tmp_path / "c").glob("*/*.ext")     # a damaged note is a miss,
               if "TILE=256" in n.read_text()]                   # never a crash
    note.write_text(json.dumps({**json.loads(note.read_text()), "entries": [{"file": 1}]}))
    assert (run(), len(reads)) == ([("a.cu", ["-DTILE=256"]), ("b.cu", ["-DTILE=256"])], 4)


def test_setup_py_include_dirs_written_with_pathlib(tmp_path):
    # flash-attention: include_dirs=[Path(this_dir) / "csrc" / "flash_attn", ...] were not
    # read, so every unit missed its own headers
    from occlint.python.extensions import extension_entries

    (tmp_path / "k.cu").write_text("")
    setup = tmp_path / "setup.py"
    setup.write_text(textwrap.dedent('''\
        import os
        from pathlib import Path
        from torch.utils.cpp_extension import CUDAExtension
        this_dir = os.path.dirname(os.path.abspath(__file__))
        root = Path(__file__).resolve().parent
        CUDAExtension(name="a", sources=["k.cu"], include_dirs=[
            Path(this_dir) / "csrc" / "flash_attn", root / "csrc" / "cutlass" / "include",
            str(Path(this_dir) / "x"), os.fspath(root / "y")])
        '''))
    (a,) = extension_entries(str(setup))
    assert [x for x in a["arguments"] if x.startswith(f"-I{tmp_path}")] == [
        f"-I{tmp_path}/csrc/flash_attn", f"-I{tmp_path}/csrc/cutlass/include", f"-I{tmp_path}/x",
        f"-I{tmp_path}/y"]


def test_load_call_in_a_python_file_gives_flags(tmp_path):
    from occlint.python import build_entries

    _extension(tmp_path)
    (tmp_path / "build.py").write_text(textwrap.dedent('''\
        from torch.utils.cpp_extension import load
        ext = load("e", sources=["csrc/k.cu"], extra_cuda_cflags=["-DTILE=512"],
                   extra_include_paths=["csrc/include"])
        '''))
    entries = build_entries(str(tmp_path), (), [str(tmp_path / "build.py")])
    assert len(entries) == 1 and entries[0]["file"] == str(tmp_path / "csrc" / "k.cu")
    args = entries[0]["arguments"]
    assert "-DTILE=512" in args and f"-I{tmp_path / 'csrc' / 'include'}" in args
    assert "--expt-relaxed-constexpr" in args        # torch's own nvcc flags


def test_load_inline_sources_are_linted(nvrtc_lib):
    src = textwrap.dedent('''\
        from torch.utils.cpp_extension import load_inline
        cuda = """
        __global__ void k(float* x) { x[threadIdx.x] = 0.0f; }
        void run(float* x) { k<<<4096, 100>>>(x); }
        """
        mod = load_inline("m", cpp_sources="", cuda_sources=cuda, functions=["run"])
        ''')
    findings, notices = lint_python(src, "x.py", _cfg())
    assert [(f.code, f.span.line) for f in findings] == [("OCC031", 4)]
    assert any("torch is not importable" in n for n in notices) or not notices


def test_pycuda_prepare_and_class_attribute_source(nvrtc_lib, nvcc_path):
    src = textwrap.dedent('''\
        from pycuda.compiler import SourceModule
        class Op:
            CODE = "__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }"
            def __init__(self):
                self.f = SourceModule(self.CODE).get_function("k").prepare("P")
            def __call__(self, x):
                self.f.prepared_call((1, 1), (2000, 1, 1), x)
        ''')
    findings, _ = lint_python(src, "x.py", _cfg(nvcc=nvcc_path))
    assert [(f.code, f.span.line) for f in findings] == [("OCC034", 7)]


def test_pycuda_dynamic_modules_no_extern_c_and_its_own_headers(nvcc_path):
    # inducer/pycuda's examples: DynamicSourceModule compiles with -rdc=true and links cudadevrt
    # (a kernel launching a kernel got "requires separate compilation mode"); `no_extern_c=1`
    # is true (the extern "C" wrapper broke a template); pycuda-complex.hpp is PyCUDA's
    src = textwrap.dedent('''\
        from pycuda.compiler import DynamicSourceModule, SourceModule
        dyn = DynamicSourceModule("""
        __global__ void child(int* p) { p[threadIdx.x] = 1; }
        __global__ void parent(int* p) { child<<<1, 32>>>(p); }
        """)
        tpl = SourceModule("""
        template <class T> __device__ T incr(T x) { return x + 1; }
        extern "C" __global__ void func(float* a) { a[threadIdx.x] = incr(a[threadIdx.x]); }
        """, no_extern_c=1)
        cplx = SourceModule('#include <pycuda-complex.hpp>\\n__global__ void z(float* a) { a[0] = 0; }')
        ''')
    model = extract(src, "x.py")
    assert [(m.api, m.relocatable, m.extern_c) for m in model.modules] == [
        ("DynamicSourceModule", True, True), ("SourceModule", False, False),
        ("SourceModule", False, True)]
    findings, _ = lint_python(src, "x.py", _cfg(nvcc=nvcc_path))
    errors = [(f.span.line, f.message) for f in findings if f.code == "OCC900"]
    assert len(errors) == 1 and errors[0][0] == 10, errors
    assert "`pycuda-complex.hpp` not found: part of PyCUDA (`pip install pycuda`)" in errors[0][1]


def test_cupy_kernels_see_the_cuda_headers(nvrtc_lib):
    src = textwrap.dedent('''\
        import cupy
        k = cupy.RawKernel(r"""
        #include <cuComplex.h>
        extern "C" __global__ void conj(cuFloatComplex* z) { z[threadIdx.x] = cuConjf(z[threadIdx.x]); }
        """, "conj")
        ''')
    findings, notices = lint_python(src, "x.py", _cfg())
    assert not [f for f in findings if f.code == "OCC900"], findings


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "gitlab", "rdjson", "junit", "json-lines"])
def test_every_output_format_names_the_python_line(tmp_path, fmt, nvrtc_lib):
    (tmp_path / "kern.py").write_text(SAXPY)
    proc = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", fmt, str(tmp_path / "kern.py"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "kern.py" in proc.stdout and "OCC031" in proc.stdout
    if fmt == "json":
        import json
        [f] = json.loads(proc.stdout)
        assert (f["location"]["row"], f["location"]["column"]) == (9, 13)


def test_noqa_after_a_multiline_string_covers_findings_inside_it(nvrtc_lib):
    src = textwrap.dedent('''\
        import cupy
        k = cupy.RawKernel(r"""
        extern "C" __global__ void k(float* y) {
            __shared__ float s[4096];
            s[threadIdx.x] = y[threadIdx.x]; y[threadIdx.x] = s[threadIdx.x];
        }
        """, "k")  # noqa: OCC020
        k((132,), (256,), (None,))
        ''')
    assert lint_python(src, "x.py", _cfg())[0] == []
    findings, _ = lint_python(src.replace("  # noqa: OCC020", ""), "x.py", _cfg())
    assert [(f.code, f.span.line) for f in findings] == [("OCC020", 4)]


def test_sources_cupy_rewrites_are_not_compiled(nvrtc_lib):
    src = textwrap.dedent('''\
        import cupy
        k = cupy.RawKernel(r"""
        #include <cuComplex.h>
        extern "C" __global__ void f(cuDoubleComplex* z, cuComplex w) { z[0] = w; }
        """, "f", translate_cucomplex=True)
        ''')
    findings, notices = lint_python(src, "x.py", _cfg())
    assert findings == []           # compiled as written it would not (CuPy rewrites cuComplex)
    assert any(n.startswith("x.py:2:5: ") and "translate_cucomplex" in n for n in notices), notices


def test_python_that_does_not_parse_is_a_notice_not_a_traceback(tmp_path):
    (tmp_path / "bad.py").write_text("import cupy\nk = cupy.RawKernel('x', 'k'\n")
    (tmp_path / "good.py").write_text(SAXPY)
    proc = run_main("check", "--arch", "sm_90", "--output-format", "concise", str(tmp_path))
    assert "Traceback" not in proc.stderr
    assert "bad.py:1:1: not parsed as Python" in proc.stderr
    assert "good.py:9:13: OCC031" in proc.stdout


def test_newer_python_syntax_is_still_read_by_libcst():
    """Python 3.12's f-strings (quotes reused inside) are no syntax error to libcst, whatever
    Python occlint runs on: only CPython's depth refusals keep a file from libcst."""
    src = ('import cupy as cp\nx = {"a": 1}\ny = f"{x["a"]}"\n'
           'k = cp.RawKernel(r"""extern "C" __global__ void k(float* x) { x[0] = 1; }""", "k")\n'
           "k((640,), (33,), (None,))\n")
    model = extract(src, "new.py")
    assert not model.problems and len(model.modules) == 1 and len(model.launches) == 1


def test_python_that_python_cannot_compile_does_not_crash_the_process(tmp_path):
    """libcst's native parser overflows its stack (SIGSEGV) on 2,000 nested brackets or a
    20,000-term sum; CPython refuses both with an exception, so occlint asks it first. In a
    child process: the crash took the whole run down, other files unchecked."""
    from conftest import run_cli

    for name, expr in (("nested", "(" * 3000 + "1" + ")" * 3000), ("long", "1" + "+1" * 20000)):
        (tmp_path / f"{name}.py").write_text(f"import cupy\nk = cupy.RawKernel('x', 'k')\nx = {expr}\n")
    (tmp_path / "good.py").write_text(SAXPY)
    # check in a child process (the crash took the whole run down); kernels, which reads the
    # same files through the same extract, in this one
    for run, args in ((run_cli, ("check", "--output-format", "concise")),
                      (run_main, ("kernels", "--no-compile"))):
        proc = run(*args, "--arch", "sm_90", str(tmp_path))
        assert proc.returncode in (0, 1), (args, proc.returncode, proc.stderr[-500:])
        assert "Traceback" not in proc.stderr
        for name in ("nested", "long"):
            assert f"{name}.py:1:1: not parsed as Python" in proc.stderr, (args, proc.stderr)
        assert "good.py:9:13: OCC031" in proc.stdout if args[0] == "check" else "good.py" in proc.stdout


def test_a_cupy_source_chosen_by_a_rocm_test_is_the_cuda_one():
    # a module that writes its kernel for ROCm and CUDA in the two arms of `if
    # cupy.cuda.runtime.is_hip:` compiled neither ("set under a condition")
    src = textwrap.dedent('''\
        import cupy
        if cupy.cuda.runtime.is_hip:
            code = "__global__ void k(float* p) { p[0] = 2.0f; }"
        else:
            code = 'extern "C" __global__ void k(float* p) { p[0] = 1.0f; }'
        k = cupy.RawKernel(code, "k")
        ''')
    (mod,) = extract(src, "x.py").modules
    assert not mod.code.unknown and mod.code.text.startswith('extern "C"')


def test_a_value_set_under_a_condition_is_not_guessed():
    src = textwrap.dedent('''\
        import cupy
        SRC = "extern \\"C\\" __global__ void k(float* p) { p[0] = 1.0f; }"
        def make(hip):
            code = "// head\\n"
            if hip:
                code += "// a\\n"
            else:
                code += "// b\\n"
            code += SRC
            return cupy.RawKernel(code, "k")
        def make2(hip):
            src = SRC
            if hip:
                src = "#include <ctime>\\n" + src
            return cupy.RawKernel(src, "k")
        if cupy is not None:
            only = cupy.RawKernel(SRC, "k")      # the only value it can have
        ''')
    model = extract(src, "x.py")
    first, second, third = model.modules
    assert first.code.unknown == ["code (set under a condition)"]
    assert first.code.text.endswith("__global__ void k(float* p) { p[0] = 1.0f; }")
    assert second.code is None          # not the HIP variant, not the plain one: unknown
    assert third.code is not None and not third.code.unknown


def test_cupy_options_are_cupys_own(monkeypatch, tmp_path):
    """CuPy's assemble_cupy_compiler_options: its bundled CCCL first, --std=c++14 unless the
    call names a standard, its header folder after the call's options; without CuPy the
    toolkit's include/cccl stands in, under NVRTC's default standard."""
    from occlint.python import compile as pc

    cupy = tmp_path / "cupy_include"
    for d in ("cub", "thrust", "libcudacxx"):
        (cupy / "cupy" / "_cccl" / d).mkdir(parents=True)
    cuda = tmp_path / "cuda_include"
    (cuda / "cccl").mkdir(parents=True)
    monkeypatch.setattr(pc, "cuda_includes", lambda: [str(cuda)])
    mod = extract("import cupy\nk = cupy.RawKernel('__global__ void k() {}', 'k', options=('-DX=1',))\n",
                  "x.py").modules[0]
    monkeypatch.setattr(pc, "cupy_include", lambda: str(cupy))
    # empty folders (a source checkout without its CCCL submodule) are no bundled CCCL
    assert pc.options_for(mod) == ["-DX=1", f"-I{cupy}", f"-I{cuda}/cccl", f"-I{cuda}", "-ftz=true"]
    (cupy / "cupy" / "_cccl" / "libcudacxx" / "cuda").mkdir()
    bundled = [f"-I{cupy}/cupy/_cccl/{d}" for d in ("cub", "thrust", "libcudacxx")]
    assert pc.options_for(mod) == [*bundled, "-DX=1", "--std=c++14", f"-I{cupy}", f"-I{cuda}", "-ftz=true"]
    named = record.replace(mod, options=("--std=c++17",))
    assert "--std=c++14" not in pc.options_for(named)
    monkeypatch.setattr(pc, "cupy_include", lambda: None)
    assert pc.options_for(mod) == ["-DX=1", f"-I{cuda}/cccl", f"-I{cuda}", "-ftz=true"]


def test_kernels_lists_a_python_files_strings_with_their_figures(nvrtc_lib, tmp_path):
    """`occlint kernels` on a .py file: each CUDA string parsed as check lints it, at the .py
    positions, with the string's own compiler figures and its Python launches' occupancy (before,
    the file was parsed as C++ text: a template in a module-level string was not listed)."""
    import json

    from occlint import occupancy
    from occlint.python.compile import compile_module

    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "python", "OCC010_cupy_name_expressions.py")
    with open(fixture, encoding="utf-8") as fh:
        src = fh.read()
    target = tmp_path / "k.py"
    target.write_text(src)
    listed = json.loads(run_main("kernels", "--json", "--arch", "sm_90", "--no-cache", str(target)).stdout)
    kernel = next(r for r in listed if r["kind"] == "kernel")
    launch = next(r for r in listed if r["kind"] == "launch")
    assert (kernel["line"], kernel["column"], kernel["template_params"]) == (6, 17, ["N"])
    want = compile_module(extract(src, str(target)).modules[0], "sm_90", str(target), _cfg()).usages[0]
    assert kernel["instantiations"][0]["registers"] == want.registers
    assert (launch["line"], launch["column"], launch["block"], launch["function"]) == (22, 1, 256, None)
    occ = occupancy.compute("sm_90", 256, want.registers, barriers=0)
    assert launch["occupancy"]["sm_90"]["active_blocks"] == occ.active_blocks
    assert launch["call_text"] == "k((1056,), (256,), (None, None, None, 100))"
    bare = json.loads(run_main("kernels", "--json", "--no-compile", str(target)).stdout)
    assert [(r["kind"], r["line"]) for r in bare] == [("kernel", 6), ("launch", 22)]


def test_kernels_says_why_a_python_launch_has_no_occupancy(nvcc_path):
    """PyCUDA launches past `__launch_bounds__` or past 1024 threads fail: `kernels` says so in
    the launch's own words, not as an unmatched instantiation or in occlint's C++ stand-in."""
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "python", "OCC032_pycuda.py")
    out = run_main("kernels", "--arch", "sm_90", fixture).stdout
    assert "launch scale(None, 2.0, block=(256, 1, 1), grid=(1056, 1)) grid=1056 block=256" in out
    assert "no occupancy: a block of 256 threads is more than the kernel's __launch_bounds__ (128)" in out
    assert "no occupancy: a block of 2048 threads is more than a block may have (1024)" in out
    assert "__occlint" not in out and "could not be matched" not in out


def test_kernels_says_a_python_string_was_not_compiled_and_why_elsewhere(tmp_path):
    """A string occlint cannot evaluate whole is linted where it parses, not compiled: its
    launch says so, and the notice at the call says why (not `--no-compile, or no nvcc`)."""
    (tmp_path / "k.py").write_text(
        'import cupy\nk = cupy.RawKernel(HEADER + \'extern "C" __global__ void k() {}\', "k")\n'
        "k((1,), (64,), ())\n")
    proc = run_main("kernels", "--arch", "sm_90", str(tmp_path / "k.py"))
    assert "k.py:3:1: launch k((1,), (64,), ()) grid=1 block=64 smem=0\n    no occupancy: its CUDA " \
           "string was not compiled: the notice at its compile call says why" in proc.stdout, proc.stdout
    assert "k.py:2:5: RawKernel source is partly unknown (`HEADER`)" in proc.stderr, proc.stderr


def test_a_python_strings_missing_header_says_how_a_call_adds_a_folder(nvrtc_lib):
    """Not `include-dirs` (a setting for CUDA files): the call's own `-I` option; and the
    package, where one ships the header."""
    from occlint.toolchain.libraries import explain_missing

    src = ("import cupy\nk = cupy.RawKernel(r'''#include \"no_such_header_here.h\"\n"
           "extern \"C\" __global__ void k(float* x) { x[0] = 1; }''', 'k')\n")
    findings, _ = lint_python(src, "x.py", _cfg())
    assert [f.message for f in findings if f.code == "OCC900"] == [
        "NVRTC failed for sm_90: `no_such_header_here.h` not found: pass its folder with `-I` in "
        "the call's options"]
    assert explain_missing('cannot open source file "curand_kernel.h"', 13, "pass -I") == \
        "`curand_kernel.h` not found: part of cuRAND (`pip install nvidia-curand`), or pass -I"


def test_options_built_by_append_and_extend_reach_the_compiler():
    """`options = []` then `options.append(...)` (mrakgr/Spiral-s-ML-Library): the appended
    `--maxrregcount=128` is passed on (it was dropped, and the uncapped 240 registers gave a false
    OCC034). A list changed in another way is not known: its options are not guessed."""
    src = textwrap.dedent('''\
        import cupy as cp
        options = []
        options.append('--maxrregcount=128')
        options.extend(['-DX=1'])
        options += ['-DY=2']
        m = cp.RawModule(code='__global__ void k(float* x) { x[0] = 1; }', options=tuple(options))
        other = ['-DZ=3']
        other.insert(0, '-DW=4')
        n = cp.RawModule(code='__global__ void k(float* x) { x[0] = 1; }', options=tuple(other))
        ''')
    model = extract(src, "x.py")
    assert model.modules[0].options == ("--maxrregcount=128", "-DX=1", "-DY=2")
    assert model.modules[1].options == () and not model.modules[1].options_known
    assert model.modules[0].options_known


def test_a_kernel_fetched_with_unknown_template_arguments_is_still_its_template():
    """`module.get_function('kernel<{}>'.format(ctype))` in a loop (CuPy's packed_matrix example):
    the launch runs one of `kernel`'s instantiations. It is linked to `kernel` (its 1-block launch
    is then deliberate, not a kernel with no launch at its best block size: a wrong OCC001)."""
    from occlint.python.extract import KernelRef

    src = textwrap.dedent('''\
        import cupy
        m = cupy.RawModule(code='template<typename T> __global__ void kernel(T* x) { x[0] = 1; }',
                           name_expressions=('kernel<float>', 'kernel<double>'))
        for ctype in ('float', 'double'):
            k = m.get_function('kernel<{}>'.format(ctype))
            k((1,), (8,), (None,))
            j = m.get_function(NAME)
            j((1,), (8,), (None,))
        ''')
    model = extract(src, "x.py")
    assert [ln.kernel for ln in model.launches] == [KernelRef(0, "kernel")]


def test_kernels_says_each_string_error_once_at_its_line(tmp_path, nvrtc_lib):
    # inducer/pycuda's sobel_filter.py: nine tex2D errors were nine identical warnings at the
    # SourceModule call; check puts each OCC900 at its line of the string
    (tmp_path / "k.py").write_text(textwrap.dedent('''\
        import cupy
        k = cupy.RawKernel(r"""
        extern "C" __global__ void k(float* x) {
            x[0] = undefined_a;
            x[1] = undefined_b;
        }
        """, "k")
        '''))
    # named by its absolute path, inside the working folder: said relative, as findings are
    r = run_main("kernels", "--arch", "sm_90", "--no-cache", str(tmp_path / "k.py"), cwd=tmp_path)
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert warnings == ['occlint: warning: k.py:4:1: NVRTC (sm_90): identifier "undefined_a" is undefined',
                        'occlint: warning: k.py:5:1: NVRTC (sm_90): identifier "undefined_b" is undefined'], r.stderr


def test_notices_are_short_relative_and_never_contradict_each_other(tmp_path, monkeypatch):
    # inducer/pycuda's scan.py: a 4-line expression printed verbatim, "not compiled" and then
    # "options ... compiled without them" for the same call, absolute paths beside relative
    # findings, and "could not be evaluated" without saying what follows
    from occlint.python.lint import notices_for

    src = textwrap.dedent('''\
        from pycuda.compiler import SourceModule
        def build(tpl, opts, mod):
            a = SourceModule("#define X 1\\\\n" + tpl.render(
                        a=1,
                        b=2), options=opts)
            b = SourceModule(mod)
        ''')
    monkeypatch.chdir(tmp_path)
    notices = notices_for(extract(src, str(tmp_path / "n.py")))
    assert notices == [
        "n.py:6:22: the CUDA source `mod` could not be evaluated; not linted",
        "n.py:3:9: SourceModule source is partly unknown (`tpl.render( a=1, b=2)`): linted where "
        "it parses; not compiled, so register and spill checks were skipped"], notices


def test_the_old_prepared_call_takes_its_block_from_prepare():
    # inducer/pycuda's demo_struct.py (PyCUDA before 2011.1): prepare("P", block=(...)), then
    # prepared_call(grid, arg): the argument was read as the block size
    src = textwrap.dedent('''\
        from pycuda.compiler import SourceModule
        mod = SourceModule("__global__ void k(float* p) { p[threadIdx.x] *= 2; }")
        f = mod.get_function("k")
        f.prepare("P", block=(256, 1, 1))
        f.prepared_call((1000, 1), some_ptr)
        g = mod.get_function("k").prepare("P")
        g.prepared_call((1000, 1), (128, 1, 1), some_ptr)
        ''')
    model = extract(src, "x.py")
    assert [ln.block.source for ln in model.launches] == ["256, 1, 1", "128, 1, 1"]


def test_setup_py_flags_hold_when_the_config_is_elsewhere_and_doctor_prints_them(tmp_path,
                                                                                 nvcc_path):
    # diff-gaussian-rasterization: with `--config ../cfg/occlint.toml` (or an occlint.toml in a
    # parent folder) the root moved and setup.py's flags were dropped silently (its registers
    # changed: 47 -> 32); `doctor k.cu` printed a command without them, which failed by hand
    proj, cfg = tmp_path / "proj", tmp_path / "cfg"
    (proj / "third_party" / "mylib").mkdir(parents=True)
    cfg.mkdir()
    (proj / "third_party" / "mylib" / "vec.h").write_text("#define VEC 4\n")
    (proj / "k.cu").write_text('#include <mylib/vec.h>\n#ifndef FROM_SETUP\n#error "no setup.py"\n'
                               "#endif\n__global__ void k(float* x) { x[threadIdx.x] = VEC; }\n")
    (proj / "setup.py").write_text(textwrap.dedent('''\
        import os
        from torch.utils.cpp_extension import CUDAExtension
        here = os.path.dirname(os.path.abspath(__file__))
        CUDAExtension(name="m._C", sources=["k.cu"], extra_compile_args={"nvcc": [
            "-DFROM_SETUP=1", "-I" + os.path.join(here, "third_party/")]})
        '''))
    (cfg / "occlint.toml").write_text('min-occupancy = 0.5\n')
    r = run_main("check", "--arch", "sm_90", "--no-cache", "--config", "../cfg/occlint.toml",
                 "k.cu", cwd=proj)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr
    (tmp_path / "occlint.toml").write_text("")         # a config in a parent folder
    r = run_main("check", "--arch", "sm_90", "--no-cache", "k.cu", cwd=proj)
    assert r.returncode == 0 and "All checks passed!" in r.stdout, r.stdout + r.stderr
    r = run_main("doctor", "--arch", "sm_90", "k.cu", cwd=proj)
    compile_row = next(line for line in r.stdout.splitlines() if line.startswith("compile sm_90"))
    assert "-DFROM_SETUP=1" in compile_row and f"-I{proj}/third_party/" in compile_row
    assert "--expt-relaxed-constexpr" in compile_row


SETUP_WITH_INCLUDES = textwrap.dedent('''\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(name="x", ext_modules=[CUDAExtension("x", sources=["src/k.cu"], include_dirs=["inc"],
                                               define_macros=[("WIDE", "1")])])
    ''')


def _setup_project(root):
    (root / "inc").mkdir()
    (root / "src").mkdir()
    (root / "setup.py").write_text(SETUP_WITH_INCLUDES)
    (root / "inc" / "cfg.h").write_text("#ifdef WIDE\n#define THREADS 1024\n#else\n"
                                        "#define THREADS 128\n#endif\n")
    (root / "src" / "k.cu").write_text(
        '#include "cfg.h"\n__global__ void __launch_bounds__(256) k(float* x) { x[0] = 0; }\n'
        "void run(float* x) { k<<<1, THREADS>>>(x); }\n")


def test_a_setup_py_units_launches_are_read_with_its_flags(tmp_path):
    # mmcv: `THREADS_PER_BLOCK` of csrc/common (setup.py's include_dirs) was "defined nowhere
    # occlint looked": the unit compiled with the extension's -I and -D, but its source was read
    # with the config's flags only (52 of mmcv's 184 launches)
    _setup_project(tmp_path)
    r = run_main("kernels", "--no-compile", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [launch] = [x for x in json.loads(r.stdout) if x["kind"] == "launch"]
    assert launch["block"] == 1024          # WIDE from define_macros, cfg.h from include_dirs


def test_a_load_calls_units_launches_are_read_with_its_flags(tmp_path):
    # the same for `torch.utils.cpp_extension.load(...)` in a Python file: `kernels` read the
    # units with neither the call's flags nor (compiling) gave them to nvcc, where `check` did
    _setup_project(tmp_path)
    (tmp_path / "setup.py").unlink()
    (tmp_path / "build.py").write_text(textwrap.dedent('''\
        from torch.utils.cpp_extension import load
        x = load(name="x", sources=["src/k.cu"], extra_include_paths=["inc"],
                 extra_cuda_cflags=["-DWIDE"])
        '''))
    r = run_main("kernels", "--no-compile", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [x["block"] for x in json.loads(r.stdout) if x["kind"] == "launch"] == [1024]


def test_a_setup_py_units_launch_over_its_bounds_is_found(tmp_path, nvcc_path):
    _setup_project(tmp_path)
    r = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "concise",
                 cwd=tmp_path)
    assert "src/k.cu:3:" in r.stdout and "OCC032" in r.stdout and "1024 threads" in r.stdout, \
        r.stdout + r.stderr


def test_setup_py_is_looked_for_within_the_root_or_the_files_repository(tmp_path):
    # the walk up from a file stops at the root or the folder with .git; a file outside the
    # root in no repository takes only its own folder's (never a stray setup.py higher up)
    from occlint.python import setups

    (tmp_path / "setup.py").write_text("")                   # above everything: not the project's
    root, repo, loose = tmp_path / "root", tmp_path / "repo", tmp_path / "loose" / "deep"
    for d in (root / "pkg", repo / ".git", repo / "src", loose):
        d.mkdir(parents=True)
    (repo / "setup.py").write_text("")
    (root / "pkg" / "setup.py").write_text("")
    got = setups(str(root), [str(root / "pkg" / "k.cu"), str(repo / "src" / "a.cu"),
                             str(loose / "b.cu")])
    assert sorted(got) == sorted(os.path.realpath(p) for p in (root / "pkg" / "setup.py",
                                                                repo / "setup.py"))
    assert setups(str(root), [str(tmp_path / "c.cu")]) == [os.path.realpath(tmp_path / "setup.py")]
    # two files of one folder outside the root and any repository: the second was an
    # IndexError (`occlint check llmc/a.cuh /elsewhere/a.cu /elsewhere/b.cu`)
    assert setups(str(root), [str(loose / "b.cu"), str(loose / "c.cu")]) == []
