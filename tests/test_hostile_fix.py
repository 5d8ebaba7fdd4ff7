"""Issue 10 item 3: `occlint fix` keeps BOM, mode, line endings and links, refuses a file that
changed since it was read, and reports an unwritable file as one error (others still fixed)."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess

import pytest
from conftest import SCALE_100, run_cli
from harness.system import missing

from occlint.errors import OcclintError

FIXED_100 = SCALE_100.replace("<<<4096, 100>>>", "<<<3200, 128>>>")   # OCC031: the same threads


def _fix(root, *paths):
    return run_cli("fix", "--unsafe-fixes", "--select", "OCC031", *(paths or ["."]), cwd=root)


def test_bom_mode_and_crlf_are_kept(tmp_path):
    bom = tmp_path / "bom.cu"
    bom.write_bytes(b"\xef\xbb\xbf" + SCALE_100.encode())
    crlf = tmp_path / "crlf.cu"
    crlf.write_bytes(SCALE_100.replace("\n", "\r\n").encode())
    exe = tmp_path / "exe.cu"
    exe.write_text(SCALE_100)
    os.chmod(bom, 0o640)
    os.chmod(exe, 0o755)
    proc = _fix(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert bom.read_bytes() == b"\xef\xbb\xbf" + FIXED_100.encode()
    assert crlf.read_bytes() == FIXED_100.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(bom.stat().st_mode) == 0o640
    assert stat.S_IMODE(exe.stat().st_mode) == 0o755
    assert not list(tmp_path.glob(".occlint-fix-*"))


def test_inserted_lines_take_the_files_line_ending(tmp_path):
    from occlint.fix import apply
    from occlint.model import Edit, Span

    text = "a\r\nb\r\n"
    out = apply(text, [Edit("x;\ny;\n", Span(2, 1, 2, 1, 3, 3))])
    assert out == "a\r\nx;\r\ny;\r\nb\r\n"
    assert apply("a\nb\n", [Edit("x;\n", Span(2, 1, 2, 1, 2, 2))]) == "a\nx;\nb\n"


def test_links_write_their_target(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "k.cu"
    target.write_text(SCALE_100)
    proj = tmp_path / "proj"
    proj.mkdir()
    os.symlink(target, proj / "sym.cu")
    other = tmp_path / "other.cu"
    other.write_text(SCALE_100)
    os.link(other, proj / "hard.cu")
    proc = _fix(proj)
    assert proc.returncode == 0, proc.stderr
    assert (proj / "sym.cu").is_symlink() and target.read_text() == FIXED_100
    assert (proj / "hard.cu").stat().st_ino == other.stat().st_ino
    assert other.read_text() == FIXED_100


def test_a_file_changed_since_it_was_read_is_refused(tmp_path):
    from occlint.fix import write_fixed

    path = tmp_path / "k.cu"
    path.write_text(SCALE_100 + "// appended while compiling\n")
    with pytest.raises(OcclintError, match="changed since it was read"):
        write_fixed(str(path), SCALE_100, FIXED_100)
    assert path.read_text() == SCALE_100 + "// appended while compiling\n"
    path.write_text(SCALE_100)
    write_fixed(str(path), SCALE_100, FIXED_100)
    assert path.read_text() == FIXED_100


def test_a_fifo_or_non_utf8_file_is_never_written(tmp_path):
    from occlint.fix import write_fixed

    fifo = tmp_path / "f.cu"
    os.mkfifo(fifo)
    with pytest.raises(OcclintError, match="not a regular file"):
        write_fixed(str(fifo), SCALE_100, FIXED_100)
    latin = tmp_path / "latin.cu"
    latin.write_bytes(b"// caf\xe9\n" + SCALE_100.encode())
    with pytest.raises(OcclintError, match="not valid UTF-8"):
        write_fixed(str(latin), "// caf\ufffd\n" + SCALE_100, FIXED_100)


@contextlib.contextmanager
def _read_only(folder):
    """A folder no one may write in (root ignores modes, so it gets the immutable flag)."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            missing("chattr +i is not supported on this file system")
        undo = ["chattr", "-i", str(folder)]
    else:
        os.chmod(folder, 0o555)
        undo = None
    try:
        yield
    finally:
        if undo:
            subprocess.run(undo, check=False)
        else:
            os.chmod(folder, 0o755)


def test_an_unwritable_file_is_one_error_and_the_others_are_fixed(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.cu").write_text(SCALE_100)
    (tmp_path / "b.cu").write_text(SCALE_100)
    with _read_only(locked):
        proc = _fix(tmp_path)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and "a.cu" in errors[0] and "cannot write" in errors[0], proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "b.cu").read_text() == FIXED_100
    assert (locked / "a.cu").read_text() == SCALE_100
    assert "a.cu" in proc.stdout                  # its finding is still reported
