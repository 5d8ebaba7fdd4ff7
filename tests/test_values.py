"""Block sizes and dynamic shared memory that take one of a few values (source.values), and
findings that name the values they hold for."""

from __future__ import annotations

import pytest

from occlint.config import Config
from occlint.engine import lint_source
from occlint.model import Usage
from occlint.source import parse

K = "__global__ void k(float* x) { extern __shared__ float s[]; s[threadIdx.x] = x[0]; }\n"


def _choices(body: str):
    sf = parse(K + body)
    return [la.choices for la in sf.launches]


@pytest.mark.parametrize("body, want", [
    # a constant array walked by a loop (the benchmark harness)
    ("void h(float* x) { int bs[] = {32, 64, 128};\n"
     "  for (int i = 0; i < 3; i++) { int b = bs[i]; k<<<1, b>>>(x); } }\n",
     ((32, 0), (64, 0), (128, 0))),
    # a file-scope constant array
    ("static const int SIZES[] = {256, 512};\n"
     "void h(float* x, int i) { k<<<1, SIZES[i]>>>(x); }\n", ((256, 0), (512, 0))),
    # a ternary of constants
    ("void h(float* x, bool big) { k<<<1, big ? 256 : 128>>>(x); }\n", ((128, 0), (256, 0))),
    # a parameter whose every call passes a constant, through two functions
    ("void run(float* x, int b) { k<<<1, b>>>(x); }\n"
     "void mid(float* x, int b) { run(x, b); }\n"
     "void h(float* x) { mid(x, 64); run(x, 96); }\n", ((64, 0), (96, 0))),
    # dynamic shared memory follows the block size's variable, pair by pair
    ("void run(float* x, int b) { size_t smem = b * sizeof(float); k<<<1, b, smem>>>(x); }\n"
     "void h(float* x) { run(x, 128); run(x, 256); }\n", ((128, 512), (256, 1024))),
    # a constant block, one of two dynamic sizes
    ("void h(float* x, bool f) { k<<<1, 256, f ? 8192 : 4096>>>(x); }\n",
     ((256, 4096), (256, 8192))),
])
def test_few_values_are_found(body, want):
    assert _choices(body) == [want]


@pytest.mark.parametrize("body", [
    "void h(float* x, int b) { k<<<1, b>>>(x); }\n",                      # no caller
    "void run(float* x, int b) { k<<<1, b>>>(x); }\n"
    "void h(float* x, int n) { run(x, 64); run(x, n); }\n",               # one caller unknown
    "void h(float* x) { int b = 32; b *= 2; k<<<1, b>>>(x); }\n",          # written: not constant
    "void h(float* x) { k<<<1, 256>>>(x); }\n",                             # one constant: no choice
])
def test_unknown_or_single_values_give_no_choices(body):
    assert _choices(body) == [()]


SRC = """\
__global__ void heavy(float* x) { x[threadIdx.x] = 0; }
void run(float* x, int b) {
    heavy<<<1000, b>>>(x);
}
void h(float* x) { run(x, 128); run(x, 256); run(x, 512); run(x, 1024); }
"""


def test_a_finding_names_the_values_it_holds_for():
    usage = [Usage("heavy", "sm_90", 84, mangled="_Z5heavyPf")]
    found = lint_source(SRC, "h.cu", usage, Config(arch=("sm_90",)))
    by_code = {f.code: f for f in found}
    assert set(by_code) == {"OCC001", "OCC034"}
    assert by_code["OCC001"].span.line == 3
    assert by_code["OCC001"].message.endswith(
        "[the block size is one of 128, 256, 512, 1024: this holds for 128, 256, 512]")
    assert "at 128 threads/block is 31.2%" in by_code["OCC001"].message
    assert by_code["OCC034"].message.endswith("this holds for 1024]")
    assert by_code["OCC001"].data["holds_for"] == "((128, 0), (256, 0), (512, 0))"


def test_a_constant_block_with_unknown_dynamic_smem_is_evaluated_at_its_block():
    """No launch gives a whole configuration: the kernel's best at the launch's own block size
    (no dynamic shared memory), basis `best`; a kernel with no launch: best over all sizes."""
    from occlint.facts import build_facts

    src = (K + "__global__ void lone(float* x) { x[0] = 1; }\n"
           "void h(float* x, int n) { k<<<100, 64, n * 4>>>(x); }\n")
    usage = [Usage("k", "sm_90", 40, mangled="_Z1kPf"), Usage("lone", "sm_90", 200, mangled="_Z4lonePf")]
    facts = build_facts(parse(src), usage, Config(arch=("sm_90",)), ("sm_90",))
    got = {s.facts.kernel.name: (s.basis, s.block, s.occ.occupancy) for s in facts.sites}
    assert got["k"] == ("best", 64, 0.75)
    assert got["lone"][0] == "best" and got["lone"][2] == 0.125
