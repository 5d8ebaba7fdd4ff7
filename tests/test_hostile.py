"""Issue 10: hostile input is normal input. Items 4 (non-regular files), 10 (config), 11 (cache
entries), 12 (line splitting) and 13 (lossy decoding); the others have their own files:
test_hostile_names.py (1), test_hostile_cache.py (2), test_hostile_fix.py (3),
test_hostile_signals.py (6, 7), test_hostile_lsp.py (8), test_hostile_output.py (9)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest
from conftest import SCALE_100, run_cli, run_main


def _cli(args, cwd, stdin=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "occlint", *args], cwd=cwd, stdin=stdin,
                          capture_output=True, text=True, timeout=timeout)


# --- 4: only regular files are read or hashed ------------------------------------------------


def test_include_of_dev_stdin_from_a_terminal_does_not_hang(tmp_path, nvcc_path):
    (tmp_path / "k.cu").write_text('#include "/dev/stdin"\n' + SCALE_100)
    master, slave = pty.openpty()               # occlint's stdin is a terminal nobody types in
    try:
        proc = _cli(["check", "--output-format", "concise", "."], tmp_path, stdin=slave,
                    timeout=180)
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 1, proc.stderr
    assert "OCC031" in proc.stdout
    # the entry is not stored (its dependency is no regular file), and the second run agrees
    again = _cli(["check", "--output-format", "concise", "."], tmp_path, stdin=subprocess.DEVNULL)
    assert again.stdout == proc.stdout


def test_fifos_and_devices_are_named_and_skipped(tmp_path):
    os.mkfifo(tmp_path / "fifo.cu")
    os.symlink("/dev/zero", tmp_path / "zero.cu")
    os.symlink("/dev/null", tmp_path / "CMakeLists.txt")
    (tmp_path / "k.cu").write_text(SCALE_100)
    proc = _cli(["check", "--output-format", "concise", "."], tmp_path, timeout=180)
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("occlint: error:")]
    assert len(errors) == 3, proc.stderr
    assert all("not a regular file" in e for e in errors)
    assert any("fifo.cu" in e and "FIFO" in e for e in errors)
    assert any("zero.cu" in e and "character device" in e for e in errors)
    assert "k.cu:7:" in proc.stdout                  # the regular file is still linted
    kernels = _cli(["kernels", "--no-compile", "."], tmp_path, timeout=60)
    assert kernels.returncode == 2 and "scale" in kernels.stdout
    named = _cli(["check", "fifo.cu"], tmp_path, timeout=60)
    assert named.returncode == 2 and "FIFO" in named.stderr


def test_a_fifo_config_or_gitignore_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "k.cu").write_text(SCALE_100)
    proc = _cli(["check", "--output-format", "concise", "."], tmp_path, timeout=180)
    assert proc.returncode == 1 and "k.cu:7:" in proc.stdout, proc.stderr
    os.mkfifo(tmp_path / "occlint.toml")
    proc = _cli(["check", "."], tmp_path, timeout=60)      # ignored or named: never read
    assert proc.returncode in (1, 2) and "internal error" not in proc.stderr
    proc = _cli(["check", "--config", "occlint.toml", "."], tmp_path, timeout=60)
    assert proc.returncode == 2 and "internal error" not in proc.stderr


# --- 10: a bad config is one error line ------------------------------------------------------


@pytest.mark.parametrize("content", [b"min-occupancy = 0.5 # caf\xe9\n", b"\xff\xfe"])
def test_config_that_is_not_utf8(tmp_path, content):
    (tmp_path / "occlint.toml").write_bytes(content)
    (tmp_path / "k.cu").write_text(SCALE_100)
    proc = run_main("check", ".", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "occlint.toml" in lines[0] and "UTF-8" in lines[0], proc.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "0", "-1", "true"])
def test_compile_timeout_must_be_a_real_number_of_seconds(tmp_path, value):
    (tmp_path / "occlint.toml").write_text(f"compile-timeout = {value}\n")
    (tmp_path / "k.cu").write_text(SCALE_100)
    proc = run_main("check", ".", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "compile-timeout" in lines[0], proc.stderr
    assert "internal error" not in proc.stderr


# --- 11: an unexpected cache entry is a miss -------------------------------------------------


@pytest.mark.parametrize("damage", ["extra", "missing", "wrong-type", "not-a-list", "junk"])
def test_unexpected_cache_entries_are_misses(tmp_path, nvcc_path, damage):
    (tmp_path / "k.cu").write_text(SCALE_100)
    first = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    entries = list((tmp_path / ".occlint_cache").rglob("*.json"))
    assert entries and first.returncode == 1
    for entry in (tmp_path / ".occlint_cache").rglob("*.findings"):   # would answer first
        entry.unlink()
    for entry in entries:
        data = json.loads(entry.read_text())
        usage = data["usages"][0]
        if damage == "extra":
            usage["from_a_newer_occlint"] = 1
        elif damage == "missing":
            del usage["registers"]
        elif damage == "wrong-type":
            usage["registers"] = "many"
        elif damage == "not-a-list":
            data["usages"] = {"k": 1}
        else:
            entry.write_bytes(b"\x00\xff not json")
            continue
        entry.write_text(json.dumps(data))
    second = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    assert second.returncode == 1, second.stderr
    assert "internal error" not in second.stderr
    assert json.loads(second.stdout) == json.loads(first.stdout)
    third = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)   # rewritten
    assert json.loads(third.stdout) == json.loads(first.stdout)


@pytest.mark.parametrize("damage", ["shortened", "not-a-pair", "junk", "gone"])
def test_a_damaged_dependency_list_is_a_miss(tmp_path, nvcc_path, damage):
    (tmp_path / "k.cu").write_text(SCALE_100)
    first = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    cache = tmp_path / ".occlint_cache"
    lists = [p for p in cache.rglob("*.deps") if json.loads(p.read_text())["list"]]
    assert lists           # the compile's (~hundreds of toolkit headers)
    for entry in cache.rglob("*.findings"):      # the findings entry would answer first
        entry.unlink()
    for entry in lists:
        data = json.loads(entry.read_text())
        if damage == "shortened":       # a header left out: no longer its name
            del data["list"][0]
        elif damage == "not-a-pair":
            data["list"][0] = "k.cu"
        if damage == "junk":
            entry.write_bytes(b"\x00\xff not json")
        elif damage == "gone":
            entry.unlink()
        else:
            entry.write_text(json.dumps(data))
    second = run_cli("check", "--output-format", "json", "-v", ".", cwd=tmp_path)
    assert second.returncode == 1 and "internal error" not in second.stderr, second.stderr
    assert json.loads(second.stdout) == json.loads(first.stdout)
    assert "(1 compiled, 0 from the compile cache)" in second.stderr, second.stderr


# --- 12: one line-splitting rule -------------------------------------------------------------


@pytest.mark.parametrize("brk", ["\f", "\v", "\x1c", "\x85", "\u2028", "\u2029"])
def test_unicode_line_breaks_do_not_shift_noqa_or_snippets(brk):
    from occlint.config import Config
    from occlint.emit.full import render
    from occlint.engine import lint_source

    text = f"// a comment with a{brk}page break\n" + SCALE_100
    findings = lint_source(text, "k.cu", [], Config(select=("OCC031",)))
    assert [(f.code, f.span.line) for f in findings] == [("OCC031", 8)]
    out = render(findings, sources={"k.cu": text})
    assert "8 |     scale<<<4096, 100>>>" in out
    quiet = text.replace("(x, 2.0f, 409600);", "(x, 2.0f, 409600);  // noqa: OCC031")
    assert lint_source(quiet, "k.cu", [], Config(select=("OCC031",))) == []


# --- 13: sources that are not UTF-8 are linted, never fixed ----------------------------------


LATIN1 = ("// Gr\xf6\xdfe: Latin-1 comment\n".encode("latin-1")
          + SCALE_100.replace("scale<<<", "/* \xe9 */ scale<<<").encode("latin-1"))


def test_latin1_source_is_linted_with_right_positions(tmp_path):
    (tmp_path / "k.cu").write_bytes(LATIN1)
    proc = run_cli("check", "--select", "OCC031", "--output-format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (f,) = json.loads(proc.stdout)
    assert (f["location"]["row"], f["location"]["column"]) == (8, 27)   # "100", in characters
    kernels = run_cli("kernels", "--no-compile", "--json", ".", cwd=tmp_path)
    (launch,) = [r for r in json.loads(kernels.stdout) if r["kind"] == "launch"]
    assert launch["line"] == 8


def test_latin1_buffer_on_stdin_is_linted(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "occlint", "check", "--select", "OCC031",
                           "--output-format", "json", "--stdin-filename", "k.cu", "-"],
                          cwd=tmp_path, input=LATIN1, capture_output=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    (f,) = json.loads(proc.stdout)
    assert (f["location"]["row"], f["location"]["column"]) == (8, 27)


def test_latin1_source_is_never_fixed(tmp_path):
    (tmp_path / "k.cu").write_bytes(LATIN1)
    (tmp_path / "ok.cu").write_text(SCALE_100)
    proc = run_cli("fix", "--unsafe-fixes", "--select", "OCC031", ".", cwd=tmp_path)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "k.cu" in errors[0] and "UTF-8" in errors[0], proc.stderr
    assert (tmp_path / "k.cu").read_bytes() == LATIN1
    assert "<<<3200, 128>>>" in (tmp_path / "ok.cu").read_text()


def test_a_file_whose_analysis_fails_is_an_error_and_the_others_are_checked(tmp_path, monkeypatch):
    # a bug in one file's analysis (cudpp's out-parameter block size raised "block size must
    # be at least 1") ended the whole run with no findings; now it is that file's error line
    from conftest import SCALE_100, run_main

    from occlint import checks
    from occlint.commands import kernels

    real_check, real_records = checks.CHECKS["OCC031"], kernels.records

    def check_but_bad(facts):
        if facts.path.endswith("bad.cuh"):
            raise ValueError("boom\n" + "x" * 5000)    # (a node's repr: one bounded line)
        return real_check(facts)

    def records_but_bad(sf):
        if sf.path.endswith("bad.cuh"):
            raise ValueError("boom\n" + "x" * 5000)
        return real_records(sf)

    monkeypatch.setitem(checks.CHECKS, "OCC031", check_but_bad)
    monkeypatch.setattr(kernels, "records", records_but_bad)
    monkeypatch.delenv("OCCLINT_DEBUG", raising=False)
    for name in ("bad.cuh", "good.cuh"):
        (tmp_path / name).write_text(SCALE_100)
    proc = run_main("check", "--no-cache", "--arch", "sm_90", "--output-format", "concise",
                    "bad.cuh", "good.cuh", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "good.cuh:7:19: OCC031" in proc.stdout
    assert "bad.cuh: internal error while analysing it: ValueError: boom ... (set" in proc.stderr
    assert "xxx" not in proc.stderr
    listed = run_main("kernels", "--no-compile", "bad.cuh", "good.cuh", cwd=tmp_path)
    assert listed.returncode == 2 and "good.cuh:7:" in listed.stdout
    assert "bad.cuh: internal error while analysing it: ValueError: boom ..." in listed.stderr
    from occlint.errors import described
    assert described(KeyError("y" * 500)) == f"KeyError: '{'y' * 199} ..."


def test_an_error_in_an_included_header_is_reported_at_the_include_that_leads_to_it(tmp_path):
    # cudpp's hash units: "src/cudpp_hash/hash_table.h:25: `cudpp.h` not found" at the unit's
    # 1:1, where the unit says nothing; now at its `#include` of that header (directly, or of a
    # header of its folder that includes it)
    from occlint.engine import errors_by_file_of
    from occlint.model import CompileError

    (tmp_path / "outer.h").write_text('#include "bad.h"\n')
    unit, other, alone = (str(tmp_path / n) for n in ("u.cu", "v.cu", "w.cu"))
    texts = {unit: '// unit\n#include <cstdio>\n\n#include "outer.h"\n', other: '#include "sub/bad.h"\n',
             alone: "// no include\n"}
    errors = [CompileError(str(tmp_path / "bad.h"), 2, 5, "boom", "sm_90", "error", None, u)
              for u in (unit, other, alone)]
    got = errors_by_file_of(errors, [unit, other, alone], texts)
    assert [(e.line, e.column, e.message) for e in got[unit]] == [(4, 1, f"{tmp_path}/bad.h:2: boom")]
    assert [e.line for e in got[other]] == [1]
    assert [(e.line, e.column) for e in got[alone]] == [(None, None)]


def test_a_pathologically_deep_setup_py_gives_no_entries_and_no_error(tmp_path):
    # a 3000-term `or` in a setup.py: libcst's position metadata raised KeyError, an
    # "internal error" whose message was the repr of the whole branch (2.8 KB)
    from occlint.python.extensions import extension_entries

    terms = " or ".join(f"x{i}" for i in range(3000))
    setup = tmp_path / "setup.py"
    setup.write_text("from torch.utils.cpp_extension import CUDAExtension\n"
                     f"if {terms}:\n    f = ['-O3']\nelse:\n    f = ['-O2']\n"
                     "CUDAExtension(name='e', sources=['k.cu'], extra_compile_args={'nvcc': f})\n")
    (tmp_path / "k.cu").write_text("__global__ void k(float* p) { p[threadIdx.x] = 0; }\n")
    assert extension_entries(str(setup)) == []
    proc = run_cli("check", "--no-cache", "k.cu", "setup.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[:500]
