"""The findings cache: a warm `check` reuses the findings of a run whose inputs are unchanged.

ruff's cache, made safe for occlint's cross-file facts. One entry stands for a whole run of
CUDA files: its key hashes occlint's own code (each module's size and mtime), the config, and
for every file linted or included, its path, text, usage, compile errors, archs and
preprocessor View; the entry also records every file the preprocessor read or looked for while
the run was linted (`preproc.READ`: project headers, and paths an `#include` was tried at that
did not exist), with their hashes. A hit needs every one of them unchanged, exactly as a compile
cache hit does (the entries live in the same folder, `occlint.toolchain.cache`, and are evicted
and cleaned with it).

Only `check` uses it, and never for the HTML report, which needs the parses themselves.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence

from occlint.model import Edit, Finding, Fix, Span

FORMAT = 1


def _code() -> str:
    """occlint's own modules and data (size and mtime of each: the package, the rules' words,
    the GPU table) and the grammar's, so a new version, or an edited checkout, never reads an
    old run's findings. Once per run (`preproc.one_run`)."""
    from occlint.source.preproc import run_memo

    memo = run_memo("code")
    if memo is None:
        return _code_now()
    if "code" not in memo:
        memo["code"] = _code_now()
    return memo["code"]


def _code_now() -> str:
    import importlib.util

    from occlint.registry import rules_dir

    h = hashlib.sha256()
    roots = [os.path.dirname(os.path.abspath(__file__))]
    here = str(rules_dir())                   # the rules' words: beside the package in a checkout
    if not here.startswith(roots[0] + os.sep):
        roots.append(here)
    for name in ("tree_sitter", "tree_sitter_cuda"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            roots.append(os.path.dirname(spec.origin))
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".toml", ".so", ".scm", ".md")):
                    try:
                        st = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    h.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\n"
                             .encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def key(parts: Iterable[object]) -> str:
    """The entry's key: `parts` (reprs of the run's inputs) after the code's fingerprint."""
    h = hashlib.sha256()
    for part in ("occlint findings", str(FORMAT), _code(), os.getcwd(), *parts):
        h.update((part if isinstance(part, str) else repr(part)).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load(cache, entry_key: str) -> list[Finding] | None:
    """The stored findings when every recorded file is unchanged; else None."""
    from occlint.toolchain.cache import FINDINGS

    data = cache.get(entry_key, FINDINGS)
    if data is None:
        return None
    try:
        return [_finding(d) for d in data["findings"]]
    except (KeyError, TypeError, ValueError):
        return None


def store(cache, entry_key: str, findings: Sequence[Finding], read: Iterable[str]) -> None:
    """Keep `findings` with the hashes of the files in `read` (absent ones as absent)."""
    from occlint.toolchain.cache import FINDINGS

    cache.put(entry_key, sorted(set(read)), {"findings": [_to_json(f) for f in findings]},
              absent_ok=True, suffix=FINDINGS)


def _to_json(f: Finding) -> dict:
    return {"code": f.code, "name": f.name, "message": f.message, "path": f.path,
            "span": _span_json(f.span), "severity": f.severity, "arch": f.arch, "kernel": f.kernel,
            "url": f.url, "data": f.data, "instances": list(f.instances),
            "fix": None if f.fix is None else {
                "message": f.fix.message, "applicability": f.fix.applicability,
                "edits": [{"content": e.content, "span": _span_json(e.span)} for e in f.fix.edits]}}


def _span_json(s: Span) -> list[int]:
    return [s.line, s.column, s.end_line, s.end_column, s.start, s.end]


def _finding(d: dict) -> Finding:
    """A stored finding; ValueError for anything that is not what `_to_json` wrote."""
    def text(v, optional=False):
        if isinstance(v, str) or (optional and v is None):
            return v
        raise ValueError("not a string")

    def span(v):
        if isinstance(v, list) and len(v) == 6 and all(type(x) is int for x in v):
            return Span(*v)
        raise ValueError("not a span")

    def mapping(v):
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return dict(v)
        raise ValueError("not an object")

    fix = d["fix"]
    if fix is not None:
        edits = fix["edits"]
        if not isinstance(edits, list):
            raise ValueError("not a list")
        fix = Fix(text(fix["message"]), tuple(Edit(text(e["content"]), span(e["span"])) for e in edits),
                  text(fix["applicability"]))
    instances = d["instances"]
    if not isinstance(instances, list):
        raise ValueError("not a list")
    return Finding(code=text(d["code"]), name=text(d["name"]), message=text(d["message"]),
                   path=text(d["path"]), span=span(d["span"]), severity=text(d["severity"]),
                   fix=fix, arch=text(d["arch"], True), kernel=text(d["kernel"], True),
                   url=text(d["url"]), data=mapping(d["data"]),
                   instances=tuple(mapping(i) for i in instances))
