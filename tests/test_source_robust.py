"""occlint.source.parse on hostile input: encodings, line endings, size, broken code, fuzzing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import occlint.source.build as build
from occlint.model import Span
from occlint.source import parse

CASES = Path(__file__).parent / "source_cases"
SAMPLE = (CASES / "launches.cu").read_text() + (CASES / "shared.cu").read_text()


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setattr(build, "STRICT", True)   # an internal error fails the test


def all_spans(sf):
    for k in sf.kernels:
        yield k.span
        yield k.decl_span
        if k.launch_bounds is not None and k.launch_bounds.span is not None:
            yield k.launch_bounds.span
    for s in sf.shared:
        yield s.span
        for i in s.indices:
            yield i.span
    for la in sf.launches:
        yield la.span
        yield from la.arg_spans
        if la.config_span is not None:
            yield la.config_span
    for a in sf.attributes:
        yield a.span


def check_spans(sf):
    """Every span lies in the text, and its line/column agree with its offsets."""
    lines = sf.text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for span in all_spans(sf):
        assert isinstance(span, Span)
        assert 0 <= span.start <= span.end <= len(sf.text)
        for line, col, off in ((span.line, span.column, span.start),
                               (span.end_line, span.end_column, span.end)):
            assert 1 <= line <= len(lines)
            assert starts[line - 1] + col - 1 == off


def test_crlf_positions_match_lf():
    lf = parse(SAMPLE)
    crlf = parse(SAMPLE.replace("\n", "\r\n"))
    assert crlf.text == SAMPLE.replace("\n", "\r\n")
    check_spans(crlf)
    assert len(crlf.launches) == len(lf.launches) > 10
    for a, b in zip(crlf.launches, lf.launches, strict=True):
        assert (a.span.line, a.span.column) == (b.span.line, b.span.column)
        assert crlf.text[a.span.start:a.span.end].replace("\r\n", "\n") == \
            lf.text[b.span.start:b.span.end]
    assert [s.size_bytes for s in crlf.shared] == [s.size_bytes for s in lf.shared]


def test_bom_and_non_ascii_columns_count_characters():
    text = "// é中文 ünïcödé\n__global__ void k() {}\nvoid h() { /* ü */ k<<<1, 256>>>(); }\n"
    sf = parse(b"\xef\xbb\xbf" + text.encode())
    assert sf.text == text                                    # BOM stripped
    la = sf.launches[0]
    assert (la.span.line, la.span.column) == (3, 20)          # "ü" is one column
    assert sf.text[la.span.start:la.span.end] == "k<<<1, 256>>>()"
    check_spans(sf)


def test_invalid_utf8_and_nul_bytes():
    data = b"__global__ void k(int* p) { p[0] = 1; }\n\xff\xfe\x00\xc3(\n" \
           b"void h() { k<<<2, 64>>>(0); }\n"
    sf = parse(data)
    assert "\ufffd" in sf.text
    assert [la.block.x for la in sf.launches] == [64]
    check_spans(sf)


def test_lone_surrogates_in_str_input():
    sf = parse("__global__ void k() {}\n// \udc80\nvoid h() { k<<<1, 32>>>(); }")
    assert sf.launches[0].block.x == 32
    check_spans(sf)


@pytest.mark.parametrize("broken", [
    "void broken() { int x = ; }}", "int broken = (1 + ;", "@@@ $$$ ```",
    "void f() { for (;;) { if ( } }", "struct { int a; ;;",
    "SOME_MACRO(x)",        # no `;`: error recovery pulls the next `__global__` into an ERROR
])
def test_broken_code_keeps_the_parts_that_parse(broken):
    text = ("__global__ void good(int* p) { p[0] = 1; }\n" + broken + "\n"
            "__global__ void also_good(int* p) { __shared__ float s[64]; s[0] = 0; }\n"
            "void h() { good<<<1, 128>>>(0); also_good<<<1, 64>>>(0); }\n")
    sf = parse(text)
    assert {k.name for k in sf.kernels} == {"good", "also_good"}
    assert [la.block.x for la in sf.launches] == [128, 64]
    assert sf.shared[0].size_bytes == 256 and sf.shared[0].kernel == "also_good"


def test_big_file():
    # 5 MB: the cases twice around a long generated comment (a dense 5 MB of code takes
    # seconds in tree-sitter alone; bench/source.py measures throughput)
    unit = (CASES / "kernels.cu").read_text()
    filler = ("// " + "generated " * 10 + "\n") * 50_000
    text = unit + filler + unit
    assert len(text) >= 5_000_000
    sf = parse(text.encode())
    one = parse(unit)
    assert len(sf.kernels) == len(one.kernels)          # the same kernel twice is one kernel
    assert len(sf.launches) == 2 * len(one.launches)    # each launch is its own site
    last, first = sf.launches[-1], one.launches[-1]
    assert last.span.line == first.span.line + unit.count("\n") + 50_000
    assert sf.text[last.span.start:last.span.end] == unit[first.span.start:first.span.end]


def test_deep_macro_nest_is_bounded():
    text = "#define M0 1\n" + "".join(
        f"#define M{i} (M{i - 1} + M{i - 1})\n" for i in range(1, 400))
    text += "__global__ void k() {}\nvoid h() { k<<<1, M12>>>(); k<<<1, M399>>>(); }\n"
    sf = parse(text)
    assert [la.block.x for la in sf.launches] == [4096, None]


def test_deep_parentheses():
    text = "__global__ void k() {}\nvoid h() { k<<<1, " + "(" * 5000 + "1" + ")" * 5000 + ">>>(); }"
    parse(text)        # no exception; the value may be unknown


@pytest.mark.parametrize("data", [b"", b"\x00" * 100, b"<<<>>>", b"__global__", b"#define",
                                  b"__shared__ float s[", b"k<<<1,2>>>(", b"template<", b"\r\r\r",
                                  b"__global__ void __launch_bounds__( k() {}"])
def test_degenerate_inputs(data):
    sf = parse(data)
    check_spans(sf)


_TOKENS = ["__global__", "void", "k", "(", ")", "{", "}", "<<<", ">>>", ",", ";", "dim3",
           "__shared__", "float", "s", "[", "]", "256", "BLOCK", "#define BLOCK 128\n", "\n",
           "\r\n", "template<int B>", "__launch_bounds__(", "threadIdx.x", "+", "if", "<",
           "cudaLaunchKernel(", "cudaFuncSetAttribute(", "&", "extern", "\"", "//", "/*", "*/",
           "é", "\x00", "namespace n {", "::", "sizeof(", "?", ":", "0x1F", "'", "\\\n",
           "#define L(x) do { x<<<1, 2>>>(); } while (0)\n", "##", "#define K(n) void n() {"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.lists(st.sampled_from(_TOKENS), max_size=80).map(" ".join),
    st.text(max_size=300),
    st.binary(max_size=300),
    st.tuples(st.integers(0, len(SAMPLE)), st.integers(0, 40), st.text(max_size=10)).map(
        lambda t: SAMPLE[:t[0]] + t[2] + SAMPLE[t[0] + t[1]:]),
))
def test_fuzz_never_raises_and_spans_stay_inside(data):
    sf = parse(data)
    check_spans(sf)


def test_parse_and_specialize_from_threads():
    import threading

    from occlint.link import find_kernel
    from occlint.source import specialize

    text = (CASES / "shared.cu").read_text()
    errors = []

    def work(n):
        try:
            for i in range(15):
                sf = parse(text + f"\n// {n} {i}\n")
                k = find_kernel(sf, "templated_reduce")
                assert specialize(sf, k, [128, "float"]).static_smem == 1024
        except Exception as exc:     # collected: an assert in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# 1500 links: beyond Python's default recursion limit (1000) for any one-frame-per-level walk
@pytest.mark.parametrize("text", [
    "__global__ void k() { __shared__ float a[64]; int tid = threadIdx.x;\n"
    "for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (" + " && ".join(["tid < s"] * 1500) +
    ") a[tid + s] = 0; } }",
    "void h() { " + "::".join(["a"] * 1500) + "<<<1, 2>>>(); }",
    "__global__ void k() {}\nvoid h() { int b, m; cudaOccupancyMaxPotentialBlockSize(&m, &b, k);"
    " k<<<1, " + " + ".join(["b"] * 1500) + ">>>(); }",
    "__global__ void k() { __shared__ float a[64]; a[" + " + ".join(["threadIdx.x"] * 1500) +
    "] = 0; }",
    "__global__ void k() { __shared__ float a[64]; a" + "[0]" * 1500 + " = 0; }",
    "void h() { k<<<1, " + "dim3(" * 500 + "1" + ")" * 500 + ">>>(); }",
])
def test_long_chains_do_not_recurse(text):
    sf = parse(text)        # no RecursionError (STRICT shows it); the values may be unknown
    check_spans(sf)


def test_deeply_nested_kernels_keep_their_scopes_linkage_and_dead_branches():
    """Scopes, `extern "C"` and `#if 0` are read from a node's ancestors, found downwards from
    the root (climbing `Node.parent`, itself a walk from the root, was quadratic: 20,000 nested
    `#if 1` took 11 s); the answers at depth are the ones at the surface."""
    depth = 300
    text = ("#if 1\n" * depth + 'namespace a { extern "C" { namespace b {\n'
            "__global__ void live(int* x) { x[0] = 1; }\n"
            "#if 0\n__global__ void gone(int* x) { x[0] = 2; }\n#endif\n"
            "} } }\n" + "#endif\n" * depth +
            "template <int N> struct S { template <int M> static __global__ void t(int* x) "
            "{ __shared__ int s[N + M]; s[0] = x[0]; x[1] = s[0]; } };\n")
    sf = parse(text)
    assert [(k.qualname, k.extern_c) for k in sf.kernels] == [("a::b::live", True), ("S::t", False)]
    check_spans(sf)


def test_namespaces_survive_error_recovery_in_a_class_body():
    """xgboost's gpu_predictor.cu: `XGBOOST_DEV_INLINE Loader(...) : batch_{...}` (a macro
    before a constructor) is an error tree-sitter recovers from by closing the namespace, so the
    kernels after it were `PredictKernel`, where nvcc's are `xgboost::predictor::PredictKernel`.
    In a tree with errors the namespaces are those a count of the braces gives."""
    text = (CASES.parent / "source_cases" / "namespace_after_error.cu").read_text()
    sf = parse(text)
    assert [k.qualname for k in sf.kernels] == [
        "xgboost::predictor::PredictKernel", "xgboost::predictor::(anonymous namespace)::Other",
        "xgboost::predictor::v1::Inl", "xgboost::predictor::Last"]
    assert [(la.callee, la.block.x) for la in sf.launches] == [("PredictKernel", 128)]


@pytest.mark.parametrize("text, expected", [
    ("namespace a { namespace { int x; } }", [(0, 36, "a"), (14, 34, "(anonymous namespace)")]),
    ("namespace a::b { inline namespace v2 { } }", [(0, 42, "a::b"), (24, 40, "v2")]),
    ('namespace a { char c = \'}\'; const char* s = "}"; /* } */ // }\n}', [(0, 63, "a")]),
    ("#if X\nnamespace a {\n#else\nnamespace b {\n#endif\n}", [(6, 48, "a")]),
    ("#if 0\nnamespace a {\n#else\nnamespace b {\n#endif\n}", [(26, 48, "b")]),
    ("namespace a { }}", None),
    ("namespace a { {", None),
    ("namespace fs = std::filesystem; void f() { }", []),
])
def test_brace_count_namespaces(text, expected):
    from occlint.source.text import namespaces

    assert namespaces(text.encode()) == expected
