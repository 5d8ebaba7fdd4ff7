"""The tree-sitter CUDA language, parsers and the query, compiled once, on first use (a Query
costs 80 ms whatever its size: commands that parse nothing never pay it)."""

from __future__ import annotations

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

# One pass over the file: everything the model and the constant evaluator need. Locals of a
# function are looked up on demand (occlint.source.context.Context.local).
FILE_PATTERNS = f"""
(preproc_def) @def
(preproc_function_def) @fdef
(translation_unit (declaration) @global)
(declaration_list (declaration) @global)
(preproc_if (declaration) @global)
(preproc_ifdef (declaration) @global)
(preproc_else (declaration) @global)
(preproc_elif (declaration) @global)
(field_declaration default_value: (_)) @member
(enumerator_list) @enums
(function_definition "__global__") @kernel
(declaration "__global__") @kernel
(field_declaration "__global__") @kernel
(declaration (type_qualifier "__shared__")) @shared
(call_expression (kernel_call_syntax)) @launch
(call_expression function: (identifier) @api.fn
  (#any-of? @api.fn {" ".join(f'"{n}"' for n in API_CALLS)})) @api
(call_expression function: (qualified_identifier) @api.fn
  (#any-of? @api.fn {" ".join(f'"::{n}"' for n in API_CALLS)})) @api
(struct_specifier body: (field_declaration_list)) @struct
(type_definition) @typedef
(alias_declaration) @typedef
(function_definition body: (compound_statement)) @function
"""


@cache
def file_query() -> Query:
    return Query(LANGUAGE, FILE_PATTERNS)


def new_parser() -> Parser:
    return Parser(LANGUAGE)


def parser() -> Parser:
    """One parser per thread (a Parser is not thread-safe)."""
    p = getattr(_local, "parser", None)
    if p is None:
        p = _local.parser = new_parser()
    return p


def captures(query: Query, node) -> dict:
    return QueryCursor(query).captures(node)
