"""Which kernel is this: the one module that links launches, kernels, template instantiations,
nvcc's usages, `cudaFuncSet*` calls, shared declarations and lockfile entries.

Every link is a dict lookup on an index built once (per file: `links(sf)`; per run: `Usages`,
`Launches`), so a file with N kernels costs O(N), not O(N^2). Names are compared in one form:

    callee_name("&ns::k<256>")    -> "ns::k"     what a launch or attribute call names
    kernel_key("(anonymous namespace)::k") -> "k"  what nvcc's demangled name and a source
                                                   kernel's qualified name are compared by
    template_args(["256u", " float "]) -> ("256", "float")   the one template-argument form
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from occlint.discover import HEADER_SUFFIXES
from occlint.model import AttributeCall, Kernel, Launch, SharedDecl, SourceFile, Usage

_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_CAST = re.compile(r"^\(\s*(const\s+)?void\s*\*\s*\)")
_ATTR_CAST = re.compile(r"\(\s*(const\s+)?void\s*\*\s*\)|reinterpret_cast<[^>]*>|[&()\s]")
_INT = re.compile(r"^(-?\d+)[uUlL]*$")


# --- the one form of each name ---------------------------------------------------------------------


def callee_name(text: str) -> str:
    """`&ns::k<256>` / `(void*)k` / `::k` -> `ns::k` / `k` / `k`."""
    s = "".join(text.split())
    s = _CAST.sub("", s).lstrip("&").strip("()").lstrip("&")
    for _ in range(8):
        t = _TEMPLATE_ARGS.sub("", s)
        if t == s:
            break
        s = t
    return s.lstrip(":")


# type names a source writes for what nvcc's demangled names spell otherwise (CUDA's and
# <cstdint>'s typedefs, on the LP64 hosts nvcc targets)
_ALIASES = {"half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16",
            "nv_bfloat162": "__nv_bfloat162", "uint": "unsignedint", "int8_t": "signedchar",
            "uint8_t": "unsignedchar", "int16_t": "short", "uint16_t": "unsignedshort",
            "int32_t": "int", "uint32_t": "unsignedint", "int64_t": "long",
            "uint64_t": "unsignedlong", "size_t": "unsignedlong"}


def template_arg(text) -> str:
    """One template argument for comparison: no whitespace, no integer suffix (`256u` -> `256`),
    a standard typedef as nvcc spells it (`half` -> `__half`)."""
    arg = _INT.sub(r"\1", re.sub(r"\s+", "", str(text)))
    return _ALIASES.get(arg.removeprefix("std::"), arg)


def template_args(args: Iterable) -> tuple[str, ...]:
    return tuple(template_arg(a) for a in args)


def kernel_key(qualname: str) -> str:
    """A kernel's name as nvcc and the source both know it (no anonymous namespaces, no leading
    `::`, no scope template arguments)."""
    from occlint.toolchain.demangle import normalize_qualname
    return normalize_qualname(qualname)


def param_count(mangled: str) -> int | None:
    """How many parameters the function nvcc compiled takes (from its demangled signature), or
    None when its name has none (`extern "C"`, not demangled)."""
    from occlint.toolchain.demangle import param_count as count
    return count(mangled)


def _last(name: str) -> str:
    return name.rsplit("::", 1)[-1]


# --- one file: kernels, attribute calls, shared declarations ----------------------------------------


class Kernels:
    """Kernels by qualified name and by every `::` suffix of it, for `find`."""

    def __init__(self, kernels: Iterable[Kernel]):
        self.exact: dict[str, list[Kernel]] = {}
        self.suffix: dict[str, list[Kernel]] = {}
        for k in kernels:
            self.exact.setdefault(k.qualname, []).append(k)
            parts = k.qualname.split("::")
            for i in range(1, len(parts)):
                self.suffix.setdefault("::".join(parts[i:]), []).append(k)

    def find(self, callee: str, argc: int | None = None) -> Kernel | None:
        """The kernel a callee names: an exact qualified match, else the one kernel whose qualified
        name ends with it (`k` -> `ns::k`); None when absent or ambiguous. A definition is
        preferred to a prototype of the same name; of overloads (`init(int, double*)` and
        `init(int, double*, double*)`), the one taking `argc` arguments."""
        name = callee_name(callee)
        if not name:
            return None
        found = self.exact.get(name) or self.suffix.get(name)
        if not found or len({k.qualname for k in found}) > 1:
            return None
        if argc is not None and len({len(k.params) for k in found}) > 1:
            fits = [k for k in found if len(k.params) == argc]
            if len({k.span for k in fits if k.is_definition}) > 1 or not fits:
                return None
            found = fits
        return next((k for k in found if k.is_definition), found[0])


class FileLinks:
    """One file's indexes: its kernels, its attribute calls and shared declarations by kernel."""

    def __init__(self, sf: SourceFile):
        self.kernels = Kernels(sf.kernels)
        self.shared: dict[str, list[SharedDecl]] = {}
        for d in sf.shared:
            self.shared.setdefault(d.kernel, []).append(d)
        # attribute calls by the last name part they may mean: as written, and as resolved
        self.attributes: dict[str, list[tuple[AttributeCall, str, Kernel | None]]] = {}
        for a in sf.attributes:
            written = _last(_ATTR_CAST.sub("", a.kernel).split("<")[0])
            resolved = self.kernels.find(a.kernel)
            for name in dict.fromkeys((written, resolved.name if resolved else written)):
                self.attributes.setdefault(name, []).append((a, written, resolved))


