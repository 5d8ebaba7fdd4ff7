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
