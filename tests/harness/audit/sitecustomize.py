"""Which tests start nvcc: put this folder on PYTHONPATH and every Python process of a test run
(pytest's workers, `python -m occlint` children, the language server) appends one line per
nvcc, ptxas or cmake it starts to $OCCLINT_AUDIT_LOG: the test (PYTEST_CURRENT_TEST) and the
program. A test listed that lacks the `nvcc` marker belongs in conftest.CALLS_NVCC:

    OCCLINT_AUDIT_LOG=/tmp/nvcc.log PYTHONPATH=.:tests/harness/audit pytest -m "not nvcc"
    cut -f1 /tmp/nvcc.log | sort | uniq -c
"""

import os
import subprocess

_LOG = os.environ.get("OCCLINT_AUDIT_LOG")
_TOOLS = ("nvcc", "ptxas", "cmake")

if _LOG:
    _init = subprocess.Popen.__init__

    def _logged(self, args, *rest, **kw):
        argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
        program = os.fsdecode(argv[0]) if argv else ""
        if os.path.basename(program).startswith(_TOOLS):
            with open(_LOG, "a", encoding="utf-8") as fh:
                fh.write(f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}\t{program}\n")
        _init(self, args, *rest, **kw)

    subprocess.Popen.__init__ = _logged
