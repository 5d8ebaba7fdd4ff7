"""One parsed file: text, tree, query captures, the constant environment and scope lookup."""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from collections.abc import Iterable

from occlint.source import types
from occlint.source.classes import class_constants
from occlint.source.consteval import (
    Env,
    Local,
    declarator_name,
    exprs,
    qualifiers,
)
from occlint.source.grammar import file_captures, parser
from occlint.source.preproc import Scan, View, scan
from occlint.source.text import Text, namespaces

_SCOPE_TYPES = {"namespace_definition", "struct_specifier", "class_specifier", "union_specifier"}




def ancestors(root, node) -> list:
    """`node`'s ancestors, outermost first (`root` included, `node` not), found downwards from
    `root`. `Node.parent` is itself a walk down from the root, so climbing with it is quadratic
    in the depth: 20,000 nested `#if` took 11 s."""
    out = []
    p = root
    while p is not None and p != node:
        out.append(p)
        p = p.child_with_descendant(node)
    return out


def scoped_ancestors(node, root, spaces=None) -> list[tuple[int, str]]:
    """(start byte, name) of each enclosing namespace and class, outermost first. With
    `spaces` (`text.namespaces` of the parsed bytes), the namespaces are those, not the
    tree's."""
    out = []
    if spaces is not None:
        at = node.start_byte
        out = [(start, name) for start, end, name in spaces if start <= at < end]
    for p in ancestors(root, node):
        if p.type == "namespace_definition" and spaces is not None:
            continue
        if p.type in _SCOPE_TYPES:
            name = p.child_by_field_name("name")
            if name is not None:
                out.append((p.start_byte, b"".join(name.text.split()).decode("utf-8", "replace")))
            elif p.type == "namespace_definition":
                out.append((p.start_byte, "(anonymous namespace)"))
    return sorted(out) if spaces is not None else out


def is_dead(node, root) -> bool:
    """Inside the first branch of `#if 0` (disabled code), not in its #elif/#else."""
    up = ancestors(root, node)
    for p, child in zip(up, [*up[1:], node], strict=True):
        if p.type == "preproc_if":
            cond = p.child_by_field_name("condition")
            if cond is not None and cond.text.strip() in (b"0", b"false") and \
                    p.child_by_field_name("alternative") != child:
                return True
    return False


