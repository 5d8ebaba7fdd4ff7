"""CUDA in a Python file, read with libcst: kernel source strings, kernel objects, launches.

`extract(text, path)` finds the calls that compile CUDA from a string (`cupy.RawKernel`,
`cupy.RawModule`, PyCUDA's `SourceModule`, `torch.utils.cpp_extension.load_inline`), evaluates
their code argument to a `PyStr` (the value with a position map), the options and name
expressions, and follows the kernel objects they give to their launches (`k(grid, block, args,
shared_mem=n)`, PyCUDA's `f(..., block=, grid=, shared=)`, `prepared_call`) and to
`k.max_dynamic_shared_size_bytes = n`. Values are evaluated from literals, names assigned in the
enclosing function or the module (the last assignment before the use), tuples and arithmetic.
Pure: no I/O.
"""

from __future__ import annotations

import ast
import math
import operator
import re

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from occlint.python import strings
from occlint.python.strings import PyStr
from occlint.record import dataclass, field

COMPILERS = {"RawKernel": "cupy", "RawModule": "cupy", "SourceModule": "pycuda",
             "DynamicSourceModule": "pycuda", "load_inline": "torch"}


# the words of a switch for a build with another accelerator (ROCm's, mmcv's MLU, NPU, MPS,
# DIOPI branches): false in a CUDA build
_OTHER_BACKENDS = {"hip", "rocm", "mlu", "npu", "mps", "xpu", "diopi", "dipu", "musa", "hpu"}
# the words of a switch that means "build with CUDA" (`is_cuda`, `WITH_CUDA`, `FORCE_CUDA`,
# `CUDA_HOME`, `torch.cuda.is_available`): any other word (`use_cuda_graphs`) and it is not one
_BUILD_WORDS = {"cuda", "is", "with", "use", "has", "have", "build", "force", "enable", "enabled",
                "available", "home", "found", "torch", "compile"}


