"""One shared object for equal values that many members carry.

Every request decodes its own copies of strings and numbers. A group's members usually send the
same protocol type, client id, host and timeouts, and a member keeps what it sent for as long as
it stays, so keeping one copy of each saves them once per member (about 200 bytes) for a lookup
per join. Subscriptions are shared within a group instead (Group.share_protocols): they are the
large values, and a table of them could keep big ones alive after their members left.
"""
from __future__ import annotations

import sys

# Distinct timeouts in use at once are few; when the table is full it starts over, which only
# stops sharing values seen before, never changes one.
_NUMBERS_CAPACITY = 1024
_numbers: dict[int, int] = {}


def shared_str(value: str) -> str:
    """The interned copy: CPython drops an interned string from its table once nobody else holds
    it, so interning what clients send keeps nothing alive."""
    return sys.intern(value) if type(value) is str else value


def shared_int(value: int) -> int:
    if type(value) is not int:  # 1 == True: only ints go in, so only ints come out
        return value
    shared = _numbers.get(value)
    if shared is None:
        if len(_numbers) >= _NUMBERS_CAPACITY:
            _numbers.clear()
        _numbers[value] = shared = value
    return shared
