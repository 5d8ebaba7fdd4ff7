"""Launch sites (`<<<...>>>`, cudaLaunchKernel*, cooperative) and cudaFuncSet* attribute calls."""

from __future__ import annotations

import itertools
import re
import weakref

from occlint.model import AttributeCall, Dim3, Launch
from occlint.record import replace
from occlint.source import types
from occlint.source.consteval import UNSURE, exprs, last_sure_write
from occlint.source.context import Context, declarator_name, function_declarator
from occlint.source.values import (
    MAX_VALUES,
    calls_of,
    config_choices,
    dim3_shape,
    few_values,
    template_bindings,
)

_CASTS = {b"reinterpret_cast", b"static_cast", b"const_cast"}
_CARVEOUT = {b"cudaSharedmemCarveoutDefault": -1, b"cudaSharedmemCarveoutMaxShared": 100,
             b"cudaSharedmemCarveoutMaxL1": 0}
_OCCUPANCY = b"cudaOccupancyMaxPotentialBlockSize"
# expressions that are never a dim3: an unknown value there still means y = z = 1
_SCALAR_EXPRESSIONS = {"number_literal", "binary_expression", "unary_expression",
                       "sizeof_expression", "cast_expression", "parenthesized_expression"}


def _switch_arm(value) -> tuple[bytes, object, list, object] | None:
    """For the value of a write `b.y = 4;` directly in an arm of `switch (n)` (not under an
    `if` or a loop of that arm): (n, the arm's case value node or None for `default`, the case
    value nodes of every arm of that switch, the switch)."""
    assign = value.parent
    node = assign.parent if assign is not None else None
    if assign is None or assign.type != "assignment_expression" or node is None or \
            node.type != "expression_statement":
        return None
    case = node.parent
    while case is not None and case.type == "compound_statement":   # `case 1: { ... }`
        case = case.parent
    if case is None or case.type != "case_statement":
        return None
    body = case.parent
    switch = body.parent if body is not None else None
    cond = switch.child_by_field_name("condition") if switch is not None and \
        switch.type == "switch_statement" else None
    inner = [c for c in cond.named_children if c.type != "comment"] if cond is not None else []
    if len(inner) != 1 or inner[0].type != "identifier":
        return None
    labels = [c.child_by_field_name("value") for c in body.named_children
              if c.type == "case_statement"]
    return (inner[0].text, case.child_by_field_name("value"), [x for x in labels if x is not None],
            switch)


def _extent(v: int | None) -> int | None:
    """A grid or block extent as evaluated; below 1 (no launch has one: nvcc's runtime rejects
    it) the evaluation missed a write, so the extent is unknown."""
    return v if v is None or v >= 1 else None


def _declared_with_value(data: bytes, name: bytes, start: int, end: int) -> bool:
    """Is `name` followed somewhere in data[start:end] by `=` (not `==`), `{` or `)` (the
    shapes of `auto k = ...`, `k{...}`, `void (*k)(...) = ...`)?"""
    at = data.find(name, start, end)
    while at >= 0:
        after = at + len(name)
        while after < end and data[after] in b" \t":
            after += 1
        nxt = data[after:after + 2]
        if nxt[:1] in (b"{", b")") or (nxt[:1] == b"=" and nxt != b"=="):
            return True
        at = data.find(name, after, end)
    return False


_IDENTIFIERS = re.compile(rb"[A-Za-z_]\w*")


def _words(node) -> set[bytes]:
    return set(_IDENTIFIERS.findall(node.text)) if node is not None else set()


def _args(node) -> list:
    return [c for c in node.named_children if c.type != "comment"] if node is not None else []


def unwrap_kernel_ref(node):
    """`(void*)k`, `&k`, `reinterpret_cast<const void*>(&k<256>)` -> the `k<256>` node."""
    for _ in range(10):
        if node is None:
            return None
        t = node.type
        if t == "cast_expression":
            node = node.child_by_field_name("value")
        elif t == "pointer_expression" and node.child_by_field_name("operator").text == b"&":
            node = node.child_by_field_name("argument")
        elif t == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        elif t == "call_expression":
            fn = node.child_by_field_name("function")
            name = fn.child_by_field_name("name") if fn is not None and \
                fn.type == "template_function" else None
            args = _args(node.child_by_field_name("arguments"))
            if name is None or name.text not in _CASTS or len(args) != 1:
                return None
            node = args[0]
        else:
            return node
    return None


def callee_parts(node) -> tuple[str | None, list]:
    """(name as written without template arguments, template argument nodes)."""
    prefix = []
    for _ in range(64):
        if node is None:
            return None, []
        t = node.type
        if t in ("identifier", "field_identifier", "namespace_identifier", "type_identifier"):
            return "::".join((*prefix, node.text.decode("utf-8", "replace"))), []
        if t == "template_function":
            name, _ = callee_parts(node.child_by_field_name("name"))
            if name is None:
                return None, []
            return "::".join((*prefix, name)), _args(node.child_by_field_name("arguments"))
        if t != "qualified_identifier":
            return None, []
        scope = node.child_by_field_name("scope")
        prefix.append(b"".join(scope.text.split()).decode("utf-8", "replace")
                      if scope is not None else "")
        node = node.child_by_field_name("name")
    return None, []


_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


_CONFIG_FIELDS = (b"gridDim", b"blockDim", b"dynamicSmemBytes", b"stream", b"attrs", b"numAttrs")


def _config_initializer(local) -> tuple[dict, bool]:
    """(field -> value node, is an aggregate initializer) of a `cudaLaunchConfig_t` local
    declared once with `= {16, 256, 0, s, NULL, 0}`, `{.blockDim = 256}` or `{}` (NCCL's ubx:
    the fields in order; the ones not named are zero)."""
    if local is None or len(local.decls) != 1 or local.decls[0][1].type != "init_declarator":
        return {}, False
    value = local.decls[0][1].child_by_field_name("value")
    if value is None or value.type != "initializer_list":
        return {}, False
    out = {}
    for i, item in enumerate(exprs(value)):
        if item.type == "initializer_pair":
            names = item.children_by_field_name("designator")
            key = names[0].text.lstrip(b".").strip() if len(names) == 1 else None
            item = item.child_by_field_name("value")
        else:
            key = _CONFIG_FIELDS[i] if i < len(_CONFIG_FIELDS) else None
        if key is not None and item is not None:
            out[key] = item
    return out, True


