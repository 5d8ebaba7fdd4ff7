"""Issue 10 item 2: the cache writes only in a folder occlint created (or that carries its
CACHEDIR.TAG), never over existing files; `clean` removes only what occlint wrote."""

from __future__ import annotations

import os

from conftest import SCALE_100, run_cli
from occlint.toolchain.cache import TAG, Cache, looks_like_cache

KEY = "ab" + "0" * 62


def _put(root, dep) -> Cache:
    cache = Cache(root)
    cache.put(KEY, [str(dep)], {"usages": [], "errors": []})
    return cache


def _tree(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(root.rglob("*")) if not p.is_symlink()}


def test_an_existing_folder_without_the_tag_is_never_written(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "src.cu").write_text(SCALE_100)
    before = _tree(tmp_path)
    cache = _put(tmp_path, tmp_path / "src.cu")
    assert cache.refused and cache.writes == 0
    assert _tree(tmp_path) == before            # no .gitignore overwrite, no CACHEDIR.TAG


def test_a_new_folder_is_claimed_and_a_tagged_one_reused(tmp_path):
    dep = tmp_path / "src.cu"
    dep.write_text(SCALE_100)
    root = tmp_path / "deep" / "cache"
    assert _put(root, dep).writes == 1
    assert looks_like_cache(root) and (root / ".gitignore").read_text().endswith("*\n")
    assert Cache(root).get(KEY) is not None
    # a user's own .gitignore inside the tagged cache is never replaced
    (root / ".gitignore").write_text("mine\n")
    (root / "CACHEDIR.TAG").unlink()
    (root / "CACHEDIR.TAG").write_text(TAG)
    _put(root, dep)
    assert (root / ".gitignore").read_text() == "mine\n"


def test_a_planted_link_is_never_written_through(tmp_path):
    dep = tmp_path / "src.cu"
    dep.write_text(SCALE_100)
    victim = tmp_path / "victim"
    victim.mkdir()
    root = tmp_path / "cache"
    root.mkdir()
    (root / "CACHEDIR.TAG").write_text(TAG)
    os.symlink(victim, root / "ab")
    _put(root, dep)
    assert list(victim.iterdir()) == []
    # a cache folder that is itself a link is not occlint's
    os.symlink(victim, tmp_path / "linked")
    assert _put(tmp_path / "linked", dep).refused
    assert list(victim.iterdir()) == []


def test_clean_removes_only_its_entries(tmp_path):
    dep = tmp_path / "src.cu"
    dep.write_text(SCALE_100)
    root = tmp_path / ".occlint_cache"
    _put(root, dep)
    (root / "notes.txt").write_text("keep me\n")
    (root / "ab" / "mine.json").write_text("{}")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / ("cd" + "1" * 62 + ".json")).write_text("{}")
    os.symlink(victim, root / "cd")
    proc = run_cli("clean", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "removed 1 entry (" in proc.stdout
    assert (root / "notes.txt").read_text() == "keep me\n"
    assert (root / "ab" / "mine.json").exists()
    assert not (root / "ab" / f"{KEY}.json").exists()
    assert len(list(victim.iterdir())) == 1       # nothing deleted through the link
    # once only occlint's files are left, the folder goes
    (root / "notes.txt").unlink()
    (root / "ab" / "mine.json").unlink()
    (root / "cd").unlink()
    assert run_cli("clean", cwd=tmp_path).returncode == 0
    assert not root.exists() and dep.exists()


def test_cache_dir_dot_then_check_and_clean_keep_the_project(tmp_path, nvcc_path):
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "k.cu").write_text(SCALE_100)
    (tmp_path / "occlint.toml").write_text('cache-dir = "."\n')
    before = _tree(tmp_path)
    proc = run_cli("check", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "compile cache is off" in proc.stderr
    assert _tree(tmp_path) == before
    # even with a tag planted in the project, clean deletes nothing but entries
    (tmp_path / "CACHEDIR.TAG").write_text(TAG)
    proc = run_cli("clean", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {k: v for k, v in _tree(tmp_path).items() if k != "CACHEDIR.TAG"} == before
    (tmp_path / "CACHEDIR.TAG").unlink()
    proc = run_cli("clean", cwd=tmp_path)
    assert proc.returncode == 2 and "refusing" in proc.stderr
    assert _tree(tmp_path) == before
