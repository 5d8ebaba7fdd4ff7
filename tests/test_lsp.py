"""The language server end to end with pytest-lsp: a real `occlint server` subprocess on stdio.

pytest-lsp and lsprotocol are imported when a test here first runs, not when the file is
collected: lsprotocol's import takes ~0.3 s, which every pytest process (the controller and each
worker) paid before, lsp tests or not. pyproject's addopts turn the plugin's autoload off
(`-p no:pytest-lsp`); the `client` fixture registers its hooks (the server's log messages and
errors in the report) when it first starts a client."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from conftest import SCALE_100, STAGE_64K, STAGE_OPT_IN

if TYPE_CHECKING:
    from pytest_lsp import LanguageClient


class _Types:
    """lsprotocol.types, imported on first use."""

    def __getattr__(self, name):
        if name.startswith("_"):        # pytest's collection probes (`__pytest_wrapped__`...)
            raise AttributeError(name)
        from lsprotocol import types

        return getattr(types, name)


lsp = _Types()
SOURCE = SCALE_100.replace("<<<4096, 100>>>(x, 2.0f, 409600)", "<<<64, 100>>>(x, 2.0f, 6400)") + STAGE_64K
CONFIG = '[tool.occlint]\narch = ["sm_90"]\nignore = ["OCC033"]\ncliff-margin = 8\n'
PUBLISH = "textDocument/publishDiagnostics"


@pytest_asyncio.fixture
async def client(request, tmp_path):
    """A pytest-lsp client of a real `occlint server`, initialized on a project in tmp_path;
    what `pytest_lsp.fixture` does, with the plugin's hooks registered here."""
    import pytest_lsp.plugin
    from pytest_lsp import ClientServerConfig

    plugins = request.config.pluginmanager
    if plugins.get_plugin("pytest-lsp") is None and not plugins.is_registered(pytest_lsp.plugin):
        plugins.register(pytest_lsp.plugin, "pytest-lsp-hooks")
    lsp_client = await ClientServerConfig(
        server_command=[sys.executable, "-m", "occlint", "server"]).start()
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    (tmp_path / "k.cu").write_text(SOURCE)
    lsp_client.project = tmp_path
    lsp_client.init_result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(), root_uri=tmp_path.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=tmp_path.as_uri(), name="p")]))
    yield lsp_client
    await lsp_client.shutdown_session()
    await lsp_client.stop()


async def diagnostics_where(client, uri, predicate, timeout=120.0):
    """Wait for published diagnostics of `uri` that satisfy `predicate`; returns them."""
    async def wait():
        while not (uri in client.diagnostics and predicate(client.diagnostics[uri])):
            await client.wait_for_notification(PUBLISH)
        return client.diagnostics[uri]
    return await asyncio.wait_for(wait(), timeout)


def codes(diags) -> set:
    return {d.code for d in diags}


