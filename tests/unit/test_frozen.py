"""`@frozen` (roster/frozen.py) gives a class what `@dataclass(frozen=True, slots=True)` gives it:
the same equality, hash, repr, immutability, pickling, replace() and pattern matching, whether
its deferred methods were called yet or not."""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from roster.frozen import frozen


@frozen
class Member:
    member_id: str
    epoch: int = 0
    owned: tuple = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    cached: int = field(default=0, hash=False)


@dataclass(frozen=True, slots=True)
class MemberByDataclasses:   # the same body
    member_id: str
    epoch: int = 0
    owned: tuple = ()
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)
    cached: int = field(default=0, hash=False)


OURS, THEIRS = Member, MemberByDataclasses


@pytest.mark.parametrize("cls", [OURS, THEIRS], ids=["frozen", "dataclass"])
def test_the_class_behaves_as_a_frozen_slotted_dataclass(cls):
    a = cls("m1", 3, (1, 2), note="x", secret="pw", cached=1)
    b = cls("m1", 3, (1, 2), note="y", secret="pw", cached=1)
    assert a == b and not (a != b)                  # `note` is not compared
    assert a != cls("m2", 3, (1, 2))
    assert a.__eq__(object()) is NotImplemented
    assert hash(a) == hash(cls("m1", 3, (1, 2), secret="pw", cached=5))  # `cached` not hashed
    assert repr(a) == f"{cls.__qualname__}(member_id='m1', epoch=3, owned=(1, 2), note='x', " \
        "cached=1)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.epoch = 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a.epoch
    assert not hasattr(a, "__dict__") and cls.__slots__
    assert pickle.loads(pickle.dumps(a)) == a
    assert dataclasses.replace(a, epoch=4).epoch == 4
    assert [f.name for f in dataclasses.fields(cls)][:2] == ["member_id", "epoch"]
    match a:
        case cls(member_id, epoch):
            assert (member_id, epoch) == ("m1", 3)


def test_ours_answer_what_theirs_do_for_the_same_values():
    values = [("m1", 3, (1, 2), "x", "pw", 1), ("m2", 0, (), "", "", 0)]
    for args in values:
        ours, theirs = OURS(*args), THEIRS(*args)
        assert repr(ours).replace("MemberByDataclasses", "Member") == \
            repr(theirs).replace("MemberByDataclasses", "Member")
        assert hash(ours) == hash(theirs)
    assert {OURS(*values[0]): 1}[OURS(*values[0])] == 1


def test_keyword_only_and_subclasses():
    @frozen(kw_only=True)
    class Options:
        size: int
        name: str = "n"

    with pytest.raises(TypeError):
        Options(1)
    assert Options(size=1) == Options(size=1, name="n")

    @frozen
    class Base:
        a: int

    class Plain(Base):   # not decorated: inherits Base's methods, as with dataclasses
        __slots__ = ()

    assert Plain(1) != Base(1) and Plain(1) == Plain(1)
    assert repr(Plain(1)).endswith("Plain(a=1)")


def test_a_class_with_its_own_methods_is_left_to_dataclasses():
    @frozen
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("x")) == "<x>" and Named("x") == Named("x") and hash(Named("x"))


def test_a_value_holding_itself_shows_dots():
    @frozen
    class Box:
        items: list

    box = Box([])
    box.items.append(box)
    assert repr(box).endswith("Box(items=[...])")
