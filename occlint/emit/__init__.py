"""Output formats, chosen from one mapping.

Every emitter is a function

    render(findings: Iterable[Finding], *, root: str = ".", sources: Mapping[str, str] | None = None) -> str

`root` is the project root (paths are shown relative to it where a format wants relative paths);
`sources` maps a finding's path to the file's text (for snippets). It returns the whole output as
one string (possibly empty) and never prints. Register a new format by adding it to MODULES.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

# format name -> module under occlint.emit; imported when the format is used (the HTML report's
# plotting and charts must not slow down every `check`)
MODULES = {
    "full": "full", "concise": "concise", "json": "json", "json-lines": "json_lines",
    "sarif": "sarif", "github": "github", "rdjson": "rdjson", "gitlab": "gitlab",
    "junit": "junit", "html": "html",
}


class _Emitters(Mapping):
    """format name -> its render function, imported on first use."""

    def __getitem__(self, name: str):
        if name not in MODULES:
            raise KeyError(name)
        return importlib.import_module(f"occlint.emit.{MODULES[name]}").render

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)

    def __contains__(self, name) -> bool:
        return name in MODULES


EMITTERS: Mapping = _Emitters()

# formats whose render() also takes `unsafe_fixes` (they offer fixes for a reviewer to apply)
FIX_AWARE = ("rdjson",)
TEXT_FORMATS = ("full", "concise")   # human formats: the command adds a summary line
# formats that also take the whole run (`result=`: engine.LintResult) to show kernels, not findings only
RUN_FORMATS = ("html",)
