"""Shared test helpers: run the real CLI, find nvcc (never skip in CI); markers and test order.

Markers (pyproject.toml lists them): `nvcc` for every test that runs the compiler (any test using
the `nvcc_path` fixture gets it automatically), `slow` for the long poles (a real pre-commit, CMake
or editor session). `pytest -m "not nvcc"` is the quick inner loop. Slow tests are collected first
so that, spread over the workers (`-n auto` is the default), they do not end up as the tail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness.system import missing

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# A kernel launched with 100 threads/block: one OCC031 finding at line 7 (the block argument).
SCALE_100 = """\
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

void run(float* x) {
    scale<<<4096, 100>>>(x, 2.0f, 409600);
}
"""

# a launch that needs the opt-in to more than 48 KB of dynamic shared memory: OCC022, whose
# inserted cudaFuncSetAttribute call is the safe fix (it cannot change what the kernel computes)
STAGE_64K = """\
__global__ void stage(float* x) {
    extern __shared__ float s[];
    s[threadIdx.x] = x[threadIdx.x];
    x[threadIdx.x] = s[threadIdx.x ^ 1];
}

void run_stage(float* x) {
    stage<<<1024, 256, 65536>>>(x);
}
"""
STAGE_OPT_IN = "    cudaFuncSetAttribute(stage, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);\n"


def run_cli(*args: str, cwd: str | os.PathLike | None = None, input: str | None = None,
            env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m occlint ARGS` as a user would; returns the completed process (text)."""
    return subprocess.run(
        [sys.executable, "-m", "occlint", *args], cwd=cwd, input=input, text=True,
        capture_output=True, timeout=timeout, env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="session")
def nvrtc_lib():
    """NVRTC (CuPy's compiler) from the nvidia-cuda-nvrtc wheel; in CI a missing one fails."""
    from occlint.python import nvrtc

    lib = nvrtc.library()
    if lib is None:
        missing("NVRTC not found (pip install -e '.[test,cuda]')")
    return lib


@pytest.fixture(scope="session")
def nvcc_path() -> str:
    """The nvcc occlint discovers; in CI a missing nvcc fails the test instead of skipping."""
    from occlint.toolchain import find_nvcc  # provided by the toolchain package

    found = find_nvcc()
    if found is None:
        missing("nvcc not found (pip install -e '.[test,cuda]')")
    return str(found.path)


# Tests that reach nvcc through the CLI or the language server (found by running the suite with
# CUDACXX pointing at a wrapper that logs PYTEST_CURRENT_TEST) without asking for `nvcc_path`.
# A test missing here still passes; it only makes the `-m "not nvcc"` loop slower.
CALLS_NVCC = {
    "test_baseline.py::test_baseline_cli_round_trip",
    "test_config_load.py::test_cli_flags_override_the_file",
    "test_config_load.py::test_inline_config_and_missing_file",
    "test_diffbase.py::test_check_diff_base_cli",
    "test_emit_cli.py::test_bad_output_arguments_are_one_line_errors",
    "test_emit_cli.py::test_output_file",
    "test_emit_cli.py::test_several_formats_in_one_run",
    "test_lsp.py::test_open_change_code_actions_hover",
    "test_rules_check_cli.py::test_clean_file_exits_0_and_exit_zero",
    "test_rules_check_cli.py::test_fix_applies_safe_fixes_only_and_diff_writes_nothing",
    "test_rules_check_cli.py::test_fix_keeps_crlf_line_endings",
    "test_rules_check_cli.py::test_full_format_underlines_and_marks_fixable",
    "test_rules_check_cli.py::test_gitignore_exclude_and_bad_encoding",
    "test_rules_check_cli.py::test_json_is_ruff_compatible",
    "test_rules_check_cli.py::test_kernel_in_header_is_evaluated_at_launches_elsewhere",
    "test_rules_check_cli.py::test_noqa_forms",
    "test_rules_check_cli.py::test_select_ignore_statistics",
    "test_source_cli.py::test_binary_garbage_file_is_listed_without_error",
    "test_source_cli.py::test_json_records",
    "test_source_cli.py::test_missing_path_is_one_line_and_others_still_listed",
    "test_source_cli.py::test_text_output_and_directory_recursion",
    "test_hostile_output.py::test_every_format_is_valid_for_any_file_name",
    "test_options.py::test_inline_config_reaches_kernels_and_doctor",
    "test_rules_check_cli.py::test_fix_reports_the_fixed_files",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.nodeid.split("/")[-1].split("[")[0]
        if "nvcc_path" in getattr(item, "fixturenames", ()) or name in CALLS_NVCC:
            item.add_marker(pytest.mark.nvcc)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)   # stable sort
