"""The tree-sitter CUDA language, parsers and the file query, built once, on first use (10 ms:
commands that parse nothing never pay it)."""

from __future__ import annotations

import re
import threading
from functools import cache

import tree_sitter_cuda
from tree_sitter import Language, Parser, Query, QueryCursor

LANGUAGE = Language(tree_sitter_cuda.language())
_local = threading.local()

API_CALLS = (
    "cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
    "cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaOccupancyMaxPotentialBlockSize",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMem", "cudaOccupancyMaxPotentialBlockSizeWithFlags",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags",
)

# One pass over the file: every node the model and the constant evaluator need. Locals of a
# function are looked up on demand (occlint.source.context.Context.local).
#
# The query has only childless patterns: building a Query analyses the grammar's 13,077 parse
# states for every pattern with children (66 ms for the 21 patterns this used to have; 10 ms for
# any childless query), and that was a third of a warm one-file `check`. What a pattern's
# children said is checked on the nodes (`file_captures`); the API calls, rare in a file, are
# found by their names in the text.
FILE_PATTERNS = """
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
# "cuda" first, as a literal: a pattern that starts with `\b` tests every byte (5x slower);
# the word's start is checked on each match (`_api_calls`)
_API_NAME = re.compile(rb"cuda(?:" + b"|".join(sorted((n.encode()[4:] for n in API_CALLS),
                                                      key=len, reverse=True)) + rb")\b")
_KERNEL_HOLDERS = ("function_definition", "declaration", "field_declaration")


def may_hold_constructs(data: bytes) -> bool:
    """False when `data` has none of the words its kernels, `__shared__` declarations, launches
    and API calls are found by (`__global__`, `__shared__`, `<<<`, an API_CALLS name): parsing
    it would find none, so a listing need not."""
    return b"__global__" in data or b"__shared__" in data or b"<<<" in data or \
        _API_NAME.search(data) is not None


@cache
def file_query() -> Query:
    return Query(LANGUAGE, FILE_PATTERNS)


def query_in_background():
    """A started thread building the query: tree-sitter compiles it (~20 ms) without holding
    the GIL, so it overlaps a listing's discovery and reading. Join it before parsing (or
    forking: fork_map forks only a process without threads)."""
    thread = threading.Thread(target=file_query, name="occlint-query", daemon=True)
    thread.start()
    return thread


def load_parser() -> None:
    """Import the parser's modules and build the query now: before a listing forks its copies
    (which then inherit them), or while nvcc runs (instead of after the last compile)."""
    import occlint.source.build  # noqa: F401

    file_query()


def file_captures(root, data: bytes) -> dict[str, list]:
    """The file's nodes by role, each list in source order:
    def, fdef       `#define` object- and function-like
    global          declarations at namespace scope (file, namespace, extern "C", #if blocks)
    member          class members with a default value
    enums           enumerator lists
    kernel          function definitions and declarations written `__global__`
    shared          declarations with a `__shared__` qualifier
    launch          calls with `<<<...>>>`
    api             calls of API_CALLS by name (or `::name`)
    struct          struct definitions (with a body)
    typedef         `typedef` and `using` aliases
    function        function definitions (with a body)
    """
    raw = QueryCursor(file_query()).captures(root)
    out: dict[str, list] = {k: raw[k] for k in ("def", "fdef", "enums", "typedef") if k in raw}
    found: dict[str, list] = {}
    for scope in raw.get("scope", ()):
        for c in scope.children:
            if c.type == "declaration":
                found.setdefault("global", []).append(c)
    for kw in raw.get("global_kw", ()):
        p = kw.parent
        if p is not None and p.type in _KERNEL_HOLDERS:
            found.setdefault("kernel", []).append(p)
    for kw in raw.get("shared_kw", ()):
        p = kw.parent
        d = p.parent if p is not None and p.type == "type_qualifier" else None
        if d is not None and d.type == "declaration":
            found.setdefault("shared", []).append(d)
    for k in raw.get("chevrons", ()):
        p = k.parent
        if p is not None and p.type == "call_expression":
            found.setdefault("launch", []).append(p)
    for f in raw.get("field", ()):
        if f.child_by_field_name("default_value") is not None:
            found.setdefault("member", []).append(f)
    for n in raw.get("struct", ()):
        body = n.child_by_field_name("body")
        if body is not None and body.type == "field_declaration_list":
            found.setdefault("struct", []).append(n)
    for n in raw.get("function", ()):
        body = n.child_by_field_name("body")
        if body is not None and body.type == "compound_statement":
            found.setdefault("function", []).append(n)
    api = _api_calls(root, data)
    if api:
        found["api"] = api
    for name, nodes in found.items():
        out[name] = _in_order(nodes)
    return out


def _api_calls(root, data: bytes) -> list:
    """Calls whose function is an API_CALLS name, plain or `::`-qualified."""
    out = []
    for m in _API_NAME.finditer(data):
        if m.start() and (data[m.start() - 1:m.start()].isalnum() or data[m.start() - 1] == 95):
            continue                    # inside a longer name (`_` is 95)
        node = root.descendant_for_byte_range(m.start(), m.end())
        if node is None or node.type != "identifier" or node.start_byte != m.start() or \
                node.end_byte != m.end():
            continue                    # in a comment, a string, a macro body
        fn, call = node, node.parent
        if call is not None and call.type == "qualified_identifier" and \
                call.text == b"::" + m.group(0):
            fn, call = call, call.parent
        if call is not None and call.type == "call_expression" and \
                _same(call.child_by_field_name("function"), fn):
            out.append(call)
    return out


def _same(a, b) -> bool:
    return a is not None and (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def _in_order(nodes: list) -> list:
    """Source order, each node once (outer before inner at the same start)."""
    seen: dict[tuple, object] = {}
    for n in nodes:
        seen.setdefault((n.start_byte, -n.end_byte, n.type), n)
    return [seen[k] for k in sorted(seen)]


def new_parser() -> Parser:
    return Parser(LANGUAGE)


def parser() -> Parser:
    """One parser per thread (a Parser is not thread-safe)."""
    p = getattr(_local, "parser", None)
    if p is None:
        p = _local.parser = new_parser()
    return p


