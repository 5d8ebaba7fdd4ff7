from conftest import run_cli


def test_help_lists_commands():
    r = run_cli("--help")
    assert r.returncode == 0
    for name in ("check", "calc", "kernels", "doctor", "server"):
        assert name in r.stdout


def test_no_arguments_is_usage_error():
    r = run_cli()
    assert r.returncode == 2


def test_unknown_command_is_usage_error_without_traceback():
    r = run_cli("frobnicate")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_the_command_exits_without_teardown_yet_loses_no_output(tmp_path, nvcc_path):
    # `python -m occlint` (and the `occlint` script) skip the interpreter's teardown after the
    # output is flushed: more than a pipe's 64 KB of JSON arrives whole, the exit code is kept,
    # and an --output-file is complete
    import json

    src = tmp_path / "many.cu"
    src.write_text("".join(f"__global__ void k{i}(float* p) {{ __shared__ float s[{i + 1}]; "
                           f"s[0] = p[0]; p[1] = s[0]; }}\nvoid h{i}(float* p) {{ k{i}<<<1, "
                           f"{32 * (i % 32 + 1)}>>>(p); }}\n" for i in range(400)))
    r = run_cli("kernels", "--no-compile", "--json", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) > 65536 and len(json.loads(r.stdout)) == 1200
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* p) {}\nvoid h(float* p) { k<<<1, 2048>>>(p); }\n")
    out = tmp_path / "out.json"
    r = run_cli("check", "--arch", "sm_90", "--cache-dir", str(tmp_path / "cache"),
                "--output-format", "json", "--output-file", str(out), str(bad), cwd=tmp_path)
    assert r.returncode == 1 and json.loads(out.read_text())[0]["code"], r.stderr
    r = run_cli("check", "--arch", "sm_90", "--cache-dir", str(tmp_path / "cache"), str(bad),
                cwd=tmp_path)        # the text report's last line is a small, buffered write
    assert r.returncode == 1 and r.stdout.rstrip().endswith("Found 1 finding."), r.stdout
