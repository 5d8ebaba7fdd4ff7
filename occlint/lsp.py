"""The language server (`occlint server`, pygls, stdio).

On open and on every change it publishes diagnostics from `lint_source` at once, using usage only
when nvcc's figures belong to exactly this text (so while typing, the parse-only rules run). On
open and on save it compiles in the background (the toolchain's cache answers at once when the
file is unchanged) and publishes the full set. Code actions apply a finding's fix or add
`// noqa: CODE`, and `source.fixAll.occlint` applies every safe fix; hover on a kernel name shows registers, occupancy and limiter per arch.
Settings come from the document's `pyproject.toml`/`occlint.toml`. It offers diagnostics, code
actions and hover only, so it runs beside clangd without stepping on it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from dataclasses import dataclass

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace.position_codec import ServerTextPosition

from occlint import __version__, noqa
from occlint.buildfiles import is_build_file
from occlint.config import Config, load_config
from occlint.discover import is_cuda
from occlint.errors import OcclintError
from occlint.model import Finding, Span, Usage
from occlint.python import is_python, lint_python, might_have_cuda

SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
            "info": lsp.DiagnosticSeverity.Information}
FIX_ALL = "source.fixAll.occlint"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Compiled:
    digest: str                      # sha256 of the text nvcc compiled
    usage: tuple[Usage, ...]
    includes: tuple[str, ...] = ()   # the project files the compile read (their kernels count)


class OcclintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("occlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.findings: dict[str, list[Finding]] = {}     # uri -> what the last diagnostics showed
        self.compiled: dict[str, Compiled] = {}
        self.notices: set[str] = set()
        self.python: dict[str, tuple[str, list[Finding]]] = {}   # uri -> (digest, findings compiled)

    # --- settings and linting ------------------------------------------------------------------

    def config_for(self, path: str) -> Config:
        try:
            return load_config(start=os.path.dirname(os.path.abspath(path)))
        except OcclintError as exc:
            self.notice(f"occlint: configuration error: {exc}", lsp.MessageType.Error)
            return Config(root=os.path.dirname(os.path.abspath(path)))

    def notice(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        if message not in self.notices:       # once per session
            self.notices.add(message)
            self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def log(self, message: str) -> None:
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=message))

    def usage_for(self, uri: str, text: str) -> tuple[Usage, ...]:
        got = self.compiled.get(uri)
        return got.usage if got and got.digest == _digest(text) else ()

    def project_for(self, uri: str, path: str) -> list:
        """The files this document's last compile included (from its dependency list), parsed:
        a kernel defined in a header is then known with its `__launch_bounds__` at a launch."""
        from occlint.engine import read_text
        from occlint.source import parse

        got = self.compiled.get(uri)
        out = []
        for dep in got.includes if got else ():
            if os.path.realpath(dep) == os.path.realpath(path):
                continue
            try:
                out.append(parse(read_text(dep), dep))
            except (OcclintError, OSError):
                continue
        return out

    def lint(self, uri: str) -> list[Finding]:
        from occlint.engine import lint_build_file, lint_source

        doc = self.workspace.get_text_document(uri)
        path, text = doc.path, doc.source.replace("\r\n", "\n")
        config = self.config_for(path)
        if is_cuda(path):
            return lint_source(text, path, self.usage_for(uri, text), config,
                               project=self.project_for(uri, path))
        if is_python(path) and not is_build_file(path):
            got = self.python.get(uri)
            if got is not None and got[0] == _digest(text):
                return got[1]       # compiled on open/save: register rules included
            return lint_python(text, path, config, compile=False)[0]
        if is_build_file(path):
            return lint_build_file(text, path, config)
        return []

    def publish(self, uri: str) -> None:
        doc = self.workspace.get_text_document(uri)
        try:
            findings = self.lint(uri)
        except OcclintError as exc:
            self.notice(f"occlint: {exc}", lsp.MessageType.Warning)
            findings = []
        except Exception as exc:  # a bug must not take the editor's diagnostics down with it
            self.log(f"occlint: internal error on {doc.path}: {type(exc).__name__}: {exc}")
            findings = []
        self.findings[uri] = findings
        lines = doc.lines
        diagnostics = [to_diagnostic(f, lines, doc.position_codec) for f in findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version))

    def compile(self, uri: str, path: str, text: str) -> None:
        """nvcc's figures for the file on disk (runs in a worker thread)."""
        from occlint.toolchain import collect_usage

        report = collect_usage([path], self.config_for(path))
        if report.notice:
            self.notice(report.notice.removeprefix("occlint: notice: "))
        self.compiled[uri] = Compiled(_digest(text), tuple(report.usage_for(path)),
                                      tuple(report.project_files()))

    def compile_python(self, uri: str, path: str, text: str) -> None:
        """A Python buffer's CUDA strings compiled (NVRTC/nvcc, cached), linted (worker thread)."""
        from occlint.toolchain.cache import Cache, cache_dir

        config = self.config_for(path)
        cache = None if config.no_cache else Cache(cache_dir(config))
        findings, notices = lint_python(text, path, config, cache=cache)
        for n in notices:
            if "not found" in n or "not importable" in n:
                self.notice(f"occlint: {n}")
        self.python[uri] = (_digest(text), findings)

    async def compile_and_publish(self, uri: str) -> None:
        doc = self.workspace.get_text_document(uri)
        path = doc.path
        if path and is_python(path) and not is_build_file(path):
            text = doc.source.replace("\r\n", "\n")
            if not might_have_cuda(text):
                return
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.compile_python, uri, path, text)
            except OcclintError as exc:
                self.notice(f"occlint: {exc}", lsp.MessageType.Warning)
                return
            except Exception as exc:
                self.log(f"occlint: compiling {path} failed: {type(exc).__name__}: {exc}")
                return
            if uri in self.workspace.text_documents:
                self.publish(uri)
            return
        if not path or not is_cuda(path):
            return
        try:
            with open(path, encoding="utf-8") as fh:
                on_disk = fh.read().replace("\r\n", "\n")
        except (OSError, UnicodeDecodeError):
            return
        if on_disk != doc.source.replace("\r\n", "\n"):
            return                      # unsaved edits: nvcc would compile other text
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.compile, uri, path, on_disk)
        except OcclintError as exc:
            self.notice(f"occlint: {exc}", lsp.MessageType.Warning)
            return
        except Exception as exc:
            self.log(f"occlint: compiling {path} failed: {type(exc).__name__}: {exc}")
            return
        if uri in self.workspace.text_documents:
            self.publish(uri)


