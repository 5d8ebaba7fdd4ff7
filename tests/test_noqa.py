"""occlint.noqa: the comment the editor writes is the one the linter reads."""

from __future__ import annotations

import pytest

from occlint import noqa


@pytest.mark.parametrize("line", [
    "    k<<<1, 100>>>(x);",
    "    k<<<1, 100>>>(x);  // noqa: OCC033",
    "    k<<<1, 100>>>(x);  /* noqa: OCC033 */ int y;",
    "    k<<<1, 100>>>(x);  // noqa:OCC033,OCC034 the grid is tiny on purpose",
])
def test_written_code_is_read_back(line):
    assert not noqa.suppressed("OCC031", [1], noqa.read(line))
    at, insert = noqa.add_code(line, "OCC031")
    written = line[:at] + insert + line[at:]
    read = noqa.read(written)
    assert noqa.suppressed("OCC031", [1], read)
    assert noqa.suppressed("OCC033", [1], read) == ("OCC033" in line)


def test_a_line_that_already_silences_the_code_gets_no_edit():
    assert noqa.add_code("x;  // noqa", "OCC031") is None
    assert noqa.add_code("x;  // noqa: OCC0", "OCC031") is None
    assert noqa.add_code("x;  // noqa: OCC1", "OCC031") == (len("x;  // noqa: OCC1"), ", OCC031")


def test_file_level_noqa():
    text = "// occlint: noqa: OCC033\nk<<<1, 100>>>(x);\n"
    assert noqa.suppressed("OCC033", [2], noqa.read(text))
    assert not noqa.suppressed("OCC031", [2], noqa.read(text))
