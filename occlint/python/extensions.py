"""PyTorch extensions: the `.cu` units a `setup.py` (`CUDAExtension(...)`) or a Python file
(`torch.utils.cpp_extension.load(...)`) builds, with that unit's flags, as compile-database
entries the toolchain reads like any other (a real compile_commands.json entry wins).

The flags are what torch passes to nvcc: its common flags (`-D__CUDA_NO_HALF_OPERATORS__`, ...,
`--expt-relaxed-constexpr`), `-DTORCH_EXTENSION_NAME=...`, `include_dirs`, `define_macros`,
`extra_compile_args["nvcc"]` (`extra_cuda_cflags` for `load`), and, when torch is installed,
its header folders, found without importing it, and Python's (with, for a CPU build of torch,
the define that lets its headers compile CUDA: compile.torch_flags), so extension units compile
with no configuration.
"""

from __future__ import annotations

import os

import libcst as cst
from libcst.metadata import MetadataWrapper

from occlint.python.strings import PyStr

TORCH_NVCC_FLAGS = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                    "--expt-relaxed-constexpr", "-DTORCH_API_INCLUDE_EXTENSION_H")
_CALLS = {"CUDAExtension": ("sources", 1), "load": ("sources", 1)}


def _strs(value) -> list[str] | None:
    if isinstance(value, PyStr):
        return None if value.unknown else [value.text]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            got = _strs(v)
            if got is None:
                return None
            out.extend(got)
        return out
    return None


def _flag_list(value) -> list[str]:
    got = _strs(value)
    return got or []


def _literal_flags(value, resolve=None) -> tuple[list[str], list[str]]:
    """(flags, the parts not read) of nvcc flags occlint could not evaluate whole, read from how
    they are written: a helper's one list argument (mamba's `append_nvcc_threads([...])`, which
    adds `--threads 4`), and list literals joined with `+` to something else (its
    `[...] + cc_flag`, the gencode flags appended under version tests): the literals' strings,
    and a name's where `resolve(name)` reads its strings (flash-fft-conv's module-level
    `cc_flag = [...]`). ([], []) when no literal list of strings is found."""
    from occlint.python.extract import Unknown

    if not isinstance(value, Unknown) or not value.source:
        return [], []
    try:
        node = cst.parse_expression(value.source)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return [], []
    if isinstance(node, cst.Call):
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return [], []
        node = node.args[0].value
    parts, stack = [], [node]
    while stack:                    # `a + b + c`, left to right
        n = stack.pop()
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add):
            stack += [n.right, n.left]
        else:
            parts.append(n)
    flags, unread = [], []
    for part in parts:
        named = resolve(part.value) if resolve is not None and isinstance(part, cst.Name) else None
        if isinstance(part, (cst.List, cst.Tuple)) and all(
                isinstance(e.value, cst.SimpleString) and
                isinstance(e.value.evaluated_value, str) for e in part.elements):
            flags += [e.value.evaluated_value for e in part.elements]
        elif named is not None:
            flags += named
        else:
            unread.append(cst.Module([]).code_for_node(part))
    return (flags, unread) if flags else ([], [])


def _named_strs(ex, name: str, at) -> list[str] | None:
    """The strings `name` holds where the call `at` is, when it is a list of them."""
    try:
        return _strs(ex._named(name, at, ex.scope_of(at), ex.start(at)))
    except (KeyError, RecursionError, ValueError, TypeError, AttributeError):
        return None


