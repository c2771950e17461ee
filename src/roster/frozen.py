"""`@frozen`: `@dataclass(frozen=True, slots=True)` with the same class in the end, made for less
at import.

A dataclass compiles each method it writes (`__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__`, `__delattr__`) with its own `exec`, about 80 µs each here. A broker's start
imports some two hundred frozen dataclasses (the protocol's and the coordinator's messages,
records and facts), and those compilations were half of its import time. Most classes never
have their `__repr__`, `__eq__` or `__hash__` called in a given process, so these three are
written when first called instead: each starts as a small stand-in that compiles the method
dataclasses would have written (the same source, the same fields: those with `compare`, `repr`
and `hash` as dataclasses reads them), puts it on the class and calls it. From then on the class
holds exactly what `@dataclass(frozen=True, slots=True)` would have given it.

A class that defines any of the three itself, or asks for more than `kw_only`, is left to
`dataclasses.dataclass` as it is (tests/unit/test_frozen.py compares the two).
"""
from __future__ import annotations

import dataclasses
import reprlib

_OWN = ("__repr__", "__eq__", "__hash__")


def frozen(cls=None, /, *, kw_only: bool = False):
    """`@frozen` or `@frozen(kw_only=True)`: as `@dataclass(frozen=True, slots=True, ...)`."""
    def wrap(cls):
        if any(name in cls.__dict__ for name in _OWN):
            return dataclasses.dataclass(cls, frozen=True, slots=True, kw_only=kw_only)
        made = dataclasses.dataclass(cls, frozen=True, slots=True, kw_only=kw_only,
                                     repr=False, eq=False)
        for name, write in (("__repr__", _repr_source), ("__eq__", _eq_source),
                            ("__hash__", _hash_source)):
            setattr(made, name, _on_first_call(made, name, write))
        return made
    return wrap if cls is None else wrap(cls)


def _on_first_call(cls, name: str, write):
    def stand_in(self, *args):
        method = _compiled(cls, name, write(dataclasses.fields(cls)))
        if name == "__repr__":   # a value holding itself shows "...", as dataclasses' does
            method = reprlib.recursive_repr()(method)
        setattr(cls, name, method)
        return method(self, *args)
    stand_in.__qualname__ = f"{cls.__qualname__}.{name}"
    stand_in.__name__ = name
    return stand_in


def _compiled(cls, name: str, source: str):
    scope: dict = {}
    exec(source, {}, scope)   # noqa: S102 (our own source, from the class's field names)
    method = scope[name]
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    return method


def _as_tuple(owner: str, names: list[str]) -> str:
    return "(" + "".join(f"{owner}.{n}," for n in names) + ")"


def _repr_source(fields) -> str:
    shown = ", ".join(f"{f.name}={{self.{f.name}!r}}" for f in fields if f.repr)
    return ("def __repr__(self):\n"
            f"    return f\"{{self.__class__.__qualname__}}({shown})\"\n")


def _eq_source(fields) -> str:
    names = [f.name for f in fields if f.compare]
    return ("def __eq__(self, other):\n"
            "    if other.__class__ is self.__class__:\n"
            f"        return {_as_tuple('self', names)} == {_as_tuple('other', names)}\n"
            "    return NotImplemented\n")


def _hash_source(fields) -> str:
    names = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    return f"def __hash__(self):\n    return hash({_as_tuple('self', names)})\n"
