"""The built-in partition assignors, by the protocol name a member puts in JoinGroup."""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .api import (
    Assignment,
    AssignmentError,
    Assignor,
    MemberSubscription,
    TopicPartition,
    UnknownAssignorError,
)
from .cooperative_sticky import CooperativeStickyAssignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import StickyAssignor

ASSIGNORS: Mapping[str, Assignor] = MappingProxyType({
    assignor.name: assignor
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor(),
                     CooperativeStickyAssignor())
})


def get(name: str) -> Assignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise UnknownAssignorError(
            f"unknown partition assignor {name!r}; known: {', '.join(sorted(ASSIGNORS))}"
        ) from None


__all__ = ["ASSIGNORS", "Assignment", "AssignmentError", "Assignor", "CooperativeStickyAssignor",
           "MemberSubscription", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor",
           "TopicPartition", "UnknownAssignorError", "get"]
