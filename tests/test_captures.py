"""file_captures finds its nodes without a tree-sitter query (words in the text, a walk of the
containers). Checked here against the query it replaced, compiled at test time: the same nodes
in every CUDA file of the repository and in written cases, but for one deliberate difference
(a "function" tree-sitter reads inside a function body is a macro and its block)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_sitter import Query, QueryCursor

from occlint.source.grammar import LANGUAGE, _api_calls, _in_order, file_captures, parser

PATTERNS = """
(preproc_def) @def
(preproc_function_def) @fdef
(translation_unit) @scope
(declaration_list) @scope
(preproc_if) @scope
(preproc_ifdef) @scope
(preproc_else) @scope
(preproc_elif) @scope
(field_declaration) @field
(enumerator_list) @enums
"__global__" @global_kw
"__shared__" @shared_kw
(kernel_call_syntax) @chevrons
(struct_specifier) @struct
(type_definition) @typedef
(alias_declaration) @typedef
(function_definition) @function
"""


@pytest.fixture(scope="module")
def query():
    return Query(LANGUAGE, PATTERNS)


def _by_query(query, root, data: bytes) -> dict:
    """What every node of each role is, as the query finds it."""
    raw = QueryCursor(query).captures(root)
    out = {k: list(raw[k]) for k in ("def", "fdef", "enums", "typedef") if k in raw}
    out["global"] = [c for s in raw.get("scope", ()) for c in s.children if c.type == "declaration"]
    out["kernel"] = [k.parent for k in raw.get("global_kw", ())
                     if k.parent is not None and k.parent.type in
                     ("function_definition", "declaration", "field_declaration")]
    out["shared"] = [k.parent.parent for k in raw.get("shared_kw", ())
                     if k.parent is not None and k.parent.type == "type_qualifier"
                     and k.parent.parent is not None and k.parent.parent.type == "declaration"]
    out["launch"] = [k.parent for k in raw.get("chevrons", ())
                     if k.parent is not None and k.parent.type == "call_expression"]
    out["member"] = [f for f in raw.get("field", ())
                     if f.child_by_field_name("default_value") is not None]
    out["struct"] = [n for n in raw.get("struct", ())
                     if (b := n.child_by_field_name("body")) is not None
                     and b.type == "field_declaration_list"]
    out["function"] = [n for n in raw.get("function", ())
                       if (b := n.child_by_field_name("body")) is not None
                       and b.type == "compound_statement" and not _in_a_body(n)]
    out["api"] = _api_calls(root, data)
    return {k: _keys(_in_order(v)) for k, v in out.items() if v}


def _in_a_body(node) -> bool:
    """Inside a function's body: not in a class body, a namespace or an error node within it."""
    p = node.parent
    while p is not None and p.type not in ("ERROR", "namespace_definition",
                                           "field_declaration_list"):
        if p.type == "compound_statement":
            return True
        p = p.parent
    return False


def _keys(nodes) -> list[tuple]:
    return [(n.start_byte, n.end_byte, n.type) for n in nodes]


def _check(query, data: bytes) -> dict:
    root = parser().parse(data).root_node
    assert root.type == ("ERROR" if data.startswith(b"const int before") else "translation_unit")
    got = {k: _keys(v) for k, v in file_captures(root, data).items() if v}
    assert got == _by_query(query, root, data)
    return got


REPO = Path(__file__).resolve().parent.parent


def test_the_repositorys_cuda_files_as_the_query_finds_them(query):
    files = sorted(p for p in REPO.rglob("*") if p.suffix in (".cu", ".cuh", ".h")
                   and ".venv" not in p.parts and p.is_file())
    assert len(files) > 40
    kinds: set[str] = set()
    for path in files:
        kinds |= set(_check(query, path.read_bytes()))
    assert {"def", "fdef", "global", "kernel", "shared", "launch", "function", "struct",
            "enums", "member", "api"} <= kinds        # (typedefs: in the written cases below)


CASES = {
    "scopes": b"""
namespace a { namespace b { constexpr int N = 4; __global__ void k(); } }
extern "C" { const int M = 2; __global__ void k2(float *x) { __shared__ float s[M]; } }
extern "C" __global__ void k3() {}
#if X
const int P = 1;
#elif Y
const int P = 2;
#else
const int P = 3;
#endif
#ifdef Z
static const int Q = 1;
#elifdef W
static const int Q = 2;
#endif
""",
    "classes": b"""
struct S { static constexpr int n = 3; int m = 4; void f() {} struct In { int q = 1; }; };
class C { public: int x = 1; template <int N> int g() { return N; } friend void h() {}
#if A
  int y = 2;
#endif
};
union U { int a = 1; float b; int get() const { return a; } };
typedef struct { int v = 1; } T;
template <typename T> struct TS { T t = T(); };
enum E { A, B = 2 };
enum class F : int { X };
using I = int;
template <class T> using Ptr = T *;
""",
    "bodies": b"""
__global__ void k(float *x) {
  typedef float real;
  using idx = int;
  enum { W = 32 };
  struct L { int z = 0; __device__ int get() const { return z; } };
  #define IN_BODY 4
  __shared__ real s[W * IN_BODY];
  CUDA_KERNEL_LOOP(i, 10) { x[i] = s[i]; }
  if (x) { MACRO(y) { } }
}
void host() { k<<<1, 32>>>(0); ::cudaLaunchKernel((void *)k, 1, 32, 0, 0, 0); }
""",
    "words in comments and strings": b"""
// __global__ void no(); struct no { int x = 1; }; namespace no {}
/* #define NO 1 <<< enum typedef using class union */
const char *s = "__shared__ float z[4]; <<<";
int structure, enumerate, typedefs, usingx, namespaces, classy, unions;
__global__ void yes() {}
""",
    "a namespace macro": b"""
THRUST_NAMESPACE_BEGIN
namespace detail {
namespace complex {
using thrust::complex;
__host__ __device__ inline int f() { return 1; }
const int G = 4;
}
}
THRUST_NAMESPACE_END
""",
    # the whole file one error node (ggml.h): no declaration in it is at namespace scope
    "a root error": b"""const int before = 1;
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_add1_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
    GGML_API struct ggml_tensor * ggml_div_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,""",
    "errors": b"""
__global__ void k( {
int x = ;
}}}
SOME_MACRO(x)
__global__ void after() { __shared__ int s[8]; }
void g() { after<<<1, 2>>>(); }
struct { int a = 1;
""",
    "only an error": b")))) __global__ void k() {} ((((",
    "directives": b"""#  define SPACED 1
#\tif defined(A)
#  define IN_IF(x) (x)
# else
int z;
#endif
/* c */ #define AFTER_COMMENT 2
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_written_cases_as_the_query_finds_them(query, name):
    _check(query, CASES[name])


def test_a_macro_and_its_block_in_a_body_is_not_a_function(query):
    """`CUDA_KERNEL_LOOP(i, n) { ... }` reads as a function definition inside the kernel: the
    query counted it as one, which made it the launch's or the array's enclosing function."""
    data = CASES["bodies"]
    root = parser().parse(data).root_node
    nodes = QueryCursor(query).captures(root)["function"]
    assert any(_in_a_body(n) for n in nodes)          # what the query saw
    functions = file_captures(root, data)["function"]
    assert [data[f.start_byte:f.start_byte + 10] for f in functions] == \
        [b"__global__", b"__device__", b"void host("]
