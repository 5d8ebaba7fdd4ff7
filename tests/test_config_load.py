"""Config files: discovery, `extend`, validation with suggestions, CLI overrides."""

from __future__ import annotations

import pytest
from conftest import run_cli, run_main

from occlint.config import Config, find_config_file, load_config
from occlint.errors import OcclintError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_closest_file_wins_and_pyproject_needs_the_table(tmp_path):
    write(tmp_path / "occlint.toml", "min-occupancy = 0.25\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path / "sub" / "deep" / "k.cu", "")
    assert find_config_file(tmp_path / "sub" / "deep" / "k.cu") == tmp_path / "occlint.toml"
    write(tmp_path / "sub" / "pyproject.toml", "[tool.occlint]\narch = ['sm_80']\n")
    config = load_config(start=tmp_path / "sub" / "deep")
    assert config.arch == ("sm_80",) and config.min_occupancy == 0.5
    assert config.root == str((tmp_path / "sub").resolve())


def test_a_pyproject_that_does_not_name_occlint_is_not_parsed(tmp_path, monkeypatch):
    """A project's own pyproject.toml without the word is not occlint's config and is not
    parsed (the TOML parser's import was ~15 ms of a warm run), valid or not; a key spelled
    with escapes is still read."""
    from occlint import config

    parsed = []
    real = config._read_toml
    monkeypatch.setattr(config, "_read_toml", lambda f: parsed.append(f) or real(f))
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n[broken\n")
    write(tmp_path / "k.cu", "__global__ void k() {}\n")
    assert find_config_file(tmp_path / "k.cu") is None and parsed == []
    write(tmp_path / "pyproject.toml", '[tool."\\u006fcclint"]\narch = ["sm_80"]\n')
    assert find_config_file(tmp_path / "k.cu") == tmp_path / "pyproject.toml"
    assert load_config(start=tmp_path).arch == ("sm_80",)


def test_extend_inherits_and_overrides(tmp_path):
    write(tmp_path / "base.toml", "min-occupancy = 0.25\ncliff-margin = 4\nignore = ['OCC033']\n")
    write(tmp_path / "proj" / ".occlint.toml", 'extend = "../base.toml"\ncliff-margin = 6\n')
    config = load_config(start=tmp_path / "proj")
    assert (config.min_occupancy, config.cliff_margin, config.ignore) == (0.25, 6, ("OCC033",))


def test_kebab_case_keys_and_values(tmp_path):
    write(tmp_path / "occlint.toml", """
arch = ["8.6", "sm_90"]
gpu = "a100"
select = ["OCC0"]
per-file-ignores = { "legacy/*" = ["OCC031"] }
include-dirs = ["include"]
compile-timeout = 60
""")
    config = load_config(start=tmp_path)
    assert config.arch == ("sm_86", "sm_90")
    assert config.per_file_ignores == (("legacy/*", ("OCC031",)),)
    assert config.include_dirs == (str((tmp_path / "include").resolve()),)
    assert config.compile_timeout == 60.0


@pytest.mark.parametrize("text, words", [
    ("min_occupancy = 0.6", ["unknown key `min_occupancy`", "did you mean `min-occupancy`?"]),
    ("cliff-margn = 4", ["did you mean `cliff-margin`?"]),
    ("min-occupancy = 50", ["`min-occupancy` must be a fraction", "0.5, not 50"]),
    ("select = ['OCC01O']", ["unknown rule code `OCC01O`", "did you mean `OCC010`?"]),
    ("arch = ['sm_99']", ["`arch`"]),
    ("jobs = 0", ["`jobs` must be a positive integer"]),
    ("gpu = 'h1000'", ["`gpu` names unknown GPU"]),
])
def test_bad_config_is_one_clear_line(tmp_path, text, words):
    write(tmp_path / "occlint.toml", text + "\n")
    with pytest.raises(OcclintError) as err:
        load_config(start=tmp_path)
    message = str(err.value)
    assert "occlint.toml" in message and "\n" not in message
    for word in words:
        assert word in message


def test_cli_reports_config_errors_with_exit_2(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.occlint]\nmin_occupancy = 0.6\n")
    write(tmp_path / "k.cu", "__global__ void k() {}\n")
    r = run_main("check", str(tmp_path), "--no-cache")
    assert r.returncode == 2
    assert r.stderr.strip().startswith("occlint: error:") and "min-occupancy" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_flags_override_the_file(tmp_path):
    write(tmp_path / "occlint.toml", "min-occupancy = 0.1\narch = ['sm_90']\n")
    write(tmp_path / "k.cu", """
__global__ void saxpy(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
void run(float* y, const float* x, int n) { saxpy<<<(n + 31) / 32, 32>>>(y, x, n); }
""")
    quiet = run_cli("check", str(tmp_path), "--output-format", "concise", "--no-cache")
    assert "OCC003" not in quiet.stdout, quiet.stdout + quiet.stderr
    loud = run_cli("check", str(tmp_path), "--arch", "sm_86", "--min-occupancy", "0.5",
                   "--output-format", "concise", "--no-cache")
    assert "OCC003" in loud.stdout, loud.stdout + loud.stderr


def test_inline_config_and_missing_file(tmp_path):
    write(tmp_path / "k.cu", "__global__ void k() {}\n")
    r = run_cli("check", str(tmp_path), "--config", "cliff-margin = 2", "--no-cache")
    assert r.returncode == 0, r.stderr
    r = run_cli("check", str(tmp_path), "--config", str(tmp_path / "nope.toml"))
    assert r.returncode == 2 and "config file not found" in r.stderr


def test_defaults():
    c = Config()
    assert (c.min_occupancy, c.cliff_margin, c.gpu) == (0.5, 4, "h100")


def test_with_no_config_and_no_git_the_root_is_where_occlint_runs(tmp_path, monkeypatch):
    # gsplat checked out without .git: the root was the first argument's folder, so an OCC900
    # hint said "this project has it below `.`" for one argument order and nothing for another
    from occlint.config import project_root

    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "deep").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.chdir(tmp_path)
    assert project_root("a/x.cu", from_cwd=True) == tmp_path.resolve()
    assert project_root("b/deep", from_cwd=True) == tmp_path.resolve()
    # (the language server's: its current folder may be `/`; the file's folder, as before)
    assert project_root("a/x.cu") == (tmp_path / "a").resolve()
    monkeypatch.chdir("/")
    assert project_root(str(tmp_path / "a" / "x.cu"), from_cwd=True) == (tmp_path / "a").resolve()
    monkeypatch.chdir(outside)
    assert project_root(str(tmp_path / "a" / "x.cu"), from_cwd=True) == (tmp_path / "a").resolve()
    (tmp_path / ".git").mkdir()
    assert project_root(str(tmp_path / "a" / "x.cu"), from_cwd=True) == tmp_path.resolve()


def test_the_missing_header_hint_does_not_depend_on_the_order_of_the_files(tmp_path, nvcc_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "cfg.h").write_text("#define N 4\n")
    (tmp_path / "a" / "direct.cu").write_text('#include "cfg.h"\n__global__ void k(int* p) { p[0] = N; }\n')
    (tmp_path / "b" / "first.cu").write_text("__global__ void f(int* p) { p[0] = 1; }\n")
    for order in (("b/first.cu", "a/direct.cu"), ("a/direct.cu", "b/first.cu")):
        r = run_main("check", "--arch", "sm_90", "--no-cache", "--output-format", "concise",
                     *order, cwd=tmp_path)
        assert "`cfg.h` not found: this project has it below `b`: add that folder" in r.stdout, order