def function_declarator(fn):
    """The function declarator of definition `fn` (through pointer and reference ones), or
    None."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
        decl = decl.child_by_field_name("declarator")
    return decl if decl is not None and decl.type == "function_declarator" else None


class HeaderBacked(dict):
    """One of a file's tables (globals, enums, structs): its own entries and, for a name it
    lacks, the entry of the first project header it includes (in include order) that defines
    the name itself. A header is parsed only when a looked-up name is a word of its text (most
    lookups are of locals or of names the headers do not have; a header's constants cost a
    parse of it per view). Reading the whole table (its size, its contents) merges every
    header's entries. The stored entries stay the file's own."""

    __slots__ = ("_ctx", "_kind", "_found", "_all")

    def __init__(self, own: dict, ctx: Context | None = None, kind: int = 0):
        super().__init__(own)
        self._ctx, self._kind = (None if ctx is None else weakref.ref(ctx)), kind   # (no cycle)
        self._found: dict = {}          # name -> the headers' entry, or _MISSING
        self._all: dict | None = None

    def _header(self, key):
        got = self._found.get(key, _NOT_ASKED)
        if got is _NOT_ASKED:
            ctx = None if self._ctx is None else self._ctx()
            got = self._found[key] = _MISSING if ctx is None else ctx.header_entry(self._kind, key)
        return got

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        got = self._header(key)
        return default if got is _MISSING else got

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or self._header(key) is not _MISSING

    def __getitem__(self, key):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        got = self._header(key)
        if got is _MISSING:
            raise KeyError(key)
        return got

    def __setitem__(self, key, value) -> None:
        dict.__setitem__(self, key, value)
        self._all = None

    def whole(self) -> dict:
        """Every entry: the file's own, then the headers' for the names it lacks."""
        if self._all is None:
            ctx = None if self._ctx is None else self._ctx()
            merged = {} if ctx is None else dict(ctx.headers_tables()[self._kind])
            merged.update(dict.items(self))
            self._all = merged
        return self._all

    def __len__(self) -> int:
        return len(self.whole())

    def __iter__(self):
        return iter(self.whole())

    def items(self):
        return self.whole().items()

    def keys(self):
        return self.whole().keys()

    def values(self):
        return self.whole().values()


_MISSING = object()
_NOT_ASKED = object()


class Context:
    def __init__(self, text: str, path: str, *, outer: Context | None = None,
                 tree=None, data: bytes | None = None, view: View | None = None):
        """Parse `text`; or, with `outer`, wrap a second tree (`tree` parsed from `data`, same
        byte offsets) that shares the outer file's macros and constants. `view`: the
        compilation pass (arch, -D/-U, include folders) the conditionals are evaluated for."""
        self.path = path
        self.tx = Text(text) if outer is None else outer.tx
        self.data = self.tx.parse_data if data is None else data
        if tree is None:
            self.tree, self.caps = _parsed(self.data)
        else:
            self.tree, self.caps = tree, file_captures(tree.root_node, self.data)
        funcs = sorted((n.start_byte, n.end_byte, n) for n in self.caps.get("function", ()))
        self.func_starts = [f[0] for f in funcs]
        self.funcs = funcs
        # the environment calls back through a weak reference: no cycle keeps a context (its
        # tree's nodes, its tables) alive until the collector walks it
        me = weakref.ref(self)
        self.env = Env()
        self.env.local = lambda scope, name, at=None: me().local(scope, name, at)
        self.env.switch_value = lambda scope, name, site: me().switch_value(scope, name, site)
        self.env.function_return = lambda name: me().function_return(name)
        self.env.class_constants = lambda scope, head, at=None: class_constants(me(), scope, head,
                                                                                at)
        self._returns: dict | None = None
        self._header_returns: dict[bytes, tuple | None] = {}
        self._names: dict[int, str | None] = {}
        self._locals: dict = {}
        self._cases: dict = {}              # a launch's span -> _site_conditions
        self._decl_blocks: dict = {}        # (scope, name) -> (declaration, its block), _visible
        self._tnames: dict[int, set[bytes]] = {}
        self._typedefs: dict[str, tuple] = {}       # name -> (live layouts, dead layouts)
        self._refs: dict[bytes, set[int]] | None = None    # _reference_params, on first use
        self._spaces = _NOT_ASKED                           # scoped, on first use
        self._func_by_start = {f[0]: f[2] for f in funcs}
        self._maybe_dead = re.search(rb"#[ \t]*if[ \t]+(0|false)\b", self.data) is not None
        self.view = view if outer is None else outer.view
        if outer is None:
            self.pp = scan(self.data, path, view) if b"#" in self.data else Scan()
            self._fill_env()
        else:
            self.pp = outer.pp
            e, o = self.env, outer.env
            e.macros, e.fmacros, e.globals, e.enums, e.structs = \
                o.macros, o.fmacros, o.globals, o.enums, o.structs

    def dead(self, node) -> bool:
        """In a branch that is false for this view (preproc), or disabled by `#if 0`."""
        return self.pp.is_dead(node.start_byte, node.end_byte) or \
            (self._maybe_dead and is_dead(node, self.tree.root_node))

    # --- scopes --------------------------------------------------------------------------------

    def function_at(self, byte: int):
        """The innermost function definition containing `byte`, or None."""
        i = bisect_right(self.func_starts, byte) - 1
        for j in range(i, max(i - 8, -1), -1):      # nesting (a local class) is shallow
            start, end, node = self.funcs[j]
            if start <= byte < end:
                return node
        return None

    def scoped(self, node) -> list[tuple[int, str]]:
        """`scoped_ancestors(node)`; in a tree with errors, the namespaces a count of the braces
        gives (`text.namespaces`), where that count balances."""
        if self._spaces is _NOT_ASKED:
            self._spaces = namespaces(self.data) if self.tree.root_node.has_error and \
                b"namespace" in self.data else None
        return scoped_ancestors(node, self.tree.root_node, self._spaces)

    def scopes(self, node) -> tuple[str, ...]:
        """Enclosing namespace and class names, outermost first (`scoped`)."""
        return tuple(name for _at, name in self.scoped(node))

    def scope_of(self, byte: int) -> int | None:
        f = self.function_at(byte)
        return None if f is None else f.start_byte

    def function_name(self, byte: int) -> str | None:
        f = self.function_at(byte)
        if f is None:
            return None
        if f.start_byte not in self._names:
            self._names[f.start_byte] = self._function_name(f)
        return self._names[f.start_byte]

    def _function_name(self, f) -> str | None:
        name = declarator_name(f.child_by_field_name("declarator"))
        if name is None:
            d = f.child_by_field_name("declarator")
            while d is not None and d.type == "function_declarator":
                d = d.child_by_field_name("declarator")
            name = d
        if name is None:
            return None
        if name.parent is not None and name.parent.type == "qualified_identifier":
            name = name.parent
            while name.parent is not None and name.parent.type == "qualified_identifier":
                name = name.parent
        return b"".join(name.text.split()).decode("utf-8", "replace")

    # --- the constant environment ---------------------------------------------------------------

    def _fill_env(self):
        env, caps = self.env, self.caps
        for node in caps.get("def", ()):
            if self.dead(node):
                continue
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None:
                env.add_macro(name.text, value.text if value is not None else b"")
        for node in caps.get("fdef", ()):
            if self.dead(node):
                continue
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            params = node.child_by_field_name("parameters")
            if name is not None and params is not None:
                names = tuple(p.text for p in params.children      # (`...`: as preproc)
                              if p.type == "identifier" or p.text == b"...")
                env.add_macro(name.text, value.text if value is not None else b"", names)
        self._add_outside_macros()
        if b"namespace" in self.data:
            _namespace_aliases(self.tx.parse_data, env.namespace_aliases)
        for decl in caps.get("global", ()):
            if qualifiers(decl) & {b"const", b"constexpr"}:
                for init in decl.children_by_field_name("declarator"):
                    self._add_global(decl, init)
        for node in caps.get("member", ()):
            quals = qualifiers(node)
            name = declarator_name(node.child_by_field_name("declarator"))
            if name is not None and quals & {b"const", b"constexpr"}:
                qual = "::".join((*self.scopes(node),
                                  name.text.decode("utf-8", "replace")))
                env.globals.setdefault(name.text, []).append(
                    (qual, node.child_by_field_name("default_value")))
        for node in caps.get("enums", ()):
            enumerators = [c for c in node.named_children if c.type == "enumerator"]
            for i, e in enumerate(enumerators):
                name = e.child_by_field_name("name")
                if name is not None:
                    env.enums.setdefault(name.text, []).append((enumerators, i))
        for _ in range(2):             # twice: a struct may use a typedef written after it
            for node in caps.get("struct", ()):
                self._add_struct(node)
            for node in caps.get("typedef", ()):
                self._add_typedef(node)
        if self.pp.headers:         # read on the first lookup the file cannot answer itself
            env.globals, env.enums, env.structs = (
                HeaderBacked(env.globals, self, 0), HeaderBacked(env.enums, self, 1),
                HeaderBacked(env.structs, self, 2))

    def header_entry(self, kind: int, key):
        """The entry for `key` in table `kind` (0 globals, 1 enums, 2 structs) of the first
        project header the file includes that defines it, _MISSING when none does. A header
        whose text cannot hold the key is not parsed."""
        from occlint.source.preproc import read_header

        test = _header_test(key, kind)
        for path in self._constant_headers(lookup=True):
            data = read_header(path)
            if data is None or not test(data):
                continue
            other = header_context(path, self.view)
            if other is not None:
                table = (other.env.globals, other.env.enums, other.env.structs)[kind]
                if dict.__contains__(table, key):
                    return dict.__getitem__(table, key)
        return _MISSING

    def headers_tables(self) -> tuple[dict, dict, dict]:
        """Every entry of the three tables of the project headers the file includes."""
        return headers_tables(self._constant_headers(), self.view)

    def _constant_headers(self, lookup: bool = False) -> tuple[str, ...]:
        """The project headers whose constants the file reads, in include order: for a name
        looked up (`lookup`: each header's text is tested for the word before it is parsed),
        up to MAX_LOOKUP_HEADERS (gsplat's `<glm/glm.hpp>` comes before its own config header,
        the 65th); for a whole table, the first MAX_CONSTANT_HEADERS."""
        return tuple(self.pp.headers[:MAX_LOOKUP_HEADERS if lookup else MAX_CONSTANT_HEADERS])

    def _add_outside_macros(self):
        """Macros the file does not define itself: those of the project headers it includes
        (live for this view) and the view's -D and predefined ones."""
        env = self.env          # (dict copies and key-set operations: a header may define
        own = env.macros.keys() | env.fmacros.keys()     # thousands; the file, a few)
        macros = dict(self.pp.macros)                    # stripped and distinct (preproc)
        for name in own & macros.keys():
            del macros[name]
        macros.update(env.macros)
        fmacros = dict(self.pp.fmacros)
        for name in fmacros.keys() & (macros.keys() | env.fmacros.keys()):
            del fmacros[name]
        fmacros.update(env.fmacros)
        env.macros, env.fmacros = macros, fmacros
        for name, value in (self.view.predefined().items() if self.view else ()):
            if name not in env.macros and name not in env.fmacros:
                if isinstance(value, tuple):       # a function-like macro from the includer
                    env.add_macro(name, value[1], value[0])
                else:
                    env.add_macro(name, value)

    def _add_global(self, decl, init):
        if init.type != "init_declarator":
            return
        name = init.child_by_field_name("declarator")
        if name is not None and name.type == "array_declarator":    # `const int a[] = {...}`
            name = name.child_by_field_name("declarator")            # (its elements: source.values)
        if name is None or name.type != "identifier":
            return
        qual = "::".join((*self.scopes(decl), name.text.decode("utf-8", "replace")))
        self.env.globals.setdefault(name.text, []).append((qual, init.child_by_field_name("value")))

    # --- locals, on demand -----------------------------------------------------------------------

    def local(self, scope: int | None, name: bytes, at=None) -> Local | None:
        """How the function starting at `scope` declares and writes `name` (None: it does not).
        `at`: the node naming it, when the function declares the name more than once (in two
        branches): then the declaration visible there, and the uses in its block."""
        key = (scope, name)
        if key not in self._locals:
            fn = self._func_by_start.get(scope) if scope is not None else None
            self._locals[key] = self._find_local(fn, fn, name) if fn is not None else None
        local = self._locals[key]
        if at is None or local is None or len(local.decls) < 2:
            return local
        return self._visible(scope, name, local, at)

    def function_return(self, name: bytes, own: bool = False) -> tuple | None:
        """`_one_return` of the one function named `name` that the file defines (else, unless
        `own`, the first project header that does)."""
        if self._returns is None:
            found: dict[bytes, list] = {}
            for _s, _e, fn in self.funcs:
                if self.dead(fn):
                    continue        # `#if BNB_HIP` ... `#else` defines it twice
                decl = function_declarator(fn)
                inner = decl.child_by_field_name("declarator") if decl is not None else None
                if inner is not None and inner.type == "identifier":
                    found.setdefault(inner.text, []).append((fn, decl))
            self._returns = found
        fns = self._returns.get(name, ())
        if not fns:
            if own:
                return None
            if name not in self._header_returns:
                self._header_returns[name] = self._header_function(name)
            return self._header_returns[name]
        return _one_return(*fns[0]) if len(fns) == 1 else None

    def _header_function(self, name: bytes) -> tuple | None:
        """`function_return` of the first project header the file includes that defines
        `name` (bitsandbytes' `bnb_host_warp_size()` in its common header)."""
        from occlint.source.preproc import read_header

        if not re.fullmatch(rb"\w+", name):
            return None
        defines = re.compile(rb"\b" + name + rb"\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?"
                             rb"\{\s*return\b[^;{}]*;\s*\}")
        for path in self._constant_headers(lookup=True):
            data = read_header(path)
            if data is None or not has_word(data, name):
                continue
            code = _code_of(data)
            found = list(defines.finditer(code))
            if not found:
                continue            # (read only when its text has a one-return definition)
            if len(found) == 1:     # alone: parse the definition, not the header
                got = _snippet_function(code, found[0])
            elif not re.search(rb"\n[ \t]*#[ \t]*(?:else|elif)", code[found[0].end():found[-1].start()]):
                got = None          # overloads: no one definition is the call's
            else:                   # in `#if` branches: the header, for its live one
                other = header_context(path, self.view)     # (the list is every header)
                got = other.function_return(name, own=True) if other is not None else None
            if got is not None:
                return got
        return None

    def switch_value(self, scope: int, name: bytes, site) -> int | None:
        """The value `name` has at `site` because `site` is in a `case C:` of `switch (name)`
        that only its label enters (the case before it ends in break, return, continue, throw
        or goto), or else in the branch of an `if (name == C)` (or an `else if` of a chain of
        them), in the function starting at `scope`, which never writes `name`: cuda-samples'
        `switch (threads) { case 512: reduce4<T, 512><<<grid, dimBlock>>>` with `dim3
        dimBlock(threads, 1, 1)`; DeepSpeed's `if (threads == 32) { k<32><<<n, block>>> } else
        if (threads == 512) ...` with `dim3 block(threads)`. None otherwise."""
        cases, ifs = self._site_conditions(scope, site)
        case, equal = cases.get(name), ifs.get(name)
        if case is None and equal is None:
            return None
        local = self.local(scope, name.split(b".")[0])      # (`dimBlock.x`: dimBlock's)
        if local is None or local.written:
            return None
        if case is None:
            return self.env.value(equal, None)
        value = case.child_by_field_name("value")
        before = case.prev_named_sibling
        while before is not None and before.type == "comment":
            before = before.prev_named_sibling
        if value is None or (before is not None and not _ends_in_jump(before)):
            return None         # `default:`, or entered from the case before it as well
        return self.env.value(value, None)

    def _site_conditions(self, scope: int, site) -> tuple[dict, dict]:
        """(name -> the innermost `case` around `site` of a `switch (name)`, name -> the `C` of
        the innermost `if (name == C)` whose branch holds `site`), remembered per site."""
        key = (site.start_byte, site.end_byte)
        got = self._cases.get(key)
        if got is None:
            got = self._cases[key] = ({}, {})
            fn = self._func_by_start.get(scope)
            if fn is None or not fn.start_byte <= site.start_byte < fn.end_byte or (
                    self.data.find(b"switch", fn.start_byte, site.start_byte) < 0 and
                    self.data.find(b"==", fn.start_byte, site.start_byte) < 0):
                return got
            cases, ifs = got
            for p in reversed(ancestors(fn, site)):
                if p.type == "lambda_expression":
                    break
                if p.type == "case_statement":
                    switch = p.parent.parent
                    cond = switch.child_by_field_name("condition") \
                        if switch is not None and switch.type == "switch_statement" else None
                    inner = cond.named_children if cond is not None else []
                    if len(inner) == 1 and inner[0].type == "identifier":
                        cases.setdefault(inner[0].text, p)
                    elif len(inner) == 1 and inner[0].type == "field_expression" and \
                            _DIM3_FIELD.fullmatch(inner[0].text):
                        cases.setdefault(b"".join(inner[0].text.split()), p)   # `dimBlock.x`
                elif p.type == "if_statement":
                    for name, value in _equality(p, site):
                        ifs.setdefault(name, value)
        return got

    def _visible(self, scope: int, name: bytes, local: Local, at) -> Local:
        """`local` narrowed to the declaration C++ scoping gives the use `at`: the innermost
        block around `at` that declares `name` before it. Uses anywhere in that block count
        (a shadowing declaration inside it only makes the answer unknown)."""
        found = self.tree.root_node.descendant_for_byte_range(at.start_byte, at.end_byte)
        if found is None or found != at:        # a macro body's node, not this file's
            return local
        blocks = self._decl_blocks.get((scope, name))
        if blocks is None:
            blocks = self._decl_blocks[(scope, name)] = []
            for decl in local.decls:
                block = decl[1].parent
                while block is not None and block.type not in _BLOCKS:
                    block = block.parent
                if block is not None:
                    blocks.append((decl, block))
        best, same = None, False
        for decl, block in blocks:
            if decl[1].start_byte < at.start_byte and \
                    block.start_byte <= at.start_byte < block.end_byte:
                if best is None or block.start_byte > best[1].start_byte:
                    best, same = (decl, block), False
                elif block.start_byte == best[1].start_byte:
                    same = True     # two in one block: `#ifdef` branches this view keeps both of
        if best is None or same:
            return local
        decl, block = best
        key = (scope, name, block.start_byte)
        if key not in self._locals:
            # the name's uses in the block, less those of a declaration nested in it
            inner = [(d[1].start_byte, b.end_byte) for d, b in blocks
                     if b.start_byte > block.start_byte and b.end_byte <= block.end_byte]
            fn = self._func_by_start[scope]
            narrowed = self._find_local(fn, block, name, inner) or Local()
            narrowed.decls = [decl]
            self._locals[key] = narrowed
        return self._locals[key]

    def _find_local(self, fn, within, name: bytes, skip=()) -> Local | None:
        """The uses of `name` in `within` (function `fn`, or a block of it), but for those in
        the byte ranges `skip`."""
        local = Local()
        if name in self._template_names(fn):       # a template parameter: unknown here
            local.decls.append((b"", fn))
            return local
        end = len(name)
        for start in word_starts(self.data, name, within.start_byte, within.end_byte):
            if any(lo <= start < hi for lo, hi in skip):
                continue
            node = within.descendant_for_byte_range(start, start + end)
            if node is None or node.start_byte != start or node.end_byte != start + end or \
                    node.type != "identifier":
                continue                       # in a comment, a string, or a longer token
            if (self.pp.dead or self._maybe_dead) and self.dead(node):
                continue                       # `#if 0`, or a branch false for this view
            _classify_use(node, local)
        for args in local.passed:       # `f(x)` where f takes a non-const reference writes x
            call = args.parent
            at = {i for i, a in enumerate(exprs(args)) if a.text == name}
            if call is not None and call.type == "call_expression" and \
                    at & self._reference_params(call.child_by_field_name("function")):
                local.written = local.whole_written = True
                local.writes.append(call)
        return local if local.decls else None

    def _reference_params(self, callee) -> set[int]:
        """Which parameters (by position) of the functions this file defines under the callee's
        name take a non-const reference: an argument there may be written (an out-parameter,
        `calc_launch(n, threads, blocks)`). Unknown callees (a header's, a library's): none."""
        if callee is None:
            return set()
        if callee.type == "template_function":
            callee = callee.child_by_field_name("name")
        if callee is None or callee.type not in ("identifier", "qualified_identifier"):
            return set()
        name = callee.text.rsplit(b"::", 1)[-1].strip()
        if self._refs is None:
            self._refs = _reference_params_by_name(self.funcs)
        return self._refs.get(name, set())

    def _template_names(self, fn) -> set[bytes]:
        """Template parameter names of the templates around function `fn` (cached)."""
        names = self._tnames.get(fn.start_byte)
        if names is None:
            names = set()
            for p in ancestors(self.tree.root_node, fn):
                if p.type == "template_declaration":
                    names.update(n for n in _template_parameters(p) if n)
            self._tnames[fn.start_byte] = names
        return names

    def _add_typedef(self, node):
        """`typedef float real;`, `using Vec = float4;`, `typedef struct {...} Pair;`. A live
        one wins over one in a dead branch (xmrig's `#if ... typedef unsigned char exec_t;
        #else ... short`; cuda-samples' realtype.h, `float` unless DOUBLE_PRECISION); a dead one
        counts only when no live one exists (a header read for its constants may find its own
        include guard closed by its includer's macros); two layouts on one side: unknown."""
        type_node = node.child_by_field_name("type")
        if type_node is None:
            return
        if node.type == "alias_declaration":
            names = [node.child_by_field_name("name")]
        else:
            names = [d for d in node.children_by_field_name("declarator")
                     if d.type == "type_identifier"]
        if type_node.type == "struct_specifier":
            name = type_node.child_by_field_name("name")
            sa = self.env.structs.get(name.text.decode("utf-8", "replace")) if name is not None \
                else self._struct_layout(type_node)
        else:
            sa = types.size_align(type_node.text.decode("utf-8", "replace"), self.env.structs)
        dead = self.dead(node)
        for n in names:
            if sa is not None and n is not None:
                key = n.text.decode("utf-8", "replace")
                live, gone = self._typedefs.setdefault(key, (set(), set()))
                (gone if dead else live).add(sa)
                chosen = live or gone
                self.env.structs[key] = next(iter(chosen)) if len(chosen) == 1 else None

    def _add_struct(self, node):
        if self.dead(node):
            return
        name = node.child_by_field_name("name")
        layout = self._struct_layout(node) if name is not None else None
        if layout is not None:
            self.env.structs[name.text.decode("utf-8", "replace")] = layout

    def _struct_layout(self, node) -> tuple[int, int] | None:
        """(size, alignment) of a struct of plainly sized members, else None."""
        members = []
        for f in node.child_by_field_name("body").named_children:
            if f.type == "comment":
                continue
            if f.type != "field_declaration" or f.child_by_field_name("type") is None:
                return None          # methods, access specifiers, bit-fields: not plain
            if b"static" in qualifiers(f):
                continue
            sa = types.size_align(f.child_by_field_name("type").text.decode("utf-8", "replace"),
                                  self.env.structs)
            declarators = f.children_by_field_name("declarator")
            if sa is None or not declarators:
                return None
            for d in declarators:
                count = 1
                while d.type == "array_declarator":
                    n = self.env.value(d.child_by_field_name("size"))
                    if n is None:
                        return None
                    count *= n
                    d = d.child_by_field_name("declarator")
                if d.type not in ("field_identifier", "identifier"):
                    return None
                members.append((sa[0] * count, sa[1]))
        return types.layout(members) if members else None


_NAMESPACE_ALIAS = re.compile(rb"namespace\s+([A-Za-z_]\w*)\s*=\s*"
                              rb"((?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*;")


def _namespace_aliases(data: bytes, into: dict) -> None:
    """`namespace C = cfg;` (at any scope; strings and comments aside) into `into` as
    {b"C": b"cfg"}; a name aliased to two namespaces: None."""
    from occlint.source.text import blank_noise

    if _NAMESPACE_ALIAS.search(data) is None:
        return                      # (most files: none, and no text to blank)
    code = blank_noise(data)
    for m in _NAMESPACE_ALIAS.finditer(code):
        if m.start() and code[m.start() - 1] in _WORD_BYTES:
            continue                                # (`xnamespace ...`)
        target = b"".join(m.group(2).split()).lstrip(b":")
        if into.get(m.group(1), target) != target:
            target = None
        into[m.group(1)] = target


_WORDS: dict[bytes, re.Pattern] = {}      # name -> compiled whole-word pattern


_WORD_BYTES = frozenset(b"_$0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def word_starts(data: bytes, name: bytes, start: int, end: int) -> list[int]:
    """Offsets of `name` as a whole word in data[start:end] (may be in comments or strings)."""
    if not name:
        return []
    if len(name) < 3:                  # short names: a regex beats many false substring hits
        return list(_starting(_word_pattern(name), data, start, end))
    return list(_whole(data, name, start, end, _WORD_BYTES))


def has_word(data: bytes, word: bytes) -> bool:
    """`word` occurs in `data` as a whole word (maybe in a comment or a string)."""
    if not word:
        return False
    if len(word) < 3:
        return word in data and next(_starting(_word_pattern(word), data), None) is not None
    return next(_whole(data, word), None) is not None


def _whole(data: bytes, word: bytes, start: int = 0, end: int | None = None, chars=None):
    """Offsets of `word` (of word characters) in data[start:end] as a whole word, next to none
    of `chars` (default: the regex's \\w): found as bytes, the neighbours tested (no pattern to
    compile per name)."""
    chars = _REGEX_WORD if chars is None else chars
    n, size = len(word), len(data)
    if not n:
        return                      # (an empty word is nowhere: `find` would return i forever)
    end = size if end is None else end
    i = data.find(word, start, end)
    while i != -1:
        if (i == 0 or data[i - 1] not in chars) and (i + n >= size or data[i + n] not in chars):
            yield i
        i = data.find(word, i + n, end)


# the regex's \w (no `$`, which _WORD_BYTES counts as a name's)
_REGEX_WORD = frozenset(b"_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _starting(pattern: re.Pattern, data: bytes, start: int = 0, end: int | None = None):
    """Offsets of `pattern`'s matches that begin a word (`\\b` before them). The patterns start
    with their name, not with `\\b`: the regex engine then finds the name as a literal, a
    search 10-20x faster than one that must test a boundary at every byte."""
    for m in pattern.finditer(data, start, len(data) if end is None else end):
        i = m.start()
        if i == 0 or data[i - 1] not in _REGEX_WORD:
            yield i


def _word_pattern(word: bytes) -> re.Pattern:
    pattern = _WORDS.get(word)
    if pattern is None:
        if len(_WORDS) > 10_000:
            _WORDS.clear()
        pattern = _WORDS[word] = re.compile(re.escape(word) + rb"\b")
    return pattern


def _header_test(key, kind: int):
    """test(header text) -> could that header have `key` in its own table `kind`? Every key is a
    name node's text, so it is written there as it stands; a plain name as a whole word outside
    the comments, followed by what can follow it where it is defined, not where it is used: a
    constant's initializer (`=`, `{`, `[`, `__attribute__`); a type's body or typedef (`{`, `:`,
    `;`, `[`, `=`, `final`); an enumerator inside the braces of an `enum`. A function's
    parameter `int n,`, a call `f(` and a template's `T` in `sizeof(T)` parse no header."""
    name = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else key
    if not name:
        return lambda data: False
    if not name.isascii():
        return lambda data: True    # the header's bytes may differ (undecodable ones replaced)
    if not all(c in _WORD_BYTES for c in name):
        return lambda data: name in data

    def test(data: bytes) -> bool:
        if not _mentions(data, name):
            return False
        code = _code_of(data)
        if kind == 1:
            return any(has_word(body, name) for body in _enum_bodies(code))
        after = _DEFINED_BY[kind]
        return any(after.match(code, i + len(name)) for i in _whole(code, name))
    return test


_MENTIONS: dict[tuple[bytes, bytes], bool] = {}


def _mentions(data: bytes, name: bytes) -> bool:
    """has_word, remembered (the files of a project ask the same names of the same headers)."""
    key = (name, data)
    got = _MENTIONS.get(key)
    if got is None:
        if len(_MENTIONS) > 100_000:
            _MENTIONS.clear()
        got = _MENTIONS[key] = has_word(data, name)
    return got


_CODE: dict[bytes, bytes] = {}
_COMMENT_OR_LITERAL = re.compile(
    rb"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def _code_of(data: bytes) -> bytes:
    """`data` with each comment a blank (literals kept; a text with a raw string is kept whole,
    as its quotes could hide a comment's start)."""
    code = _CODE.get(data)
    if code is None:
        if b"R\"" in data:
            code = data
        else:
            code = _COMMENT_OR_LITERAL.sub(
                lambda m: m.group(0) if m.group(0)[:1] in (b'"', b"'") else b" ", data)
        if len(_CODE) > 512:
            _CODE.clear()
        _CODE[data] = code
    return code


# what follows a constant's or an enumerator's name where it is defined (_header_test)
# what follows a name where table 0 (globals) or 2 (types) defines it
_DEFINED_BY = (re.compile(rb"\s*(?:[={\[]|__attribute__)"), None,
               re.compile(rb"\s*(?:[{:;\[=]|final\b)"))
_ENUM_BODY = re.compile(rb"\benum\b[^{;]*\{([^}]*)\}")
_ENUM_BODIES: dict[bytes, list[bytes]] = {}


def _enum_bodies(code: bytes) -> list[bytes]:
    """The texts between the braces of each `enum ... { ... }` (remembered per text)."""
    got = _ENUM_BODIES.get(code)
    if got is None:
        if len(_ENUM_BODIES) > 2048:
            _ENUM_BODIES.clear()
        got = _ENUM_BODIES[code] = [m.group(1) for m in _ENUM_BODY.finditer(code)] \
            if b"enum" in code else []
    return got


_DECLARATORS = {"pointer_declarator", "array_declarator", "reference_declarator",
                "parenthesized_declarator", "init_declarator"}


def _reference_params_by_name(funcs) -> dict[bytes, set[int]]:
    """function name -> positions of its non-const reference parameters, over the file's
    function definitions (every overload's, so a name is written if any overload may)."""
    out: dict[bytes, set[int]] = {}
    for _start, _end, fn in funcs:
        d = fn.child_by_field_name("declarator")
        while d is not None and d.type != "function_declarator":
            d = d.child_by_field_name("declarator")
        if d is None:
            continue
        ident = d.child_by_field_name("declarator")
        params = d.child_by_field_name("parameters")
        if ident is None or params is None:
            continue
        refs = set()
        for i, prm in enumerate(exprs(params)):
            decl = prm.child_by_field_name("declarator")
            while decl is not None and decl.type in ("parenthesized_declarator",):
                decl = decl.named_children[0] if decl.named_child_count else None
            if decl is not None and decl.type == "reference_declarator" and \
                    not any(c.type == "type_qualifier" and c.text == b"const" for c in prm.children):
                refs.add(i)
        if refs:
            out.setdefault(ident.text.rsplit(b"::", 1)[-1].strip(), set()).update(refs)
    return out


def _one_return(fn, decl) -> tuple | None:
    """(parameter names, template parameter names, returned expression, steps before it) of a
    function definition whose body is straight-line: integer locals declared with a value and
    `if (cond) ...` guards without `else`, then one `return expr;` (cuda-samples' `iDivUp`,
    which exits when the quotient exceeds UINT_MAX). Each step is (name, value node) or
    (None, a guard's condition, which must be false for the return to be reached). Else None."""
    body = fn.child_by_field_name("body")
    stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
    if not stmts or stmts[-1].type != "return_statement" or not stmts[-1].named_child_count:
        return None
    steps = []
    for st in stmts[:-1]:
        if st.type == "if_statement" and st.child_by_field_name("alternative") is None and \
                st.child_by_field_name("condition") is not None and \
                not any(c.type == "constexpr" for c in st.children):
            steps.append((None, st.child_by_field_name("condition")))
            continue
        ty = st.child_by_field_name("type") if st.type == "declaration" else None
        if ty is None or not types.is_integral(ty.text.decode("utf-8", "replace")):
            return None
        for d in st.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
            value = d.child_by_field_name("value") if name is not None else None
            if name is None or name.type != "identifier" or value is None or \
                    value.type in ("initializer_list", "argument_list"):
                return None
            steps.append((name.text, value))
    params = []
    plist = decl.child_by_field_name("parameters")
    for p in plist.named_children if plist is not None else ():
        if p.type != "parameter_declaration":
            return None             # a default value, a pack, `...`
        ident = declarator_name(p.child_by_field_name("declarator"))
        if ident is None:
            return None
        params.append(ident.text)
    t = fn.parent
    tparams = _template_parameters(t) if t is not None and t.type == "template_declaration" else []
    return tuple(params), tuple(tparams), stmts[-1].named_children[0], tuple(steps)


_SNIPPET_FUNCTIONS: dict[bytes, tuple] = {}     # definition text -> (tree, _one_return's answer)


def _snippet_function(code: bytes, match) -> tuple | None:
    """`_one_return` of the definition `match` found in a header's text, parsed alone: from the
    end of the statement before it (its `template <...>` and return type) to its `}`."""
    at = match.start()
    start = max(code.rfind(b";", 0, at), code.rfind(b"}", 0, at), code.rfind(b"{", 0, at)) + 1
    directive = code.rfind(b"\n#", start, at)
    while directive >= 0:           # after a directive line between them (`#endif`, `#define`)
        start = code.find(b"\n", directive + 1) + 1 or at
        directive = code.rfind(b"\n#", start, at)
    text = code[start:match.end()]
    hit = _SNIPPET_FUNCTIONS.get(text)
    if hit is None:
        tree = parser().parse(text)
        fn = next((c for c in tree.root_node.named_children
                   if c.type in ("function_definition", "template_declaration")), None)
        if fn is not None and fn.type == "template_declaration":
            fn = next((c for c in fn.named_children if c.type == "function_definition"), None)
        decl = function_declarator(fn) if fn is not None else None
        got = _one_return(fn, decl) if decl is not None else None
        if len(_SNIPPET_FUNCTIONS) > 4096:
            _SNIPPET_FUNCTIONS.clear()
        hit = _SNIPPET_FUNCTIONS[text] = (tree, got)       # the tree keeps its nodes alive
    return hit[1]


_DIM3_FIELD = re.compile(rb"[A-Za-z_]\w*\s*\.\s*[xyz]")


def _template_parameters(template) -> list[bytes]:
    """The parameter names of a `template <...>` declaration (or of a template parameter
    list: a lambda's `[&]<int T, int C>()`), in order (b"" where unnamed)."""
    plist = template if template.type == "template_parameter_list" else \
        template.child_by_field_name("parameters")
    out = []
    for c in plist.named_children if plist is not None else ():
        n = c.child_by_field_name("declarator") or c.child_by_field_name("name")
        while n is not None and n.type not in ("identifier", "type_identifier"):
            n = n.child_by_field_name("declarator") if n.named_child_count else None
        if n is None:
            n = next((x for x in c.named_children if x.type in ("identifier", "type_identifier")),
                     None)
        out.append(n.text if n is not None else b"")
    return out


def _equality(branch, site) -> list[tuple[bytes, object]]:
    """[(name, the node of C)] when `site` is in the consequence of the `if_statement`
    `branch` and its condition is `name == C` or `C == name`; else []."""
    body = branch.child_by_field_name("consequence")
    if body is None or not body.start_byte <= site.start_byte < body.end_byte:
        return []
    cond = branch.child_by_field_name("condition")
    while cond is not None and cond.type in ("condition_clause", "parenthesized_expression") \
            and cond.named_child_count == 1:
        cond = cond.named_children[0]
    op = cond.child_by_field_name("operator") if cond is not None and \
        cond.type == "binary_expression" else None
    if op is None or op.text != b"==":
        return []
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    return [(a.text, b) for a, b in ((left, right), (right, left))
            if a is not None and b is not None and a.type == "identifier"]


_JUMPS = frozenset(("break_statement", "return_statement", "continue_statement",
                    "goto_statement", "throw_statement"))


def _ends_in_jump(case) -> bool:
    """A case's last statement (inside a trailing block too) leaves it: no fall-through."""
    last = case
    while last is not None and last.type in ("case_statement", "compound_statement"):
        kids = [c for c in last.named_children if c.type != "comment"]
        if last.type == "case_statement":
            kids = kids[1:] if kids and kids[0] == last.child_by_field_name("value") else kids
        last = kids[-1] if kids else None
    return last is not None and (last.type in _JUMPS or (
        last.type == "expression_statement" and last.named_child_count == 1
        and last.named_children[0].type == "throw_expression"))


# the nodes a declaration inside a function is scoped to
_BLOCKS = frozenset(("compound_statement", "for_statement", "for_range_loop", "if_statement",
                     "while_statement", "switch_statement", "catch_clause", "lambda_expression",
                     "function_definition"))


def _classify_use(node, local: Local) -> None:
    """Record one occurrence of a name: a declaration, a write, or (ignored) a read."""
    parent = node.parent
    if parent is None:
        return
    t = parent.type
    if t == "init_declarator" and parent.child_by_field_name("declarator") == node:
        decl = parent.parent
        type_node = decl.child_by_field_name("type") if decl is not None else None
        local.decls.append((type_node.text if type_node is not None else b"", parent))
    elif t == "function_declarator" and parent.child_by_field_name("declarator") == node:
        decl = parent.parent        # `dim3 b(BX, BY);` parses as a function declaration
        type_node = decl.child_by_field_name("type") if decl is not None else None
        if decl is not None and decl.type == "declaration" and type_node is not None:
            local.decls.append((type_node.text, parent))
    elif t in ("declaration", "parameter_declaration", "optional_parameter_declaration") or \
            (t in _DECLARATORS and (t == "reference_declarator" or
                                    parent.child_by_field_name("declarator") == node)):
        # a parameter, or a declaration without initializer: a name whose value is unknown
        p = parent
        while p is not None and (p.type in _DECLARATORS or p.type == "function_declarator"):
            p = p.parent            # (a function pointer: `void (*k)(float *) = kern;`)
        if p is not None and p.type in ("declaration", "parameter_declaration",
                                        "optional_parameter_declaration"):
            type_node = p.child_by_field_name("type")
            local.decls.append((type_node.text if type_node is not None else b"", p))
    elif (t == "assignment_expression" and parent.child_by_field_name("left") == node) or \
            t == "update_expression" or \
            (t == "pointer_expression" and parent.child_by_field_name("operator").text == b"&"):
        local.written = local.whole_written = True    # assigned, incremented, address taken
        local.writes.append(parent)
    elif t == "argument_list":
        local.passed.append(parent)     # a call's whole argument: a reference parameter writes it
    elif t == "field_expression" and parent.child_by_field_name("argument") == node:
        assign = parent.parent
        if assign is not None and assign.type == "assignment_expression" and \
                assign.child_by_field_name("left") == parent:
            local.written = True
            field = parent.child_by_field_name("field")
            op = assign.child_by_field_name("operator")
            value = assign.child_by_field_name("right") if op is not None and op.text == b"=" \
                else None
            if field is not None:
                local.fields.setdefault(field.text, []).append(value)
        elif parent.parent is not None and parent.parent.type == "field_expression":
            local.written = local.whole_written = True    # `v.x.y = ...` and the like


MAX_CONSTANT_HEADERS = 64             # headers per file whose constants are all read
MAX_LOOKUP_HEADERS = 1024             # headers per file a name is looked up in (text test first)
MAX_CONSTANT_HEADER_BYTES = 256 << 10  # larger ones (library headers) are not parsed for them
_HEADER_CONTEXTS: dict[tuple, Context | None] = {}
_PARSED: dict[bytes, tuple] = {}     # source bytes -> (tree, captures): any path, view or use


def _parsed(data: bytes) -> tuple:
    """The tree of `data` and its query captures, made once per process for the same bytes: a
    header is parsed as a file of the run (by the name the user gave), for the constants of each
    unit that includes it (by its resolved path) and per view. Both are only read afterwards
    (trees are immutable), so sharing them is safe."""
    hit = _PARSED.get(data)
    if hit is None:
        if len(_PARSED) > 512:
            _PARSED.clear()
        tree = parser().parse(data)
        hit = _PARSED[data] = (tree, file_captures(tree.root_node, data))
    return hit


PARSE_AHEAD = 256       # files parsed ahead at most (the trees kept are cleared past 512)


def parse_ahead(texts: Iterable[str]) -> None:
    """Parse `texts` now, while a core is free, for the contexts made later of the same bytes."""
    for text in list(texts)[:PARSE_AHEAD]:
        _parsed(Text(text).parse_data)


_BUILDING: set[tuple] = set()
_TABLES: dict[tuple, tuple[dict, dict, dict]] = {}


def headers_tables(paths: tuple[str, ...], view: View | None) -> tuple[dict, dict, dict]:
    """`const`/`constexpr` integers, enumerators and struct layouts the project headers `paths`
    define themselves for `view`, the first header that defines a name winning. Made once per
    process for the same headers, contents and view, and only read afterwards (shared by every
    file that includes them)."""
    from occlint.source.preproc import read_header

    key = (paths, view, tuple(hash(read_header(p)) for p in paths))
    hit = _TABLES.get(key)
    if hit is None:
        own = []
        for path in paths:
            other = header_context(path, view)
            if other is not None:
                own.append((other.env.globals, other.env.enums, other.env.structs))
        hit = ({}, {}, {})
        for tables in reversed(own):        # the first header's entries are written last
            for into, table in zip(hit, tables):
                into.update(dict.items(table))
        if len(_TABLES) > 512:
            _TABLES.clear()
        _TABLES[key] = hit
    return hit


def header_context(path: str, view: View | None) -> Context | None:
    """A project header parsed on its own for `view` (memoized by path, view and contents);
    None when unreadable or while it is being parsed (an include cycle)."""
    from occlint.source.preproc import read_header

    data = read_header(path)
    if data is None or len(data) > MAX_CONSTANT_HEADER_BYTES:
        return None
    key = (path, view, hash(data))
    if key in _HEADER_CONTEXTS:
        return _HEADER_CONTEXTS[key]
    if key in _BUILDING:
        return None
    _BUILDING.add(key)
    try:
        try:
            ctx = Context(data.decode("utf-8", "replace"), path, view=view)
        except Exception:
            ctx = None
    finally:
        _BUILDING.discard(key)
    if len(_HEADER_CONTEXTS) > 512:
        _HEADER_CONTEXTS.clear()
    _HEADER_CONTEXTS[key] = ctx
    return ctx
