"""The findings cache (occlint.results): a warm `check` whose inputs are unchanged reuses the
findings without parsing; anything they came from that changes (the file, a header the
preprocessor read, a header that did not exist, the config) makes it lint again. A header-only
project, so no compile is involved: the compile cache's own tests cover the usage."""

from __future__ import annotations

import json

import pytest
from conftest import run_main

KERNEL = ('#include "cfg.h"\n'
          "__global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n"
          "void run(float* x) { scale<<<4096, BLOCK>>>(x); }\n")


@pytest.fixture
def parses(monkeypatch):
    """How many times a run parsed its files (Project.read)."""
    from occlint.project import Project

    calls = []
    real = Project.read.__func__

    def read(cls, texts, views=None):
        calls.append(sorted(texts))
        return real(cls, texts, views)

    monkeypatch.setattr(Project, "read", classmethod(read))
    return calls


def check(tmp_path, *extra):
    proc = run_main("check", "--output-format", "json", *extra, "k.cuh", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return [(f["code"], f["location"]["row"], f["message"]) for f in json.loads(proc.stdout)]


def test_an_unchanged_run_reuses_its_findings_without_parsing(tmp_path, parses):
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    first = check(tmp_path)
    assert [code for code, *_ in first] == ["OCC031"] and len(parses) == 1
    full = run_main("check", "--output-format", "json", "k.cuh", cwd=tmp_path).stdout
    assert len(parses) == 1                  # the second and third runs parsed nothing
    assert json.loads(full) == json.loads(
        run_main("check", "--no-cache", "--output-format", "json", "k.cuh", cwd=tmp_path).stdout)
    assert len(parses) == 2                  # --no-cache lints (and stores nothing)


def test_a_changed_header_is_seen(tmp_path, parses):
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    assert [c for c, *_ in check(tmp_path)] == ["OCC031"]
    (tmp_path / "cfg.h").write_text("#define BLOCK 128\n")
    assert check(tmp_path) == []
    assert len(parses) == 2


def test_a_header_that_appears_is_seen(tmp_path, parses):
    # the include was looked for and not found: its absence is part of the entry
    (tmp_path / "k.cuh").write_text(KERNEL)
    assert check(tmp_path) == []
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    assert [c for c, *_ in check(tmp_path)] == ["OCC031"]
    assert len(parses) == 2


def test_the_config_and_the_file_are_part_of_the_key(tmp_path, parses):
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    assert [c for c, *_ in check(tmp_path)] == ["OCC031"]
    assert check(tmp_path, "--ignore", "OCC031") == []
    (tmp_path / "k.cuh").write_text(KERNEL.replace("2.0f", "3.0f"))
    assert [c for c, *_ in check(tmp_path)] == ["OCC031"]
    assert len(parses) == 3


@pytest.mark.parametrize("damage", ["span", "fix", "not-a-list", "junk"])
def test_a_damaged_entry_is_a_miss(tmp_path, parses, damage):
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    first = check(tmp_path)
    [entry] = (tmp_path / ".occlint_cache").rglob("*.findings")
    data = json.loads(entry.read_text())
    if damage == "span":
        data["findings"][0]["span"] = "many"           # four characters: never four numbers
    elif damage == "fix":
        data["findings"][0]["fix"] = {"message": 1, "edits": [], "applicability": "safe"}
    elif damage == "not-a-list":
        data["findings"] = {"OCC031": 1}
    if damage == "junk":
        entry.write_bytes(b"\x00\xff not json")
    else:
        entry.write_text(json.dumps(data))
    assert check(tmp_path) == first
    assert len(parses) == 2
    assert check(tmp_path) == first and len(parses) == 2      # rewritten


def test_the_html_report_always_parses(tmp_path, parses):
    (tmp_path / "k.cuh").write_text(KERNEL)
    (tmp_path / "cfg.h").write_text("#define BLOCK 100\n")
    check(tmp_path)
    proc = run_main("check", "--output-format", "html:r.html", "k.cuh", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert len(parses) == 2 and "scale" in (tmp_path / "r.html").read_text()


def test_edited_rule_words_are_not_read_from_an_old_entry(tmp_path, parses, monkeypatch):
    # the fingerprint covers the rules' words: here a copy of them, so that the checkout's own
    # files are never touched (a test that bumped a page's mtime changed every concurrent test
    # run's fingerprint, and another worker's warm run then linted again)
    import os
    import shutil

    from occlint import registry, results

    words = tmp_path / "rules"
    shutil.copytree(registry.rules_dir(), words)
    monkeypatch.setattr(registry, "rules_dir", lambda: words)
    project = tmp_path / "p"
    project.mkdir()
    (project / "k.cuh").write_text(KERNEL)
    (project / "cfg.h").write_text("#define BLOCK 100\n")
    check(project)
    check(project)
    assert len(parses) == 1
    before = results._code()
    page = words / "OCC031.toml"
    stat = page.stat()
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert results._code() != before
    check(project)
    assert len(parses) == 2


def test_the_key_names_which_view_each_file_has():
    """The key lists each distinct preprocessor view once and each file by its view's number
    (tiny-cuda-nn: 358 views, 24 distinct): files that trade views, or one view changed, give
    another key."""
    from occlint.config import Config
    from occlint.engine import _results_key
    from occlint.source.preproc import View

    config = Config(root="/p")
    a, b = View(arch="sm_90", defines=("A=1",)), View(arch="sm_90", defines=("B=1",))
    texts = {"/p/x.cu": "x", "/p/y.cu": "y"}
    inputs = [(p, [], config, (), frozenset()) for p in texts]

    def key(vx, vy, included=None):
        return _results_key(inputs, texts, included or {}, {"/p/x.cu": vx, "/p/y.cu": vy,
                                                           "/p/h.cuh": vy}, config)

    assert key(a, b) == key(a, b)
    assert len({key(a, b), key(b, a), key(a, a), key(b, b)}) == 4
    assert key(a, b, {"/p/h.cuh": "h"}) != key(a, a, {"/p/h.cuh": "h"})
    assert key(a, View(arch="sm_90", defines=("B=2",))) != key(a, b)


def test_a_hit_walks_no_includer_and_an_includer_edit_is_seen(tmp_path, parses, nvcc_path,
                                                             monkeypatch):
    """A header's view holds the macros its includers define before the `#include`; the key
    holds what the view is made of (the includers and their flags), not the walk that makes it,
    so a hit walks nothing (tiny-cuda-nn: 0.70 -> 0.45 s warm). The walk read the includer, so
    an edit of it is a miss that lints again."""
    from occlint.source import preproc

    walks = []
    real = preproc.macros_at_all
    monkeypatch.setattr(preproc, "macros_at_all", lambda *a: walks.append(1) or real(*a))
    (tmp_path / "k.cuh").write_text(KERNEL.replace('#include "cfg.h"\n', ""))
    (tmp_path / "u.cu").write_text('#define BLOCK 100\n#include "k.cuh"\n')
    args = ("--arch", "sm_90")
    assert [c for c, *_ in check(tmp_path, *args)] == ["OCC031"]
    assert len(parses) == 1 and walks
    walked = len(walks)
    assert [c for c, *_ in check(tmp_path, *args)] == ["OCC031"]
    assert len(parses) == 1 and len(walks) == walked        # a hit: no parse, no walk
    (tmp_path / "u.cu").write_text('#define BLOCK 128\n#include "k.cuh"\n')
    assert check(tmp_path, *args) == []
    assert len(parses) == 2