_CASTS = frozenset((b"static_cast", b"reinterpret_cast", b"const_cast"))


def _type_text(text: bytes) -> str | None:
    """A type as link.deduced compares it (`types.compact`)."""
    return types.compact(text.decode("utf-8", "replace")) or None


def _bound_type(arg, bind) -> str | None:
    """The type a binding gives a template argument that names a type parameter (`T` bound to
    `float`), as nvcc's instantiations are matched (link.template_arg)."""
    v = bind.get(b"".join(arg.text.split()))
    return v if isinstance(v, str) and v else None


_MODULE_FUNCTION = re.compile(
    rb'\bcuModuleGetFunction\s*\(\s*&?\s*([A-Za-z_][\w.>-]*)\s*,[^,;]*,\s*"([^"\\\n]+)"\s*\)')


def _module_function(data: bytes, var: bytes, lo: int = 0, hi: int = 0,
                     depth: int = 0) -> str | None:
    """The kernel name a file's `cuModuleGetFunction(&var, module, "name")` gives `var` (the
    demangled name when it is a mangled one): the last such call in data[lo:hi] (the launching
    function, before the launch), else the one name every such call of the file gives, else
    the one a function of the file gives it through an output parameter (`init(&var)`:
    `_through_out_parameter`); None when there is none, or two differ."""
    if b"cuModuleGetFunction" not in data:
        return None
    from occlint.source.text import blank_noise
    found = [(m.start(), m.group(2).decode("utf-8", "replace"))
             for m in _MODULE_FUNCTION.finditer(data)
             if m.group(1) == var and b"cuModuleGetFunction" in blank_noise(data[m.start():m.end()])]
    near = [name for at, name in found if lo <= at < hi]
    names = {near[-1]} if near else {name for _at, name in found}
    if not names and depth < 2:
        names = _through_out_parameter(data, blank_noise(data), var, depth)
    if len(names) != 1:
        return None
    name = names.pop()
    if name.startswith("_Z"):
        from occlint.toolchain.demangle import split_name
        name = split_name(name)[0] or name
    return name


def _through_out_parameter(data: bytes, code: bytes, var: bytes, depth: int) -> set[str]:
    """The names `var` gets where the file passes `&var` to a function it defines whose
    parameter there is a `CUfunction *p` that its body fills: `cuModuleGetFunction(p, module,
    "name")`, or `*p = f;` after `cuModuleGetFunction(&f, module, "name")` (simpleTextureDrv's
    `initCUDA(argc, argv, &transform)`). `code`: `data` with strings and comments blanked (the
    same offsets), where calls and definitions are looked for."""
    from occlint.source.kernels import _matching_brace

    names: set[str] = set()
    heads: dict[bytes, re.Match | None] = {}
    for m in itertools.islice(re.finditer(rb"&\s*" + re.escape(var) + rb"\b", code), 64):
        call = _enclosing_call(code, m.start())
        if call is None:
            continue
        fname, index = call
        if fname not in heads:      # (its definition: searched once per function)
            heads[fname] = re.search(rb"\b" + re.escape(fname) +
                                     rb"\s*\(([^;{}()]*)\)\s*\{", code)
        head = heads[fname]
        params = head.group(1).split(b",") if head is not None else []
        if index >= len(params) or b"CUfunction" not in params[index] or b"*" not in params[index]:
            continue
        param = re.search(rb"([A-Za-z_]\w*)\s*$", params[index])
        close = _matching_brace(code, head.end() - 1) if param is not None else None
        if close is None:
            continue
        body, p = data[head.end() - 1:close + 1], re.escape(param.group(1))
        got = _module_function(body, param.group(1), depth=depth + 1)
        if got is None:
            assigned = {a.group(1) for a in re.finditer(
                rb"\*\s*" + p + rb"\s*=\s*([A-Za-z_]\w*)\s*;", code[head.end() - 1:close + 1])}
            got = _module_function(body, assigned.pop(), depth=depth + 1) \
                if len(assigned) == 1 else None
        if got is not None:
            names.add(got)
    return names


def _last_name(node):
    """The identifier a qualified name ends with (`FORWARD::render` -> `render`)."""
    while node is not None and node.type == "qualified_identifier":
        node = node.child_by_field_name("name")
    return node if node is not None and node.type == "identifier" else None


def _passed_elsewhere(ctx: Context, whole: bytes, index: int, depth: int) -> set[tuple]:
    """The (x, y, z) a function `whole` (`FORWARD::render`, its namespaces written out) of
    `ctx`'s file gets as its dim3 argument `index` at the calls of the files beside it that
    include the header of its name (forward.cu's `render`, called by rasterizer_impl.cu, which
    includes forward.h, with `dim3 block(BLOCK_X, BLOCK_Y, 1)`). A call is its when it names
    `whole` or a `::` suffix of it with a namespace; empty when a file calls it with an unknown,
    or none does."""
    from occlint.source.context import header_context

    parts = whole.split(b"::")
    got: set[tuple] = set()
    for path in _callers_beside(ctx.path, parts[-1]):
        other = header_context(path, ctx.view)
        if other is None:
            return set()
        reader = other.__dict__.get("_launch_reader")      # (one per context, kept on it)
        if reader is None:
            reader = other.__dict__["_launch_reader"] = LaunchReader(other)
        for call in calls_of(other, parts[-1]):
            called = b"".join(call.child_by_field_name("function").text.split()).split(b"<")[0]
            said = called.lstrip(b":").split(b"::")
            if said != parts[-len(said):] or (len(said) == 1 and len(parts) > 1):
                continue                    # another namespace's (BACKWARD::render)
            args = _args(call.child_by_field_name("arguments"))
            d = reader.dim3(args[index], other.scope_of(call.start_byte), depth + 1) \
                if index < len(args) else None
            if d is None or d.total is None:
                return set()
            got.add((d.x, d.y, d.z))
    return got


