"""Shared test helpers: run the real CLI, find nvcc (never skip in CI); markers and test order.

Markers (pyproject.toml lists them): `nvcc` for every test that runs NVIDIA's compiler, nvcc or
NVRTC (any test using the `nvcc_path` or `nvrtc_lib` fixture gets it automatically), `slow` for the long poles (a real pre-commit, CMake
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
    """Run `python -m occlint ARGS` in a child process as a user would; returns the completed
    process (text). For tests where the process is the point: signals, timeouts, what a fresh
    interpreter imports or remembers, the language server, a compiler that is started. Other
    tests use `run_main`, which is the same command line without the ~0.3 s start-up."""
    return subprocess.run(
        [sys.executable, "-m", "occlint", *args], cwd=cwd, input=input, text=True,
        capture_output=True, timeout=timeout, env={**os.environ, **(env or {})},
    )


def _warning_to_stderr(message, category, filename, lineno, file=None, line=None):
    import warnings

    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def run_main(*args: str, cwd: str | os.PathLike | None = None, input: str | None = None,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """`run_cli` in this process: `occlint.cli.main(ARGS)` with the child's working folder,
    environment (os.environ updated with `env`), stdin (`input`, else empty), stdout and stderr
    (UTF-8 pipes with the child's error handlers, read back as `text=True` does: strict UTF-8,
    newlines translated), exit status (SystemExit as the interpreter gives it; an exception that
    escapes is a traceback on stderr and status 1), warnings (on stderr) and signal handlers, all
    restored afterwards.
    Modules stay imported and the tree-sitter query compiled between calls, which is what makes
    it fast; the memos occlint keeps by path and mtime live on, as in the language server, so a
    test of what one process remembers or probes uses run_cli."""
    import io
    import signal
    import traceback
    import warnings

    from occlint.cli import main

    if args[:1] in (("nvcc",), ("server",)) or "--watch" in args or "-w" in args:
        raise ValueError(f"`occlint {args[0]}` must run in its own process: use run_cli")
    out, err = io.BytesIO(), io.BytesIO()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    pipes = (io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8",
                              errors="surrogateescape"),
             io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True),
             io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    sys.stdin, sys.stdout, sys.stderr = pipes           # kept alive: closing one closes its bytes
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.update(env or {})
    try:
        if cwd is not None:
            os.chdir(cwd)
        try:
            with warnings.catch_warnings():      # as in a fresh interpreter: shown on stderr
                warnings.resetwarnings()
                warnings.simplefilter("default")
                warnings.showwarning = _warning_to_stderr
                code = main(list(args))
        except SystemExit as exc:
            code = exc.code
            if isinstance(code, str):
                print(code, file=sys.stderr)
                code = 1
        except Exception:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(saved_cwd)
        token = os.environ.get("OCCLINT_WATCHDOG")    # set once per process, by its first child
        os.environ.clear()
        os.environ.update(saved_env)
        if token is not None:
            os.environ["OCCLINT_WATCHDOG"] = token
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

    def text(data: bytes) -> str:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")

    done = subprocess.CompletedProcess(["occlint", *args], 0 if code is None else code,
                                       text(out.getvalue()), text(err.getvalue()))
    for pipe in pipes:
        pipe.close()
    return done


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


# Tests that reach nvcc or NVRTC through the CLI or the language server without asking for
# `nvcc_path` or `nvrtc_lib` (found with tests/harness/audit/sitecustomize.py, which logs every
# nvcc a test starts and every NVRTC compile). A test
# missing here still passes; it only makes the `-m "not nvcc"` loop slower, or fail without nvcc.
CALLS_NVCC = {
    "test_hostile.py::test_a_pathologically_deep_setup_py_gives_no_entries_and_no_error",
    "test_options.py::test_config_file_elsewhere_checks_the_working_directory_and_is_the_settings_path",
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
    "test_hostile.py::test_a_fifo_config_or_gitignore_does_not_hang",
    "test_hostile.py::test_fifos_and_devices_are_named_and_skipped",
    "test_hostile.py::test_latin1_buffer_on_stdin_is_linted",
    "test_hostile.py::test_latin1_source_is_linted_with_right_positions",
    "test_hostile.py::test_latin1_source_is_never_fixed",
    "test_hostile_fix.py::test_an_unwritable_file_is_one_error_and_the_others_are_fixed",
    "test_hostile_fix.py::test_bom_mode_and_crlf_are_kept",
    "test_hostile_fix.py::test_links_write_their_target",
    "test_hostile_lsp.py::test_a_fifo_config_never_blocks_the_loop",
    "test_hostile_lsp.py::test_a_fifo_document_never_blocks_the_loop",
    "test_hostile_lsp.py::test_malformed_framing_does_not_stop_the_server",
    "test_hostile_output.py::test_format_to_file_is_written_whole",
    "test_python.py::test_python_that_does_not_parse_is_a_notice_not_a_traceback",
    "test_python.py::test_python_that_python_cannot_compile_does_not_crash_the_process",
}
COMPILER_FIXTURES = ("nvcc_path", "nvrtc_lib")


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.nodeid.split("/")[-1].split("[")[0]
        if name in CALLS_NVCC or any(f in getattr(item, "fixturenames", ())
                                     for f in COMPILER_FIXTURES):
            item.add_marker(pytest.mark.nvcc)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)   # stable sort


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """Freeze the heap before pytest's unraisable-exception plugin collects it twice at exit:
    in a worker that has run hundreds of tests that took ~0.2 s of the run's tail, and the
    objects a test left behind were collected (and reported) long before."""
    import gc

    gc.freeze()
