"""One config loader and one arch decision for every command (issue 9)."""

from __future__ import annotations

import argparse
import json

import pytest
from conftest import run_main

from occlint.commands import options
from occlint.config import Config, split_config_options
from occlint.errors import OcclintError
from occlint.model import Usage
from occlint.toolchain.flags import archs_for
from tests.conftest import run_cli


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_lint_arguments(parser)
    return parser.parse_args(argv)


def _usage(arch: str) -> Usage:
    return Usage(kernel="k", mangled="_Z1kv", arch=arch, registers=32, spill_stores=0,
                 spill_loads=0, static_smem=0, barriers=0)


def test_repeated_config_merges_inline_pairs_over_the_file(tmp_path):
    cfg = tmp_path / "occlint.toml"
    cfg.write_text('min-occupancy = 0.7\ncliff-margin = 3\ngpu = "a100"\n')
    config = options.load(_args(str(tmp_path), "--config", str(cfg), "--config", "cliff-margin = 5",
                                "--config", "cliff-margin = 6", "--config", 'gpu = "l4"'))
    assert (config.min_occupancy, config.cliff_margin, config.gpu) == (0.7, 6, "l4")


def test_flags_win_over_inline_config_and_extend_lists_append(tmp_path):
    (tmp_path / "occlint.toml").write_text('ignore = ["OCC033"]\nextend-select = ["OCC050"]\n')
    config = options.load(_args(str(tmp_path), "--config", "min-occupancy = 0.2",
                                "--min-occupancy", "0.4", "--ignore", "OCC031",
                                "--extend-select", "OCC900"))
    assert config.min_occupancy == 0.4
    assert config.ignore == ("OCC033", "OCC031")
    assert config.extend_select == ("OCC050", "OCC900")


def test_two_config_files_are_one_error(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(""), b.write_text("")
    with pytest.raises(OcclintError, match="only one --config file"):
        split_config_options([str(a), str(b)])
    assert split_config_options(["gpu = 'a100'", str(a)]) == (str(a), {"gpu": "a100"})


def test_inline_config_reaches_kernels_and_doctor(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 0; }\n"
                   "void run(float* x) { k<<<1, 64>>>(x); }\n")
    r = run_cli("kernels", "--no-compile", "--config", "gpu = 'nope'", str(src), cwd=tmp_path)
    assert r.returncode == 2 and "unknown GPU `nope`" in r.stderr, r.stderr
    r = run_cli("kernels", "--json", "--no-compile", "--config", "arch = ['sm_80']", str(src), cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
    r = run_cli("doctor", "--config", "gpu = 'a100'", "--config", "min-occupancy = 0.3", cwd=tmp_path)
    assert "sm_80 (gpu a100)" in r.stdout, r.stdout + r.stderr


def test_archs_decided_in_one_order():
    entries = [{"file": "a.cu", "directory": ".", "arguments": ["nvcc", "-arch=sm_86", "a.cu"]}]
    recorded = [_usage("sm_89"), _usage("sm_75")]
    assert archs_for(Config(arch=("8.0",), gpu="l4"), entries, recorded) == ("sm_80",)
    assert archs_for(Config(gpu="a100"), entries, recorded) == ("sm_80",)   # a named GPU over sidecars
    assert archs_for(Config(), entries, recorded) == ("sm_75", "sm_89")     # what nvcc compiled for
    assert archs_for(Config(), entries) == ("sm_86",)                         # the build's flags
    assert archs_for(Config()) == ("sm_90",)                                  # the default GPU's


@pytest.mark.parametrize("command", ["check", "kernels", "doctor", "baseline", "lock", "report"])
def test_every_command_that_compiles_takes_cache_dir(command):
    """`--cache-dir` as ruff's: on every command with a compile cache (kernels lacked it)."""
    from occlint.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    args = sub.choices[command].parse_args(["x.cu", "--cache-dir", "elsewhere"]
                                           if command != "doctor" else ["--cache-dir", "elsewhere"])
    assert args.cache_dir == "elsewhere"


def test_config_file_elsewhere_checks_the_working_directory_and_is_the_settings_path(tmp_path):
    # tiny-cuda-nn: `cd src && occlint check --config ../occlint_full.toml` linted the config's
    # folder (a sibling tree outside the repository too), and --show-settings named
    # src/occlint.toml while showing ../occlint_full.toml's values
    (tmp_path / "cfg.toml").write_text("min-occupancy = 0.5\n")
    proj, sibling = tmp_path / "proj", tmp_path / "sibling"
    proj.mkdir()
    sibling.mkdir()
    (proj / "occlint.toml").write_text("min-occupancy = 0.25\n")
    (proj / "a.cu").write_text("__global__ void a(int* p) {}\n")
    (sibling / "b.cu").write_text("__global__ void b(int* p) {}\n")
    r = run_main("check", "--show-files", "--config", "../cfg.toml", "--no-cache", cwd=proj)
    assert r.stdout.split() == [str(proj / "a.cu")]
    r = run_main("check", "--show-settings", "--config", "../cfg.toml", "--no-cache", cwd=proj)
    assert f'Settings path: "{tmp_path / "cfg.toml"}"' in r.stdout
    assert "min-occupancy = 0.5" in r.stdout
    r = run_main("doctor", "--config", "../cfg.toml", cwd=proj)       # (no paths: no files)
    assert "no such file" not in r.stderr