def links(sf: SourceFile) -> FileLinks:
    """The indexes of `sf`, built once and kept with its parse."""
    parsed = sf.parsed
    if parsed is None:                       # a SourceFile built by hand: no parse to keep them on
        return FileLinks(sf)
    got = getattr(parsed, "links", None)
    if got is None:
        got = parsed.links = FileLinks(sf)
    return got


def find_kernel(sf_or_kernels: SourceFile | Iterable[Kernel],
                launch_or_name: Launch | AttributeCall | str) -> Kernel | None:
    """The kernel of `sf` (or of a list of kernels) that a launch, attribute call or name calls."""
    index = links(sf_or_kernels).kernels if isinstance(sf_or_kernels, SourceFile) else Kernels(sf_or_kernels)
    if isinstance(launch_or_name, Launch):
        return index.find(launch_or_name.callee, launch_or_name.argc)
    if isinstance(launch_or_name, AttributeCall):
        return index.find(launch_or_name.kernel)
    return index.find(launch_or_name)


def attributes_of(sf: SourceFile, kernel: Kernel) -> list[AttributeCall]:
    """`cudaFuncSet*` calls in `sf` that name `kernel` (as written, or resolved to it)."""
    out: dict[int, AttributeCall] = {}
    for a, written, resolved in links(sf).attributes.get(kernel.name, ()):
        if written == kernel.name or resolved == kernel:
            out.setdefault(id(a), a)
    return sorted(out.values(), key=lambda a: a.span.start)


def shared_of(sf: SourceFile, kernel: Kernel) -> list[SharedDecl]:
    """The `__shared__` declarations in `kernel`'s body (in `sf`, the file that defines it)."""
    return list(links(sf).shared.get(kernel.qualname, ()))


# --- nvcc's usages --------------------------------------------------------------------------------


class Usages:
    """nvcc's Usage entries by kernel key (and by plain name, for `extern "C"` kernels)."""

    def __init__(self, usages: Iterable[Usage]):
        self.by_key: dict[str, list[Usage]] = {}
        self.by_name: dict[str, list[Usage]] = {}
        for u in usages:
            self.by_key.setdefault(kernel_key(u.kernel), []).append(u)
            self.by_name.setdefault(u.kernel, []).append(u)

    def of(self, kernel: Kernel) -> list[Usage]:
        """Every instantiation, on every arch, of this source kernel."""
        if kernel.extern_c:
            return list(self.by_name.get(kernel.name, ()))
        key = kernel_key(kernel.qualname)
        found = self.by_key.get(key, ())
        if not found and kernel.path.endswith(HEADER_SUFFIXES):
            # a header #include'd inside `namespace A { ... }` (xmrig's RandomX): nvcc's `A::k`
            found = [u for k, us in self.by_key.items() if k.endswith("::" + key) for u in us]
        counts = {param_count(u.mangled) for u in found}
        if len(counts) > 1 and kernel.params and not any("..." in p for p in kernel.params):
            # overloads: the ones taking its parameters
            mine = [u for u in found if param_count(u.mangled) == len(kernel.params)]
            return mine or list(found)              # (a parameter pack: every one)
        return list(found)


def match_usage(kernel: Kernel, usages: Iterable[Usage] | Usages) -> list[Usage]:
    """The Usage entries of this source kernel: same qualified name (namespaces; anonymous
    namespaces ignored), every template instantiation, every arch."""
    return (usages if isinstance(usages, Usages) else Usages(usages)).of(kernel)


def instantiations(usages: Sequence[Usage], kernel: Kernel, launch: Launch | None) -> list[Usage]:
    """The usages on one arch a launch may run: `instantiation`'s one; else, for a launch of a
    template whose arguments are partly unknown here (the launching function's own parameter
    `T`, a pack `IN...`, arguments deduced from the call), every instantiation that agrees with
    the ones known.
    A launch in `template <class T> void run()` runs one of them per instantiation of `run`."""
    one = instantiation(usages, kernel, launch)
    if one is not None or launch is None or not kernel.template_params:
        return [one] if one is not None else []
    if not launch.template_args and launch.arg_types:
        usages = _by_deduction(usages, deduced(kernel, launch))
    written = launch.template_args
    if written and written[-1].endswith("..."):     # `apply<N, R, IN...>`: the pack is any rest
        written = written[:-1]
    out = []
    for u in usages:
        got = template_args(u.template_args)
        if len(got) < len(written):
            continue
        if all(_may_be(v, a, g) for v, a, g in zip(launch.template_values, written, got,
                                                   strict=False)):
            out.append(u)
    return out


