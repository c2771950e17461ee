"""Dear test resources a worker holds only while its tests need them (a pytest plugin, loaded by
tests/conftest.py).

The three-node Kafka cluster costs three JVMs that, idle, still burn about ten seconds of CPU a
minute between them (replica fetches, KRaft heartbeats). A session-scoped fixture would keep
them until the worker ends: under `make test` that is the rest of the run after the worker
finishes the kafka_cluster group, CPU the two cores' other tests need. Under `--dist
loadgroup` a worker runs each xdist group's tests one after another and never comes back to
it (tests/support/xdist_groups.py), so once the next test's group uses none of a held resource
that resource is closed; a later test that asks again gets a fresh one. Outside loadgroup
(`-n 0`, other modes) groups interleave, so everything is held until the session ends.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# name -> (the resource, how to close it)
_held: dict[str, tuple[Any, Callable[[Any], None]]] = {}
# each xdist group's fixture names (their closure, so indirect uses count), and whether groups
# run contiguously in this run
_group_fixtures: dict[frozenset[str], set[str]] = {}
_contiguous = False


def held(name: str, open_: Callable[[], Any], close: Callable[[Any], None]) -> Any:
    """The resource held under `name`, opened (open_()) if none is. `name` is the fixture's
    own name: a group whose tests ask for that fixture keeps the resource."""
    if name not in _held:
        _held[name] = (open_(), close)
    return _held[name][0]


def _release(keep: Callable[[str], bool]) -> None:
    for name in [n for n in _held if not keep(n)]:
        resource, close = _held.pop(name)
        close(resource)


def _group(item) -> frozenset[str]:
    return frozenset(str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                     for m in item.iter_markers("xdist_group")) or frozenset({item.nodeid})


def pytest_collection_finish(session):
    global _contiguous
    _contiguous = session.config.getoption("dist", "no") == "loadgroup"
    for item in session.items:
        _group_fixtures.setdefault(_group(item), set()).update(item.fixturenames)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if not _contiguous or not _held:
        return
    if nextitem is None:
        _release(lambda name: False)
        return
    following = _group(nextitem)
    if following != _group(item):
        needed = _group_fixtures.get(following, set(nextitem.fixturenames))
        _release(lambda name: name in needed)


def pytest_sessionfinish(session):
    _release(lambda name: False)
