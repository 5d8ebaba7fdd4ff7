"""Issue 10 item 2: the cache writes only in a folder occlint created (or that carries its
CACHEDIR.TAG), never over existing files; `clean` removes only what occlint wrote."""

from __future__ import annotations

import os
import time

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
    # a shard name the entry did not take (its dependency list's name is a hash of paths
    # that change with tmp_path: "cd" was taken once in 256 runs)
    shard = next(n for n in ("cd", "ce", "cf", "d0") if not (root / n).exists())
    (victim / (shard + "1" * 62 + ".json")).write_text("{}")
    os.symlink(victim, root / shard)
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
    (root / shard).unlink()
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


# --- remembered file hashes (hashes.idx): a warm run need not read every header -------------


def _reads(monkeypatch) -> list[str]:
    from occlint.toolchain import cache as cache_mod

    seen: list[str] = []
    real = cache_mod.read_regular

    def counting(path):
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(cache_mod, "read_regular", counting)
    return seen


def test_a_settled_file_hash_is_taken_from_the_index_until_the_file_is_written(tmp_path, monkeypatch):
    from occlint.toolchain import cache as cache_mod

    monkeypatch.setattr(cache_mod, "SETTLED_NS", 0)     # the test's files count as settled
    dep = tmp_path / "helper.cuh"
    dep.write_text("#define BLOCK 256\n")
    root = tmp_path / "cache"
    first = _put(root, dep)
    first.hashes.save()
    assert str(dep) in (root / cache_mod.HASHES).read_text()
    reads = _reads(monkeypatch)
    again = cache_mod.FileHashes(root)
    assert again(str(dep)) == first.hashes(str(dep))
    assert str(dep) not in reads                         # from the index: not read
    # same size, mtime put back: the write still changed ctime, so the file is read again
    # (a file's times come from a coarse clock: the write must land on a later tick, as the
    # 2 s SETTLED_NS guarantees outside this test)
    st = dep.stat()
    time.sleep(0.05)
    dep.write_text("#define BLOCK 512\n")
    os.utime(dep, ns=(st.st_atime_ns, st.st_mtime_ns))
    third = cache_mod.FileHashes(root)
    assert third(str(dep)) != first.hashes(str(dep))
    assert str(dep) in reads
    assert Cache(root).get(KEY) is None                  # the stored result no longer holds


def test_a_recent_file_is_not_remembered_and_a_foreign_index_is_not_read(tmp_path):
    from occlint.toolchain import cache as cache_mod

    dep = tmp_path / "just_written.cuh"
    dep.write_text("#define BLOCK 256\n")
    root = tmp_path / "cache"
    cache = _put(root, dep)
    cache.hashes.save()
    assert not (root / cache_mod.HASHES).exists()        # changed < 2 s ago: hashed next run
    # a planted index in a folder that is not occlint's cache is ignored
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    st = dep.stat()
    (foreign / cache_mod.HASHES).write_text(
        '{"format": %d, "files": {"%s": [%d, %d, %d, %d, "%s"]}}'
        % (cache_mod.FORMAT, dep, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, "0" * 64))
    assert cache_mod.FileHashes(foreign)(str(dep)) != "0" * 64


def test_the_index_is_never_written_through_a_link_and_clean_removes_it(tmp_path, monkeypatch):
    from occlint.toolchain import cache as cache_mod

    monkeypatch.setattr(cache_mod, "SETTLED_NS", 0)
    dep = tmp_path / "src.cu"
    dep.write_text(SCALE_100)
    root = tmp_path / ".occlint_cache"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    _put(root, dep)
    os.symlink(victim, root / cache_mod.HASHES)
    hashes = cache_mod.FileHashes(root)
    hashes(str(dep))
    hashes.save()
    assert victim.read_text() == "keep\n"
    (root / cache_mod.HASHES).unlink()
    hashes = cache_mod.FileHashes(root)
    hashes(str(dep))
    hashes.save()
    assert (root / cache_mod.HASHES).is_file()
    assert run_cli("clean", cwd=tmp_path).returncode == 0
    assert not root.exists()
