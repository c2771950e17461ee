"""The authorizer: Kafka's StandardAuthorizer decisions (examples from its semantics, and a
property test against a plain evaluation written from the rules, not from the index), the
filters of DescribeAcls/DeleteAcls, the durable store, the decision cache and the audit log."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roster.security.acl_store import AclStore
from roster.security.acls import (
    AclBinding,
    AclFilter,
    AclIndex,
    Operation,
    Pattern,
    Permission,
    Resource,
    allows_any,
    decide,
    validate_new,
)
from roster.security.authorizer import StandardAuthorizer, parse_super_users

Op, R, P, A = Operation, Resource, Pattern, Permission


def acl(name, op=Op.READ, perm=A.ALLOW, principal="User:alice", host="*", rt=R.TOPIC,
        pattern=P.LITERAL):
    return AclBinding(rt, name, pattern, principal, host, op, perm)


def allowed(bindings, op, name, principal="User:alice", host="10.0.0.1", rt=R.TOPIC, **kw):
    return decide(AclIndex(bindings), principal, host, op, rt, name, **kw).allowed


# -- Kafka's rules, one by one ----------------------------------------------------------------

def test_no_acls_denies_unless_allow_everyone():
    assert not allowed([], Op.READ, "t")
    assert allowed([], Op.READ, "t", allow_if_no_acl=True)


def test_an_acl_for_someone_else_closes_the_resource_even_with_allow_everyone():
    bindings = [acl("t", principal="User:bob")]
    assert not allowed(bindings, Op.READ, "t", allow_if_no_acl=True)
    # ... but only that resource
    assert allowed(bindings, Op.READ, "u", allow_if_no_acl=True)


def test_deny_wins_over_allow_wherever_it_comes_from():
    assert allowed([acl("t")], Op.READ, "t")
    assert not allowed([acl("t"), acl("*", perm=A.DENY)], Op.READ, "t")
    assert not allowed([acl("t"), acl("t", perm=A.DENY, principal="User:*")], Op.READ, "t")
    assert not allowed([acl("*"), acl("t", pattern=P.PREFIXED, perm=A.DENY)], Op.READ, "tx")
    assert not allowed([acl("t", op=Op.ALL), acl("t", perm=A.DENY, host="10.0.0.1")],
                       Op.READ, "t")


def test_patterns():
    assert allowed([acl("orders-", pattern=P.PREFIXED)], Op.READ, "orders-eu")
    assert allowed([acl("orders", pattern=P.PREFIXED)], Op.READ, "orders")
    assert not allowed([acl("orders", pattern=P.PREFIXED)], Op.READ, "order")
    assert not allowed([acl("orders")], Op.READ, "orders-eu")  # literal: the name only
    assert allowed([acl("*")], Op.READ, "anything")
    assert not allowed([acl("*", pattern=P.PREFIXED)], Op.READ, "anything")  # a '*' prefix
    assert allowed([acl("*", pattern=P.PREFIXED)], Op.READ, "*x")
    # a resource type's ACLs say nothing of another type's resource of the same name
    assert not allowed([acl("g", rt=R.GROUP)], Op.READ, "g", rt=R.TOPIC)


def test_principal_and_host():
    assert allowed([acl("t", principal="User:*")], Op.READ, "t", principal="User:anyone")
    assert not allowed([acl("t")], Op.READ, "t", principal="User:bob")
    assert allowed([acl("t", host="10.0.0.1")], Op.READ, "t")
    assert not allowed([acl("t", host="10.0.0.2")], Op.READ, "t")


def test_implied_operations_for_allow_only():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE):
        assert allowed([acl("t", op=op)], Op.DESCRIBE, "t")
    for op in (Op.CREATE, Op.ALTER_CONFIGS, Op.CLUSTER_ACTION):
        assert not allowed([acl("t", op=op)], Op.DESCRIBE, "t")
    assert allowed([acl("t", op=Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS, "t")
    assert not allowed([acl("t", op=Op.READ)], Op.WRITE, "t")
    assert allowed([acl("t", op=Op.ALL)], Op.IDEMPOTENT_WRITE, "t")
    # a DENY of READ does not deny DESCRIBE; a DENY of ALL denies everything
    assert allowed([acl("t", op=Op.DESCRIBE), acl("t", op=Op.READ, perm=A.DENY)],
                   Op.DESCRIBE, "t")
    assert not allowed([acl("t", op=Op.DESCRIBE), acl("t", op=Op.ALL, perm=A.DENY)],
                       Op.DESCRIBE, "t")


def test_super_users_pass_every_deny():
    bindings = [acl("*", op=Op.ALL, perm=A.DENY, principal="User:*")]
    assert allowed(bindings, Op.WRITE, "t", principal="User:admin",
                   super_users=frozenset({"User:admin"}))
    assert not allowed(bindings, Op.WRITE, "t", principal="User:admin")
    assert parse_super_users("User:admin; User:CN=ops,O=example;") == {
        "User:admin", "User:CN=ops,O=example"}


def test_allows_any_of_a_type():
    idx = AclIndex([acl("orders-", op=Op.WRITE, pattern=P.PREFIXED)])
    assert allows_any(idx, "User:alice", "h", Op.WRITE, R.TOPIC)
    assert not allows_any(idx, "User:bob", "h", Op.WRITE, R.TOPIC)
    idx = idx.with_changes([acl("orders", op=Op.WRITE, perm=A.DENY, pattern=P.PREFIXED)])
    assert not allows_any(idx, "User:alice", "h", Op.WRITE, R.TOPIC)
    assert allows_any(AclIndex(), "User:x", "h", Op.WRITE, R.TOPIC, allow_if_no_acl=True)


def test_validation_of_new_bindings():
    assert validate_new(acl("t")) is None
    assert "patternType" in validate_new(acl("t", pattern=P.MATCH))
    assert "empty" in validate_new(acl(""))
    assert "kafka-cluster" in validate_new(acl("other", rt=R.CLUSTER, op=Op.ALTER))
    assert validate_new(acl("kafka-cluster", rt=R.CLUSTER, op=Op.ALTER)) is None
    assert "colon" in validate_new(acl("t", principal="alice"))
    assert "operation" in validate_new(acl("t", op=Op.ANY))
    assert "permissionType" in validate_new(acl("t", perm=A.ANY))


def test_filters():
    lit, pre, star = acl("orders"), acl("ord", pattern=P.PREFIXED), acl("*")
    match = AclFilter(R.TOPIC, "orders", P.MATCH)
    assert [match.matches(b) for b in (lit, pre, star)] == [True, True, True]
    assert [AclFilter(R.TOPIC, "orders", P.ANY).matches(b) for b in (lit, pre, star)] == \
        [True, False, False]
    assert [AclFilter(R.ANY, None, P.PREFIXED).matches(b) for b in (lit, pre, star)] == \
        [False, True, False]
    assert AclFilter(principal="User:alice", operation=Op.READ).matches(lit)
    assert not AclFilter(principal="User:bob").matches(lit)
    assert not AclFilter(permission=A.DENY).matches(lit)
    assert AclFilter.of(1, None, 1, None, None, 0, 1).unknown()


# -- the property: the index-based decision is the plain one -----------------------------------

NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ba"])
PRINCIPALS = st.sampled_from(["User:alice", "User:bob", "User:*", "User:CN=x,O=y"])
HOSTS = st.sampled_from(["*", "10.0.0.1", "10.0.0.2"])
OPS = st.sampled_from([o for o in Operation if o > Op.ANY])
BINDINGS = st.builds(AclBinding, st.sampled_from([R.TOPIC, R.GROUP, R.CLUSTER]), NAMES,
                     st.sampled_from([P.LITERAL, P.PREFIXED]), PRINCIPALS, HOSTS, OPS,
                     st.sampled_from([A.ALLOW, A.DENY]))


def reference(bindings, principal, host, op, rt, name, super_users, allow_if_no_acl) -> bool:
    """Kafka's rules read literally, over a plain list."""
    if principal in super_users:
        return True
    on_resource = [b for b in bindings if b.resource_type == rt and (
        (b.pattern == P.LITERAL and (b.name == name or b.name == "*"))
        or (b.pattern == P.PREFIXED and name.startswith(b.name)))]
    if not on_resource:
        return allow_if_no_acl

    def applies(b):
        if b.principal not in (principal, "User:*") or b.host not in (host, "*"):
            return False
        if b.operation in (Op.ALL, op):
            return True
        implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
                   Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}.get(op, set())
        return b.permission == A.ALLOW and b.operation in implied

    applying = [b for b in on_resource if applies(b)]
    if any(b.permission == A.DENY for b in applying):
        return False
    return any(b.permission == A.ALLOW for b in applying)


