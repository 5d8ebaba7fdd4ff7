"""`dataclass` for occlint's records, without the standard library's start-up cost.

The standard `dataclasses` imports `inspect` (with `ast`, `dis`, `tokenize`) and compiles each
generated method with `exec`: about 25 ms of every occlint start, a quarter of a warm one-file
`check`. This builds the same methods from closures. It covers what occlint uses: `frozen`,
field defaults, `field(default=, default_factory=, compare=, hash=, repr=)`, and `fields`,
`replace` and `asdict`. Classes are compared, hashed and written as dataclasses are: `__eq__`
on the fields that compare, between instances of one class; `__hash__` of a frozen record
from those fields (an unfrozen one is unhashable, unless the class defines `__hash__`);
`__repr__` as `Name(a=1, b='x')`. A method the class body defines is kept.
"""

from __future__ import annotations

from operator import attrgetter

__all__ = ["MISSING", "Field", "FrozenInstanceError", "asdict", "dataclass", "field", "fields",
           "replace"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class FrozenInstanceError(AttributeError):
    pass


class Field:
    __slots__ = ("compare", "default", "default_factory", "hash", "name", "repr")

    def __init__(self, default=MISSING, default_factory=MISSING, repr=True, hash=None,
                 compare=True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory = default, default_factory
        self.repr, self.hash, self.compare = repr, hash, compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(*, default=MISSING, default_factory=MISSING, repr: bool = True, hash=None,
          compare: bool = True):
    return Field(default, default_factory, repr, hash, compare)


def fields(obj) -> tuple[Field, ...]:
    try:
        return tuple(obj.__record_fields__.values())
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def replace(obj, **changes):
    """A copy of `obj` with `changes` (as dataclasses.replace)."""
    for f in obj.__record_fields__.values():
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def asdict(obj):
    """`obj`'s fields as a dict, records and containers within it converted too."""
    if obj is None or isinstance(obj, (str, int, float, bytes)):
        return obj
    if hasattr(obj.__class__, "__record_fields__"):
        return {f.name: asdict(getattr(obj, f.name)) for f in obj.__record_fields__.values()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):        # a namedtuple
        return obj.__class__(*[asdict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return obj.__class__(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return obj.__class__((asdict(k), asdict(v)) for k, v in obj.items())
    import copy

    return copy.deepcopy(obj)


def dataclass(cls=None, /, *, frozen: bool = False):
    """A record class: `@dataclass` or `@dataclass(frozen=True)`."""
    def wrap(c):
        return _process(c, frozen)
    return wrap if cls is None else wrap(cls)


def _process(cls, frozen: bool):
    own: dict[str, Field] = {}
    for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 (the class's own: no inspect)
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        own[name] = f
        if isinstance(value, Field):          # as dataclasses leaves it: the default, or none
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    all_fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        all_fields.update(getattr(base, "__record_fields__", {}))
    all_fields.update(own)
    cls.__record_fields__ = all_fields
    body = cls.__dict__
    names = tuple(all_fields)
    if "__init__" not in body:
        cls.__init__ = _init(cls.__qualname__, tuple(all_fields.values()),
                             getattr(cls, "__post_init__", None))
    if "__repr__" not in body:
        cls.__repr__ = _repr(tuple(f.name for f in all_fields.values() if f.repr))
    compared = tuple(f.name for f in all_fields.values() if f.compare)
    key = _key(compared)
    if "__eq__" not in body:
        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented
        cls.__eq__ = __eq__
    explicit_hash = "__hash__" in body and not (body["__hash__"] is None and "__eq__" in body)
    if not explicit_hash:
        if frozen:
            hashed = _key(tuple(f.name for f in all_fields.values()
                                if (f.compare if f.hash is None else f.hash)))
            cls.__hash__ = lambda self: hash(hashed(self))
        else:
            cls.__hash__ = None
    if frozen:
        def __setattr__(self, name, value):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    cls.__match_args__ = names
    return cls


def _key(names: tuple[str, ...]):
    """The fields `names` of an instance as one tuple (C speed)."""
    if not names:
        return lambda self: ()
    get = attrgetter(*names)
    return get if len(names) > 1 else (lambda self: (get(self),))


def _init(qualname: str, all_fields: tuple[Field, ...], post):
    names = tuple(f.name for f in all_fields)
    known = frozenset(names)
    count = len(names)
    plain = [(f.name, f.default) for f in all_fields if f.default is not MISSING]
    made = [(f.name, f.default_factory) for f in all_fields if f.default_factory is not MISSING]

    def __init__(self, *args, **kwargs):
        d = self.__dict__                   # (empty: fields are set straight into it)
        if args:
            if len(args) > count:
                raise TypeError(f"{qualname}.__init__() takes {count + 1} positional "
                                f"arguments but {len(args) + 1} were given")
            d.update(zip(names, args, strict=False))
        if kwargs:
            for name in kwargs:
                if name in d or name not in known:
                    raise TypeError(f"{qualname}.__init__() got "
                                    + (f"multiple values for argument {name!r}" if name in d
                                       else f"an unexpected keyword argument {name!r}"))
            d.update(kwargs)
        if len(d) < count:
            for name, default in plain:
                if name not in d:
                    d[name] = default
            for name, factory in made:
                if name not in d:
                    d[name] = factory()
            if len(d) < count:
                missing = [name for name in names if name not in d]
                raise TypeError(f"{qualname}.__init__() missing required argument: "
                                f"{missing[0]!r}")
        if post is not None:
            post(self)
    __init__.__qualname__ = f"{qualname}.__init__"
    return __init__


def _repr(shown: tuple[str, ...]):
    def __repr__(self):
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"
    return __repr__
