"""Issue 13: one finding per place and cause, declared intent, deliberate launches, true advice."""

from __future__ import annotations

import json
from collections import Counter

from occlint.config import Config
from occlint.emit import EMITTERS
from occlint.engine import lint_source
from occlint.model import Usage

TEMPLATE = """\
template <typename T, int N>
__global__ void __launch_bounds__(256) fixup(T* out, int n) {
    out[threadIdx.x] = T(N);
}
"""


def _usages(archs, regs_by_args):
    return [Usage(kernel="fixup", arch=arch, registers=regs, template_args=args)
            for arch in archs for args, regs in regs_by_args.items()]


INSTANCES = {("float", "1"): 33, ("float", "2"): 34, ("double", "1"): 35}


def test_instantiations_and_agreeing_archs_are_one_finding():
    usage = _usages(("sm_80", "sm_90"), INSTANCES)
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_80", "sm_90")))
    cliffs = [f for f in findings if f.code == "OCC010"]
    assert len(cliffs) == 1, [f.message for f in findings]
    f = cliffs[0]
    assert f.span.line == 2
    assert f.arch == "sm_80,sm_90"
    assert "`fixup` (3 instantiations) uses 33-35 registers/thread" in f.message
    assert "on sm_80, sm_90 at 256 threads/block is 75%" in f.message
    assert "1-3 fewer registers/thread would allow 8 blocks/SM (100%)" in f.message
    assert len(f.instances) == 6
    assert {(i["kernel"], i["arch"]) for i in f.instances} == {
        (f"fixup<{a}, {b}>", arch) for a, b in INSTANCES for arch in ("sm_80", "sm_90")}
    assert all(i["message"].startswith("`fixup<") for i in f.instances)


def test_archs_whose_numbers_differ_stay_apart():
    # 41-43 registers: 5 blocks/SM on both, but 83.3% of sm_86's 48 warps and 62.5% of sm_90's 64
    usage = _usages(("sm_86", "sm_90"), {args: regs + 8 for args, regs in INSTANCES.items()})
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_86", "sm_90")))
    cliffs = [f for f in findings if f.code == "OCC010"]
    assert sorted(f.arch for f in cliffs) == ["sm_86", "sm_90"]
    assert all(len(f.instances) == 3 for f in cliffs)


def test_no_two_findings_share_file_line_code_arch():
    usage = _usages(("sm_80", "sm_86", "sm_90"), {**INSTANCES, ("int", "3"): 200})
    text = TEMPLATE + "void run(float* o, double* d) {\n" \
        "    fixup<float, 1><<<1000, 1000>>>(o, 1); fixup<double, 1><<<1000, 1000>>>(d, 1);\n}\n"
    findings = lint_source(text, "f.cu", usage, Config(arch=("sm_80", "sm_86", "sm_90")))
    keys = Counter((f.path, f.span.line, f.code, f.arch) for f in findings)
    assert findings and max(keys.values()) == 1, keys


def test_json_and_sarif_keep_the_instances():
    usage = _usages(("sm_90",), INSTANCES)
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_90",)))
    doc = json.loads(EMITTERS["json"](findings, root="."))
    (cliff,) = [d for d in doc if d["code"] == "OCC010"]
    assert [i["kernel"] for i in cliff["instances"]] == ["fixup<float, 1>", "fixup<float, 2>", "fixup<double, 1>"]
    assert [i["regs"] for i in cliff["instances"]] == [33, 34, 35]
    sarif = json.loads(EMITTERS["sarif"](findings, root="."))
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "OCC010"]
    assert len(result["relatedLocations"]) == 3
    assert len(result["properties"]["instances"]) == 3
    assert result["relatedLocations"][0]["message"]["text"].startswith("`fixup<float, 1>` uses 33")


def test_a_single_cause_has_one_instance():
    usage = [Usage(kernel="fixup", arch="sm_90", registers=34, template_args=("float", "1"))]
    findings = lint_source(TEMPLATE, "f.cu", usage, Config(arch=("sm_90",)))
    (cliff,) = [f for f in findings if f.code == "OCC010"]
    assert "instantiations" not in cliff.message and len(cliff.instances) == 1
    assert cliff.instances[0]["kernel"] == "fixup<float, 1>"


def _fixture_findings(name, usage=()):
    from conftest import FIXTURES
    text = (FIXTURES / name).read_text()
    return text, lint_source(text, name, list(usage), Config(arch=("sm_90",)))


def test_occ032_fix_scales_a_grid_written_from_the_block_size_or_says_it_cannot():
    text, findings = _fixture_findings("OCC032_launch_exceeds_bounds.cu")
    titles = {text.splitlines()[f.span.line - 1].split("<<<")[1].split(">>>")[0]: f.fix.message
              for f in findings if f.code == "OCC032" and f.fix}
    assert titles["n / 1024, 1024"] == ("Launch with 256 threads/block and a grid of `n / 256` "
                                        "(was `n / 1024`) to cover the same threads")
    assert "`(n + 255) / 256`" in titles["(n + 1023) / 1024, 1024"]
    assert "`DIV_UP(n, 256)`" in titles["DIV_UP(n, 1024), 1024"]
    assert "`800`" in titles["200, 1024"]
    assert titles["blocks, 512"] == ("Launch with 256 threads/block; the grid `blocks` is not scaled "
                                     "automatically: make it cover 512/256 times as many blocks")
    assert all(f.fix.applicability == "unsafe" for f in findings if f.code == "OCC032" and f.fix)


def test_occ031_round_up_is_unsafe():
    text = ("__global__ void tile(float* x) {\n    __shared__ float t[100];\n"
            "    t[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];\n}\n"
            "void run(float* x) { tile<<<500, 100>>>(x); }\n")
    (f,) = [f for f in lint_source(text, "t.cu", [], Config()) if f.code == "OCC031"]
    assert f.fix is not None and f.fix.applicability == "unsafe"