@settings(max_examples=1500, deadline=None)
@given(bindings=st.lists(BINDINGS, max_size=25), principal=PRINCIPALS.filter(lambda p: p != "User:*"),
       host=HOSTS.filter(lambda h: h != "*"), op=OPS, rt=st.sampled_from([R.TOPIC, R.GROUP]),
       name=NAMES, supers=st.sets(st.sampled_from(["User:alice", "User:bob"]), max_size=1),
       allow_if_no_acl=st.booleans())
def test_decisions_equal_the_plain_evaluation(bindings, principal, host, op, rt, name, supers,
                                              allow_if_no_acl):
    got = decide(AclIndex(bindings), principal, host, op, rt, name, frozenset(supers),
                 allow_if_no_acl).allowed
    assert got == reference(bindings, principal, host, op, rt, name, supers, allow_if_no_acl)


@settings(max_examples=300, deadline=None)
@given(bindings=st.lists(BINDINGS, max_size=25), added=st.lists(BINDINGS, max_size=5),
       removed_some=st.data())
def test_an_index_changed_is_an_index_built(bindings, added, removed_some):
    index = AclIndex(bindings)
    removed = removed_some.draw(st.lists(st.sampled_from(bindings), max_size=5)) \
        if bindings else []
    changed = index.with_changes(added, removed)
    assert changed.bindings == (frozenset(bindings) - frozenset(removed)) | frozenset(added)
    for name in ("a", "ab", "abc", "b", "*"):
        for rt in (R.TOPIC, R.GROUP):
            assert sorted(map(str, changed.matching(rt, name))) == sorted(
                map(str, AclIndex(changed.bindings).matching(rt, name)))


