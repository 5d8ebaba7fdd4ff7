"""Start-up and editor details."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

NO_QUERY = """
import tree_sitter
built, real = [], tree_sitter.Query
tree_sitter.Query = lambda *a: (built.append(1), real(*a))[1]
import occlint.source
sf = occlint.source.parse(b"namespace n { const int B = 64; }\\n"
                          b"__global__ void k() { __shared__ int s[n::B]; }\\n"
                          b"void h() { k<<<1, n::B>>>(); }")
print(len(sf.kernels), len(sf.shared), sf.shared[0].size_bytes, sf.launches[0].block.x, len(built))
"""


def test_no_tree_sitter_query_is_built():
    """Building any tree-sitter Query costs 12-20 ms with the GIL held (the grammar's parse
    states are analysed): file_captures finds its nodes without one."""
    proc = subprocess.run([sys.executable, "-c", NO_QUERY], capture_output=True, text=True)
    assert proc.stdout.split() == ["1", "1", "256", "64", "0"], proc.stdout + proc.stderr


@pytest.mark.parametrize("args", [["check", "--no-cache", "-q", "."], ["kernels", "--no-compile", "."]],
                         ids=["check", "kernels"])
def test_a_cuda_only_run_never_imports_libcst(tmp_path, args):
    # libcst reads setup.py and Python files that compile CUDA; a project with neither (a .py
    # file that names no compile call aside) must not pay its import (0.15 s: kernels paid it)
    (tmp_path / "k.cuh").write_text("__global__ void k() {}\nvoid h() { k<<<1, 100>>>(); }\n")
    (tmp_path / "plot.py").write_text("import sys\nprint(sys.argv)\n")
    code = (f"import sys; sys.argv = ['occlint', *{args!r}];\n"
            "from occlint.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('libcst' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.split()[-1] == "False", proc.stdout + proc.stderr
    assert "k.cuh" in proc.stdout or args[0] == "check", proc.stdout


def test_a_warm_discovery_reads_no_header_it_knows(tmp_path, monkeypatch):
    """What each header was found to be (CUDA, or waiting for the walk's macros) is kept in the
    cache folder by its inode, size, mtime and ctime: a warm run reads no header it already
    knows as CUDA (tiny-cuda-nn: 798 vendored headers, 170 -> 60 ms), nor a C++ source it knows
    launches through the driver API or not (cuda-samples' 458: 20 ms), and an edited one is read
    again. Discovery never creates the cache folder."""
    import json
    from pathlib import Path

    from occlint import discover
    from occlint.config import Config
    from occlint.toolchain import cache

    (tmp_path / "a.cu").write_text("__global__ void a() {}\n")
    (tmp_path / "h.hpp").write_text("__global__ void k() {}\n")
    (tmp_path / "m.hpp").write_text("#define GLOBAL __global__\n")
    (tmp_path / "u.hpp").write_text("GLOBAL void f() {}\n")
    (tmp_path / "p.hpp").write_text("inline int p() { return 1; }\n")
    (tmp_path / "drv.cpp").write_text("void go(CUfunction f) { cuLaunchKernel(f, 1, 1, 1); }\n")
    (tmp_path / "host.cpp").write_text("int main() { return 0; }\n")
    config = Config(root=str(tmp_path), cache_dir=str(tmp_path / "c"))
    reads = []
    real = discover.read_regular
    monkeypatch.setattr(discover, "read_regular", lambda p: reads.append(Path(p).name) or real(p))
    monkeypatch.setattr(cache, "SETTLED_NS", -10**12)     # (the files were written just now)

    def found():
        reads.clear()
        return sorted(Path(p).name for p in discover.discover([str(tmp_path)], config)[0])

    want = ["a.cu", "drv.cpp", "h.hpp", "m.hpp", "u.hpp"]
    assert found() == want and not (tmp_path / "c").exists()     # no folder: nothing kept
    assert cache.claim(tmp_path / "c")
    assert found() == want and {"h.hpp", "m.hpp", "drv.cpp", "host.cpp"} <= set(reads)
    # known: not read (nor a C++ source's driver-API launches)
    assert found() == want and not {"h.hpp", "m.hpp", "drv.cpp", "host.cpp"} & set(reads)
    (tmp_path / "p.hpp").write_text("__global__ void p() {}\n")
    (tmp_path / "host.cpp").write_text("void go(CUfunction f) { cuLaunchKernel(f, 2); }\n")
    want = ["a.cu", "drv.cpp", "h.hpp", "host.cpp", "m.hpp", "p.hpp", "u.hpp"]
    assert found() == want and {"p.hpp", "host.cpp"} <= set(reads)
    for note in (tmp_path / "c").glob("*/*.files"):     # a damaged note: read again, no crash
        rows = json.loads(note.read_text())
        rows["headers"] = {p: [*cache.signature(os.stat(p)), "cuda", [3], None]
                           for p in rows["headers"]}
        note.write_text(json.dumps(rows))
    assert found() == want and {"h.hpp", "drv.cpp"} <= set(reads)


def test_the_gpu_table_needs_no_toml_parser():
    """The GPU table is Python (loaded from its bytecode): a run that needs it, and no config
    file, never imports the TOML parser (its import and the table's parse were ~20 ms)."""
    code = ("import sys\nfrom occlint import gpus\n"
            "print(gpus.arch('sm_90').smem_per_sm, len(gpus.all_gpus()) > 10, 'tomllib' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.split() == ["233472", "True", "False"], proc.stdout + proc.stderr


def test_database_commands_split_as_shlex_does():
    """Database commands are split without shlex (seconds on a large database), exactly as
    shlex.split splits them."""
    import random
    import shlex

    from occlint.toolchain.database import entry_arguments

    cases = ["", "nvcc -c a.cu -o a.o", "  nvcc\t-DX=1 \r\n -I/x  ", 'nvcc -D"A B" a.cu',
             "nvcc -DA='1 2' a.cu", "nvcc a\\ b.cu", "nvcc # not a comment", "nvcc\x0c-c a.cu",
             "nvcc\u00a0-c", "nvcc -c a.cu\n"]
    rng = random.Random(5)
    parts = ["nvcc", " ", "\t", "\n", "-c", "'", '"', "\\", "#", "a.cu", "\x0b", "\u2003", "=",
             '\\"', "\\\\", "''", '""', "$x"]
    cases += ["".join(rng.choices(parts, k=rng.randint(0, 14))) for _ in range(6000)]
    from occlint.toolchain.database import split_command

    for command in cases:
        try:
            want = shlex.split(command)
        except ValueError:      # unbalanced quotes: shlex's error, strict (an options file)
            with pytest.raises(ValueError):
                split_command(command, strict=True)
            continue
        assert entry_arguments({"command": command}) == want, repr(command)
        assert split_command(command, strict=True) == want, repr(command)


def test_gitignore_paths_relative_as_relpath():
    import os

    from occlint.discover import _below

    for full, base in [("/a/b/c", "/a"), ("/a/b", "/a/b"), ("/a/bc", "/a/b"), ("/a", "/a/b"),
                       ("/x/..y", "/x"), ("/r", "/"), ("/a/b/c", "/a/b/")]:
        rel = os.path.relpath(full, base)
        want = None if rel.startswith("..") and not os.path.basename(full).startswith("..") \
            else rel
        assert _below(full, os.path.normpath(base) if base != "/" else base) == want


def test_headers_no_unit_of_the_run_includes_walk_the_project_once(tmp_path, monkeypatch):
    """The project's units, which a header no unit of the run names is looked up among, are
    found once per run: cupy's warm check walked its whole tree for each of 11 such headers
    (0.35 s)."""
    from occlint import discover
    from occlint.config import Config
    from occlint.toolchain.flags import source_views

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "u.cu").write_text('#include "h0.cuh"\n__global__ void k() {}\n')
    for i in range(4):
        (tmp_path / f"h{i}.cuh").write_text(f"#define H{i} {i}\n")
    walks = []
    real = discover.discover
    monkeypatch.setattr(discover, "discover", lambda *a, **k: walks.append(1) or real(*a, **k))
    headers = [str(tmp_path / f"h{i}.cuh") for i in range(1, 4)]
    views = source_views(headers, Config(root=str(tmp_path)))
    assert sorted(views) == headers and len(walks) == 1


def test_includers_index_finds_what_the_include_regex_finds(tmp_path):
    """source_views reads each unit's #include names once for all headers, with the reading
    for_headers uses (includers.included_names): a unit names a header exactly when one of its
    lines is an `#include` of a file of that name, in any folder (not "xa.cuh", not past a
    missing closing quote)."""
    import random
    import re

    from occlint.config import Config
    from occlint.toolchain.flags import _includers
    from occlint.toolchain.includers import _by_name

    rng = random.Random(7)
    parts = [b"#", b"#include", b"# include", b"include", b" ", b"\n", b'"', b"<", b">", b"a.cuh",
             b"b/a.cuh", b"xa.cuh", b"a.cu", b"/", b'#include "a.cuh"\n', b"#include <b/a.cuh>\n"]
    units = []
    for i in range(300):
        unit = tmp_path / f"u{i}.cu"
        unit.write_bytes(b"".join(rng.choices(parts, k=rng.randint(0, 12))))
        units.append(str(unit))
    (tmp_path / "nested.cu").write_bytes(b'#include <x #include "a.cuh"\n')   # no closing >
    (tmp_path / "other.cu").write_bytes(b'#include "xa.cuh"\n')
    units += [str(tmp_path / "nested.cu"), str(tmp_path / "other.cu")]
    header = str(tmp_path / "a.cuh")
    line = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](?:[^">\n]*/)?a\.cuh[">]', re.M)
    want = sorted(u for u in units if line.search(open(u, "rb").read()))
    assert 10 < len(want) < 290 and str(tmp_path / "other.cu") not in want
    got = _includers(header, units, None, Config(root=str(tmp_path)), {})
    assert sorted(got) == want
    assert sorted(_by_name(tuple(units))["a.cuh"]) == want        # for_headers reads the same


def test_a_header_is_parsed_once_for_every_view(tmp_path, monkeypatch):
    """Header contexts are per view (their conditionals differ), but the tree-sitter tree of the
    same bytes is one: a second view reuses it."""
    from occlint.source import context
    from occlint.source.preproc import View

    parses = []
    real = context.parser

    class Counting:
        def parse(self, data):
            parses.append(data)
            return real().parse(data)

    monkeypatch.setattr(context, "parser", lambda: Counting())
    header = tmp_path / "cfg.cuh"
    header.write_text("#ifdef BIG\nconstexpr int kSize = 1024;\n#else\nconstexpr int kSize = 64;\n"
                      "#endif\n")
    small = context.header_context(str(header), View(complete=True))
    big = context.header_context(str(header), View(defines=("BIG",), complete=True))
    assert small is not big and small.view != big.view and small.tree is big.tree
    assert len(parses) == 1


def test_a_headers_constants_are_read_only_when_a_lookup_needs_them(tmp_path):
    """A file's tables read the constants of its project headers on the first name they lack:
    a file that never asks costs no parse of its headers; one that asks gets the header's."""
    from occlint.source import context

    header = tmp_path / "cfg.cuh"
    header.write_text("constexpr int kBlock = 128;\nstruct Pair { int a, b; };\n")
    unit = tmp_path / "k.cu"
    unit.write_text('#include "cfg.cuh"\nconstexpr int kOwn = 64;\n'
                    "__global__ void k(float* x) { x[threadIdx.x] = 1; }\n")

    def built() -> bool:
        return any(key[0] == str(header) for key in context._HEADER_CONTEXTS)

    ctx = context.Context(unit.read_text(), str(unit))     # (an environment lives with it)
    env = ctx.env
    assert not built()                               # parsed and scanned: no header read yet
    assert env.text_value(b"1 + 2") == 3 and not built()     # no name: still none
    assert env.text_value(b"kBlock") == 128 and built()      # a name it lacks: the header's
    assert env.text_value(b"kOwn") == 64 and env.text_value(b"sizeof(Pair)") == 8


def test_a_lookup_parses_only_the_headers_that_could_define_the_name(tmp_path):
    """A name the file lacks comes from the first header (include order) that defines it; a
    header whose text does not have the name is not parsed for it; the answer does not depend
    on which names were asked before; the whole table merges every header's entries."""
    from occlint.source import context

    (tmp_path / "a.cuh").write_text('#pragma once\n#include "b.cuh"\nconstexpr int kA = 1;\n'
                                    "// kBlocky is not kBlock\n")
    (tmp_path / "b.cuh").write_text("#pragma once\nconstexpr int kBlock = 128;\n"
                                    "enum Mode { kFast = 3 };\nstruct Pair { int a, b; };\n")
    (tmp_path / "c.cuh").write_text("#pragma once\nconstexpr int kBlock = 256;\n")
    unit = tmp_path / "k.cu"
    unit.write_text('#include "a.cuh"\n#include "c.cuh"\nconstexpr int kOwn = 64;\n')

    def built() -> set[str]:
        return {os.path.basename(key[0]) for key in context._HEADER_CONTEXTS
                if key[0].startswith(str(tmp_path))}

    held = []

    def fresh():
        context._HEADER_CONTEXTS.clear()
        context._TABLES.clear()
        held[:] = [context.Context(unit.read_text(), str(unit))]   # (its environment's owner)
        return held[0].env

    env = fresh()
    assert env.text_value(b"kA") == 1 and built() == {"a.cuh"}
    assert env.text_value(b"kNowhere") is None and built() == {"a.cuh"}
    # b.cuh answers first; c.cuh's `kBlock = 256` is no enumerator (no enum holds it), so the
    # enumerator lookup that follows the constant's parses no more headers
    assert env.text_value(b"kBlock") == 128 and built() == {"a.cuh", "b.cuh"}
    assert env.text_value(b"kFast") == 3 and env.text_value(b"sizeof(Pair)") == 8
    env = fresh()                       # the same answer when kBlock is the first name asked
    assert env.text_value(b"kBlock") == 128
    assert sorted(env.globals) == [b"kA", b"kBlock", b"kOwn"] and b"kFast" in env.enums.keys()


def test_a_header_is_parsed_for_a_name_only_where_its_text_can_define_it():
    # ggml's fattn-common.cuh was parsed for `type_K` (a template parameter `type_K,`), boost's
    # interval headers for `T` (`sizeof(T)`), vecdotq.cuh for `grid(`: 300 KB of 740 KB of
    # header parses in the 5.24 MB listing found nothing
    from occlint.source.context import _header_test

    header = (b"template <ggml_type type_K, int D> void f(int n_head, dim3 grid) {\n"
              b"  g(grid); int s = sizeof(T); }\n"
              b"enum class Mode : int { kFast = 3, kSlow };\nconstexpr int kBlock{128};\n"
              b"typedef struct { int a; } Pair;\nstruct __align__(8) Twin { int a, b; };\n"
              b"static const int kTable[] = {1, 2};\nusing Real = float;\n")
    defined = {(1, b"kFast"), (1, b"kSlow"), (0, b"kBlock"), (0, b"kTable"), (2, b"Pair"),
               (2, b"Twin"), (2, b"Real")}
    assert all(_header_test(name, kind)(header) for kind, name in defined)    # never missed
    assert not any(_header_test(name, kind)(header) for kind in (0, 1, 2)
                   for name in (b"type_K", b"n_head", b"grid", b"T"))


def test_a_file_without_the_listed_words_lists_nothing():
    """`kernels` skips parsing a file that has none of the words its records are found by: every
    case and fixture file with records has one of them."""
    from pathlib import Path

    from occlint.source import parse
    from occlint.source.grammar import may_hold_constructs

    root = Path(__file__).resolve().parent.parent
    files = [*(root / "fixtures").glob("*.cu*"), *(root / "tests" / "source_cases").glob("*.cu*")]
    assert len(files) > 20
    for f in files:
        data = f.read_bytes()
        sf = parse(data, str(f))
        if sf.kernels or sf.shared or sf.launches or sf.attributes:
            assert may_hold_constructs(data), f
    assert not may_hold_constructs(b"#include <cuda.h>\nint main() { return kBlock; }\n")
    for text in (b"__global__ void k();", b"__shared__ float s[4];", b"k<<<1, 2>>>();",
                 b"::cudaFuncSetAttribute(k, a, 0);", b"cudaLaunchKernel(f, g, b, a, 0, 0);"):
        assert may_hold_constructs(text) and parse(text, "x.cu") != parse(b"", "x.cu"), text


def test_demangling_starts_no_process_and_agrees_with_cxxfilt():
    # cxxfilt's import runs `ldconfig -p` twice; the C++ runtime's __cxa_demangle is loaded by
    # soname instead (the same function cxxfilt calls)
    code = """
import subprocess
started = []
real = subprocess.Popen.__init__
def spy(self, args, *a, **k):
    started.append(args)
    real(self, args, *a, **k)
subprocess.Popen.__init__ = spy
from occlint.toolchain.demangle import demangle
print(demangle("_ZN2ns6reduceILi256EfEEvPKT0_PS1_i"))
print(len(started))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["void ns::reduce<256, float>(float const*, float*, int)", "0"]
    import cxxfilt

    from occlint.toolchain.demangle import demangle
    for name in ("_Z9vectorAddPKfS0_Pfi", "_ZN12_GLOBAL__N_16kernelEPf", "_Z5smallIfLj128EEvPT_",
                 "_Zbad", "plain"):
        want = cxxfilt.demangle(name) if name.startswith("_Z") and name != "_Zbad" else name
        assert demangle(name) == want, name


def test_the_lazy_source_api_gives_functions_in_any_import_order():
    """occlint.source loads its parser on first use (PEP 562): a name it exports must not also
    be a submodule's, or importing that submodule first leaves the module where the function
    should be (facts.array_registers then got a module and quietly dropped its floor)."""
    code = """
from occlint.source import launch_template_args
from occlint.source import specialize, Specialized, parse, for_arch
print(all(callable(f) and not hasattr(f, "__path__") and type(f).__name__ != "module"
          for f in (specialize, launch_template_args, parse, for_arch, Specialized)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True"]


def test_thread_map_yields_in_order_raises_at_its_turn_and_stops():
    import threading
    import time

    from occlint.process import thread_map

    def slow_first(i):
        time.sleep(0.05 if i == 0 else 0)
        if i == 3:
            raise ValueError("three")
        return i * i

    results = []
    with pytest.raises(ValueError, match="three"):
        for value in thread_map(slow_first, list(range(6)), 2):
            results.append(value)
    assert results == [0, 1, 4]

    started = []
    gate = threading.Event()

    def blocked(i):
        started.append(i)
        gate.wait(5)
        return i

    pool = thread_map(blocked, list(range(10)), 2)
    end = time.monotonic() + 10             # both workers busy (a loaded host starts them late)
    while len(started) < 2 and time.monotonic() < end:
        time.sleep(0.005)
    pool.stop()
    gate.set()
    pool.join()
    assert sorted(started) == [0, 1]          # the queued items never started


def test_real_path_is_realpath(tmp_path):
    """files.real_path (a memo per folder) answers what os.path.realpath does: symlinked
    folders and files, relative and absolute links, chains, `..` after a link, `.`, missing
    components, on 3,000 random paths sharing one memo."""
    import random

    from occlint.files import real_path

    root = tmp_path / "t"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "d").mkdir()
    (root / "a" / "b" / "c" / "f.cu").write_text("")
    (root / "d" / "g.cu").write_text("")
    os.symlink("a/b", root / "lb")                       # relative folder link
    os.symlink(root / "d", root / "a" / "ld")            # absolute folder link
    os.symlink("../../d/g.cu", root / "a" / "b" / "lf.cu")   # relative file link
    os.symlink("lb", root / "chain")                     # a link to a link
    os.symlink("nowhere", root / "dangling")
    names = ["a", "b", "c", "d", "lb", "ld", "chain", "dangling", "f.cu", "g.cu", "lf.cu",
             "..", ".", "missing"]
    rng = random.Random(7)
    memo: dict[str, str] = {}
    for _ in range(3000):
        parts = rng.choices(names, k=rng.randint(1, 6))
        path = os.path.join(str(root), *parts)
        assert real_path(path, memo) == os.path.realpath(path), path


def test_a_unit_whose_quoted_include_resolves_beside_it_to_another_file_is_no_includer(tmp_path):
    # flash-attention: `kernels csrc/flash_attn/src/flash.h` compiled
    # hopper/flash_prepare_scheduler.cu, whose `#include "flash.h"` is hopper/flash.h
    from occlint.config import Config
    from occlint.toolchain.flags import _includers
    from occlint.toolchain.includers import for_headers, forget

    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
    (tmp_path / "a" / "flash.h").write_text("__global__ void a_kernel(int* p) {}\n")
    (tmp_path / "b" / "flash.h").write_text("__global__ void b_kernel(int* p) {}\n")
    (tmp_path / "b" / "unit.cu").write_text('#include "flash.h"\n')
    (tmp_path / "c" / "unit.cu").write_text('#include "../a/flash.h"\n')
    (tmp_path / "c" / "angle.cu").write_text("#include <flash.h>\n")    # the include path decides
    config = Config(root=str(tmp_path))
    forget()
    header = str(tmp_path / "a" / "flash.h")
    got = sorted(u for u, _h in for_headers([header], [], config, None))
    assert got == [str(tmp_path / "c" / "angle.cu"), str(tmp_path / "c" / "unit.cu")]
    units = [str(tmp_path / d / n) for d, n in (("b", "unit.cu"), ("c", "unit.cu"), ("c", "angle.cu"))]
    assert sorted(_includers(header, units, None, config, {})) == sorted(units[1:])
    assert _includers(str(tmp_path / "b" / "flash.h"), units, None, config, {})[0] == units[0]


def test_chevron_callees_equal_the_word_pattern():
    """forwarded._chevron_callees reads the name before each `<<<` backwards instead of running
    `\\b(name)\\s*<<<` over the whole text (a leading `\\b` tests every byte): same names."""
    import random
    import re

    from occlint.source.forwarded import _chevron_callees

    old = re.compile(rb"\b([A-Za-z_]\w*)\s*<<<")
    texts = [b"k<<<1, 2>>>();", b"ns::k <<<g, b>>>(x); f\n<<<1,1>>>()", b"1k<<<1,1>>>",
             b"a<<<<<<", b") <<<1, 2>>>", b"<<<", b"k\t\r\n <<<", b"_x9 <<<", b""]
    rnd = random.Random(7)
    texts += [bytes(rnd.choice(b"ab1_ <\t\n(;") for _ in range(rnd.randint(0, 16)))
              for _ in range(20000)]
    for t in texts:
        assert _chevron_callees(t) == {m.group(1) for m in old.finditer(t)}, t


def test_template_aliases_equal_the_per_name_patterns():
    """launches._aliases reads a function's `using`, `typedef` and `constexpr` definitions once;
    each name gets what the three per-name searches (in that order) found first."""
    import re

    from occlint.source.launches import _aliases

    def old(body: bytes, w: bytes):
        m = re.search(rb"\busing\s+" + re.escape(w) + rb"\s*=([^;]*);", body) or \
            re.search(rb"\btypedef\b([^;]*)\b" + re.escape(w) + rb"\s*;", body) or \
            re.search(rb"\bconstexpr\b[^;=()]*\b" + re.escape(w) + rb"\s*=([^;]*);", body)
        return m.group(1) if m else None

    body = (b"void f() { constexpr int T = kN * 2; typedef Traits<kM> T; using K = Tr<kP>;\n"
            b"typedef struct { int a; } S; constexpr int a = 1, b = 2; if constexpr (x) {}\n"
            b"constexpr auto smem = bytes_for<T, kQ>(); using namespace std; using K = Other;\n"
            b"typedef int Arr[4]; constexpr int x1 = 3; typedef foo x1; }")
    names = set(re.findall(rb"[A-Za-z_]\w*", body))
    assert {w: _aliases(body)[w] for w in names if w in _aliases(body)} == \
        {w: old(body, w) for w in names if old(body, w) is not None}
    assert _aliases(body)[b"T"] == b" Traits<kM> " and _aliases(body)[b"K"] == b" Tr<kP>"


def test_a_ptxas_report_is_read_for_frames_once():
    # parse_usage and with_callee_spills both ask for a report's frames: one reading
    from occlint.toolchain.ptxas import function_frames

    report = ("ptxas info    : Function properties for _Z1fv\n"
              "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n")
    assert function_frames(report) == {"_Z1fv": (8, 4, 4)}
    assert function_frames(report) is function_frames(report)


def test_the_hints_walk_the_project_once(tmp_path, monkeypatch):
    # the missing-header hint (project_folders) and the undefined-name hint (_guarded_defines)
    # read the same walk of the project (libraries.project_files), not one each
    from occlint.toolchain import libraries

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "dark.h").write_text("#ifdef GPU\n#define BLOCK 512\n#endif\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "dark.h").write_text("")
    walks = []
    real = os.walk
    monkeypatch.setattr(os, "walk", lambda *a, **k: (walks.append(a[0]), real(*a, **k))[1])
    root = str(tmp_path)
    assert libraries.project_folders("dark.h", root) == ["inc"]
    assert libraries._guarded_defines(root)[b"BLOCK"] == ("inc/dark.h", 2, "ifdef GPU")
    assert walks == [root]


def test_the_project_file_list_is_kept_in_the_cache_until_a_folder_changes(tmp_path, monkeypatch):
    # the missing-header hint listed the whole project on every warm run (cuda-samples: 917
    # folders, 16-60 ms); the list is kept in the cache with each folder's modification time
    from occlint.toolchain import libraries
    from occlint.toolchain.cache import Cache

    root = tmp_path / "p"
    (root / "inc").mkdir(parents=True)
    (root / "inc" / "a.h").write_text("")
    old = time.time() - 60                  # settled folders (a just-changed one is not kept)
    for d in (root, root / "inc"):
        os.utime(d, (old, old))
    cache = Cache(tmp_path / "cache")
    walks = []
    real = os.walk
    monkeypatch.setattr(os, "walk", lambda *a, **k: (walks.append(a[0]), real(*a, **k))[1])

    def fresh_process():
        libraries._PROJECT_FILES.clear()
        libraries._FILE_NAMES.clear()

    fresh_process()
    assert libraries.project_folders("a.h", str(root), cache) == ["inc"] and len(walks) == 1
    fresh_process()
    assert libraries.project_folders("a.h", str(root), cache) == ["inc"] and len(walks) == 1
    (root / "src").mkdir()                  # the root folder's time changes: listed again
    (root / "src" / "a.h").write_text("")
    os.utime(root, (old + 1, old + 1))
    fresh_process()
    assert libraries.project_folders("a.h", str(root), cache) == ["inc", "src"]
    assert len(walks) == 2
    fresh_process()                         # not kept: `src` changed less than 2 s ago
    assert libraries.project_folders("a.h", str(root), cache) == ["inc", "src"]
    assert len(walks) == 3
    from occlint.toolchain.cache import remove
    assert list(cache.root.glob("*/*.files"))
    remove(cache.root)                      # `occlint clean` removes it with the rest
    assert not list(cache.root.glob("*/*.files"))


_CYCLES_UNIT = """#include "cfg.cuh"
#define LAUNCH(k, n) k<<<n, kBlock>>>()
constexpr int kOwn = 64;
__global__ void k(float* x) { __shared__ float s[kOwn]; s[threadIdx.x] = x[threadIdx.x]; }
void run(int n) {
    dim3 block(kBlock);
    k<<<n, block>>>(nullptr);
    LAUNCH(k, n);
    switch (n) { case 1: k<<<1, kOwn>>>(nullptr); break; }
}
"""


def test_a_parsed_file_is_freed_without_the_collector(tmp_path):
    """A context, its environment's callbacks, its header tables and its launch reader hold
    no cycle, and `release` breaks a SourceFile's own (it and its Parsed): a listing's files
    are freed as it goes, not by the collector, which walked each file's whole graph (3% of a
    parse-only listing)."""
    import gc
    import weakref

    from occlint.source import build
    from occlint.source.context import Context
    from occlint.source.launches import LaunchReader

    (tmp_path / "cfg.cuh").write_text("constexpr int kBlock = 128;\n")
    unit = tmp_path / "k.cu"
    unit.write_text(_CYCLES_UNIT)
    gc.collect()
    gc.disable()
    try:
        ctx = Context(_CYCLES_UNIT, str(unit))
        reader = LaunchReader(ctx)
        assert len(reader.chevrons()) == 2 and ctx.env.text_value(b"kBlock") == 128
        gone = weakref.ref(ctx)
        del ctx, reader
        assert gone() is None
        sf = build.parse(_CYCLES_UNIT, str(unit))
        assert len(sf.launches) == 3 and sf.launches[0].block.x == 128
        gone = weakref.ref(sf.parsed.ctx)
        build.release(sf)
        assert gone() is None
    finally:
        gc.enable()


def test_a_header_outside_the_project_is_not_looked_for_among_its_units(tmp_path, monkeypatch):
    """A folder listed beside the project (`kernels . /other/lib`) is no project unit's: a
    header there that no listed unit includes, with no compile database, is not searched for
    among the project's units. That search walked the whole project (cuda-samples for each of
    ggml's headers in the bench's listing) and could only find units whose include the
    preprocessor resolves to another file, so nothing read changes: the same listing, without
    the walk."""
    import json

    from conftest import run_main

    from occlint import discover

    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    (project / "occlint.toml").write_text("")
    (project / "src" / "u.cu").write_text("__global__ void u() {}\n")
    (project / "src" / "lonely.cuh").write_text("__global__ void l() {}\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "lib.cuh").write_text(
        "__global__ void k(float* p) { p[threadIdx.x] = 0; }\n"
        "inline void go(float* p) { k<<<4, 128>>>(p); }\n")
    walked = []
    real = discover.discover
    monkeypatch.setattr(discover, "discover", lambda paths, *a, **k: walked.append(
        [os.path.basename(os.path.abspath(p)) for p in paths]) or real(paths, *a, **k))
    proc = run_main("kernels", "src/u.cu", str(outside), "--no-compile", "--json", "-j", "1",
                    cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert [r["block"] for r in json.loads(proc.stdout) if r["kind"] == "launch"] == [128]
    assert walked == [["u.cu"], ["elsewhere"]]     # the listing's own discovery only
    walked.clear()              # a header inside the project: its units are searched, as before
    proc = run_main("kernels", "src/lonely.cuh", "--no-compile", "-j", "1", cwd=project)
    assert proc.returncode == 0 and walked == [["lonely.cuh"], ["p"]], (walked, proc.stderr)


def test_two_processes_keep_each_others_header_kinds(tmp_path, monkeypatch):
    """`kernels` discovers its folders in processes; each keeps what it read in the project's
    header-kinds record. The second to save keeps the first's rows (it reads the record again
    before writing), so neither process's headers are read again on every run."""
    from occlint.config import Config
    from occlint.discover import _Kinds
    from occlint.toolchain import cache

    monkeypatch.setattr(cache, "SETTLED_NS", -10**12)     # (the files were written just now)
    (tmp_path / "a.hpp").write_text("__global__ void a() {}\n")
    (tmp_path / "b.hpp").write_text("__global__ void b() {}\n")
    config = Config(root=str(tmp_path), cache_dir=str(tmp_path / "c"))
    assert cache.claim(tmp_path / "c")
    one, two = _Kinds.open(config), _Kinds.open(config)     # (as two processes open it)
    one.put(str(tmp_path / "a.hpp"), ("cuda", set(), set()))
    two.put(str(tmp_path / "b.hpp"), ("cuda", {b"LAUNCH"}, set()))
    one.save()
    two.save()
    again = _Kinds.open(config)
    assert again.get(str(tmp_path / "a.hpp"))[0] == "cuda"
    assert again.get(str(tmp_path / "b.hpp")) == ("cuda", {b"LAUNCH"}, set())


def test_a_folder_reached_through_a_link_reads_the_gitignores_above_it(tmp_path):
    """Discovery reads the .gitignore files of the folders between the project root and a
    given folder; a given folder reached through a link into the project (macOS's /tmp ->
    /private/tmp, a linked checkout) was compared unresolved with the resolved root, so those
    .gitignore files were not read and ignored files were linted."""
    from occlint import discover
    from occlint.config import Config

    root = tmp_path / "real"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "occlint.toml").write_text("")
    (root / "sub" / ".gitignore").write_text("gen.cu\n")
    for name in ("gen.cu", "k.cu"):
        (root / "sub" / "deeper" / name).write_text("__global__ void k() {}\n")
    os.symlink(root, tmp_path / "link")
    config = Config(root=str(root))
    found = discover.discover([str(tmp_path / "link" / "sub" / "deeper")], config)[0]
    assert [os.path.basename(f) for f in found] == ["k.cu"]
