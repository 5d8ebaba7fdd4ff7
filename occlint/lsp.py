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

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace.position_codec import ServerTextPosition

from occlint import __version__, noqa
from occlint.buildfiles import is_build_file
from occlint.config import Config, load_config
from occlint.discover import is_cuda
from occlint.errors import OcclintError
from occlint.files import read_regular
from occlint.model import Finding, Span, Usage
from occlint.python import is_python, lint_python, might_have_cuda
from occlint.record import dataclass
from occlint.source.text import split_lines

SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
            "info": lsp.DiagnosticSeverity.Information}
FIX_ALL = "source.fixAll.occlint"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Compiled:
    digest: str                      # sha256 of the text nvcc compiled
    usage: tuple[Usage, ...]
    errors: tuple = ()               # CompileErrors that belong to this file (OCC900), as in `check`


MAX_PROJECT_FILES = 2000     # a project this large is linted with the open files only


@dataclass
class Analysed:
    digest: str
    facts: object                    # occlint.facts.Facts of the text the diagnostics came from


class OcclintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("occlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self.findings: dict[str, list[Finding]] = {}     # uri -> what the last diagnostics showed
        self.compiled: dict[str, Compiled] = {}
        self.notices: set[str] = set()
        self.python: dict[str, tuple[str, list[Finding]]] = {}   # uri -> (digest, findings compiled)
        self.configs: dict[str, Config] = {}             # folder -> its Config (until a config file is saved)
        self.parsed: dict[str, tuple[tuple, object]] = {}   # path -> (stamp, SourceFile) for the project
        self.analysed: dict[str, Analysed] = {}          # uri -> the facts behind its diagnostics

    # --- settings and linting ------------------------------------------------------------------

    def config_for(self, path: str) -> Config:
        """The CLI's Config for a document's folder, loaded once per folder (saving a config file
        forgets them all)."""
        folder = os.path.dirname(os.path.abspath(path))
        config = self.configs.get(folder)
        if config is None:
            try:
                config = load_config(start=folder)
            except OcclintError as exc:
                self.notice(f"occlint: configuration error: {exc}", lsp.MessageType.Error)
                config = Config(root=folder)
            self.configs[folder] = config
        return config

    def project_for(self, path: str, config: Config):
        """The CLI's `project=`: the CUDA files `check` would lint under the config's root, each
        parsed once until it changes (open documents as their buffers read)."""
        from occlint.discover import discover
        from occlint.project import Project
        from occlint.source import parse

        try:
            files = discover([config.root], config)[0]
        except OcclintError:
            files = []
        if len(files) > MAX_PROJECT_FILES:
            files = []
        open_docs = {d.path: d for d in self.workspace.text_documents.values() if d.path}
        out = []
        for file in dict.fromkeys([*files, *(p for p in open_docs if is_cuda(p))]):
            if os.path.realpath(file) == os.path.realpath(path):
                continue
            doc = open_docs.get(file)
            try:
                if doc is not None:
                    text = doc.source.replace("\r\n", "\n")
                    stamp: tuple = ("buffer", _digest(text))
                else:
                    st = os.stat(file)
                    stamp, text = (st.st_mtime_ns, st.st_size), None
            except OSError:
                continue
            got = self.parsed.get(file)
            if got is None or got[0] != stamp:
                if text is None:
                    try:
                        text = read_regular(file)      # a FIFO never blocks the loop
                    except OSError:
                        continue
                got = self.parsed[file] = (stamp, parse(text, file))
            out.append(got[1])
        return Project(out)

    def notice(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        if message not in self.notices:       # once per session
            self.notices.add(message)
            self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def log(self, message: str) -> None:
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=message))

    def usage_for(self, uri: str, text: str) -> tuple[Usage, ...]:
        got = self.compiled.get(uri)
        return got.usage if got and got.digest == _digest(text) else ()

    def errors_for(self, uri: str, text: str) -> tuple:
        got = self.compiled.get(uri)
        return got.errors if got and got.digest == _digest(text) else ()

    def lint(self, uri: str) -> list[Finding]:
        from occlint.engine import analyse, lint_build_file

        doc = self.workspace.get_text_document(uri)
        path, text = doc.path, doc.source.replace("\r\n", "\n")
        config = self.config_for(path)
        if is_cuda(path):
            facts, findings = analyse(text, path, self.usage_for(uri, text), config,
                                      compile_errors=self.errors_for(uri, text),
                                      project=self.project_for(path, config))
            self.analysed[uri] = Analysed(_digest(text), facts)
            return findings
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
            from occlint.errors import described
            self.log(f"occlint: internal error on {doc.path}: {described(exc)}")
            findings = []
        self.findings[uri] = findings
        lines = doc.lines
        diagnostics = [to_diagnostic(f, lines, doc.position_codec) for f in findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=doc.version))

    def compile(self, uri: str, path: str, text: str) -> None:
        """nvcc's figures and errors for the file on disk, as `check` gets them (runs in a worker
        thread): a unit is compiled itself; a header through the project's units (cached)."""
        from occlint.discover import is_unit
        from occlint.engine import errors_by_file_of
        from occlint.toolchain import collect_usage

        config = self.config_for(path)
        units = [path] if is_unit(path, config) else \
            [sf.path for sf in self.project_for(path, config) if is_unit(sf.path, config)]
        if not units:
            return
        report = collect_usage(units, config)
        if report.notice:
            self.notice(report.notice.removeprefix("occlint: notice: "))
        errors = errors_by_file_of(report.errors, [path], {path: text}).get(path, [])
        self.compiled[uri] = Compiled(_digest(text), tuple(report.usage_for(path)), tuple(errors))

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
            await self.in_background(self.compile_python, uri, path, text)
            return
        if not path or not is_cuda(path):
            return
        try:
            on_disk = await asyncio.get_running_loop().run_in_executor(None, _read_disk, path)
        except (OSError, UnicodeDecodeError):
            return
        if on_disk != doc.source.replace("\r\n", "\n"):
            return                      # unsaved edits: nvcc would compile other text
        await self.in_background(self.compile, uri, path, on_disk)

    async def in_background(self, work, uri: str, path: str, text: str) -> None:
        """Run a compile in a worker thread, then publish again; a failure is one message."""
        try:
            await asyncio.get_running_loop().run_in_executor(None, work, uri, path, text)
        except OcclintError as exc:
            self.notice(f"occlint: {exc}", lsp.MessageType.Warning)
            return
        except Exception as exc:
            self.log(f"occlint: compiling {path} failed: {type(exc).__name__}: {exc}")
            return
        if uri in self.workspace.text_documents:
            self.publish(uri)


