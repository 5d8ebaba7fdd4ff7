"""`occlint check` end to end: JSON shape, exit codes, suppression, fixes, discovery."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES, run_cli, run_main

SAXPY = """__global__ void saxpy(float* y, const float* x, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] += a * x[i];
}
"""


def project(tmp_path, files: dict) -> str:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return str(tmp_path)


def check_json(*args, cwd=None):
    r = run_cli("check", "--output-format", "json", "--no-cache", *args, cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    return r, json.loads(r.stdout)


def test_json_is_ruff_compatible(tmp_path):
    root = project(tmp_path, {"a.cu": SAXPY + "void run(float* y, const float* x, int n, int g) {\n"
                              "    saxpy<<<g, 100>>>(y, x, 2.0f, n);\n}\n"})
    r, found = check_json(root)
    assert r.returncode == 1
    [f] = found
    assert f["code"] == "OCC031" and f["name"] == "block-size-not-warp-multiple"
    assert f["filename"] == str(tmp_path / "a.cu")
    assert f["location"] == {"row": 6, "column": 16} and f["end_location"] == {"row": 6, "column": 19}
    assert f["fix"] == {"applicability": "unsafe",
                        "message": "Round the block size up to 128; the grid `g` is not scaled: "
                                   "each block runs 28 more threads, which the kernel must guard "
                                   "(`if (i < n)`)",
                        "edits": [{"content": "128", "location": {"row": 6, "column": 16},
                                   "end_location": {"row": 6, "column": 19}}]}
    assert f["url"].endswith("OCC031.md") and f["severity"] == "warning" and f["noqa_row"] == 6
    assert f["kernel"] == "saxpy" and f["arch"] is None


def test_clean_file_exits_0_and_exit_zero(tmp_path):
    root = project(tmp_path, {"a.cu": SAXPY + "void run(float* y, const float* x, int n) {\n"
                              "    saxpy<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);\n}\n",
                              "b.cu": SAXPY.replace("saxpy", "k2") + "void r(float* y) { k2<<<8, 256>>>(y, y, 1.0f, 8); }\n"})
    r, found = check_json(str(tmp_path / "a.cu"))
    assert r.returncode == 0 and found == []
    r = run_cli("check", root, "--exit-zero", "--no-cache")
    assert r.returncode == 0 and "OCC033" in r.stdout


def test_noqa_forms(tmp_path):
    launches = "\n".join([
        "void run(float* y, const float* x, int n, int g) {",
        "    saxpy<<<g, 100>>>(y, x, 2.0f, n);   // noqa: OCC031",
        "    saxpy<<<g, 100>>>(y, x, 2.0f, n);   // noqa",
        "    saxpy<<<g, 100>>>(y, x, 2.0f, n);   // noqa: OCC010, OCC031",
        "    saxpy<<<g, 100>>>(y, x, 2.0f, n);   // noqa: OCC033",
        "    saxpy<<<g, 100>>>(y, x, 2.0f, n);",
        "}", ""])
    root = project(tmp_path, {"a.cu": SAXPY + launches,
                              "b.cu": "// occlint: noqa: OCC031\n" + SAXPY + launches,
                              "c.cu": "// occlint: noqa\n" + SAXPY + launches})
    _, found = check_json(root)
    assert [(f["filename"].rsplit("/", 1)[1], f["location"]["row"]) for f in found] == [("a.cu", 9), ("a.cu", 10)]


def test_fix_applies_safe_fixes_only_and_diff_writes_nothing(tmp_path):
    shutil.copy(FIXTURES / "OCC032_launch_exceeds_bounds.cu", tmp_path / "k.cu")
    with open(tmp_path / "k.cu", "a") as fh:
        fh.write("void more(float* x, int n, int g) { scale<<<g, 100>>>(x, 2.0f, n); }\n")
    before = (tmp_path / "k.cu").read_text()
    with open(tmp_path / "k.cu", "a") as fh:
        fh.write("__global__ void dyn(float* x) { extern __shared__ float s[]; s[threadIdx.x] = x[0]; }\n"
                 "void opt(float* x) {\n    dyn<<<512, 256, 65536>>>(x);\n}\n")
    before = (tmp_path / "k.cu").read_text()
    r = run_cli("check", str(tmp_path / "k.cu"), "--diff", "--no-cache")
    assert r.returncode == 1 and "+    cudaFuncSetAttribute(dyn, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);" in r.stdout
    assert "scale<<<g, 128>>>" not in r.stdout    # OCC031's round-up is unsafe: not shown
    assert "scale<<<blocks, 256>>>(x, 2.0f, n);          // expect: OCC032" not in r.stdout   # unsafe: not shown
    assert (tmp_path / "k.cu").read_text() == before
    r = run_cli("fix", str(tmp_path / "k.cu"), "--no-cache")
    after = (tmp_path / "k.cu").read_text()
    assert "scale<<<g, 100>>>" in after and "scale<<<blocks, 512>>>" in after and "cudaFuncSetAttribute(dyn" in after
    assert r.returncode == 1 and "(1 fixed, " in r.stdout and "OCC032" in r.stdout
    run_cli("check", str(tmp_path / "k.cu"), "--fix", "--unsafe-fixes", "--no-cache")
    after = (tmp_path / "k.cu").read_text()
    assert "scale<<<blocks, 512>>>" not in after and "scale<<<g, 128>>>" in after


def test_select_ignore_statistics(tmp_path):
    root = project(tmp_path, {"a.cu": SAXPY + "void run(float* y, const float* x, int n) {\n"
                              "    saxpy<<<64, 100>>>(y, x, 2.0f, n);\n    saxpy<<<32, 96>>>(y, x, 2.0f, n);\n}\n"})
    _, found = check_json(root, "--select", "OCC03", "--ignore", "OCC033")
    assert {f["code"] for f in found} == {"OCC031"}
    r = run_cli("check", root, "--statistics", "--output-format", "concise", "--no-cache")
    assert r.stdout.splitlines()[:2] == ["2\tOCC033\tsmall-grid", "1\tOCC031\tblock-size-not-warp-multiple"]
    _, stats = check_json(root, "--statistics")
    assert stats[0] == {"code": "OCC033", "name": "small-grid", "count": 2, "fixable": False}


def test_gitignore_exclude_and_bad_encoding(tmp_path):
    bad = SAXPY + "void run(float* y, const float* x, int n) { saxpy<<<8, 256>>>(y, x, 2.0f, n); }\n"
    root = project(tmp_path, {".gitignore": "gen/\n", "gen/g.cu": bad, "vendor/v.cu": bad, "src/s.cu": bad,
                              "src/latin1.cu": b"// caf\xe9\n__global__ void k() {}\n",
                              "occlint.toml": 'exclude = ["vendor"]\n'})
    r = run_cli("check", root, "--output-format", "json", "--no-cache")
    assert r.returncode == 1                        # latin1.cu is linted (lossily), not an error
    assert "latin1.cu" not in r.stderr and "Traceback" not in r.stderr
    assert {f["filename"].rsplit("/", 1)[1] for f in json.loads(r.stdout)} == {"s.cu"}


def test_usage_errors_exit_2(tmp_path):
    r = run_main("check", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run_main("check", str(tmp_path), "--output-format", "xml")
    assert r.returncode == 2 and "unknown output format" in r.stderr


def test_full_format_underlines_and_marks_fixable(tmp_path):
    root = project(tmp_path, {"a.cu": SAXPY + "void run(float* y, const float* x, int n, int g) {\n"
                              "    saxpy<<<g, 100>>>(y, x, 2.0f, n);\n}\n"})
    r = run_cli("check", root, "--no-cache", cwd=root)
    assert "a.cu:6:16: OCC031 block of 100 threads" in r.stdout     # unsafe: no [*]
    assert "6 |     saxpy<<<g, 100>>>(y, x, 2.0f, n);" in r.stdout
    assert "  |                ^^^ OCC031" in r.stdout
    assert "= help: Round the block size up to 128" in r.stdout
    assert "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in r.stdout


def test_compile_error_is_a_finding_not_exit_2(tmp_path, nvcc_path):
    root = project(tmp_path, {"a.cu": "__global__ void k(float* x) {\n    x[0] = nope;\n}\n"})
    r = run_cli("check", root, "--output-format", "json", "--config", f'nvcc = "{nvcc_path}"')
    assert r.returncode == 1, r.stderr
    [f] = json.loads(r.stdout)
    assert f["code"] == "OCC900" and f["location"]["row"] == 2 and "nope" in f["message"]


def test_kernel_in_header_is_evaluated_at_launches_elsewhere(tmp_path):
    header = """template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) fill(float* x, int n) {
    __shared__ float stage[4096];
    stage[threadIdx.x] = 0.0f;
    x[blockIdx.x * BLOCK + threadIdx.x] = stage[threadIdx.x];
}
"""
    main = '#include "fill.cuh"\nvoid run(float* x, int n) {\n    fill<128><<<n / 128, 256>>>(x, n);\n' \
           '    fill<256><<<n / 256, 256>>>(x, n);\n}\n'
    root = project(tmp_path, {"fill.cuh": header, "main.cu": main})
    _, found = check_json(root)
    got = {(f["filename"].rsplit("/", 1)[1], f["location"]["row"], f["code"]) for f in found}
    assert got == {("main.cu", 3, "OCC032"), ("fill.cuh", 3, "OCC020")}, found


def test_fix_keeps_crlf_line_endings(tmp_path):
    root = project(tmp_path, {"a.cu": (SAXPY + "void run(float* y, const float* x, int n, int g) {\n"
                                       "    saxpy<<<g, 100>>>(y, x, 2.0f, n);\n}\n").replace("\n", "\r\n")})
    r = run_cli("fix", root, "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    data = (tmp_path / "a.cu").read_bytes()
    assert b"saxpy<<<g, 128>>>" in data and data.count(b"\r\n") == data.count(b"\n") == 7


def test_fix_reports_the_fixed_files(tmp_path):
    """After --fix the findings come from the written text: lines moved by an inserted
    statement, and findings the fix exposed (the opt-in reveals the shared-memory limit)."""
    root = project(tmp_path, {"a.cu": (
        "__global__ void big(float* x, int n) {\n"
        "    extern __shared__ float s[];\n"
        "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)\n"
        "        { s[threadIdx.x] = x[i]; x[i] = s[threadIdx.x ^ 1]; }\n"
        "}\n"
        "void run(float* x, int n) {\n"
        "    big<<<1000, 256, 200000>>>(x, n);\n"
        "    big<<<8, 256>>>(x, n);\n"
        "}\n")})
    _, before = check_json(root)
    assert [(f["code"], f["location"]["row"]) for f in before] == [("OCC022", 7), ("OCC033", 8)]
    r = run_cli("check", root, "--fix", "--output-format", "json", "--no-cache")
    after = json.loads(r.stdout)
    assert "cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000);" \
        in (tmp_path / "a.cu").read_text().splitlines()[6]
    assert [(f["code"], f["location"]["row"]) for f in after] == [("OCC002", 8), ("OCC033", 9)]
    r = run_cli("check", root, "--fix", "--no-cache")
    assert "Found 2 findings" in r.stdout and "a.cu:9:" in r.stdout