def _callers_beside(path: str, name: bytes) -> list[str]:
    """The C++ and CUDA sources of `path`'s folder (at most 256) that `#include "..."` a header
    of `path`'s own name (forward.h for forward.cu) and write `name`."""
    import os

    from occlint.source.preproc import read_header
    from occlint.toolchain.includers import quoted_includes

    folder, base = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(base)[0]
    headers = {stem + s for s in (".h", ".hpp", ".hh", ".cuh", ".hxx")}
    try:
        entries = sorted(os.listdir(folder))[:256]
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry == base or not entry.endswith((".cu", ".cpp", ".cc", ".cxx")):
            continue
        data = read_header(os.path.join(folder, entry))
        if data and name in data and any(
                os.path.basename(n.decode("utf-8", "replace")) in headers
                for n in quoted_includes(data)):
            out.append(os.path.join(folder, entry))
    return out


def _enclosing_call(code: bytes, at: int) -> tuple[bytes, int] | None:
    """(the called function's name, the argument's index) of the call whose argument list holds
    offset `at` at its top level, or None."""
    depth, commas = 0, 0
    for i in range(at - 1, max(-1, at - 4096), -1):
        c = code[i]
        if c in b")]":
            depth += 1
        elif c in b"([":
            if depth == 0:
                if c != 40:
                    return None
                name = re.search(rb"([A-Za-z_]\w*)\s*$", code[max(0, i - 256):i])
                return (name.group(1), commas) if name is not None else None
            depth -= 1
        elif c == 44 and depth == 0:
            commas += 1
        elif c in b";{}":
            return None
    return None


def _defined_beside(path: str, name: str) -> bool:
    """Does a CUDA source of `path`'s folder define kernel `name` (the module a driver-API
    launch loads is built from one: vectorAddDrv's vectorAdd_kernel.cu)? Another sample's
    kernel of the same name elsewhere in the project is not it. Answered once per process and
    state of the folder's CUDA files (names, sizes, times: the language server lives long)."""
    import os

    from occlint.discover import CUDA_SUFFIXES

    folder = os.path.dirname(os.path.abspath(path))
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(CUDA_SUFFIXES))[:256]
        state = tuple((n, st.st_size, st.st_mtime_ns) for n in names
                      for st in (os.stat(os.path.join(folder, n)),))
    except OSError:
        return False
    key = (folder, name, state)
    if key not in _BESIDE:
        if len(_BESIDE) > 4096:
            _BESIDE.clear()
        _BESIDE[key] = _defined_in(folder, names, name)
    return _BESIDE[key]


_BESIDE: dict[tuple, bool] = {}


def _defined_in(folder: str, names: list[str], name: str) -> bool:
    import os

    from occlint.files import read_regular

    word = re.compile(rb"__global__[^;{]*\b" + re.escape(name.rsplit("::", 1)[-1].encode()) +
                      rb"\s*\(")
    for n in names:
        try:
            if word.search(read_regular(os.path.join(folder, n))):
                return True
        except OSError:
            continue
    return False


def _argc(call) -> int | None:
    """How many arguments a chevron launch passes the kernel."""
    args = call.child_by_field_name("arguments")
    return None if args is None else sum(1 for a in args.named_children if a.type != "comment")


