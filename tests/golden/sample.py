"""One shared list of hand-built findings that every emitter test renders (tests/test_emit_formats.py)."""

from __future__ import annotations

from dataclasses import dataclass

from occlint.model import Edit, Finding, Fix, Span

ROOT = "/project"
ATTN = "/project/src/attn.cu"
CLEAN = "/project/src/clean.cu"
CMAKE = "/project/CMakeLists.txt"

SOURCES = {
    ATTN: (
        "#include <cuda_runtime.h>\n"
        "\n"
        "__global__ void attn_fwd(const float* q, float* out, int n) {\n"
        "    /* Σ über Blöcke */ __shared__ float tile[4096];\n"
        "    float acc = 0.f;\n"
        "    out[threadIdx.x] = acc + tile[threadIdx.x];\n"
        "}\n"
        "\n"
        "void launch(const float* q, float* out, int n) {\n"
        "    attn_fwd<<<n / 1000,\n"
        "               1000>>>(q, out, n);\n"
        "}\n"
    ),
    CLEAN: "__global__ void ok(float* x) { x[threadIdx.x] = 0.f; }\n",
    CMAKE: (
        "project(attn LANGUAGES CXX CUDA)\n"
        "set(CMAKE_CUDA_FLAGS \"${CMAKE_CUDA_FLAGS} -maxrregcount=32\")\n"
    ),
}


def span(path: str, line: int, column: int, end_line: int, end_column: int) -> Span:
    """A Span with its offsets computed from SOURCES (columns count characters)."""
    lines = SOURCES[path].splitlines(keepends=True)
    start = sum(len(x) for x in lines[: line - 1]) + column - 1
    end = sum(len(x) for x in lines[: end_line - 1]) + end_column - 1
    return Span(line, column, end_line, end_column, start, end)


def _cliff(arch: str, now: str) -> Finding:
    return Finding(
        code="OCC010", name="register-cliff",
        message=f"`attn_fwd` uses 40 registers/thread; 8 fewer would raise occupancy on {arch} "
                f"from {now} to 100%",
        path=ATTN, span=span(ATTN, 3, 17, 3, 25), severity="warning",
        fix=Fix("Cap registers with __launch_bounds__(256, 4)",
                (Edit("__launch_bounds__(256, 4) ", span(ATTN, 3, 17, 3, 17)),), "unsafe"),
        arch=arch, kernel="attn_fwd", url="https://occlint.dev/rules/OCC010",
    )


FINDINGS = [
    _cliff("sm_90", "75%"),
    _cliff("sm_80", "63%"),
    Finding(
        code="OCC020", name="static-shared-worst-case",
        message="`tile` takes 16 KiB of static shared memory: occupancy 50% "
                "(limited by the shared memory per SM)",
        path=ATTN, span=span(ATTN, 4, 42, 4, 46), severity="info",
        fix=Fix("Size `tile` for 1024 floats", (Edit("1024", span(ATTN, 4, 47, 4, 51)),), "display"),
        arch="sm_90", kernel="attn_fwd", url="https://occlint.dev/rules/OCC020",
    ),
    Finding(
        code="OCC031", name="block-not-warp-multiple",
        message="block size 1000 is not a multiple of 32,\nso 24 threads idle: 100% -> 97%",
        path=ATTN, span=span(ATTN, 10, 5, 11, 34), severity="error",
        kernel="attn_fwd", url="https://occlint.dev/rules/OCC031",
    ),
    Finding(
        code="OCC040", name="global-maxrregcount",
        message="`-maxrregcount=32` caps every kernel in the target; use __launch_bounds__ per kernel",
        path=CMAKE, span=span(CMAKE, 2, 43, 2, 59), severity="warning",
        url="https://occlint.dev/rules/OCC040",
    ),
]


@dataclass(frozen=True)
class SampleRule:
    code: str
    name: str
    summary: str
    severity: str = "warning"
    message: str = ""
    fix_title: str = ""
    rationale: str = ""
    example: str = ""
    use_instead: str = ""

    @property
    def url(self) -> str:
        return f"https://occlint.dev/rules/{self.code}"


RULES = {
    r.code: r for r in [
        SampleRule("OCC010", "register-cliff", "Register count sits just above an occupancy cliff.",
                   rationale="Registers are allocated per warp in units of 256.\n\nA few more "
                             "registers can cost a whole block per SM.",
                   example="__global__ void k(float* x) { ... }",
                   use_instead="__global__ void __launch_bounds__(256, 4) k(float* x) { ... }"),
        SampleRule("OCC020", "static-shared-worst-case", "Static shared memory sized for the worst case.",
                   severity="info", rationale="Shared memory limits resident blocks."),
        SampleRule("OCC031", "block-not-warp-multiple", "Block size is not a multiple of the warp size.",
                   severity="error", rationale="The last warp runs partly empty."),
        SampleRule("OCC040", "global-maxrregcount", "A global -maxrregcount caps every kernel.",
                   rationale="Per-kernel limits are better."),
    ]
}
