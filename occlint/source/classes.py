"""The static constants of a class template the file defines, reached through a type alias:
`using Ktraits = Conv_traits<kNThreads, 4>;` then `Ktraits::kNThreads` (mamba, causal-conv1d,
flash-attention's kernel traits), or written with its arguments, `Conv_traits<128, 4>::kSmem`;
and those of a plain class named directly (`Cfg::kThreads`).

`class_constants` finds the pieces in the tree; `consteval.Env` evaluates them with the
arguments bound (occlint.source.values binds the launching function's template parameters
call by call)."""

from __future__ import annotations

from occlint.source.consteval import exprs

_CLASSES = ("struct_specifier", "class_specifier")


def class_constants(ctx, scope: int | None, head: bytes, at=None):
    """For `head::member`: (the class template's parameter names, their default value nodes
    (None where none), the argument nodes `head` gives, [(name, value node)] of the class's
    static const/constexpr members in declaration order); None when `head` is not an alias of
    (or a written instance of) a class the file defines, or the class is specialized."""
    memo = ctx.__dict__.setdefault("_class_constants", {})
    key = (scope, head, at.start_byte if at is not None else None)
    if key not in memo:
        memo[key] = _find(ctx, scope, head, at)
    return memo[key]


def _find(ctx, scope, head, at):
    from occlint.source.context import _template_parameters

    target = None
    if at is not None and at.type == "qualified_identifier":
        written = at.child_by_field_name("scope")
        if written is not None and written.type == "template_type":
            target = written                        # `Conv_traits<128, 4>::kSmem`
    if target is None and b"<" not in head and b"::" not in head:
        target = _alias(ctx, scope, head)
    for _ in range(4):          # an alias of an alias (xgboost: `using StHistBound = HistSm75;`
        if target is not None and target.type == "type_descriptor":     # `using HistSm75 =
            target = target.child_by_field_name("type")                   # HistTuning<1024, 1>;`)
        if target is None or target.type != "type_identifier" or _class(ctx, target.text):
            break
        target = _alias(ctx, scope, target.text)
    if target is None and b"<" not in head:
        # `Cfg::kThreads`, `ns::Cfg::kThreads`: a class (not a template) the file defines, its
        # members read in order (ThunderKittens' `NUM_THREADS = NUM_WARPS * WARP_THREADS`
        # beside other configs' NUM_WARPS)
        found = _class(ctx, head)
        return ((), (), (), _members(ctx, found[1])) if found and found[0] is None else None
    if target is None or target.type not in ("template_type", "type_identifier"):
        return None
    name_node = target.child_by_field_name("name") if target.type == "template_type" else target
    args = exprs(target.child_by_field_name("arguments")) if target.type == "template_type" else []
    found = _class(ctx, name_node.text if name_node is not None else b"")
    if found is None:
        return None
    template, body = found
    params = _template_parameters(template) if template is not None else []
    plist = template.child_by_field_name("parameters") if template is not None else None
    defaults = [p.child_by_field_name("default_value")
                if p.type == "optional_parameter_declaration" else None
                for p in (plist.named_children if plist is not None else ())]
    if len(args) > len(params):
        return None
    return tuple(params), tuple(defaults), tuple(args), _members(ctx, body)


def _alias(ctx, scope, head: bytes):
    """The type `head` names as an alias (`using head = T<...>;`, `typedef T<...> head;`) in the
    function at `scope`, else in the file outside functions; None when none, or several."""
    from occlint.source.context import word_starts

    fn = ctx._func_by_start.get(scope) if scope is not None else None
    ranges = ([(fn.start_byte, fn.end_byte, True)] if fn is not None else []) + \
        [(0, len(ctx.data), False)]
    for lo, hi, local in ranges:
        found = []
        for start in word_starts(ctx.data, head, lo, hi):
            node = ctx.tree.root_node.descendant_for_byte_range(start, start + len(head))
            decl = node.parent if node is not None else None
            if decl is None or ctx.dead(decl):
                continue
            named = {"alias_declaration": "name", "type_definition": "declarator"}.get(decl.type)
            if named is not None and decl.child_by_field_name(named) == node:
                found.append(decl.child_by_field_name("type"))
        if not local:                               # the file's: outside any function
            found = [t for t in found if t is not None and ctx.function_at(t.start_byte) is None]
        if len({t.text for t in found if t is not None}) == 1:
            return found[0]
        if found:
            return None
    return None


def _class(ctx, name: bytes):
    """(its template_declaration or None, its body) of the one class named `name` (its last
    part) that the file defines; None when none, several, or a specialization exists."""
    from occlint.source.context import word_starts

    last = name.rsplit(b"::", 1)[-1].strip()
    if not last:
        return None
    found = []
    for start in word_starts(ctx.data, last, 0, len(ctx.data)):
        node = ctx.tree.root_node.descendant_for_byte_range(start, start + len(last))
        spec = node.parent if node is not None else None
        if spec is not None and spec.type == "template_type" and spec.parent is not None and \
                spec.parent.type in _CLASSES and spec.parent.child_by_field_name("name") == spec:
            return None                             # `struct T<128, X> {...}`: specialized
        if spec is None or spec.type not in _CLASSES or spec.child_by_field_name("name") != node \
                or spec.child_by_field_name("body") is None or ctx.dead(spec):
            continue
        parent = spec.parent
        template = parent if parent is not None and parent.type == "template_declaration" else None
        found.append((template, spec.child_by_field_name("body")))
    return found[0] if len(found) == 1 else None


def _members(ctx, body) -> tuple:
    """[(name, value node)] of the static const/constexpr members of a class body with a value,
    and its enumerators with one, in order."""
    from occlint.source.context import qualifiers

    out = []
    for f in body.named_children:
        if f.type != "field_declaration" or ctx.dead(f):
            continue
        value = f.child_by_field_name("default_value")
        quals = qualifiers(f)
        decl = f.child_by_field_name("declarator")
        if value is not None and b"static" in quals and quals & {b"const", b"constexpr"} and \
                decl is not None and decl.type == "field_identifier":
            out.append((decl.text, value))
        kind = f.child_by_field_name("type")
        if kind is not None and kind.type == "enum_specifier":
            for e in kind.named_children:
                for item in e.named_children if e.type == "enumerator_list" else ():
                    if item.type == "enumerator" and item.child_by_field_name("value") is not None:
                        out.append((item.child_by_field_name("name").text,
                                    item.child_by_field_name("value")))
    return tuple(out)
