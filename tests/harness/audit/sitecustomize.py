"""Which tests start NVIDIA's compiler: put this folder on PYTHONPATH and every Python process of
a test run (pytest's workers, `python -m occlint` children, the language server) appends one line
per nvcc, ptxas or cmake it starts, and per NVRTC compile, to $OCCLINT_AUDIT_LOG: the test
(PYTEST_CURRENT_TEST) and the program. A test listed that lacks the `nvcc` marker belongs in
conftest.CALLS_NVCC:

    OCCLINT_AUDIT_LOG=/tmp/nvcc.log PYTHONPATH=.:tests/harness/audit pytest -m "not nvcc"
    cut -f1 /tmp/nvcc.log | sort | uniq -c
"""

import os
import subprocess
import sys

_LOG = os.environ.get("OCCLINT_AUDIT_LOG")
_TOOLS = ("nvcc", "ptxas", "cmake")


def _log(program: str) -> None:
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{program}\n")


class _WrapNvrtc:
    """A finder that wraps occlint.python.nvrtc.compile_program once the module is loaded."""

    def find_spec(self, name, path=None, target=None):
        if name != "occlint.python.nvrtc":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            compile_program = module.compile_program

            def logged(*args, **kw):
                _log("NVRTC")
                return compile_program(*args, **kw)

            module.compile_program = logged

        spec.loader.exec_module = exec_module
        return spec


if _LOG:
    _init = subprocess.Popen.__init__

    def _logged(self, args, *rest, **kw):
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = os.fsdecode(argv[0]) if argv else ""
        if os.path.basename(program).startswith(_TOOLS):
            _log(program)
        _init(self, args, *rest, **kw)

    subprocess.Popen.__init__ = _logged
    sys.meta_path.insert(0, _WrapNvrtc())