def _read_disk(path: str) -> str:
    """The file's text on disk, if it is a regular UTF-8 file (a FIFO never blocks)."""
    from occlint.files import read_regular

    return read_regular(path).decode("utf-8-sig").replace("\r\n", "\n")


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
        # the finding itself, in positions that need no encoding: code actions find it by this
        # even when a client sends ranges back in another unit than it was given
        data={"arch": f.arch, "kernel": f.kernel, "code": f.code,
              "span": [f.span.line, f.span.column, f.span.end_line, f.span.end_column]},
    )


def finding_of(diag: lsp.Diagnostic, findings: list[Finding], lines, codec) -> Finding | None:
    """The finding a diagnostic shows: by its `data`, else (an older client dropped it) by range."""
    data = diag.data if isinstance(diag.data, dict) else {}
    span = data.get("span")
    for f in findings:
        if f.code != diag.code or f.arch != data.get("arch", f.arch):
            continue
        if span is not None:
            if [f.span.line, f.span.column, f.span.end_line, f.span.end_column] == list(span):
                return f
        elif to_range(f.span, lines, codec) == diag.range:
            return f
    return None


def noqa_edit(text: str, line: int, code: str, comment: str = "//") -> lsp.TextEdit | None:
    """Add `code` to the noqa comment on `line` (1-based), or append `  // noqa: CODE`
    (`# noqa` on a Python line; occlint.noqa decides where); None when the line already
    silences it."""
    lines = split_lines(text)
    content = lines[line - 1] if line <= len(lines) else ""
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
    end = lsp.Position(line=len(split_lines(source, keepends=True)), character=0)
    edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=end), new_text=fixed)
    from occlint.commands.summary import plural

    return lsp.CodeAction(title=f"occlint: apply {plural(len(applied), 'safe fix', 'safe fixes')}",
                          kind=FIX_ALL, edit=lsp.WorkspaceEdit(changes={uri: [edit]}))


# --- hover ------------------------------------------------------------------------------------------


def hover_markdown(facts, offset: int) -> str | None:
    """Per-arch registers, occupancy and limiter of the kernel named at `offset`, or None; read
    from the facts the diagnostics were made from (the kernel a launch calls: occlint.link)."""
    from occlint import occupancy
    from occlint.facts import primary_limiter
    from occlint.units import format_size

    sf = facts.source
    kf = None
    for candidate in facts.kernels:
        k = candidate.kernel
        if k.path == sf.path and k.span.start <= offset <= k.span.end:
            kf = candidate
        for launch in candidate.launches:
            if launch.span.start <= offset <= launch.span.start + len(launch.callee):
                kf = candidate
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
                           f"{format_size(u.static_smem)} |")
    sites = kf.sites
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
        from occlint.config import CONFIG_NAMES

        doc = ls.workspace.get_text_document(params.text_document.uri)
        if doc.path and os.path.basename(doc.path) in CONFIG_NAMES:
            ls.configs.clear()               # settings changed: every folder reloads
            for uri in list(ls.workspace.text_documents):
                ls.publish(uri)
        ls.publish(params.text_document.uri)
        await ls.compile_and_publish(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OcclintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.findings.pop(uri, None)
        ls.compiled.pop(uri, None)
        ls.python.pop(uri, None)
        ls.analysed.pop(uri, None)
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
            finding = finding_of(diag, ls.findings.get(uri, []), lines, codec)
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
        offset = sum(len(x) for x in split_lines(text, keepends=True)[: pos.line]) + pos.character
        got = ls.analysed.get(uri)
        if got is None or got.digest != _digest(text):
            ls.publish(uri)                  # the diagnostics are older than the text: bring both up
            got = ls.analysed.get(uri)
        md = hover_markdown(got.facts, offset) if got is not None else None
        if md is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=md))

    return server


class FramingGuard:
    """stdin for pygls that survives malformed framing. pygls reads header lines until a valid
    `Content-Length`; after a bad one (`Content-Length: abc`) the body, which ends without a
    newline, would swallow the next message's header, and every message after it. Here a
    header that starts in the middle of a line is split off, so reading resynchronises."""

    HEADER = b"Content-Length:"

    def __init__(self, raw) -> None:
        self.raw = raw
        self.pending = b""

    def readline(self) -> bytes:
        if b"\n" in self.pending:
            line, _, self.pending = self.pending.partition(b"\n")
            line += b"\n"
        else:
            line, self.pending = self.pending + self.raw.readline(), b""
        at = line.find(self.HEADER)
        if at > 0:
            self.pending, line = line[at:] + self.pending, line[:at]
        return line

    def read(self, n: int) -> bytes:
        head, self.pending = self.pending[:n], self.pending[n:]
        return head + (self.raw.read(n - len(head)) if n > len(head) else b"")


def serve() -> None:
    import sys

    build_server().start_io(stdin=FramingGuard(sys.stdin.buffer))