# -- the store ----------------------------------------------------------------------------------

def test_store_survives_reopen(tmp_path):
    store = AclStore.open(tmp_path)
    store.apply([acl("t"), acl("g", rt=R.GROUP)])
    store.apply(removed=[acl("t")])
    assert AclStore.open(tmp_path).index.bindings == {acl("g", rt=R.GROUP)}
    assert oct((tmp_path / "acls.json").stat().st_mode & 0o777) == "0o600"


def test_damaged_store_refuses_to_start(tmp_path):
    (tmp_path / "acls.json").write_text("{not json")
    with pytest.raises(ValueError, match="refusing to start"):
        AclStore.open(tmp_path)


def test_store_after_kill_9_is_whole(tmp_path):
    """A child adds bindings one by one, printing each once apply() returned, and is killed
    -9 at a random moment: whatever it printed is there, and the file always reads."""
    script = textwrap.dedent(f"""
        import sys
        from roster.security.acl_store import AclStore
        from roster.security.acls import AclBinding
        store = AclStore.open({str(tmp_path)!r})
        for i in range(10_000):
            store.apply([AclBinding.of(2, f"t{{i}}", 3, "User:a", "*", 3, 3)])
            print(i, flush=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             env={**os.environ})
    printed = -1
    for line in child.stdout:
        printed = int(line)
        if printed >= 30:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    names = {b.name for b in AclStore.open(tmp_path).index}
    assert {f"t{i}" for i in range(printed + 1)} <= names
    assert not list(tmp_path.glob("acls.json.*.tmp"))  # what a crash left mid-write is gone


# -- the authorizer: cache and audit -----------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_cache_is_emptied_when_acls_change(tmp_path):
    asyncio.run(_cache_is_emptied_when_acls_change(tmp_path))


async def _cache_is_emptied_when_acls_change(tmp_path):
    authorizer = StandardAuthorizer(AclStore.open(tmp_path))
    assert not authorizer.authorize("User:alice", "h", Op.READ, R.TOPIC, "t")
    await authorizer.create([acl("t")])
    assert authorizer.authorize("User:alice", "h", Op.READ, R.TOPIC, "t")
    assert authorizer.authorize("User:alice", "h", Op.DESCRIBE, R.TOPIC, "t")
    removed = await authorizer.delete([AclFilter(R.TOPIC, "t", P.LITERAL)])
    assert removed == [[acl("t")]]
    assert not authorizer.authorize("User:alice", "h", Op.READ, R.TOPIC, "t")
    assert AclStore.open(tmp_path).index.bindings == frozenset()


def test_audit_once_a_minute_per_principal_resource_operation(tmp_path, caplog):
    clock = Clock()
    authorizer = StandardAuthorizer(AclStore.open(tmp_path), clock=clock)
    caplog.set_level(logging.INFO, logger="roster.authorizer")
    for _ in range(5):
        authorizer.authorize("User:bob", "10.0.0.9", Op.READ, R.TOPIC, "t")
    authorizer.authorize("User:bob", "10.0.0.9", Op.WRITE, R.TOPIC, "t")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Principal = User:bob is Denied operation = READ from host = 10.0.0.9 on resource = "
        "Topic:LITERAL:t based on rule DefaultDeny",
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.9 on resource = "
        "Topic:LITERAL:t based on rule DefaultDeny"]
    clock.now += 61
    authorizer.authorize("User:bob", "10.0.0.9", Op.READ, R.TOPIC, "t")
    assert caplog.records[-1].getMessage().endswith("(4 more since the last line)")
    # an ACL change empties the decision cache, not the audit's memory
    count = len(caplog.records)
    asyncio.run(authorizer.create([acl("other")]))
    authorizer.authorize("User:bob", "10.0.0.9", Op.READ, R.TOPIC, "t")
    assert len(caplog.records) == count


# -- the cache never answers from an older ACL set ----------------------------------------------

QUESTIONS = st.tuples(st.sampled_from(["User:alice", "User:bob"]),
                      st.sampled_from(["10.0.0.1", "10.0.0.2"]), OPS,
                      st.sampled_from([R.TOPIC, R.GROUP]), NAMES)
STEPS = st.lists(st.one_of(
    st.tuples(st.just("ask"), QUESTIONS),
    st.tuples(st.just("add"), st.lists(BINDINGS, min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.builds(AclFilter, st.sampled_from([R.ANY, R.TOPIC, R.GROUP]),
                                           st.one_of(st.none(), NAMES),
                                           st.sampled_from([P.ANY, P.MATCH, P.LITERAL,
                                                            P.PREFIXED])))),
    max_size=40)


@settings(max_examples=150, deadline=None)
@given(steps=STEPS, allow_if_no_acl=st.booleans())
def test_cached_decisions_follow_every_change(tmp_path_factory, steps, allow_if_no_acl):
    authorizer = StandardAuthorizer(AclStore(tmp_path_factory.mktemp("cache")),
                                    allow_if_no_acl=allow_if_no_acl)
    live: set[AclBinding] = set()

    async def run():
        for kind, arg in steps:
            if kind == "ask":
                principal, host, op, rt, name = arg
                assert authorizer.authorize(principal, host, op, rt, name) == reference(
                    live, principal, host, op, rt, name, set(), allow_if_no_acl)
            elif kind == "add":
                await authorizer.create(arg)
                live.update(arg)
            else:
                removed = await authorizer.delete([arg])
                assert set(removed[0]) == {b for b in live if arg.matches(b)}
                live.difference_update(removed[0])

    asyncio.run(run())


# -- filters: Kafka's ResourcePatternFilter/AccessControlEntryFilter.matches ---------------------

def filter_reference(f: AclFilter, b: AclBinding) -> bool:
    if f.resource_type not in (R.ANY, b.resource_type):
        return False
    if f.pattern not in (P.ANY, P.MATCH, b.pattern):
        return False
    if f.name is not None:
        if f.pattern in (P.ANY, b.pattern):
            ok = f.name == b.name
        elif b.pattern == P.LITERAL:
            ok = f.name == b.name or b.name == "*"
        else:
            ok = f.name.startswith(b.name)
        if not ok:
            return False
    return (f.principal in (None, b.principal) and f.host in (None, b.host)
            and f.operation in (Op.ANY, b.operation) and f.permission in (A.ANY, b.permission))


FILTERS = st.builds(AclFilter, st.sampled_from([R.ANY, R.TOPIC, R.GROUP]),
                    st.one_of(st.none(), NAMES),
                    st.sampled_from([P.ANY, P.MATCH, P.LITERAL, P.PREFIXED]),
                    st.one_of(st.none(), PRINCIPALS), st.one_of(st.none(), HOSTS),
                    st.sampled_from([Op.ANY, Op.READ, Op.ALL]),
                    st.sampled_from([A.ANY, A.ALLOW, A.DENY]))


@settings(max_examples=1000, deadline=None)
@given(f=FILTERS, b=BINDINGS)
def test_filters_match_as_kafkas(f, b):
    assert f.matches(b) == filter_reference(f, b)


def test_the_cache_is_bounded(tmp_path, monkeypatch):
    import roster.security.authorizer as module
    monkeypatch.setattr(module, "CACHE_LIMIT", 50)
    store = AclStore.open(tmp_path)
    store.apply([acl("t", principal="User:*")])
    authorizer = StandardAuthorizer(store)
    for i in range(500):
        principal = f"User:u{i % 7}"
        assert authorizer.authorize(principal, "h", Op.READ, R.TOPIC, "t")
        assert not authorizer.authorize(principal, "h", Op.READ, R.TOPIC, f"x{i}")
        assert len(authorizer._cache) <= 50
    assert authorizer.authorize("User:u1", "h", Op.READ, R.TOPIC, None) is False

def test_settings():
    from roster.config import BrokerConfig, ConfigError
    config = BrokerConfig.from_overrides({
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:CN=ops,O=example", "allow.everyone.if.no.acl.found": "true"})
    assert config.security["allow.everyone.if.no.acl.found"] is True
    assert parse_super_users(config.security["super.users"]) == {"User:admin",
                                                                "User:CN=ops,O=example"}
    assert BrokerConfig.from_overrides({}).security["authorizer.class.name"] == ""
    with pytest.raises((ConfigError, ValueError), match="authorizer.class.name"):
        BrokerConfig.from_overrides({"authorizer.class.name": "com.example.MyAuthorizer"})
    with pytest.raises((ConfigError, ValueError), match="allow.everyone.if.no.acl.found"):
        BrokerConfig.from_overrides({"allow.everyone.if.no.acl.found": "maybe"})


def test_the_decision_module_is_pure():
    """acls.py (the decision, the index, the filters) imports nothing that does I/O or reads
    the clock, and of roster only Kafka's ACL codes (protocol/acl.py, enums alone) and its
    frozen dataclasses (frozen.py): DESIGN's pure authorizer."""
    import ast
    from pathlib import Path

    import roster.security.acls as module
    imported = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module if node.module.startswith("roster.")
                         else node.module.split(".")[0])
    assert imported <= {"__future__", "collections", "dataclasses", "enum",
                        "roster.frozen", "roster.protocol.acl"}, imported