# --- conversions ------------------------------------------------------------------------------------


def to_range(span: Span, lines, codec) -> lsp.Range:
    def pos(line: int, column: int) -> lsp.Position:
        return codec.position_to_client_units(lines, ServerTextPosition(line - 1, column - 1))
    return lsp.Range(start=pos(span.line, span.column), end=pos(span.end_line, span.end_column))


def to_diagnostic(f: Finding, lines, codec) -> lsp.Diagnostic:
    from occlint.emit.sarif import rule_url

    return lsp.Diagnostic(
        range=to_range(f.span, lines, codec),
        message=f.message,
        severity=SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning),
        code=f.code,
        code_description=lsp.CodeDescription(href=f.url or rule_url(f.code)),
        source="occlint",
        data={"arch": f.arch, "kernel": f.kernel},
    )


def noqa_edit(text: str, line: int, code: str, comment: str = "//") -> lsp.TextEdit | None:
    """Add `code` to the noqa comment on `line` (1-based), or append `  // noqa: CODE`
    (`# noqa` on a Python line; occlint.noqa decides where); None when the line already
    silences it."""
    content = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
    where = noqa.add_code(content, code, comment)
    if where is None:
        return None
    at, insert = where
    pos = lsp.Position(line=line - 1, character=len(content[:at].encode("utf-16-le")) // 2)
    return lsp.TextEdit(range=lsp.Range(start=pos, end=pos), new_text=insert)


def fix_all_action(uri: str, source: str, findings: list[Finding]) -> lsp.CodeAction | None:
    """`source.fixAll.occlint`: every safe fix at once, as one whole-document edit."""
    from occlint.fix import apply_fixes

    text = source.replace("\r\n", "\n")
    fixed, applied = apply_fixes(text, findings)
    if not applied or fixed == text:
        return None
    if "\r\n" in source:
        fixed = fixed.replace("\n", "\r\n")
    end = lsp.Position(line=len(source.splitlines(keepends=True)), character=0)
    edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=fixed)
    return lsp.CodeAction(title=f"occlint: apply {len(applied)} safe fix{'es' * (len(applied) != 1)}",
                          kind=FIX_ALL, edit=lsp.WorkspaceEdit(changes={uri: [edit]}))


# --- hover ------------------------------------------------------------------------------------------


