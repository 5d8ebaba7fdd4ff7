"""Output formats, chosen from one dict.

Every emitter is a function

    render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str

`root` is the project root (paths are shown relative to it where a format wants relative paths);
`sources` maps a finding's path to the file's text (for snippets). It returns the whole output as
one string (possibly empty) and never prints. Register a new format by adding it to EMITTERS.
"""

from __future__ import annotations

import contextlib
import importlib

from occlint.emit import concise, full
from occlint.emit import json as json_format

EMITTERS = {
    "full": full.render,
    "concise": concise.render,
    "json": json_format.render,
}

# formats from the integrations part, registered when their modules are present
for _name, _module in (("json-lines", "json_lines"), ("sarif", "sarif"), ("github", "github"),
                       ("rdjson", "rdjson"), ("gitlab", "gitlab"), ("junit", "junit"),
                       ("html", "html")):
    with contextlib.suppress(ImportError):
        EMITTERS[_name] = importlib.import_module(f"occlint.emit.{_module}").render

# formats whose render() also takes `unsafe_fixes` (they offer fixes for a reviewer to apply)
FIX_AWARE = ("rdjson",)
TEXT_FORMATS = ("full", "concise")   # human formats: the command adds a summary line
# formats that also take the whole run (`result=`: engine.LintResult) to show kernels, not findings only
RUN_FORMATS = ("html",)
