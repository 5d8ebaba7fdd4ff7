"""The tree-sitter CUDA language, a parser per thread, and the nodes of a file the model reads
(`file_captures`)."""

from __future__ import annotations

import re
import threading

import tree_sitter_cuda
from tree_sitter import Language, Parser

LANGUAGE = Language(tree_sitter_cuda.language())
_local = threading.local()

API_CALLS = (
    "cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
    "cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaOccupancyMaxPotentialBlockSize",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMem", "cudaOccupancyMaxPotentialBlockSizeWithFlags",
    "cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags",
    "cuLaunchKernel", "cuLaunchCooperativeKernel",      # the driver API (a CUfunction)
)

# The nodes the model and the constant evaluator need, found without a tree-sitter query:
# building any Query analyses the grammar's 13,077 parse states (12-20 ms, with the GIL held)
# and running one visits every node (a tenth of a listing). Instead, a construct written with a
# keyword or a directive is found where its word is in the text (bytes.find, then the token at
# that place: a word in a comment, a string or a longer name is no token), and definitions
# without one (functions, namespace-scope declarations) by a walk of the containers that hold
# them. Locals of a function are looked up on demand (occlint.source.context.Context.local).
_DIRECTIVE = re.compile(rb"#[ \t]*(?:define|ifdef|ifndef|if|else|elif)\b")
_SCOPES = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"})
_WORDS = tuple((w.encode(), w) for w in (
    "__global__", "__shared__", "<<<", "enum", "struct", "class", "union", "typedef", "using",
    "namespace"))
_BODIES = frozenset({"struct_specifier", "class_specifier", "union_specifier"})
# what holds function definitions and declarations at namespace or class scope; a function
# body does not (C++ has no nested functions: a definition tree-sitter reads inside one is a
# macro followed by a block, `CUDA_KERNEL_LOOP(i, n) { ... }`, and is not a function)
_CONTAINERS = frozenset({
    "namespace_definition", "declaration_list", "linkage_specification", "template_declaration",
    "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
    "field_declaration_list", "friend_declaration", "ERROR"})
# "cu" first, as a literal: a pattern that starts with `\b` tests every byte (5x slower);
# the word's start is checked on each match (`_api_calls`)
_API_NAME = re.compile(rb"cu(?:" + b"|".join(sorted((n.encode()[2:] for n in API_CALLS),
                                                    key=len, reverse=True)) + rb")\b")
_KERNEL_HOLDERS = ("function_definition", "declaration", "field_declaration")


def may_hold_constructs(data: bytes) -> bool:
    """False when `data` has none of the words its kernels, `__shared__` declarations, launches
    and API calls are found by (`__global__`, `__shared__`, `<<<`, an API_CALLS name): parsing
    it would find none, so a listing need not."""
    return b"__global__" in data or b"__shared__" in data or b"<<<" in data or \
        b"<< <" in data or _API_NAME.search(data) is not None


def load_parser() -> None:
    """Import the parser's modules now: before a listing forks its copies (which then inherit
    them), or while nvcc runs (instead of after the last compile)."""
    import occlint.source.build  # noqa: F401


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
    function        function definitions (with a body), outside function bodies
    """
    found: dict[str, list] = {}
    scopes = [root] if root.type == "translation_unit" else []
    containers = [root]
    token = root.descendant_for_byte_range
    for m in _DIRECTIVE.finditer(data):
        tok = token(m.start(), m.end())
        parent = tok.parent if tok is not None and tok.start_byte == m.start() else None
        kind = parent.type if parent is not None else ""
        if kind == "preproc_def":
            found.setdefault("def", []).append(parent)
        elif kind == "preproc_function_def":
            found.setdefault("fdef", []).append(parent)
        elif kind in _SCOPES:
            scopes.append(parent)
            containers.append(parent)
    for word, name in _WORDS:
        size = len(word)
        at = data.find(word)
        while at >= 0:
            end = at + size
            tok = token(at, end)
            at = data.find(word, end)
            if tok is None or tok.end_byte != end or tok.type != name:
                continue                # in a comment, a string, a longer name
            p = tok.parent
            if p is not None:
                _word(name, p, found, containers)
    functions = []
    seen = set()
    while containers:
        node = containers.pop()
        key = (node.start_byte, node.end_byte, node.type)
        if key in seen:
            continue
        seen.add(key)
        if key[2] == "declaration_list":
            scopes.append(node)
        for c in node.children:
            kind = c.type
            if kind == "function_definition":
                functions.append(c)
            elif kind == "field_declaration":
                if c.child_by_field_name("default_value") is not None:
                    found.setdefault("member", []).append(c)
            elif kind in _CONTAINERS:
                containers.append(c)
    for scope in scopes:
        for c in scope.children:
            if c.type == "declaration":
                found.setdefault("global", []).append(c)
    for f in functions:
        body = f.child_by_field_name("body")
        if body is not None and body.type == "compound_statement":
            found.setdefault("function", []).append(f)
    api = _api_calls(root, data)
    if api:
        found["api"] = api
    return {name: _in_order(nodes) for name, nodes in found.items()}


def _word(name: str, p, found: dict, containers: list) -> None:
    """What the token `name` (a keyword, `<<<`) with parent `p` adds to `found` and to the
    `containers` file_captures walks."""
    kind = p.type
    if name == "__global__":
        if kind in _KERNEL_HOLDERS:
            found.setdefault("kernel", []).append(p)
    elif name == "__shared__":
        d = p.parent if kind == "type_qualifier" else None
        if d is not None and d.type == "declaration":
            found.setdefault("shared", []).append(d)
    elif name == "<<<":
        call = p.parent if kind == "kernel_call_syntax" else None
        if call is not None and call.type == "call_expression":
            found.setdefault("launch", []).append(call)
    elif name == "enum":
        body = p.child_by_field_name("body") if kind == "enum_specifier" else None
        if body is not None and body.type == "enumerator_list":
            found.setdefault("enums", []).append(body)
    elif name == "typedef":
        if kind == "type_definition":
            found.setdefault("typedef", []).append(p)
    elif name == "using":
        if kind == "alias_declaration":
            found.setdefault("typedef", []).append(p)
    elif name == "namespace":        # also one tree-sitter reads inside a function body
        if kind == "namespace_definition":
            containers.append(p)
    elif kind in _BODIES:
        body = p.child_by_field_name("body")
        if body is not None and body.type == "field_declaration_list":
            containers.append(body)
            if kind == "struct_specifier":
                found.setdefault("struct", []).append(p)


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