def _cuda_truth(test, params: frozenset = frozenset()) -> bool | None:
    """The value of a build script's `if` test in a CUDA build on this machine, when it asks
    only what that build answers: whether it is for ROCm or another accelerator (a name with a
    `hip`, `rocm`, `mlu`, `npu`, `mps`, ... part, `torch.version.hip`,
    `torch.is_mlu_available()`: False), whether CUDA is there (`is_cuda`, `WITH_CUDA`,
    `torch.cuda.is_available()`, `CUDA_HOME is not None`, `FORCE_CUDA`: True),
    the platform (`sys.platform == "win32"`, `os.name == "nt"`: this one's), with `not`,
    `and`, `or`. None for anything else, or a name in `params` (a function's parameter, which
    its caller sets)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _cuda_truth(test.expression, params)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        a, b = _cuda_truth(test.left, params), _cuda_truth(test.right, params)
        if isinstance(test.operator, cst.Or):
            return True if True in (a, b) else False if a is False and b is False else None
        return False if False in (a, b) else True if a is True and b is True else None
    if isinstance(test, cst.Call):          # torch.cuda.is_available(), os.getenv("FORCE_CUDA")
        func = _name_of(test.func) or ""
        if func.endswith("available"):      # (torch.is_mlu_available(): another backend's)
            return _word_truth(func)
        if _last(func) in ("getenv", "get") and test.args and \
                isinstance(test.args[0].value, cst.SimpleString):
            return _word_truth(str(test.args[0].value.evaluated_value))
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        right = comp.comparator
        if isinstance(comp.operator, (cst.IsNot, cst.Is)) and isinstance(right, cst.Name) and \
                right.value == "None":
            left = _cuda_truth(test.left, params)       # `CUDA_HOME is not None`
            if left is None:
                return None
            return left if isinstance(comp.operator, cst.IsNot) else not left
        if isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
            here = _platform_value(test.left)
            if here is not None and isinstance(right, cst.SimpleString):
                same = here == right.evaluated_value
                return same if isinstance(comp.operator, cst.Equal) else not same
            if isinstance(test.left, cst.Call):         # `os.getenv("FORCE_CUDA", "0") == "1"`
                return _cuda_truth(test.left, params)
        return None
    name = _name_of(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
    if not name or name.split(".")[0] in params:
        return None
    return _word_truth(name)


def _word_truth(name: str) -> bool | None:
    """A build switch's name: a part naming another accelerator (_OTHER_BACKENDS) is false in a
    CUDA build; `cuda` with only _BUILD_WORDS beside it true; None otherwise."""
    parts = set(re.split(r"[._\s]+", name.lower())) - {""}
    if parts & _OTHER_BACKENDS:
        return False
    if "cuda" in parts and parts <= _BUILD_WORDS:
        return True
    return None


def _platform_value(node) -> str | None:
    """`sys.platform` or `os.name` as this machine has them, for the node naming one."""
    import os
    import sys

    return {"sys.platform": sys.platform, "os.name": os.name}.get(_name_of(node) or "")


class Unknown:
    """A value occlint could not evaluate; `source` is how it was written."""

    def __init__(self, source: str = "") -> None:
        self.source = source

    def __repr__(self) -> str:
        return f"Unknown({self.source!r})"


@dataclass
class Module:
    """One compiled CUDA source string."""

    index: int
    api: str                         # RawKernel | RawModule | SourceModule | load_inline
    framework: str                   # cupy | pycuda | torch
    code: PyStr | None               # None: the code could not be evaluated at all
    code_source: str                 # the code argument as written
    offset: int                      # the call, in the .py text
    end: int
    backend: str = "nvrtc"           # nvrtc | nvcc
    options: tuple[str, ...] = ()
    options_known: bool = True
    name_expressions: tuple[str, ...] = ()
    kernel: str | None = None        # RawKernel's name
    extern_c: bool = False           # PyCUDA wraps the source in extern "C" { }
    include_dirs: tuple[str, ...] = ()
    rewritten: str = ""              # CuPy's translate_cucomplex / jitify: the compiled text differs
    relocatable: bool = False        # compiled relocatable, then device-linked with cudadevrt:
                                     # CuPy's enable_cooperative_groups, PyCUDA's DynamicSourceModule


@dataclass(frozen=True)
class KernelRef:
    module: int
    name: str                        # as given: "k" or a name expression "k<256>"


@dataclass(frozen=True)
class ModuleRef:
    module: int


@dataclass
class Arg:
    value: object                    # int | tuple | Unknown | None (absent)
    source: str
    start: int
    end: int


@dataclass
class PyLaunch:
    kernel: KernelRef
    start: int                       # the whole call
    end: int
    grid: Arg
    block: Arg
    shared: Arg
    style: str                       # cupy | pycuda


@dataclass
class PyAttribute:
    kernel: KernelRef
    name: str                        # max_dynamic_shared_size_bytes
    value: Arg
    start: int
    end: int


@dataclass
class PyModel:
    path: str
    text: str
    modules: list[Module] = field(default_factory=list)
    launches: list[PyLaunch] = field(default_factory=list)
    attributes: list[PyAttribute] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)   # (offset, what was not understood)
    literals: list[tuple[int, int]] = field(default_factory=list)   # every string literal: (start, end)

    def literal_end_line(self, offset: int) -> int | None:
        """The line where the string literal containing `offset` ends (ruff's place for the
        `# noqa` of a finding inside a multi-line string); None outside literals."""
        for start, end in self.literals:
            if start <= offset < end:
                return self.text.count("\n", 0, end) + 1
        return None


_BINOPS = {cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
           cst.FloorDivide: operator.floordiv, cst.Divide: operator.truediv, cst.Modulo: operator.mod,
           cst.Power: operator.pow, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
           cst.BitOr: operator.or_, cst.BitAnd: operator.and_, cst.BitXor: operator.xor}
_AUG = {cst.AddAssign: cst.Add(), cst.SubtractAssign: cst.Subtract(), cst.MultiplyAssign: cst.Multiply(),
        cst.FloorDivideAssign: cst.FloorDivide(), cst.ModuloAssign: cst.Modulo(),
        cst.LeftShiftAssign: cst.LeftShift(), cst.RightShiftAssign: cst.RightShift()}
_FUNCS = {"min": min, "max": max, "int": int, "abs": abs, "len": len, "round": round}
# list methods that change the list in place: `append`/`extend` are followed (`options = []`
# then `options.append('--maxrregcount=128')`); after any other the value is not known
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}
_MATH = {"ceil": math.ceil, "floor": math.floor}


def _name_of(node: cst.BaseExpression) -> str | None:
    """`a.b.c` -> "a.b.c" for names and attributes; None otherwise."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = _name_of(node.value)
        return f"{left}.{node.attr.value}" if left else None
    return None