def apply_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP text edits (ASCII test text: characters = UTF-16 units), last first."""
    lines = text.splitlines(keepends=True)

    def offset(p: lsp.Position) -> int:
        return sum(len(x) for x in lines[: p.line]) + p.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


def change(client, uri, version, text):
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


async def actions_for(client, uri, diag):
    return await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=lsp.CodeActionContext(diagnostics=[diag])))


@pytest.mark.asyncio
async def test_open_change_code_actions_hover(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.hover_provider and caps.code_action_provider
    # nothing that would compete with clangd
    assert (caps.completion_provider, caps.definition_provider, caps.document_formatting_provider,
            caps.rename_provider, caps.semantic_tokens_provider) == (None, None, None, None, None)
    uri = (client.project / "k.cu").as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=SOURCE)))

    diags = await diagnostics_where(client, uri, lambda d: "OCC031" in codes(d))
    assert "OCC033" not in codes(diags)        # ignored in the workspace's pyproject.toml
    d = next(x for x in diags if x.code == "OCC031")
    assert d.source == "occlint"
    assert d.code_description.href.endswith("OCC031.md")
    assert d.range == lsp.Range(start=lsp.Position(line=6, character=16),
                                end=lsp.Position(line=6, character=19))
    assert d.severity is not None

    # code action: apply the fix, send the edited text, the finding goes away
    actions = await actions_for(client, uri, d)
    titles = [a.title for a in actions]
    assert "Add `// noqa: OCC031`" in titles
    fix = next(a for a in actions if a.title.startswith("Round the block size"))
    assert fix.title.endswith("(unsafe)") and not fix.is_preferred    # it changes the work per block
    fixed = apply_edits(SOURCE, fix.edit.changes[uri])
    assert "scale<<<50, 128>>>" in fixed          # the grid scaled: the same 6400 threads
    change(client, uri, 2, fixed)
    await diagnostics_where(client, uri, lambda d: "OCC031" not in codes(d))

    # source.fixAll.occlint: every safe fix as one edit (the opt-in call, not the round-up)
    change(client, uri, 3, SOURCE)
    await diagnostics_where(client, uri, lambda d: "OCC031" in codes(d) and "OCC022" in codes(d))
    [fix_all] = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        context=lsp.CodeActionContext(diagnostics=[], only=[lsp.CodeActionKind.SourceFixAll])))
    assert fix_all.kind == "source.fixAll.occlint"
    launch = "    stage<<<1024, 256, 65536>>>(x);\n"
    assert apply_edits(SOURCE, fix_all.edit.changes[uri]) == SOURCE.replace(launch, STAGE_OPT_IN + launch)

    # back to the mistake; this time silence it with the noqa action
    diags = client.diagnostics[uri]
    d = next(x for x in diags if x.code == "OCC031")
    noqa = next(a for a in await actions_for(client, uri, d) if "noqa" in a.title)
    silenced = apply_edits(SOURCE, noqa.edit.changes[uri])
    assert "    scale<<<64, 100>>>(x, 2.0f, 6400);  // noqa: OCC031\n" in silenced
    change(client, uri, 4, silenced)
    await diagnostics_where(client, uri, lambda d: "OCC031" not in codes(d))

    # hover on the kernel name
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=18)))
    assert hover is not None and "`scale`" in hover.contents.value
    nothing = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=1, character=5)))
    assert nothing is None


@pytest.mark.asyncio
async def test_hover_shows_nvcc_figures_after_save(client: LanguageClient, nvcc_path):
    uri = (client.project / "k.cu").as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=SOURCE)))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))

    async def figures():
        while True:
            hover = await client.text_document_hover_async(lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=lsp.Position(line=6, character=6)))          # `scale` at the launch
            if hover is not None and "| registers |" in hover.contents.value:
                return hover.contents.value
            await client.wait_for_notification(PUBLISH)
    value = await asyncio.wait_for(figures(), 180)
    assert "| sm_90 |" in value
    assert "| sm_90 | 100 (line 7) |" in value and "blocks/SM" in value


def test_positions_are_utf16_and_noqa_edits_extend_existing_lists():
    from pygls.workspace.position_codec import PositionCodec

    from occlint.lsp import noqa_edit, to_range
    from occlint.model import Span

    line = '    /* 😀 Σ */ k<<<1, 100>>>(x);  // noqa: OCC033\n'
    col = line.index("100") + 1                         # 1-based code points
    rng = to_range(Span(1, col, 1, col + 3), [line], PositionCodec())
    assert (rng.start.character, rng.end.character) == (col - 1 + 1, col - 1 + 1 + 3)  # 😀 is 2 units
    edit = noqa_edit(line, 1, "OCC031")
    assert edit.new_text == ", OCC031"
    assert apply_edits(line.replace("😀", "xx"), [edit]).endswith("// noqa: OCC033, OCC031\n")
    plain = noqa_edit("    k<<<1, 100>>>(x);   \n", 1, "OCC031")
    assert (plain.range.start.character, plain.new_text) == (len("    k<<<1, 100>>>(x);"), "  // noqa: OCC031")




PY_SOURCE = '''import cupy as cp
CODE = r"""
template <int N> __global__ void accumulate(float* out, const float* in, const float* w, int steps) {
    float acc[N];
    float wt[N];
#pragma unroll
    for (int j = 0; j < N; ++j) { acc[j] = 0.0f; wt[j] = w[j * blockDim.x + threadIdx.x]; }
    for (int i = 0; i < steps; ++i) {
        float v = in[i * blockDim.x + threadIdx.x];
#pragma unroll
        for (int j = 0; j < N; ++j) acc[j] = fmaf(v, wt[j], acc[j] * v);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) out[j * blockDim.x + threadIdx.x] = acc[j];
}
"""
mod = cp.RawModule(code=CODE, name_expressions=["accumulate<12>"])
f = mod.get_function("accumulate<12>")
f((1056,), (250,), (None, None, None, 9))
'''


@pytest.mark.asyncio
async def test_python_buffer_diagnostics_inside_the_string_and_actions(client: LanguageClient, nvrtc_lib):
    uri = (client.project / "k.py").as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=PY_SOURCE)))
    # at once: the launch rule at the Python call; after NVRTC: the register rule in the string
    diags = await diagnostics_where(client, uri, lambda d: {"OCC031", "OCC010"} <= codes(d))
    launch = next(d for d in diags if d.code == "OCC031")
    assert (launch.range.start.line, launch.range.start.character) == (18, 12)    # `250,`
    cliff = next(d for d in diags if d.code == "OCC010")
    assert cliff.range.start.line == 18         # at the launch; its fix edits the string
    actions = await actions_for(client, uri, cliff)
    fix = next(a for a in actions if "__launch_bounds__" in a.title)
    assert {e.range.start.line for e in fix.edit.changes[uri]} == {2}
    fixed = apply_edits(PY_SOURCE, fix.edit.changes[uri])
    assert "template <int N> __global__ void __launch_bounds__(250, " in fixed
    noqa = next(a for a in await actions_for(client, uri, launch) if "noqa" in a.title)
    assert noqa.title == "Add `# noqa: OCC031`"


HEADER = """\
__global__ void __launch_bounds__(128) tile(float* x) { x[threadIdx.x] = 0.f; }
"""
UNIT = """\
#include "tile.cuh"
void run(float* x) { tile<<<64, 256>>>(x); }
__global__ void broken(float* x) { x[0] = undefined_name; }
"""


@pytest.mark.asyncio
async def test_editor_gets_the_cli_inputs_header_kernels_and_compile_errors(client: LanguageClient, nvcc_path):
    from conftest import run_cli

    (client.project / "tile.cuh").write_text(HEADER)
    (client.project / "u.cu").write_text(UNIT)
    (client.project / "pyproject.toml").write_text(CONFIG + f'nvcc = "{nvcc_path}"\n')
    cli = run_cli("check", str(client.project / "u.cu"), str(client.project / "tile.cuh"),
                  "--output-format", "concise", cwd=client.project)
    assert "OCC032" in cli.stdout and "OCC900" in cli.stdout, cli.stdout + cli.stderr
    uri = (client.project / "u.cu").as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="cuda", version=1, text=UNIT)))
    # the header's __launch_bounds__ (project=) and nvcc's error (OCC900), as `check` reports them
    diags = await diagnostics_where(client, uri, lambda d: {"OCC032", "OCC900"} <= codes(d), 240)
    d = next(x for x in diags if x.code == "OCC032")
    assert d.data["code"] == "OCC032" and d.data["span"][0] == 2
    # a client that sends the range back in other units still gets the finding's actions
    skewed = lsp.Diagnostic(range=lsp.Range(start=lsp.Position(line=1, character=0),
                                            end=lsp.Position(line=1, character=1)),
                            message=d.message, code=d.code, source=d.source, data=d.data)
    titles = [a.title for a in await actions_for(client, uri, skewed)]
    assert "Add `// noqa: OCC032`" in titles
