"""One parse per file per run (issue 9): a Project parses each file once, and everything after
(facts, template specialization, kernels launched from other files) reads that parse."""

from __future__ import annotations

from occlint.config import Config
from occlint.engine import lint_paths
from occlint.project import Project
from occlint.source import build

HEADER = """\
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale{i}(float* x) {{
    __shared__ float tile[BLOCK];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[BLOCK - 1 - threadIdx.x];
}}
"""
SOURCE = """\
#include "k{i}.cuh"
void run{i}(float* x) {{
    scale{i}<128><<<4, 128>>>(x);
    scale{j}<256><<<4, 300>>>(x);
}}
"""


def _tree(tmp_path, n: int = 20):
    for i in range(n):
        (tmp_path / f"k{i}.cuh").write_text(HEADER.format(i=i))
        (tmp_path / f"r{i}.cu").write_text(SOURCE.format(i=i, j=(i + 1) % n))
    return tmp_path


def test_a_run_over_40_files_parses_each_once(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    calls: list[str] = []
    real = build._extract

    def counting(text, path, *view):
        calls.append(path)
        return real(text, path, *view)

    monkeypatch.setattr(build, "_extract", counting)
    result = lint_paths([str(root)], Config(root=str(root), arch=("sm_90",)), usage={})
    assert len(result.files) == 40
    assert sorted(calls) == sorted(result.files), "a file was parsed more than once"
    # the specialization really ran on other files' kernels: 300 threads exceed __launch_bounds__(256)
    assert sum(f.code == "OCC032" for f in result.findings) == 20


def test_project_indexes_definitions_and_launches(tmp_path):
    root = _tree(tmp_path, 3)
    project = Project.read({str(p): p.read_text() for p in sorted(root.iterdir())})
    assert len(project) == 6
    assert [sf.path for sf in project.definitions["scale1"]] == [str(root / "k1.cuh")]
    assert sorted(sf.path for sf, _ in project.launches["scale1"]) == [str(root / "r0.cu"), str(root / "r1.cu")]
