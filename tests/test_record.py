"""occlint.record builds classes that behave as the standard library's dataclasses do, for
what occlint uses, and an occlint start does not import `dataclasses` (nor `inspect`)."""

from __future__ import annotations

import dataclasses as std
import subprocess
import sys

import pytest

from occlint import record


def _pair(frozen: bool):
    """The same class made by each decorator."""
    made = []
    for mod in (std, record):
        @mod.dataclass(frozen=frozen)
        class Thing:
            """A thing."""
            name: str
            count: int = 3
            tags: list = mod.field(default_factory=list, hash=False)
            note: str = mod.field(default="", repr=False, compare=False)
            extra: dict = mod.field(default_factory=dict, compare=False, hash=False)
        made.append(Thing)
    return made


@pytest.mark.parametrize("frozen", [False, True])
def test_same_init_repr_eq_and_hash(frozen):
    a, b = _pair(frozen)
    calls = [(("k",), {}), (("k", 5), {}), ((), {"name": "k", "tags": [1]}),
             (("k",), {"note": "n", "extra": {"x": 1}})]
    for args, kw in calls:
        x, y = a(*args, **kw), b(*args, **kw)
        assert repr(x) == repr(y)
        assert {f: getattr(x, f) for f in ("name", "count", "tags", "note", "extra")} == \
            {f: getattr(y, f) for f in ("name", "count", "tags", "note", "extra")}
        assert (x == a(*args, **kw)) == (y == b(*args, **kw)) is True
    assert (a("k", note="1") == a("k", note="2")) == (b("k", note="1") == b("k", note="2"))
    assert (a("k") == a("j")) == (b("k") == b("j")) is False
    assert b("k").__eq__(a("k")) is NotImplemented          # another class: not equal
    assert a("k").tags is not a("k").tags and b("k").tags is not b("k").tags
    if frozen:
        assert hash(a("k", 2)) == hash(b("k", 2))
        assert hash(b("k", note="x")) == hash(b("k", note="y"))
        with pytest.raises(AttributeError):
            b("k").count = 4
        with pytest.raises(record.FrozenInstanceError):
            del b("k").count
    else:
        with pytest.raises(TypeError):
            hash(b("k"))
        y = b("k")
        y.count = 4
        assert y.count == 4


def test_errors_of_a_call_are_type_errors():
    _, b = _pair(True)
    for args, kw in [((), {}), (("k", 1, [], "", {}, 9), {}), (("k",), {"name": "j"}),
                     (("k",), {"colour": 1})]:
        with pytest.raises(TypeError):
            b(*args, **kw)


def test_class_attributes_and_own_methods_kept():
    a, b = _pair(True)
    for cls in (a, b):
        assert cls.count == 3 and cls.note == ""
        assert not hasattr(cls, "tags") and not hasattr(cls, "name")
        assert cls.__match_args__ == ("name", "count", "tags", "note", "extra")

    @record.dataclass(frozen=True)
    class Own:
        x: int

        def __repr__(self):
            return "own"

        def __hash__(self):
            return 7
    assert repr(Own(1)) == "own" and hash(Own(1)) == 7 and Own(1) == Own(1) != Own(2)


def test_fields_replace_asdict():
    a, b = _pair(True)
    assert [f.name for f in record.fields(b)] == [f.name for f in std.fields(a)]
    x = b("k", tags=[b("inner")])
    y = record.replace(x, count=9)
    assert y.count == 9 and y.name == "k" and y.tags is x.tags and x.count == 3
    assert record.asdict(x) == std.asdict(a("k", tags=[a("inner")]))
    with pytest.raises(TypeError):
        record.replace(x, colour=1)
    with pytest.raises(TypeError):
        record.fields(object())


def test_post_init_runs():
    @record.dataclass
    class P:
        x: int

        def __post_init__(self):
            self.y = self.x * 2
    assert P(3).y == 6


def test_a_start_imports_no_dataclasses():
    """(The language server's pygls imports it: a server starts once.)"""
    code = ("import sys, occlint.cli, occlint.commands.check, occlint.commands.kernels, "
            "occlint.engine, occlint.source.build, occlint.toolchain.compile; "
            "print(sorted({'dataclasses', 'inspect'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