class LaunchReader:
    def __init__(self, ctx: Context, template_kernels: frozenset[str] = frozenset()):
        self.ctx = ctx
        self.env = ctx.env
        # the names of the file's template kernels: a launch of one that writes no template
        # arguments records its arguments' types (`Launch.arg_types`, link.deduced)
        self.template_kernels = template_kernels
        self._switches = b"switch" in ctx.data
        self._shapes: dict[tuple, tuple] = {}    # an `_instantiated` entry -> its block's x, y, z
        # while a block is read: a dim3 local of the function's parameters takes the value the
        # calls pass (`dim3_shape`). Not a grid: its size is the problem's, which a test's or
        # a benchmark's main fixes for itself (llm.c's dev/cuda: `int B = 8;`)
        self._block = False
        self.runtime: set[tuple[int | None, bytes]] = set()   # block variables chosen at run time
        for call in ctx.caps.get("api", ()):
            fn = call.child_by_field_name("function").text.lstrip(b":")
            args = _args(call.child_by_field_name("arguments"))
            if fn.startswith(_OCCUPANCY) and len(args) >= 2:
                ref = args[1]
                if ref.type == "pointer_expression":
                    ref = ref.child_by_field_name("argument")
                if ref is not None and ref.type == "identifier":
                    self.runtime.add((ctx.scope_of(call.start_byte), ref.text))
        self.runtime_scopes = {scope for scope, _ in self.runtime}
        me = weakref.ref(self)          # (no cycle: the context holds its environment)
        ctx.env.dim3_of = lambda node, scope, depth=0, bind=None: me().dim3(node, scope, depth, bind)

    # --- values --------------------------------------------------------------------------------

    def dim3(self, node, scope, depth: int = 0, bind=None) -> Dim3:
        """Evaluate a grid or block expression (`bind`: template parameters' values)."""
        tx = self.ctx.tx
        text = " ".join(tx.node_text(node).split()) if node is not None else ""
        if node is None or depth > 8:
            return Dim3(None, None, None, text)
        t = node.type
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self._with_text(self.dim3(node.named_children[0], scope, depth + 1, bind),
                                   text)
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is not None and b"".join(fn.text.split()) in (b"dim3", b"::dim3"):
                return self._components(_args(node.child_by_field_name("arguments")), scope,
                                        text, bind)
        if t == "compound_literal_expression":      # `dim3{16, 16}`; a bare `{16, 16, 1}` in
            ty = node.child_by_field_name("type")     # <<<>>> parses with an empty type
            if ty is not None and ty.text in (b"dim3", b""):
                return self._components(_args(node.child_by_field_name("value")), scope, text,
                                        bind)
            return Dim3(None, None, None, text)
        if t == "initializer_list":
            return self._components(_args(node), scope, text, bind)
        if t == "identifier" and scope is not None:
            local = self.env.local(scope, node.text, self.env.use_site or node)
            if local is not None and len(local.decls) == 1 and types.normalize(
                    local.decls[0][0].decode("utf-8", "replace")) == "dim3":
                init = local.decls[0][1]
                if init.type in ("parameter_declaration", "optional_parameter_declaration") \
                        and not local.written:
                    return self._passed(init, scope, depth, text)
                if init.type == "declaration" and not local.whole_written:
                    return self._fields(local, scope, text, bind)   # `dim3 b; b.x = 128;`
                if init.type not in ("init_declarator", "function_declarator") or \
                        local.whole_written:
                    return Dim3(None, None, None, text)
                base = self._initial(init, scope, depth, text, bind)
                if base.total is None and self._block and not local.written and not bind:
                    shape = dim3_shape(self.ctx, node, scope)   # of parameters: at the calls
                    base = Dim3(*shape, text) if shape is not None else base
                if local.written:       # `dim3 t(32); k<<<g, t>>>(); t.x = 128; k<<<g, t>>>();`
                    return self._rewritten(local, init, base, node, scope, text, bind)
                return self._cased(node.text, base, scope)
        v = self.env.value(node, scope, bind)
        if v is not None or t in _SCALAR_EXPRESSIONS or self._integral(node, scope):
            return Dim3(_extent(v), 1, 1, text)
        return Dim3(None, None, None, text)      # maybe a dim3 we cannot see: y and z unknown

    def _block_dim3(self, read) -> Dim3:
        """`read()`, a block's dimensions, with `_block` set while it runs."""
        outer, self._block = self._block, True
        try:
            return read()
        finally:
            self._block = outer

    def _passed(self, param, scope, depth: int, text: str) -> Dim3:
        """A `dim3` parameter of the launching function: the one value every call of the
        function in the file passes (diff-gaussian-rasterization's `render(const dim3 grid,
        const dim3 block, ...)` called with `dim3 block(BLOCK_X, BLOCK_Y, 1)`); unknown when a
        call passes another, an unknown, or there is none."""
        ctx = self.ctx
        fn = ctx.function_at(scope)
        decl = function_declarator(fn) if fn is not None else None
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        qualified = inner is not None and inner.type == "qualified_identifier"
        name = _last_name(inner) if qualified else declarator_name(inner)
        unknown = Dim3(None, None, None, text)
        if plist is None or name is None or depth > 4:
            return unknown
        params = _args(plist)
        if param not in params:
            return unknown
        index = params.index(param)
        got: set[tuple] = set()
        site = self.env.site
        try:
            for call in calls_of(ctx, name.text):
                if fn.start_byte <= call.start_byte < fn.end_byte:
                    return unknown          # the function calling itself
                args = _args(call.child_by_field_name("arguments"))
                if index >= len(args):
                    return unknown          # (a default, or another overload)
                self.env.site = call
                d = self.dim3(args[index], ctx.scope_of(call.start_byte), depth + 1)
                if d.total is None:
                    return unknown
                got.add((d.x, d.y, d.z))
        finally:
            self.env.site = site
        if not got and self._block:     # a block, passed from another file only (forward.cu's
            whole = b"".join(inner.text.split()) if qualified else b"::".join(   # render, called
                (*(s.encode() for s in ctx.scopes(fn)), name.text))     # by rasterizer_impl.cu)
            got = _passed_elsewhere(ctx, whole, index, depth)
        if len(got) != 1:
            return unknown
        x, y, z = got.pop()
        return Dim3(x, y, z, text)

    def _cased(self, name: bytes, d: Dim3, scope) -> Dim3:
        """A never-written dim3 local at a launch inside `case C:` of `switch (name.x)` (cudpp's
        reduce: `switch (dimBlock.x) { case 512: k<512><<<grid, dimBlock>>>`): that field is C
        there (`Context.switch_value`; a size dispatch)."""
        site = self.env.site
        if site is None or not self._switches:
            return d
        vals = [d.x, d.y, d.z]
        for i, f in enumerate((b"x", b"y", b"z")):
            v = self.ctx.switch_value(scope, name + b"." + f, site)
            if v is not None:
                vals[i] = _extent(v)
                self.env._narrowed += 1       # (a value of this site: kept out of the memos)
        return Dim3(vals[0], vals[1], vals[2], d.text)

    def _integral(self, node, scope) -> bool:
        """A local or parameter declared with an integer type."""
        if node.type != "identifier" or scope is None:
            return False
        local = self.env.local(scope, node.text, self.env.use_site or node)
        if local is None or len(local.decls) != 1:
            return False
        return types.is_integral(local.decls[0][0].decode("utf-8", "replace"))

    def _fields(self, local, scope, text, bind=None) -> Dim3:
        """A dim3 declared without initializer (1, 1, 1) and set once per field, or in the arms
        of a `switch (n)` whose arm for the launch's `n` is known (`_arm_field`)."""
        if set(local.fields) - {b"x", b"y", b"z"}:
            return Dim3(None, None, None, text)
        vals = []
        for f in (b"x", b"y", b"z"):
            values = local.fields.get(f, [])
            if not values:
                vals.append(1)
            elif None in values:
                vals.append(None)
            elif len(values) == 1:
                vals.append(_extent(self.env.value(values[0], scope, bind)))
            else:
                vals.append(self._arm_field(values, scope, bind))
        return Dim3(vals[0], vals[1], vals[2], text)

    def _arm_field(self, values, scope, bind) -> int | None:
        """The field a dim3 gets from several writes: the value they all give, else the one write
        in the arm of `switch (n)` that the launch's own `n` takes, `n` known at the launch
        from the `case` around it (flash-fft-conv: `switch (N) { case 128: b.y = 8; break;
        default: b.y = 4; }`, launched in `case 32:` of another `switch (N)`). None otherwise."""
        got = {_extent(self.env.value(v, scope, bind)) for v in values}
        if len(got) == 1:
            return got.pop()
        site = self.env.site
        if site is None:
            return None
        # (flash-fft-conv's padded launchers: `b.y = 4;` at the top, `b.y = 8;` in the
        # `case 128:` that launches)
        last = last_sure_write([v.parent for v in values], site)
        if last is not None and last is not UNSURE:
            return _extent(self.env.value(last.child_by_field_name("right"), scope, bind))
        arms = [(v, _switch_arm(v)) for v in values]
        armed = [(v, a) for v, a in arms if a is not None]
        # a write before a switch whose `default` writes the field too is overwritten by it
        # (flash-fft-conv's ifft launchers: `blockDim.y = 4;` then the switch)
        plain = [v for v, a in arms if a is None]
        defaults = [a[3] for _v, a in armed if a[1] is None]
        if any(a[3].end_byte > site.start_byte for _v, a in armed):
            return None         # (a switch after the launch, or around it, sets it too late)
        if plain and not (len(defaults) == 1 and
                          all(v.end_byte <= defaults[0].start_byte for v in plain)):
            return None
        chosen = []
        for v, (name, label, labels, _switch) in armed:
            at = self.ctx.switch_value(scope, name, site)
            if at is None:
                return None
            cases = [self.env.value(c, None) for c in labels]
            if None in cases:
                return None
            if (label is None and at not in cases) or \
                    (label is not None and self.env.value(label, None) == at):
                chosen.append(v)
        if len(chosen) != 1:
            return None
        self.env._narrowed += 1       # (a value of this site: kept out of the memos)
        return _extent(self.env.value(chosen[0], scope, bind))

    def _initial(self, init, scope, depth: int, text: str, bind=None) -> Dim3:
        """The value a dim3 local is declared with (`init`: its init_declarator, or the
        function declarator `dim3 b(BX, BY);` parses as)."""
        if init.type == "function_declarator":
            params = _args(init.child_by_field_name("parameters"))
            if any(p.type != "parameter_declaration" or
                   p.child_by_field_name("declarator") is not None for p in params):
                # (`dim3 t(sizes[1])`: the parts not given are 1)
                return Dim3(None, *(None if i < len(params) else 1 for i in (1, 2)), text)
            return self._components([p.child_by_field_name("type") for p in params], scope,
                                    text, bind)
        value = init.child_by_field_name("value")
        if value is not None and value.type == "argument_list":
            return self._components(_args(value), scope, text, bind)
        return self._with_text(self.dim3(value, scope, depth + 1, bind), text)

    def _rewritten(self, local, init, base: Dim3, use, scope, text, bind=None) -> Dim3:
        """A dim3 declared with a value and then given fields (`t.x = 128;`) by statements of
        its own block, at `use`: its value with the assignments before `use` made in order.
        Unknown when a field is assigned anywhere else (a branch, a loop) or other than by `=`."""
        block = init.parent.parent if init.parent is not None else None
        if block is None or block.type != "compound_statement" or \
                not init.end_byte <= use.start_byte < block.end_byte:
            return Dim3(None, None, None, text)
        before = []
        for name, values in local.fields.items():
            for value in values:
                assign = value.parent if value is not None else None
                stmt = assign.parent if assign is not None else None
                if name not in (b"x", b"y", b"z") or stmt is None or \
                        stmt.type != "expression_statement" or stmt.parent != block:
                    return Dim3(None, None, None, text)
                if assign.end_byte <= use.start_byte:
                    before.append((assign.start_byte, name, value))
        got = {b"x": base.x, b"y": base.y, b"z": base.z}
        for _at, name, value in sorted(before, key=lambda b: b[0]):
            got[name] = _extent(self.env.value(value, scope, bind))
        return Dim3(got[b"x"], got[b"y"], got[b"z"], text)

    def _components(self, args, scope, text, bind=None) -> Dim3:
        if not 1 <= len(args) <= 3:
            return Dim3(None, None, None, text) if args else Dim3(1, 1, 1, text)
        vals = [_extent(self.env.value(a, scope, bind)) for a in args] + [1] * (3 - len(args))
        return Dim3(vals[0], vals[1], vals[2], text)

    @staticmethod
    def _with_text(d: Dim3, text: str) -> Dim3:
        return Dim3(d.x, d.y, d.z, text)

    def is_runtime(self, node, scope) -> bool:
        """Does the expression use a block size chosen by cudaOccupancyMaxPotentialBlockSize
        (directly or through locals)? Looks at a bounded number of nodes."""
        if node is None or scope not in self.runtime_scopes:
            return False
        stack, seen = [node], 0
        while stack and seen < 200:
            n = stack.pop()
            seen += 1
            if n is None:
                continue
            if n.type == "identifier":
                if (scope, n.text) in self.runtime:
                    return True
                local = self.env.local(scope, n.text, n)
                if local is not None and len(local.decls) == 1:
                    stack.append(local.decls[0][1].child_by_field_name("value"))
            else:
                stack += n.named_children
        return False

    def smem(self, node, scope) -> int | None:
        return 0 if node is None else self.env.value(node, scope)

    def template_values(self, targs, scope) -> tuple:
        return tuple(self.env.value(a, scope) for a in targs)

    # --- records -------------------------------------------------------------------------------

    def kernel_ref(self, node, call):
        """The kernel `node` names: itself, or, for a local of the function around `call`
        initialized once with a kernel and never written (`auto kernel =
        &flash_fwd_kernel<Traits, true>;` then `kernel<<<...>>>` and
        `cudaFuncSetAttribute(kernel, ...)`), that kernel reference."""
        if node is None or node.type != "identifier":
            return node
        fn = self.ctx.function_at(call.start_byte)
        if fn is None or not _declared_with_value(self.ctx.data, node.text, fn.start_byte,
                                                  fn.end_byte):
            return node         # (most callees: a kernel's name, never declared in the function)
        scope = fn.start_byte
        local = self.env.local(scope, node.text, node)
        if local is None or len(local.decls) != 1 or local.written:
            return node
        decl = local.decls[0][1]
        if decl.type == "declaration":      # `void (*k)(float *) = kern;`: its init_declarator
            decl = next((d for d in decl.children_by_field_name("declarator")
                         if d.type == "init_declarator" and
                         getattr(declarator_name(d), "text", None) == node.text), decl)
        if decl.type != "init_declarator":
            return node
        ref = unwrap_kernel_ref(decl.child_by_field_name("value"))
        if ref is None or ref.type not in ("identifier", "qualified_identifier",
                                           "template_function") or ref.text == node.text:
            return node
        return ref

    def launch(self, callee_node, call, grid, block, smem, stream, kind, config=None,
               args=()) -> Launch | None:
        ctx, tx = self.ctx, self.ctx.tx
        name, targs = callee_parts(self.kernel_ref(callee_node, call))
        if name is None and callee_node is not None and callee_node.type == "subscript_expression":
            name = " ".join(tx.node_text(callee_node).split())   # `fpDeriv[fp]<<<g, b>>>`
        if name is None:
            return None
        name = self._unaliased(name)
        scope = ctx.scope_of(call.start_byte)
        self.env.site = call            # `case 512:` of `switch (threads)` around it
        try:
            return self._launch(ctx, tx, name, targs, scope, call, grid, block, smem, stream,
                                kind, config, args)
        finally:
            self.env.site = None

    def _launch(self, ctx, tx, name, targs, scope, call, grid, block, smem, stream, kind,
                config, args) -> Launch:
        runtime = self.is_runtime(block, scope)
        narrowed, called = self.env._narrowed, self.env._called
        b = self._block_dim3(lambda: self.dim3(block, scope))
        dispatch, computed = self.env._narrowed != narrowed, self.env._called != called
        if runtime:
            b = Dim3(None, None, None, b.text)
        dyn = self.smem(smem, scope)
        if b.total is None and not runtime and self._is_parameter(block, scope, integral=True):
            one = few_values(ctx, block, scope)     # every call in the file passes the same
            if one is not None and len(one) == 1 and one[0] >= 1:
                b = Dim3(one[0], 1, 1, b.text)

        if dyn is None and self._is_parameter(smem, scope, integral=True):
            one = few_values(ctx, smem, scope)      # (tiny-cuda-nn's parallel_for_gpu: 0)
            if one is not None and len(one) == 1 and one[0] >= 0:
                dyn = one[0]
        trace: set = set()
        choices = config_choices(ctx, block, smem, scope, b.total, dyn, trace) \
            if not runtime and (b.total is None or dyn is None) else ()
        if choices and b.total is None and targs and _words(block) & set().union(
                *(_words(a) for a in targs)):
            # `k<WIN_SX, 8><<<g, WIN_SX>>>`: each block goes with one instantiation, not with
            # every one (Rodinia's dwt2d: 128 threads paired with k<64, 8> was a false OCC032)
            choices = ()
        tvalues = self.template_values(targs, scope)
        bindings: tuple = ()
        if (b.total is None or dyn is None) and not runtime and not choices:
            per, bound = self._instantiated(block, smem, targs, scope, call) or (None, ())
            totals = {p[0] for p in per} if per is not None else set()
            smems, values = {p[1] for p in per or ()}, {p[2] for p in per or ()}
            if len(totals) == 1:            # (its shape, when every binding gives the same)
                shapes = {self._shapes.get(p) for p in per}
                x, y, z = shapes.pop() if len(shapes) == 1 and None not in shapes else \
                    (per[0][0], 1, 1)
                b = Dim3(x, y, z, b.text)
            if len(totals) == 1 and len(smems) == 1:
                dyn = dyn if dyn is not None else smems.pop()
                one = values.pop() if len(values) == 1 else ()
                tvalues = one or tvalues
            elif per is not None and targs:     # one configuration per instantiation
                # only when each binding names its instantiation: an argument written with a
                # parameter the calls bind (`k<Ktraits>`, `Ktraits = Tr<kNThreads>`) but with no
                # value would pair every block with every instantiation
                if all(v is not None or not bound.intersection(self._template_words(a, call))
                       for _t, _d, tv in per for a, v in zip(targs, tv, strict=False)):
                    bindings = tuple((tv, total, d) for total, d, tv in per)
            elif per is not None and len(totals) > 1 and None not in smems:
                choices = tuple(dict.fromkeys((p[0], p[1]) for p in per))
        return Launch(
            callee=name, path=ctx.path, span=tx.node_span(call),
            grid=self.dim3(grid, scope), block=b, kind=kind,
            template_args=tuple(" ".join(tx.node_text(a).split()) for a in targs),
            template_values=tvalues,
            dynamic_smem=dyn,
            dynamic_smem_text=tx.node_text(smem) if smem is not None else "",
            stream_text=tx.node_text(stream) if stream is not None else "",
            config_span=tx.node_span(config) if config is not None else None,
            arg_spans=tuple(tx.node_span(a) for a in args),
            function=ctx.function_name(call.start_byte), runtime_block=runtime,
            choices=choices, bindings=bindings,
            sweep="array" in trace and len({c[0] for c in choices}) >= 3,
            dispatch=dispatch, computed=computed, argc=_argc(call) if kind == "chevron" else None,
            arg_types=self._arg_types(call, scope) if kind == "chevron" and not targs and
            name.split("::")[-1] in self.template_kernels else (),
            block_template=self._template_words(block, call)
            if b.total is None and not choices and not bindings else (),
            smem_template=self._template_words(smem, call)
            if dyn is None and not choices and not bindings else (),
            block_parameter=b.total is None and not choices and not bindings and
            self._is_parameter(block, scope),
        )

    def _arg_types(self, call, scope) -> tuple[str | None, ...]:
        """`Launch.arg_types` of a chevron launch that writes no template arguments."""
        args = call.child_by_field_name("arguments")
        if args is None or scope is None:
            return ()
        out = [self._type_of(a, scope) for a in args.named_children if a.type != "comment"]
        return tuple(out) if any(out) else ()

    def _type_of(self, node, scope) -> str | None:
        """The type an argument expression has where the source writes it: a cast's, or a local's
        or parameter's declared type with its pointer stars (`float *d_x` -> `float*`)."""
        t = node.type
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self._type_of(node.named_children[0], scope)
        if t == "cast_expression":
            ty = node.child_by_field_name("type")
            return _type_text(ty.text) if ty is not None else None
        if t == "call_expression":          # static_cast<float *>(p), reinterpret_cast<...>(p)
            fn = node.child_by_field_name("function")
            name = fn.child_by_field_name("name") if fn is not None and \
                fn.type == "template_function" else None
            targs = fn.child_by_field_name("arguments") if name is not None else None
            if name is not None and name.text in _CASTS and targs is not None and \
                    targs.named_child_count == 1:
                return _type_text(targs.named_children[0].text)
            return None
        if t != "identifier":
            return None
        local = self.env.local(scope, node.text, node)
        if local is None or len(local.decls) != 1 or local.whole_written:
            return None
        type_text, decl = local.decls[0]
        if decl.type not in ("init_declarator", "parameter_declaration", "declaration",
                             "optional_parameter_declaration"):
            return None
        d = decl.child_by_field_name("declarator")
        stars = 0
        while d is not None and d.type in ("pointer_declarator", "init_declarator"):
            stars += d.type == "pointer_declarator"
            d = d.child_by_field_name("declarator")
        if d is None or d.type != "identifier":
            return None                 # an array, a reference, a function pointer
        return _type_text(type_text + b"*" * stars)

    def _unaliased(self, name: str) -> str:
        """A kernel named through an object-like macro that is another name (xmrig's `#define
        fillAes4Rx4 fillAes4Rx4_v104`): that name, followed up to 4 times."""
        for _ in range(4):
            bodies = self.env.macros.get(name.encode()) if "::" not in name else None
            if not bodies or len(bodies) != 1 or not _IDENTIFIER.fullmatch(bodies[0]):
                return name
            name = bodies[0].decode("utf-8", "replace")
        return name

    def _instantiated(self, block, smem, targs, scope, call):
        """(block size, dynamic shared memory or None, the kernel's template values) for each
        distinct binding of a template function's parameters at its calls in the file
        (`launch<128, 4>(...)`), for a launch in it whose block size those bindings give:
        `using Ktraits = Traits<kNThreads>;` then `k<Ktraits><<<g, Ktraits::kNThreads,
        kSmem>>>`, `k<W><<<g, W * 32>>>` called as `launch<4>` and `launch<8>`, or `dim3
        b(W, 128 / W)`. None when a call leaves the block unknown, or they give more than
        MAX_VALUES. With them, the names of the template parameters the calls bind."""
        fn = self.ctx.function_at(call.start_byte)
        lam = self._lambda_bindings(fn, call) if fn is not None and block is not None else None
        if lam is not None:
            binds = lam
        elif fn is None or block is None or not self.ctx._template_names(fn):
            return None
        else:
            binds = template_bindings(self.ctx, fn)
        if not binds:
            return None
        out = []
        for bind in binds:
            d = self.dim3(block, scope, bind=bind)
            total = d.total
            if total is None or total < 1:
                return None
            out.append((total, self.env.value(smem, scope, bind) if smem is not None else 0,
                        tuple(_bound_type(a, bind) or self.env.value(a, scope, bind)
                              for a in targs)))
            self._shapes[out[-1]] = (d.x, d.y, d.z)
        out = list(dict.fromkeys(out))
        bound = frozenset(n.decode("utf-8", "replace") for bind in binds for n in bind)
        return (tuple(out), bound) if len(out) <= MAX_VALUES else None

    def _lambda_bindings(self, fn, call) -> list[dict] | None:
        """One binding of a template lambda's parameters per call in function `fn` that writes
        them (gsplat's `auto launch_variant = [&]<int TILE, int CTA>() { k<TILE, CTA><<<g,
        dim3{CTA, 1, 1}>>>(...); };` then `launch_variant.template operator()<16, 256>()`),
        for a launch in it; None when `call` is in no such lambda or a call's are unknown."""
        from occlint.source.context import _template_parameters, ancestors, word_starts

        ctx = self.ctx
        lam = next((p for p in reversed(ancestors(fn, call)) if p.type == "lambda_expression"),
                   None)
        tpl = lam.child_by_field_name("template_parameters") if lam is not None else None
        init = lam.parent if tpl is not None else None
        var = init.child_by_field_name("declarator") if init is not None and \
            init.type == "init_declarator" else None
        if var is None or var.type != "identifier":
            return None
        names = _template_parameters(tpl)
        binds: list[dict] = []
        for at in word_starts(ctx.data, var.text, var.end_byte, fn.end_byte):
            ident = ctx.tree.root_node.descendant_for_byte_range(at, at + len(var.text))
            f = ident.parent if ident is not None else None
            c = f.parent if f is not None and f.type == "field_expression" else None
            if c is None or c.type != "call_expression" or ctx.dead(c):
                continue            # (a comment, a string, another use)
            field = f.child_by_field_name("field") if f is not None and \
                f.type == "field_expression" else None
            method = next((x for x in field.named_children if x.type == "template_method"),
                          None) if field is not None and field.type == "dependent_name" else field
            if method is None or method.type != "template_method":
                return None         # `launch_variant()`: deduced, not written
            scope = ctx.scope_of(c.start_byte)
            targs = exprs(method.child_by_field_name("arguments"))
            bind = {n: ctx.env.value(a, scope) for n, a in zip(names, targs, strict=False)}
            if len(targs) != len(names) or None in bind.values():
                return None
            if bind not in binds:
                binds.append(bind)
        return binds or None

    def _is_parameter(self, block, scope, integral: bool = False) -> bool:
        """Is the block expression a parameter of the launching function (of an integer type,
        with `integral`)?"""
        if block is None or block.type != "identifier" or scope is None:
            return False
        local = self.env.local(scope, block.text, block)
        if local is None or len(local.decls) != 1 or local.written or local.decls[0][1].type \
                not in ("parameter_declaration", "optional_parameter_declaration"):
            return False
        return not integral or types.is_integral(local.decls[0][0].decode("utf-8", "replace"))

    def _template_words(self, block, call) -> tuple[str, ...]:
        """The template parameters of the function around `call` that the block (or shared
        memory) expression names, itself or through a local alias (`using Ktraits =
        Traits<kNThreads>;`) or `constexpr` local."""
        fn = self.ctx.function_at(call.start_byte)
        if block is None or fn is None:
            return ()
        params = self.ctx._template_names(fn)
        if not params:
            return ()
        words = _words(block)
        aliases = _aliases(fn.text)
        for w in list(words):
            if w in aliases:    # (or `constexpr int smem = smem_bytes_for<T, MT>();`)
                words |= set(_IDENTIFIERS.findall(aliases[w]))
        return tuple(sorted(w.decode("utf-8", "replace") for w in words & params))

    def chevrons(self) -> list[Launch]:
        out = []
        for call in self.ctx.caps.get("launch", ()):
            if self.ctx.dead(call):
                continue
            config = next((c for c in call.children if c.type == "kernel_call_syntax"), None)
            args = _args(config)
            if not 2 <= len(args) <= 4:
                continue
            args4 = args + [None] * (4 - len(args))
            launch = self.launch(call.child_by_field_name("function"), call, args4[0], args4[1],
                                 args4[2], args4[3], "chevron", config, args)
            if launch is not None:
                out.append(launch)
        return out

    def api_calls(self) -> tuple[list[Launch], list[AttributeCall]]:
        launches, attrs = [], []
        for call in self.ctx.caps.get("api", ()):
            if self.ctx.dead(call):
                continue
            fn = call.child_by_field_name("function").text.lstrip(b":")
            args = _args(call.child_by_field_name("arguments"))
            if fn in (b"cudaLaunchKernel", b"cudaLaunchCooperativeKernel") and len(args) >= 3:
                kind = "cudaLaunchKernel" if fn == b"cudaLaunchKernel" else "cooperative"
                a = args + [None] * (6 - len(args))
                launch = self.launch(unwrap_kernel_ref(a[0]), call, a[1], a[2], a[4], a[5],
                                     kind, None, [x for x in (a[1], a[2], a[4], a[5]) if x])
            elif fn in (b"cudaLaunchKernelEx", b"cudaLaunchKernelExC") and len(args) >= 2:
                launch = self._launch_ex(call, args)
            elif fn in (b"cuLaunchKernel", b"cuLaunchCooperativeKernel") and len(args) >= 9:
                launch = self._driver_launch(call, args, fn.decode())
            elif (fn == b"cudaFuncSetAttribute" and len(args) == 3) or (fn == b"cudaFuncSetCacheConfig" and len(args) == 2):
                launch = None
                attrs.append(self._attribute(call, args))
            else:
                continue
            if launch is not None:
                launches.append(launch)
        return launches, [a for a in attrs if a is not None]

    def _driver_launch(self, call, args, kind: str) -> Launch | None:
        """`cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, ...)` (the driver API):
        the kernel is the name `cuModuleGetFunction(&f, module, "name")` gives `f` in the file
        (cuda-samples' vectorAddDrv, matrixMulDrv), else `f` itself, which names no kernel."""
        ctx = self.ctx
        scope = ctx.scope_of(call.start_byte)
        launch = self.launch(args[0], call, None, None, args[7], args[8], kind, None,
                             list(args[1:8]))
        if launch is None:
            return None
        tx = ctx.tx

        def dims(nodes) -> Dim3:
            text = ", ".join(" ".join(tx.node_text(n).split()) for n in nodes)
            return self._components(nodes, scope, text)
        fn = ctx.function_at(call.start_byte)
        named = _module_function(ctx.data, args[0].text.lstrip(b"&*").strip(),
                                 fn.start_byte if fn is not None else 0, call.start_byte)
        if named is not None and not _defined_beside(ctx.path, named):
            named = None        # (jitLto: a kernel in a string NVRTC compiles at run time)
        return replace(launch, callee=named or launch.callee, template_args=(),
                       template_values=(), grid=dims(args[1:4]),
                       block=self._block_dim3(lambda: dims(args[4:7])),
                       block_template=(), smem_template=(), block_parameter=False)

    def _launch_ex(self, call, args) -> Launch | None:
        ctx = self.ctx
        scope = ctx.scope_of(call.start_byte)
        cfg = args[0]
        if cfg.type == "pointer_expression":
            cfg = cfg.child_by_field_name("argument")
        if cfg is None or cfg.type != "identifier":
            return None

        local = self.env.local(scope, cfg.text)
        initial, aggregate = _config_initializer(local)

        def field(name: bytes):
            values = local.fields.get(name, []) if local is not None else []
            if values:
                return values[0] if len(values) == 1 else None
            return initial.get(name)

        grid, block, smem = field(b"gridDim"), field(b"blockDim"), field(b"dynamicSmemBytes")
        launch = self.launch(unwrap_kernel_ref(args[1]), call, grid, block, smem, None,
                             "cudaLaunchKernelEx", None, [x for x in (grid, block, smem) if x])
        if launch is None:
            return None
        # a field never set (or set twice) is unknown, not a default; but an aggregate
        # initializer (`cudaLaunchConfig_t cfg = {};`) zeroes the fields it does not name
        unknown = Dim3(None, None, None, "")
        return replace(launch, grid=launch.grid if grid is not None else unknown,
                       block=launch.block if block is not None else unknown,
                       dynamic_smem=launch.dynamic_smem if smem is not None else
                       0 if aggregate and not local.fields.get(b"dynamicSmemBytes") else None)

    def _attribute(self, call, args) -> AttributeCall | None:
        ctx, tx = self.ctx, self.ctx.tx
        name, targs = callee_parts(self.kernel_ref(unwrap_kernel_ref(args[0]), call))
        if name is None:
            return None
        scope = ctx.scope_of(call.start_byte)
        value_node = args[-1]
        if len(args) == 2:
            attribute = "CacheConfig"
            value = value_node.text.decode("utf-8", "replace").split("::")[-1].strip()
        else:
            attribute = args[1].text.decode("utf-8", "replace").split("::")[-1].strip()
            attribute = attribute.removeprefix("cudaFuncAttribute")
            value = _CARVEOUT.get(value_node.text.strip())
            if value is None:
                value = self.env.value(value_node, scope)
        return AttributeCall(
            kernel=name, attribute=attribute, value=value,
            value_text=" ".join(tx.node_text(value_node).split()), path=ctx.path,
            span=tx.node_span(call), function=ctx.function_name(call.start_byte),
            template_args=tuple(" ".join(tx.node_text(a).split()) for a in targs),
            template_values=self.template_values(targs, scope),
        )