def deduced(kernel: Kernel, launch: Launch) -> tuple[str | None, ...]:
    """Each template parameter of `kernel` as C++ deduces it from the argument types the launch
    shows (`Launch.arg_types`: `col2im<<<g, b>>>((const half *)src, ...)` with `const T * col`
    gives T = half); None where no argument deduces it, or two disagree."""
    from occlint.source.types import compact

    out: dict[str, str | None] = {}
    for param, arg in zip(kernel.params, launch.arg_types, strict=False):
        m = _PARAM.fullmatch(param)
        if arg is None or m is None:
            continue
        pattern = compact(m.group(1))
        base = pattern.rstrip("*")
        stars = len(pattern) - len(base)
        if base not in kernel.template_params or not arg.endswith("*" * stars):
            continue
        got = arg[:len(arg) - stars] if stars else arg
        if got and out.get(base, got) == got:
            out[base] = got
        else:
            out[base] = None            # (two arguments that disagree: not deduced)
    return tuple(out.get(p) for p in kernel.template_params)


_PARAM = re.compile(r"\s*(.*?[\w*&\s])\s*[A-Za-z_]\w*\s*(?:\[[^\]]*\])?\s*")


def _by_deduction(usages: Sequence[Usage], types: tuple[str | None, ...]) -> Sequence[Usage]:
    """The usages whose template arguments agree with the deduced `types`; all of them when
    none does (a typedef nvcc spells otherwise: never a guess narrowed to nothing)."""
    if not any(types):
        return usages
    kept = [u for u in usages
            if all(t is None or (i < len(u.template_args) and
                                 template_arg(t) == template_arg(u.template_args[i]))
                   for i, t in enumerate(types))]
    return kept or usages


def _is(value, written: str, got: str) -> bool:
    """A launch's template argument (as `written`, and its `value` when evaluated) is nvcc's
    `got`: the same text, type or value; a bool's value (`kIsEven`, 1) is nvcc's `true`."""
    if template_arg(written) == got:
        return True
    if value is None:
        return False
    if got in ("true", "false"):
        return value == (got == "true")
    enum = _ENUM_ARG.fullmatch(got)         # an enumerator: nvcc writes `(RED)0`
    return template_arg(value) == (enum.group(1) if enum else got)


_ENUM_ARG = re.compile(r"\([A-Za-z_][\w:]*\)(-?\d+)")


def _may_be(value, written: str, got: str) -> bool:
    """A launch's template argument may be nvcc's `got`: it is (`_is`), or it is a name this
    file cannot resolve (a template parameter), or a `decltype(...)` (xgboost's
    `EvaluateSplitsKernel<kBlockThreads, decltype(d_scans)>`)."""
    if _is(value, written, got):
        return True
    w = template_arg(written)
    return value is None and ((w.isidentifier() and w not in _TYPES) or w.startswith("decltype("))


_TYPES = frozenset(("float", "double", "int", "char", "bool", "short", "long", "unsigned",
                    "signed", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162", "void",
                    "unsignedint", "unsignedlong", "unsignedchar", "signedchar", "unsignedshort",
                    "float2", "float4", "double2", "int2", "int4", "uint2", "uint4"))


def instantiation(usages: Sequence[Usage], kernel: Kernel, launch: Launch | None) -> Usage | None:
    """Which of a kernel's usages on one arch a launch runs (None: not known). A launch of a
    template names its arguments (written or evaluated); anything else needs a single usage."""
    if not usages:
        return None
    if launch is None or not kernel.template_params:
        return usages[0] if len(usages) == 1 else None
    written = launch.template_args
    values = (*launch.template_values, *(None,) * (len(written) - len(launch.template_values)))
    for u in usages:
        got = template_args(u.template_args)
        if got and len(got) == len(written) and \
                all(_is(v, w, g) for v, w, g in zip(values, written, got, strict=False)):
            return u
    return usages[0] if len(usages) == 1 and not launch.template_args else None


# --- launches of a usage (the lockfile) -----------------------------------------------------------


class Launches:
    """Launches by the last part of their callee's name, for `of_usage`."""

    def __init__(self, launches: Iterable[Launch]):
        self.by_name: dict[str, list[Launch]] = {}
        for launch in launches:
            self.by_name.setdefault(_last(launch.callee), []).append(launch)

    def of_usage(self, usage: Usage) -> list[Launch]:
        """Launches that call this kernel instantiation (by name; template arguments when written)."""
        kernel = usage.kernel.lstrip(":")
        out = []
        for launch in self.by_name.get(_last(kernel), ()):
            name = launch.callee.lstrip(":")
            if not (kernel == name or kernel.endswith("::" + name) or name.endswith("::" + kernel)):
                continue
            if launch.template_args and usage.template_args \
                    and template_args(launch.template_args) != template_args(usage.template_args):
                continue
            out.append(launch)
        return out


def lock_key(kernel: str, args: Iterable, arch: str) -> tuple[str, tuple[str, ...], str]:
    """A lockfile entry's identity: kernel as nvcc names it, template arguments, arch."""
    return kernel, template_args(args), arch