def extension_entries(setup_path: str, text: str | None = None,
                      globs: list | None = None) -> list[dict]:
    """Compile-database entries for the `.cu` sources of every CUDAExtension/load call in one
    Python file (paths relative to its folder). An unreadable or unparsable file gives none.
    `globs`: each `glob.glob` its calls were read with is appended, [pattern, folder, found]."""
    from occlint.python.compile import torch_flags
    from occlint.python.extract import PyModel, Unknown, _Extractor, _last, _name_of, _Scopes

    folder = os.path.dirname(os.path.abspath(setup_path))
    if text is None:
        try:
            from occlint.files import read_regular
            text = read_regular(setup_path).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return []
    if "CUDAExtension" not in text and "cpp_extension" not in text:
        return []
    try:
        tree = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return []
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    try:
        ex = _Extractor(wrapper, PyModel(setup_path, text))
        ex.glob_root = folder
        ex.glob_log = globs
        wrapper.visit(_Scopes(ex))
    except (RecursionError, KeyError):     # libcst's positions of a pathologically deep file
        return []
    entries: list[dict] = []
    torch_inc: list[str] | None = None

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal torch_inc
            api = _last(_name_of(node.func))
            if api not in _CALLS and isinstance(node.func, cst.Name):
                # `extension = CUDAExtension` in a build's CUDA arm, then `extension(...)`
                # (detectron2, kaolin, pytorch3d)
                called = ex.value(node.func)
                if isinstance(called, Unknown) and _last(called.source) == "CUDAExtension":
                    api = "CUDAExtension"
            if api not in _CALLS:
                return
            if api == "load" and "cpp_extension" not in text:
                return
            args = [a for a in node.args if a.keyword is None and not a.star]
            kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            src_node = kwargs.get("sources") or (args[1].value if len(args) > 1 else None)
            name_node = kwargs.get("name") or (args[0].value if args else None)
            sources = _strs(ex.value(src_node)) if src_node is not None else None
            if not sources:
                return
            name = _strs(ex.value(name_node)) if name_node is not None else None
            flags = list(TORCH_NVCC_FLAGS)
            if name:
                flags.append(f"-DTORCH_EXTENSION_NAME={name[0].rsplit('.', 1)[-1]}")
            unread = None
            if api == "CUDAExtension":
                extra = ex.value(kwargs["extra_compile_args"]) if "extra_compile_args" in kwargs else None
                nvcc = extra.get("nvcc") if isinstance(extra, dict) else extra
                got, rest = _flag_list(nvcc), []
                if not got:
                    got, rest = _literal_flags(nvcc, lambda name, at=node: _named_strs(ex, name, at))
                flags += got
                where = f"{os.path.basename(setup_path)}:{ex.positions[node].start.line}"
                if nvcc is not None and not got and not (isinstance(nvcc, (list, tuple)) and
                                                         not nvcc):
                    unread = (f"{where}: the nvcc flags of this extension are not a list "
                              "occlint can read: it compiles without them")
                elif rest:
                    unread = (f"{where}: part of the nvcc flags of this extension is not a list "
                              f"occlint can read ({', '.join(f'`{r}`' for r in rest)}): it "
                              "compiles with the rest")
                includes = _flag_list(ex.value(kwargs["include_dirs"])) if "include_dirs" in kwargs else []
                macros = ex.value(kwargs["define_macros"]) if "define_macros" in kwargs else []
                for m in macros if isinstance(macros, (list, tuple)) else []:
                    if isinstance(m, (list, tuple)) and m and isinstance(m[0], PyStr):
                        value = m[1] if len(m) > 1 else None
                        flags.append(f"-D{m[0].text}" + (f"={value.text}" if isinstance(value, PyStr) else ""))
            else:
                flags += _flag_list(ex.value(kwargs["extra_cuda_cflags"])) if "extra_cuda_cflags" in kwargs else []
                includes = _flag_list(ex.value(kwargs["extra_include_paths"])) if "extra_include_paths" in kwargs else []
            if torch_inc is None:
                torch_inc = torch_flags()
            flags += [f"-I{os.path.join(folder, d)}" for d in includes]
            flags += torch_inc
            for src in sources:
                if not src.endswith(".cu"):
                    continue
                path = os.path.normpath(os.path.join(folder, src))
                entries.append({"directory": folder, "file": path,
                                "arguments": ["nvcc", "-c", path, "-o", path + ".o", *flags],
                                **({"occlint_warning": unread} if unread else {})})

    try:
        wrapper.module.visit(Calls())
    except (RecursionError, KeyError):     # libcst's positions of a pathologically deep file
        return []
    return entries