def hover_markdown(text: str, path: str, offset: int, usage, config: Config) -> str | None:
    """Per-arch registers, occupancy and limiter of the kernel named at `offset`, or None."""
    from occlint import occupancy
    from occlint.facts import build_facts, primary_limiter
    from occlint.source import parse
    from occlint.toolchain.flags import archs_for

    sf = parse(text, path)
    name = None
    for k in sf.kernels:
        if k.span.start <= offset <= k.span.end:
            name = k.qualname
    for launch in sf.launches:
        start = launch.span.start
        if start <= offset <= start + len(launch.callee):
            name = next((k.qualname for k in sf.kernels if k.name == launch.callee.split("::")[-1]),
                        launch.callee)
    if name is None:
        return None
    archs = archs_for(config, usage=usage)
    facts = build_facts(sf, usage, config, archs)
    kf = next((kf for kf in facts.kernels if kf.kernel.qualname == name), None)
    if kf is None:
        return None
    out = [f"**`{kf.kernel.qualname}`** (occlint)", ""]
    if not kf.usages:
        out.append("No nvcc figures for this kernel yet: save the file to compile it "
                   "(registers and spills need nvcc).")
    else:
        out += ["| arch | registers | spills (st/ld B) | static smem |", "|---|---|---|---|"]
        for arch in sorted(kf.usages):
            for u in kf.usages[arch]:
                label = f"{arch} `<{', '.join(u.template_args)}>`" if u.template_args else arch
                out.append(f"| {label} | {u.registers} | {u.spill_stores}/{u.spill_loads} | "
                           f"{u.static_smem} B |")
    sites = [s for s in facts.sites if s.facts is kf]
    if sites:
        out += ["", "| arch | block | occupancy | limiter |", "|---|---|---|---|"]
        for s in sites:
            where = f"line {s.span.line}"
            if s.occ is None:
                out.append(f"| {s.arch} | {s.block} ({where}) | - | {s.unlaunchable or 'exceeds __launch_bounds__'} |")
                continue
            limiter = primary_limiter(s.occ, s.usage is not None)
            words = (occupancy.LIMITER_WORDS.get(limiter, limiter) if s.occ.occupancy < 1
                     else "none: full occupancy")
            figure = "" if s.usage is not None else " (no register figures)"
            out.append(f"| {s.arch} | {s.block} ({where}) | {s.occ.occupancy:.0%} "
                       f"({s.occ.active_blocks} blocks/SM){figure} | {words} |")
    return "\n".join(out)


# --- the server ---------------------------------------------------------------------------------


def build_server() -> OcclintServer:
    server = OcclintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: OcclintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)
        await ls.compile_and_publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: OcclintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: OcclintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)
        await ls.compile_and_publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OcclintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.findings.pop(uri, None)
        ls.compiled.pop(uri, None)
        ls.python.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(ls: OcclintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        lines, codec = doc.lines, doc.position_codec
        only = params.context.only or []
        if only and not any(k.startswith(lsp.CodeActionKind.QuickFix) for k in only):
            fix_all = fix_all_action(uri, doc.source, ls.findings.get(uri, []))
            return [fix_all] if fix_all and any(FIX_ALL.startswith(k) for k in only) else []
        actions: list[lsp.CodeAction] = []
        seen: set[tuple] = set()
        for diag in params.context.diagnostics:
            if diag.source != "occlint":
                continue
            finding = next((f for f in ls.findings.get(uri, [])
                            if f.code == diag.code and to_range(f.span, lines, codec) == diag.range), None)
            if finding is None:
                continue
            fix = finding.fix
            if fix is not None and fix.applicability != "display" and ("fix", fix.message, diag.range.start.line) not in seen:
                seen.add(("fix", fix.message, diag.range.start.line))
                edits = [lsp.TextEdit(range=to_range(e.span, lines, codec), new_text=e.content)
                         for e in fix.edits]
                title = fix.message + (" (unsafe)" if fix.applicability == "unsafe" else "")
                actions.append(lsp.CodeAction(
                    title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag],
                    is_preferred=fix.applicability == "safe",
                    edit=lsp.WorkspaceEdit(changes={uri: edits})))
            comment = finding.data.get("noqa_comment", "//")
            silence = noqa_edit(doc.source, finding.span.line, finding.code, comment)
            if silence is not None and ("noqa", finding.code, finding.span.line) not in seen:
                seen.add(("noqa", finding.code, finding.span.line))
                actions.append(lsp.CodeAction(
                    title=f"Add `{comment} noqa: {finding.code}`", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diag], edit=lsp.WorkspaceEdit(changes={uri: [silence]})))
        return actions

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: OcclintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        if not doc.path or not is_cuda(doc.path):
            return None
        text = doc.source.replace("\r\n", "\n")
        pos = doc.position_from_client_units(params.position)
        offset = sum(len(x) for x in text.splitlines(keepends=True)[: pos.line]) + pos.character
        md = hover_markdown(text, doc.path, offset, ls.usage_for(uri, text), ls.config_for(doc.path))
        if md is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=md))

    return server


def serve() -> None:
    build_server().start_io()