def _last(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


class _Scopes(cst.CSTVisitor):
    """Every assignment, in order, per scope (module, function); and each function's returns."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, ex: _Extractor) -> None:
        self.ex = ex
        self.stack: list[cst.CSTNode | None] = [None]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)
        self.ex.functions.setdefault(node.name.value, node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.stack.append(node)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.stack.pop()

    def _record(self, target: cst.BaseExpression, value, node, kind: str) -> None:
        name = _name_of(target)
        if isinstance(target, cst.Subscript):       # `options[0] = ...`: changed in place
            name, kind = _name_of(target.value), "mutate"
        if name:
            self.ex.assigns.setdefault((self.stack[-1], name), []).append((self.ex.start(node), value, kind, node))
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements, strict=True):
                self._record(t.value, v.value, node, kind)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._record(t.target, node.value, node, "=")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._record(node.target, node.value, node, "=")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._record(node.target, (node.operator, node.value), node, "aug")

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if isinstance(f, cst.Attribute) and f.attr.value in _MUTATORS and _name_of(f.value):
            args = [a for a in node.args if a.keyword is None and not a.star]
            kind = f.attr.value if f.attr.value in ("append", "extend") and \
                len(args) == len(node.args) == 1 else "mutate"
            self._record(f.value, args[0].value if kind != "mutate" else None, node, kind)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and isinstance(self.stack[-1], cst.FunctionDef):
            self.ex.returns.setdefault(self.stack[-1], []).append(node.value)


class _Extractor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, wrapper: MetadataWrapper, model: PyModel) -> None:
        self.wrapper = wrapper
        self.model = model
        self.positions = wrapper.resolve(PositionProvider)
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.lines = [0]
        for i, ch in enumerate(model.text):
            if ch == "\n":
                self.lines.append(i + 1)
        self.assigns: dict[tuple, list] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.returns: dict[cst.FunctionDef, list] = {}
        self.modules_by_call: dict[cst.Call, Module] = {}
        self.depth = 0
        self.glob_root: str | None = None     # set by extensions.py: `glob.glob` reads this folder
        self.glob_log: list | None = None     # and the globs read are noted here
        self.prepared_blocks: dict[str, cst.BaseExpression] = {}  # receiver -> prepare(block=)

    # --- positions ------------------------------------------------------------------------------

    def _offset(self, line: int, column: int) -> int:
        return (self.lines[line - 1] if line - 1 < len(self.lines) else len(self.model.text)) + column

    def start(self, node: cst.CSTNode) -> int:
        r: CodeRange = self.positions[node]
        return self._offset(r.start.line, r.start.column)

    def end(self, node: cst.CSTNode) -> int:
        r: CodeRange = self.positions[node]
        return self._offset(r.end.line, r.end.column)

    def source(self, node: cst.CSTNode) -> str:
        return self.model.text[self.start(node):self.end(node)]

    def scope_of(self, node: cst.CSTNode) -> list:
        out, cur = [], node
        while cur is not None:
            cur = self.parents.get(cur)
            if isinstance(cur, (cst.FunctionDef, cst.Lambda)):
                out.append(cur)
        return [*out, None]

    # --- evaluation -----------------------------------------------------------------------------

    def lookup(self, name: str, at: int, scopes: list):
        """The node last assigned to `name` before offset `at` (the innermost scope first)."""
        for scope in scopes:
            entries = self.assigns.get((scope, name))
            if not entries:
                continue
            before = [e for e in entries if e[0] < at]
            chosen = before or (entries if scope is None else [])
            if chosen:
                return chosen[-1]
        if "." in name:     # `self.k = ...` in one method, `self.k(...)` in another
            found = [e for (scope, n), entries in self.assigns.items() if n == name for e in entries]
            if found:
                return max(found, key=lambda e: e[0])
            owner, _, attr = name.rpartition(".")
            if "." not in owner:    # `self.CODE`, `Cls.CODE`: a class attribute (class bodies are module scope here)
                return self.lookup(attr, at, [None])
        return None

    def value(self, node, scopes=None, at: int | None = None):
        """Evaluate an expression: int, float, str (PyStr), tuple/list, dict, None, Unknown,
        KernelRef, ModuleRef."""
        if self.depth > 60:
            return Unknown(self.source(node))
        self.depth += 1
        try:
            scopes = scopes if scopes is not None else self.scope_of(node)
            return self._value(node, scopes, self.start(node) if at is None else at)
        except (ArithmeticError, ValueError, TypeError, OverflowError, KeyError, IndexError):
            return Unknown(self.source(node))
        finally:
            self.depth -= 1

    def _value(self, node, scopes, at):
        if isinstance(node, cst.Integer):
            return int(node.value.replace("_", ""), 0)
        if isinstance(node, cst.Float):
            return float(node.value.replace("_", ""))
        if isinstance(node, cst.SimpleString):
            s = strings.simple_string(node.value, self.start(node))
            return s if s is not None else Unknown(node.value)
        if isinstance(node, cst.ConcatenatedString):
            left, right = self.value(node.left, scopes, at), self.value(node.right, scopes, at)
            if isinstance(left, PyStr) and isinstance(right, PyStr):
                return left.copy().extend(right)
            return Unknown(self.source(node))
        if isinstance(node, cst.FormattedString):
            return self._fstring(node, scopes, at)
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            if node.value == "__file__" and not self.lookup("__file__", at, scopes):
                import os
                return PyStr.synthetic(os.path.abspath(self.model.path), self.start(node))
            return self._named(node.value, node, scopes, at)
        if isinstance(node, cst.Attribute):
            name = _name_of(node)
            if name and self.lookup(name, at, scopes):
                return self._named(name, node, scopes, at)
            if node.attr.value == "parent":       # `Path(__file__).parent`
                part = self.value(node.value, scopes, at)
                if isinstance(part, PyStr) and not part.unknown:
                    import posixpath
                    return PyStr.synthetic(posixpath.dirname(part.text), self.start(node))
            return Unknown(self.source(node))
        if isinstance(node, (cst.Tuple, cst.List)):
            items = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    inner = self.value(el.value, scopes, at)
                    if not isinstance(inner, (tuple, list)):
                        return Unknown(self.source(node))
                    items.extend(inner)
                else:
                    items.append(self.value(el.value, scopes, at))
            return tuple(items) if isinstance(node, cst.Tuple) else list(items)
        if isinstance(node, cst.Dict):
            out = {}
            for el in node.elements:
                if not isinstance(el, cst.DictElement):
                    return Unknown(self.source(node))
                key = self.value(el.key, scopes, at)
                out[key.text if isinstance(key, PyStr) else key] = self.value(el.value, scopes, at)
            return out
        if isinstance(node, cst.UnaryOperation):
            v = self.value(node.expression, scopes, at)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if isinstance(node.operator, cst.Minus):
                    return -v
                if isinstance(node.operator, cst.Plus):
                    return v
                if isinstance(node.operator, cst.BitInvert) and isinstance(v, int):
                    return ~v
            return Unknown(self.source(node))
        if isinstance(node, cst.BinaryOperation):
            return self._binop(node.operator, node.left, node.right, scopes, at, node)
        if isinstance(node, cst.Call):
            return self._call(node, scopes, at)
        if isinstance(node, cst.Subscript):
            base = self.value(node.value, scopes, at)
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                key = self.value(node.slice[0].slice.value, scopes, at)
                if isinstance(base, (tuple, list)) and isinstance(key, int):
                    return base[key]
                if isinstance(base, dict):
                    return base[key.text if isinstance(key, PyStr) else key]
            return Unknown(self.source(node))
        if isinstance(node, cst.IfExp):
            return Unknown(self.source(node))
        return Unknown(self.source(node))

    _BRANCHES = (cst.If, cst.Else, cst.For, cst.While, cst.ExceptHandler, cst.Match)

    def _runs_on_cuda(self, stmt, use) -> bool | None:
        """Does `stmt` run in a CUDA build of the extension on this machine, by the tests of the
        `if`s around it in its function or module that are not also around `use` (those hold
        at the use either way) (`_cuda_truth`: `if HIP_BUILD:`, `if torch.cuda.is_available()
        or FORCE_CUDA:`, `if sys.platform == "win32":`)? False when one arm it is in does not
        run; True when every such `if` runs the arm it is in (and no loop or `try` is around
        it); None otherwise, and for a test of a parameter of its function (the caller sets
        it)."""
        arms: list[tuple[cst.If, bool]] = []
        loops, params = False, set()
        child, cur = stmt, self.parents.get(stmt)
        while cur is not None and not isinstance(cur, cst.Module):
            if isinstance(cur, (cst.FunctionDef, cst.Lambda)):
                plist = cur.params
                params = {p.name.value for p in (*plist.posonly_params, *plist.params,
                                                  *plist.kwonly_params)}
                params |= {a.name.value for a in (plist.star_arg, plist.star_kwarg)
                           if isinstance(a, cst.Param)}
                break
            if isinstance(cur, cst.If):
                if not self._inside(use, cur):
                    arms.append((cur, child is cur.orelse))
            elif isinstance(cur, self._BRANCHES) and not isinstance(cur, cst.Else) and \
                    not self._inside(use, cur):
                loops = True
            child, cur = cur, self.parents.get(cur)
        verdict: bool | None = True if arms and not loops else None
        for node, in_else in arms:
            t = _cuda_truth(node.test, frozenset(params))
            if t is not None and t == in_else:
                return False            # (the arm it is in does not run)
            if t is None:
                verdict = None
        return verdict

    def _branch(self, stmt):
        """The innermost if/else/loop/except around an assignment, within its function."""
        cur = self.parents.get(stmt)
        while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.Lambda, cst.Module)):
            if isinstance(cur, self._BRANCHES):
                return cur
            cur = self.parents.get(cur)
        return None

    def _inside(self, node, ancestor) -> bool:
        cur = node
        while cur is not None:
            if cur is ancestor:
                return True
            cur = self.parents.get(cur)
        return False

    def _set_outside(self, name: str, pos: int, scopes: list, branch) -> bool:
        """Whether `name` has a value from before `pos` that does not come from inside `branch`
        (so the use after the branch may see either)."""
        for scope in scopes:
            for e in self.assigns.get((scope, name), ()):
                if e[0] < pos and not self._inside(e[3], branch):
                    return True
        return False

    def _named(self, name: str, node, scopes, at):
        found = self.lookup(name, at, scopes)
        if found is None:
            return Unknown(self.source(node))
        pos, value, kind, stmt = found
        branch = self._branch(stmt)
        runs = self._runs_on_cuda(stmt, node) if branch is not None else None
        if runs is False and not self._inside(node, branch):
            # a ROCm build's branch (`if HIP_BUILD:` ... `else:`): the CUDA build's value is
            # the one before it (mamba's extra_compile_args)
            return self._named(name, node, scopes, self.start(branch))
        if branch is not None and not runs and not self._inside(node, branch) and \
                self._set_outside(name, pos, scopes, branch):
            # set under a condition, with an earlier value too: which one runs is not known here
            return Unknown(f"{name} (set under a condition)")
        if kind in ("append", "extend", "mutate"):
            return self._mutated(name, node, scopes, pos, kind, value, stmt)
        if kind == "aug":
            op, rhs = value
            if type(op) not in _AUG:
                return Unknown(self.source(node))
            left = self._named(name, node, scopes, pos)
            if isinstance(left, Unknown):
                right = self.value(rhs, scopes, pos)
                if isinstance(right, PyStr) and isinstance(op, cst.AddAssign):
                    return PyStr.missing(left.source or name, pos).extend(right.copy())
                return left
            return self._binop(_AUG[type(op)], node, rhs, scopes, pos, node, left_value=left)
        inner = self.scope_of(value)
        return self.value(value, inner, pos)

    def _mutated(self, name: str, node, scopes, pos: int, kind: str, arg, stmt=None):
        """The list `name` after `name.append(arg)` / `name.extend(arg)` at `pos`, the dict
        `name` after `name[key] = value` or `name[key] += [...]` (kaolin's
        `extra_compile_args['nvcc'] = [...]`); Unknown after any other change in place, or when
        the value before it is not known."""
        if kind == "mutate":
            return self._item_set(name, node, scopes, pos, stmt)
        before = self._named(name, node, scopes, pos)
        if not isinstance(before, (list, tuple)):
            return Unknown(f"{name} (changed in place)")
        added = self.value(arg, scopes, pos)
        if kind == "append":
            return [*before, added]
        return [*before, *added] if isinstance(added, (list, tuple)) else \
            Unknown(f"{name} (changed in place)")

    def _item_set(self, name: str, node, scopes, pos: int, stmt):
        """The dict `name` after `stmt`, `name[key] = value` or `name[key] += [...]`."""
        changed = Unknown(f"{name} (changed in place)")
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            target, op = stmt.targets[0].target, None
        elif isinstance(stmt, cst.AugAssign):
            target, op = stmt.target, stmt.operator
        else:
            return changed
        if not isinstance(target, cst.Subscript) or len(target.slice) != 1 or \
                not isinstance(target.slice[0].slice, cst.Index) or _name_of(target.value) != name:
            return changed
        before = self._named(name, node, scopes, pos)
        key = self.value(target.slice[0].slice.value, scopes, pos)
        if isinstance(key, PyStr):
            key = None if key.unknown else key.text
        if not isinstance(before, dict) or not isinstance(key, (str, int)) or \
                isinstance(key, bool):
            return changed
        new = self.value(stmt.value, scopes, pos)
        if op is not None:
            old = before.get(key)
            if not isinstance(op, cst.AddAssign) or not isinstance(old, (list, tuple)) or \
                    not isinstance(new, (list, tuple)):
                return changed
            new = [*old, *new]
        return {**before, key: new}

    def _binop(self, op, left, right, scopes, at, node, left_value=None):
        lv = left_value if left_value is not None else self.value(left, scopes, at)
        rv = self.value(right, scopes, at)
        kind = type(op)
        if isinstance(lv, PyStr):
            if kind is cst.Add and isinstance(rv, PyStr):
                return lv.copy().extend(rv)
            if kind is cst.Add:
                return lv.copy().extend(PyStr.missing(self.source(right), self.start(right)))
            if kind is cst.Modulo:
                return strings.percent(lv, rv, self.start(right), self.as_str)
            if kind is cst.Divide and isinstance(rv, PyStr) and not lv.unknown and \
                    not rv.unknown:     # `Path(this_dir) / "csrc"`: str / str is no Python
                import posixpath
                return PyStr.synthetic(posixpath.join(lv.text, rv.text), self.start(node))
            return Unknown(self.source(node))
        if kind is cst.Add and isinstance(rv, PyStr):
            return PyStr.missing(self.source(left), self.start(left)).extend(rv)
        if isinstance(lv, (tuple, list)) and kind in (cst.Add, cst.Multiply):
            return _BINOPS[kind](lv, rv)
        if isinstance(lv, (int, float)) and isinstance(rv, (int, float)) and kind in _BINOPS:
            if kind in (cst.Power, cst.LeftShift) and isinstance(rv, int) and rv > 64:
                return Unknown(self.source(node))
            return _BINOPS[kind](lv, rv)
        return Unknown(self.source(node))

    def as_str(self, value, source: str, pos: int, spec: str = "") -> PyStr:
        """A value substituted into a string (format, f-string, %)."""
        if isinstance(value, PyStr):
            return PyStr(list(value.chars), [pos] * len(value.chars), [None] * len(value.chars),
                         list(value.unknown))
        if isinstance(value, bool) or value is None or isinstance(value, Unknown):
            if isinstance(value, bool):
                return PyStr.synthetic(str(value), pos)
            return PyStr.missing(source, pos)
        if isinstance(value, (int, float)):
            try:
                return PyStr.synthetic(format(value, spec) if spec else str(value), pos)
            except ValueError:
                return PyStr.synthetic(str(value), pos)
        return PyStr.missing(source, pos)

    def _fstring(self, node: cst.FormattedString, scopes, at):
        out = PyStr()
        quote = node.quote if hasattr(node, "quote") else '"'
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                out.extend(strings.fstring_text(part.value, self.start(part), node.start, quote))
            elif isinstance(part, cst.FormattedStringExpression):
                spec = ""
                if part.format_spec:
                    spec = "".join(p.value for p in part.format_spec if isinstance(p, cst.FormattedStringText))
                value = self.value(part.expression, scopes, at)
                if part.conversion:
                    value = value if isinstance(value, PyStr) else Unknown(self.source(part))
                out.extend(self.as_str(value, self.source(part), self.start(part), spec))
        return out

    def _call(self, node: cst.Call, scopes, at):
        fname = _name_of(node.func)
        last = _last(fname)
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if node in self.modules_by_call:
            mod = self.modules_by_call[node]
            return KernelRef(mod.index, mod.kernel) if mod.api == "RawKernel" and mod.kernel else ModuleRef(mod.index)
        if fname in ("os.path.dirname", "os.path.abspath", "os.path.realpath",
                     "path.dirname", "path.abspath") and len(args) == 1 and not kwargs:
            part = self.value(args[0].value, scopes, at)        # setup.py's `__file__` idiom
            if isinstance(part, PyStr) and not part.unknown:
                import posixpath
                f = posixpath.dirname if fname.endswith("dirname") else posixpath.normpath
                return PyStr.synthetic(f(part.text), self.start(node))
            return Unknown(self.source(node))
        if fname in ("Path", "pathlib.Path", "PurePath", "pathlib.PurePath",
                     "os.fspath") and len(args) == 1 and not kwargs:
            part = self.value(args[0].value, scopes, at)   # flash-attention's `Path(this_dir)`
            return part if isinstance(part, PyStr) else Unknown(self.source(node))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "resolve", "absolute") and not args and not kwargs:
            part = self.value(node.func.value, scopes, at)  # `Path(__file__).resolve()`
            if isinstance(part, PyStr) and not part.unknown:
                import posixpath
                return PyStr.synthetic(posixpath.normpath(part.text), self.start(node))
            return Unknown(self.source(node))
        if fname in ("os.path.join", "path.join", "posixpath.join") and args and not kwargs:
            parts = [self.value(a.value, scopes, at) for a in args]
            if all(isinstance(p, PyStr) and not p.unknown for p in parts):
                import posixpath
                return PyStr.synthetic(posixpath.join(*(p.text for p in parts)), self.start(node))
            return Unknown(self.source(node))
        if fname in ("glob.glob", "glob") and self.glob_root and len(args) == 1:
            pattern = self.value(args[0].value, scopes, at)
            if isinstance(pattern, PyStr) and not pattern.unknown:
                from occlint.python import expand_glob
                found = expand_glob(pattern.text, self.glob_root)
                if self.glob_log is not None:
                    self.glob_log.append([pattern.text, self.glob_root, found])
                return [PyStr.synthetic(p, self.start(node)) for p in found]
            return Unknown(self.source(node))
        if isinstance(node.func, cst.Attribute):
            owner = node.func.value
            method = node.func.attr.value
            if method == "prepare":         # PyCUDA: f.prepare("PPi") returns f
                return self.value(owner, scopes, at)
            if method in ("get_function", "get_kernel"):
                mod = self.value(owner, scopes, at)
                name = self.value(args[0].value, scopes, at) if args else None
                if isinstance(mod, ModuleRef) and isinstance(name, PyStr) and not name.unknown:
                    return KernelRef(mod.module, name.text)
                base = _template_base(name)
                if isinstance(mod, ModuleRef) and base:
                    return KernelRef(mod.module, base)      # `'k<{}>'.format(t)`: k, its args unknown
                return Unknown(self.source(node))
            if method in ("dedent", "strip", "lstrip", "rstrip", "format", "replace") or fname in ("textwrap.dedent",):
                if method == "dedent":
                    s = self.value(args[0].value, scopes, at) if args else None
                    return strings.dedent(s) if isinstance(s, PyStr) else Unknown(self.source(node))
                s = self.value(owner, scopes, at)
                if not isinstance(s, PyStr):
                    return Unknown(self.source(node))
                if method in ("strip", "lstrip", "rstrip"):
                    chars = self.value(args[0].value, scopes, at) if args else None
                    if args and not isinstance(chars, PyStr):
                        return Unknown(self.source(node))
                    return strings.strip(s, chars.text if chars else None, method != "rstrip", method != "lstrip")
                if method == "format":
                    values = [self.value(a.value, scopes, at) for a in args]
                    kw = {k: self.value(v, scopes, at) for k, v in kwargs.items()}
                    return strings.format_(s, values, kw, self.start(node), self.as_str)
                if method == "replace" and len(args) >= 2:
                    old = self.value(args[0].value, scopes, at)
                    new = self.value(args[1].value, scopes, at)
                    if not isinstance(old, PyStr) or old.unknown:
                        return Unknown(self.source(node))
                    new = new if isinstance(new, PyStr) else self.as_str(new, self.source(args[1].value),
                                                                          self.start(args[1].value))
                    return strings.replace(s, old.text, new)
                return Unknown(self.source(node))
            if fname and fname.startswith("math.") and last in _MATH and args:
                v = self.value(args[0].value, scopes, at)
                return _MATH[last](v) if isinstance(v, (int, float)) else Unknown(self.source(node))
        if fname == "dedent" and args:
            s = self.value(args[0].value, scopes, at)
            return strings.dedent(s) if isinstance(s, PyStr) else Unknown(self.source(node))
        if fname == "str" and len(args) == 1:
            v = self.value(args[0].value, scopes, at)
            if isinstance(v, PyStr):
                return v
            return self.as_str(v, self.source(args[0].value), self.start(args[0].value))
        if fname in _FUNCS and args and not kwargs:
            values = [self.value(a.value, scopes, at) for a in args]
            if fname == "len" and len(values) == 1 and isinstance(values[0], (tuple, list, PyStr)):
                return len(values[0].chars if isinstance(values[0], PyStr) else values[0])
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                return _FUNCS[fname](*values)
            return Unknown(self.source(node))
        if fname in ("tuple", "list") and len(args) == 1:
            v = self.value(args[0].value, scopes, at)
            return (tuple if fname == "tuple" else list)(v) if isinstance(v, (tuple, list)) else Unknown(self.source(node))
        # a function of this file that returns a kernel (a cached kernel factory)
        if isinstance(node.func, cst.Name) and node.func.value in self.functions:
            fn = self.functions[node.func.value]
            for ret in self.returns.get(fn, []):
                v = self.value(ret, [fn, *self.scope_of(fn)], self.start(ret))
                if isinstance(v, (KernelRef, ModuleRef)):
                    return v
        return Unknown(self.source(node))

    # --- the compile calls ----------------------------------------------------------------------

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.model.literals.append((self.start(node), self.end(node)))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.model.literals.append((self.start(node), self.end(node)))

    def visit_Call(self, node: cst.Call) -> None:
        api = _last(_name_of(node.func))
        if api in COMPILERS and node not in self.modules_by_call:
            self._module(node, api)

    def _module(self, node: cst.Call, api: str) -> None:
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        framework = COMPILERS[api]
        if api == "load_inline":
            code_node = kwargs.get("cuda_sources") or (args[2].value if len(args) > 2 else None)
        elif api == "RawModule":
            if "path" in kwargs and "code" not in kwargs:
                return          # a precompiled cubin/PTX file
            code_node = kwargs.get("code") or (args[0].value if args else None)
        elif api in ("SourceModule", "DynamicSourceModule"):
            code_node = kwargs.get("source") or (args[0].value if args else None)
        else:
            code_node = kwargs.get("code") or (args[0].value if args else None)
        if code_node is None:
            return
        value = self.value(code_node)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, PyStr) for v in value):
            joined = PyStr()
            for i, part in enumerate(value):
                if i:
                    joined.extend(PyStr.synthetic("\n", part.pos[0] if part.pos else self.start(code_node)))
                joined.extend(part)
            value = joined
        code = value if isinstance(value, PyStr) else None
        mod = Module(index=len(self.model.modules), api=api, framework=framework, code=code,
                     code_source=self.source(code_node), offset=self.start(node), end=self.end(node))
        if framework in ("pycuda", "torch"):
            mod.backend = "nvcc"
        backend = kwargs.get("backend")
        if backend is not None:
            b = self.value(backend)
            if isinstance(b, PyStr) and not b.unknown:
                mod.backend = b.text
            else:       # a setting elsewhere: the framework's default, and say so
                self.model.problems.append((self.start(backend), f"backend `{_short(self.source(backend))}` "
                                                                 f"could not be evaluated; compiled with {mod.backend}"))
        opt_key = {"torch": "extra_cuda_cflags"}.get(framework, "options")
        if opt_key in kwargs:
            opts = self.value(kwargs[opt_key])
            if isinstance(opts, PyStr):
                opts = (opts,)
            if isinstance(opts, (tuple, list)) and all(isinstance(o, PyStr) and not o.unknown for o in opts):
                mod.options = tuple(o.text for o in opts)
            elif opts is not None:
                mod.options_known = False
        if "name_expressions" in kwargs:
            names = self.value(kwargs["name_expressions"])
            if isinstance(names, (tuple, list)):
                mod.name_expressions = tuple(n.text for n in names if isinstance(n, PyStr) and not n.unknown)
        if framework == "cupy":
            mod.rewritten = ", ".join(k for k in ("translate_cucomplex", "jitify")
                                      if k in kwargs and self.value(kwargs[k]) is not False)
            coop = kwargs.get("enable_cooperative_groups")
            if coop is not None:
                flag = self.value(coop)
                mod.relocatable = isinstance(flag, int) and bool(flag)    # (a bool is an int)
                if not (flag is None or isinstance(flag, int)):
                    self.model.problems.append((self.start(coop), (
                        f"enable_cooperative_groups `{_short(self.source(coop))}` could not be "
                        "evaluated; compiled without it (as one program, not linked)")))
        if api == "RawKernel":
            name_node = kwargs.get("name") or (args[1].value if len(args) > 1 else None)
            name = self.value(name_node) if name_node is not None else None
            mod.kernel = name.text if isinstance(name, PyStr) and not name.unknown else None
        if framework == "pycuda":
            # PyCUDA wraps the source in extern "C" unless `no_extern_c` is true (any truthy
            # constant: `no_extern_c=1` too); DynamicSourceModule compiles with -rdc=true and
            # links cudadevrt (dynamic parallelism)
            no_extern = self.value(kwargs["no_extern_c"]) if "no_extern_c" in kwargs else None
            mod.extern_c = not (isinstance(no_extern, (int, float, str)) and bool(no_extern))
            mod.relocatable = api == "DynamicSourceModule"
            if "include_dirs" in kwargs:
                dirs = self.value(kwargs["include_dirs"])
                if isinstance(dirs, (tuple, list)):
                    mod.include_dirs = tuple(d.text for d in dirs if isinstance(d, PyStr) and not d.unknown)
        if framework == "torch" and "extra_include_paths" in kwargs:
            dirs = self.value(kwargs["extra_include_paths"])
            if isinstance(dirs, (tuple, list)):
                mod.include_dirs = tuple(d.text for d in dirs if isinstance(d, PyStr) and not d.unknown)
        if code is None:
            self.model.problems.append((self.start(code_node), f"the CUDA source `{_short(self.source(code_node))}` "
                                                                "could not be evaluated; not linted"))
        self.model.modules.append(mod)
        self.modules_by_call[node] = mod

    # --- launches (second pass) -----------------------------------------------------------------

    def launches(self, module: cst.Module) -> None:
        ex = self

        class Launches(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                ex._launch(node)

            def visit_Assign(self, node: cst.Assign) -> None:
                for t in node.targets:
                    if isinstance(t.target, cst.Attribute) and t.target.attr.value == "max_dynamic_shared_size_bytes":
                        k = ex.value(t.target.value)
                        if isinstance(k, KernelRef):
                            ex.model.attributes.append(PyAttribute(
                                k, "max_dynamic_shared_size_bytes", ex._arg(node.value), ex.start(node), ex.end(node)))

        module.visit(Launches())

    def _arg(self, node) -> Arg:
        if node is None:
            return Arg(None, "", 0, 0)
        return Arg(self.value(node), self.source(node), self.start(node), self.end(node))

    def _launch(self, node: cst.Call) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method == "prepare":        # PyCUDA before 2011.1: `f.prepare("P", block=(256, 1, 1))`
            block = next((a.value for a in node.args if a.keyword is not None
                          and a.keyword.value == "block"), None)
            if block is not None:
                self.prepared_blocks[self.source(func.value)] = block
            return
        if method in ("prepared_call", "prepared_timed_call", "prepared_async_call"):
            target = self.value(func.value)
        elif _last(_name_of(func)) in COMPILERS:
            return
        else:
            if isinstance(func, cst.Name) and func.value in _FUNCS:
                return
            target = self.value(func) if not (isinstance(func, cst.Attribute) and method in (
                "get_function", "format", "replace", "dedent", "strip")) else None
        if not isinstance(target, KernelRef):
            return
        mod = self.model.modules[target.module]
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if method in ("prepared_call", "prepared_timed_call", "prepared_async_call"):
            grid = args[0].value if args else kwargs.get("grid")
            block = args[1].value if len(args) > 1 else kwargs.get("block")
            early = self.prepared_blocks.get(self.source(func.value))
            if early is not None and "block" not in kwargs and not isinstance(block, cst.Tuple):
                block = early       # the old form: prepared_call(grid, *args), block from prepare
            launch = PyLaunch(target, self.start(node), self.end(node), self._arg(grid), self._arg(block),
                              self._arg(kwargs.get("shared_size")), "pycuda")
        elif mod.framework == "pycuda":
            if "block" not in kwargs:
                return
            launch = PyLaunch(target, self.start(node), self.end(node), self._arg(kwargs.get("grid")),
                              self._arg(kwargs["block"]), self._arg(kwargs.get("shared")), "pycuda")
        else:
            grid = kwargs.get("grid") or (args[0].value if args else None)
            block = kwargs.get("block") or (args[1].value if len(args) > 1 else None)
            if block is None:
                return
            launch = PyLaunch(target, self.start(node), self.end(node), self._arg(grid), self._arg(block),
                              self._arg(kwargs.get("shared_mem")), "cupy")
        self.model.launches.append(launch)


def _template_base(name) -> str | None:
    """`k` of a name expression whose template arguments alone are unknown (`'k<{}>'.format(t)`),
    else None."""
    if not isinstance(name, PyStr) or not name.unknown:
        return None
    base, sep, _rest = name.text.partition("<")
    return base if sep and base.isidentifier() and strings.UNKNOWN not in base else None


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _too_deep(text: str) -> str | None:
    """Why CPython's parser refuses `text` for its depth (200 nested brackets, an expression
    thousands of operators long), else None. libcst's native parser takes the process down on
    such text (a stack overflow, SIGSEGV), so it is not asked. Any other complaint of CPython's
    (newer syntax than this Python's, say) is left to libcst, which reads 3.12's grammar."""
    try:
        ast.parse(text)
    except (RecursionError, MemoryError) as exc:
        return str(exc) or type(exc).__name__
    except SyntaxError as exc:
        if "too many nested" in (exc.msg or ""):
            return f"{exc.msg} (line {exc.lineno})"
    except ValueError:          # NUL bytes: libcst says so
        pass
    return None


def extract(text: str, path: str) -> PyModel:
    """The CUDA a Python file compiles and launches. A file libcst cannot parse gives an empty
    model with one problem."""
    model = PyModel(path, text)
    too_deep = _too_deep(text)
    if too_deep:
        model.problems.append((0, f"not parsed as Python: {too_deep}"))
        return model
    try:
        tree = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError) as exc:
        model.problems.append((0, f"not parsed as Python: {str(exc).splitlines()[0] if str(exc) else exc}"))
        return model
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    ex = _Extractor(wrapper, model)
    wrapper.visit(_Scopes(ex))
    wrapper.visit(ex)
    ex.launches(wrapper.module)
    return model