_DIM3 = re.compile(rb"\bdim3\s+([A-Za-z_]\w*)\s*(?:=\s*(?:dim3\s*)?)?[({]([^;]*)[)}]\s*;")
_USING = re.compile(rb"\busing\s+([A-Za-z_]\w*)\s*=([^;]*);")
_TYPEDEF = re.compile(rb"\btypedef\b([^;]*)\b([A-Za-z_]\w*)\s*;")
_CONSTEXPR = re.compile(rb"\bconstexpr\b[^;=()]*\b([A-Za-z_]\w*)\s*=([^;]*);")
_ALIASES: dict[bytes, dict[bytes, bytes]] = {}      # a function's text -> its aliases


def _aliases(body: bytes) -> dict[bytes, bytes]:
    """name -> the text that defines it in `body`: the first `using name = TEXT;`, else the
    first `typedef TEXT name;`, else the first `constexpr ... name = TEXT;`, else the first
    `dim3 name(TEXT);` (each keyword's pattern run once per function, not once per name)."""
    got = _ALIASES.get(body)
    if got is None:
        got = {}
        for pattern, name, text, word in ((_DIM3, 1, 2, b"dim3"), (_CONSTEXPR, 1, 2, b"constexpr"),
                                          (_TYPEDEF, 2, 1, b"typedef"), (_USING, 1, 2, b"using")):
            if word in body:        # the last kind written wins: `using` over the others
                found: dict[bytes, bytes] = {}
                for m in pattern.finditer(body):
                    found.setdefault(m.group(name), m.group(text))
                got.update(found)
        if len(_ALIASES) > 4096:
            _ALIASES.clear()
        _ALIASES[body] = got
    return got
