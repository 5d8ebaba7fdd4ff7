"""Start-up and editor details: the tree-sitter query (80 ms to compile, whatever its size) is
compiled on the first parse, not at import, so commands that parse nothing never pay for it."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import occlint.engine, occlint.source, occlint.source.grammar as g
print(g.file_query.cache_info().currsize)
occlint.source.parse(b"__global__ void k() {}")
print(g.file_query.cache_info().currsize)
"""


def test_query_compiled_on_first_parse_not_at_import():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["0", "1"]



def test_a_cuda_only_check_never_imports_libcst(tmp_path):
    # libcst reads setup.py and Python files; a project with neither must not pay its import
    (tmp_path / "k.cuh").write_text("__global__ void k() {}\nvoid h() { k<<<1, 100>>>(); }\n")
    code = ("import sys, runpy; sys.argv = ['occlint', 'check', '--no-cache', 'k.cuh', '-q'];\n"
            "from occlint.cli import main; rc = main(sys.argv[1:]);\n"
            "print('libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True).stdout.split()
    assert out[-1] == "False"
