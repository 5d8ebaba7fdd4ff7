"""The command line as a ruff user drives it: stdin, verbosity, colour, fix control, --add-noqa,
file selection, --show-settings/--show-files, --watch, usage errors and the closing lines.

Most cases lint a header (`.cuh`: no compile, no nvcc); the stdin case compiles with nvcc.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SCALE_100, run_cli, run_main

# OCC031's unsafe fix: 128 threads/block and the grid scaled to the same 409600 threads
FIXED = SCALE_100.replace("<<<4096, 100>>>", "<<<3200, 128>>>")


def project(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.occlint]\narch = ["sm_90"]\n')
    for name, text in ({"k.cuh": SCALE_100} if files is None else files).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".occlint_cache" not in p.parts}


# --- stdin ----------------------------------------------------------------------------------------


def test_stdin_uses_the_filename_folder_and_writes_nothing(tmp_path, nvcc_path):
    # the buffer needs a header from its folder: without it on the include path, nvcc fails
    root = project(tmp_path, {"src/blocks.cuh": "#pragma once\n#define SCALE_BY(v) ((v) * 2)\n",
                              "src/k.cu": "// on disk: not what is linted\n"})
    buffer = '#include "blocks.cuh"\n' + SCALE_100.replace("*= a", "*= SCALE_BY(a)")
    before = tree(root)
    r = run_cli("check", "-", "--stdin-filename", "src/k.cu", "--output-format", "json",
                cwd=root, input=buffer)
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)
    assert (f["code"], f["location"]["row"], f["filename"]) == (
        "OCC031", 8, str(root / "src" / "k.cu"))
    assert tree(root) == before                       # the tree is untouched
    broken = run_cli("check", "-", "--stdin-filename", "src/k.cu", "--output-format", "concise",
                     cwd=root, input='#include "blocks.cuh"\n__global__ void k(float* p) { p[0] = nope; }\n')
    assert "src/k.cu:2:" in broken.stdout and "OCC900" in broken.stdout, broken.stdout
    assert "tmp" not in broken.stdout


def test_stdin_header_and_errors(tmp_path):
    root = project(tmp_path, {})
    r = run_main("check", "--stdin-filename", "k.cuh", "--output-format", "concise", cwd=root,
                input=SCALE_100)
    assert r.returncode == 1 and r.stdout.startswith("k.cuh:7:19: OCC031"), r.stdout + r.stderr
    both = run_main("check", "-", "k.cuh", cwd=root, input="")
    assert both.returncode == 2 and "cannot be combined" in both.stderr
    fix = run_main("check", "-", "--stdin-filename", "k.cuh", "--fix", cwd=root, input=SCALE_100)
    assert not (root / "k.cuh").exists()              # a buffer is never written to PATH


# --- verbosity, colour, summary -------------------------------------------------------------------


def test_quiet_silent_verbose(tmp_path):
    root = project(tmp_path)
    normal = run_main("check", "--output-format", "concise", cwd=root)
    assert "Found 1 finding." in normal.stdout
    quiet = run_main("check", "-q", "--output-format", "concise", cwd=root)
    assert quiet.returncode == 1 and quiet.stdout.splitlines() == [normal.stdout.splitlines()[0]]
    silent = run_main("check", "--silent", cwd=root)
    assert (silent.returncode, silent.stdout) == (1, "")
    verbose = run_main("check", "-v", "--output-format", "concise", cwd=root)
    assert "occlint: 2 files linted in" in verbose.stderr      # k.cuh and pyproject.toml


def test_color_flags_and_environment(tmp_path):
    root = project(tmp_path)
    plain = {"NO_COLOR": "", "FORCE_COLOR": ""}
    assert "\x1b[" not in run_main("check", cwd=root, env=plain).stdout          # not a terminal
    always = run_main("check", "--color", "always", "--output-format", "concise", cwd=root,
                     env={"NO_COLOR": "1"}).stdout
    assert "\x1b[1m\x1b[31mOCC031\x1b[0m" in always
    assert "\x1b[" in run_main("check", cwd=root, env={"FORCE_COLOR": "1", "NO_COLOR": ""}).stdout
    assert "\x1b[" not in run_main("check", "--color", "never", cwd=root,
                                  env={"FORCE_COLOR": "1"}).stdout
    json_out = run_main("check", "--color", "always", "--output-format", "json", cwd=root).stdout
    assert "\x1b[" not in json_out and json.loads(json_out)


def test_statistics_ends_like_ruff_and_output_file_keeps_the_summary_on_stderr(tmp_path):
    root = project(tmp_path)
    stats = run_main("check", "--statistics", cwd=root)
    assert stats.stdout.splitlines() == [
        "1\tOCC031\tblock-size-not-warp-multiple", "Found 1 finding.",
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)."]
    unsafe = run_main("check", "--statistics", "--unsafe-fixes", cwd=root)
    assert unsafe.stdout.splitlines()[-1] == "[*] 1 fixable with the `--fix` option."
    out = root / "report.txt"
    r = run_main("check", "--output-format", "concise", "--output-file", str(out), cwd=root)
    assert r.stdout == ""
    assert out.read_text().startswith("k.cuh:7:19: OCC031")
    assert "Found 1 finding." not in out.read_text()
    assert "Found 1 finding." in r.stderr


def test_one_hidden_fix_is_singular(tmp_path):
    from occlint.commands.summary import summary
    from occlint.model import Edit, Finding, Fix, Span

    span = Span(1, 1, 1, 2, 0, 1)
    f = Finding("OCC010", "register-cliff", "m", "k.cu", span,
                fix=Fix("t", (Edit("x", span),), "unsafe"))
    assert summary([f], 0, False).splitlines()[1] == (
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).")
    assert "2 hidden fixes can" in summary([f, f], 0, False)


# --- fix control ------------------------------------------------------------------------------------


# OCC031's round-up is an unsafe fix: these runs pass --unsafe-fixes
def test_fix_only_show_fixes_exit_non_zero_on_fix(tmp_path):
    root = project(tmp_path)
    assert run_main("check", "--fix-only", cwd=root).stdout == (
        "No findings fixed (1 fix available with `--unsafe-fixes`).\n")
    r = run_main("check", "--fix-only", "--show-fixes", "--unsafe-fixes", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["Fixed 1 finding:", "- k.cuh:",
                                     "    1 \u00d7 OCC031 (block-size-not-warp-multiple)",
                                     "Fixed 1 finding."]
    assert (root / "k.cuh").read_text() == FIXED
    (root / "k.cuh").write_text(SCALE_100)
    r = run_main("check", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "--output-format",
                "concise", cwd=root)
    assert r.returncode == 1 and "Found 1 finding (1 fixed, 0 remaining)." in r.stdout
    r = run_main("check", "--fix", "--unsafe-fixes", cwd=root)
    assert r.returncode == 0 and "All checks passed!" in r.stdout


def test_fixable_unfixable_extend_fixable(tmp_path):
    root = project(tmp_path)
    fix = ("check", "--fix", "--unsafe-fixes")
    r = run_main(*fix, "--unfixable", "OCC031", "--output-format", "concise", cwd=root)
    assert r.returncode == 1 and (root / "k.cuh").read_text() == SCALE_100
    assert "OCC031 [*]" not in r.stdout and "Found 1 finding." in r.stdout
    assert "fixable" not in r.stdout and "hidden" not in r.stdout     # no fix left to offer
    r = run_main(*fix, "--fixable", "OCC02", "--output-format", "concise", cwd=root)
    assert (root / "k.cuh").read_text() == SCALE_100
    r = run_main(*fix, "--fixable", "OCC02", "--extend-fixable", "OCC031", cwd=root)
    assert r.returncode == 0 and (root / "k.cuh").read_text() == FIXED


def test_add_noqa_silences_every_finding_and_keeps_line_endings(tmp_path):
    root = project(tmp_path, {"k.cuh": SCALE_100.replace("\n", "\r\n")})
    r = run_main("check", "--add-noqa", cwd=root)
    assert r.returncode == 0 and "Added 1 noqa directive." in r.stderr
    text = (root / "k.cuh").read_bytes().decode()
    assert "scale<<<4096, 100>>>(x, 2.0f, 409600);  // noqa: OCC031\r\n" in text
    assert text.count("\r\n") == SCALE_100.count("\n") and "\n" not in text.replace("\r\n", "")
    assert run_main("check", cwd=root).returncode == 0
    again = run_main("check", "--add-noqa", cwd=root)
    assert "Added 0 noqa directives." in again.stderr


# --- selection --------------------------------------------------------------------------------------


def test_exclude_extend_exclude_force_exclude_per_file_ignores(tmp_path):
    root = project(tmp_path, {"k.cuh": SCALE_100, "vendor/v.cuh": SCALE_100,
                              "tests/t.cuh": SCALE_100})

    def files(*args):
        r = run_main("check", "--show-files", *args, cwd=root)
        assert r.returncode == 0, r.stderr
        return sorted(os.path.relpath(p, root) for p in r.stdout.split())

    assert files() == ["k.cuh", "pyproject.toml", "tests/t.cuh", "vendor/v.cuh"]
    assert files("--extend-exclude", "vendor") == ["k.cuh", "pyproject.toml", "tests/t.cuh"]
    assert files("--exclude", "vendor,tests") == ["k.cuh", "pyproject.toml"]
    # named on the command line: linted anyway, unless --force-exclude (as in ruff)
    assert files("vendor/v.cuh", "--extend-exclude", "vendor") == ["vendor/v.cuh"]
    assert files("vendor/v.cuh", "--extend-exclude", "vendor", "--force-exclude") == []
    r = run_main("check", "--per-file-ignores", "tests/*:OCC031,vendor/*:OCC031",
                "--output-format", "json", cwd=root)
    assert [os.path.relpath(f["filename"], root) for f in json.loads(r.stdout)] == ["k.cuh"]
    bad = run_main("check", "--per-file-ignores", "OCC031", cwd=root)
    assert bad.returncode == 2 and "GLOB:CODE" in bad.stderr


def test_cache_dir_and_show_settings(tmp_path):
    root = project(tmp_path)
    r = run_main("check", "k.cuh", "--show-settings", "--cache-dir", "elsewhere", "--arch",
                "sm_80,sm_90", cwd=root)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f'Resolved settings for: "{root / "k.cuh"}"'
    assert lines[1] == f'Settings path: "{root / "pyproject.toml"}"'
    assert 'arch = ["sm_80", "sm_90"]' in lines
    assert f'cache-dir = "{root / "elsewhere"}"' in lines
    assert any(line.startswith("rules.enabled = [") and "OCC031" in line for line in lines)


# --- usage and watch --------------------------------------------------------------------------------


def test_unknown_option_prints_the_sub_command_usage(tmp_path):
    r = run_main("check", "--bogus", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("usage: occlint check ")
    assert "occlint check: error: unrecognized arguments: --bogus" in r.stderr
    k = run_main("kernels", "x.cu", "--nope", cwd=tmp_path)
    assert k.stderr.startswith("usage: occlint kernels ")


def _watch(root) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "occlint", "check", "--watch",
                             "--output-format", "concise"], cwd=root, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_watch_lints_again_on_change(tmp_path):
    root = project(tmp_path)
    proc = _watch(root)
    try:
        lines = []

        def wait_for(text, timeout=60):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                line = proc.stdout.readline()
                lines.append(line)
                if text in line:
                    return
            raise AssertionError(f"{text!r} not seen in {lines}")

        wait_for("Found 1 finding.")
        time.sleep(0.2)
        (root / "k.cuh").write_text(FIXED)
        wait_for("File change detected")
        wait_for("All checks passed!")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 0), (signal.SIGTERM, 128 + 15)],
                         ids=["SIGINT", "SIGTERM"])
def test_watch_stops_on_ctrl_c_with_0_and_on_sigterm_with_143(tmp_path, sig, code):
    proc = _watch(project(tmp_path))
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and "Found 1 finding." not in proc.stdout.readline():
            pass
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == code, out
        assert "Traceback" not in out
    finally:
        proc.kill()
        proc.wait()


# --- consistency between commands -------------------------------------------------------------------


def test_doctor_lists_only_archs_check_accepts(tmp_path, nvcc_path):
    import re

    root = project(tmp_path)
    doctor = run_cli("doctor", "--nvcc", nvcc_path, cwd=root)
    listed = re.search(r"^supported archs\s+(.*)$", doctor.stdout, re.M).group(1).split()
    assert "sm_90" in listed
    for arch in listed:
        r = run_cli("check", "k.cuh", "--arch", arch, "--nvcc", nvcc_path, cwd=root)
        assert r.returncode == 1 and "unknown architecture" not in r.stderr, (arch, r.stderr)


def test_comma_archs_in_calc_and_kernels_takes_jobs(tmp_path):
    r = run_main("calc", "--arch", "sm_80,sm_90", "--regs", "32", "--json")
    assert r.returncode == 0, r.stderr
    assert [d["arch"] for d in json.loads(r.stdout)] == ["sm_80", "sm_90"]
    text = run_main("calc", "--arch", "sm_80,sm_90", "--regs", "32").stdout
    assert text.count("occupancy: ") == 2
    root = project(tmp_path)
    k = run_main("kernels", "k.cuh", "--jobs", "1", "--arch", "sm_80,sm_90", cwd=root)
    assert k.returncode == 0, k.stderr


def test_kernels_takes_nvcc_as_check_does(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE_100)
    for command in ("check", "kernels"):
        r = run_main(command, "k.cu", "--nvcc", str(tmp_path / "no-nvcc"), "--no-cache", cwd=tmp_path)
        assert r.returncode == 2 and "(from the config or --nvcc) does not run" in r.stderr, \
            (command, r.stderr)


def test_byte_units_are_the_same_everywhere():
    from occlint.units import format_amount, format_size

    assert (format_size(512), format_size(16384), format_size(1536)) == ("512 B", "16 KiB", "1.5 KiB")
    assert (format_amount(512), format_amount(16384), format_amount(5 * 2**20 + 2**19)) == \
        ("512 B", "16 KiB", "5.5 MiB")
