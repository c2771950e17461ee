"""DescribeUserScramCredentials and AlterUserScramCredentials: Kafka's per-user answers."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from roster.broker.handlers import alter_user_scram_credentials as alter
from roster.broker.handlers import describe_user_scram_credentials as describe
from roster.protocol.build import element, make
from roster.protocol.codec import Request, request_schema
from roster.protocol.errors import ErrorCode
from roster.security.credentials import ScramStore, from_password
from roster.security.users import salted_password


def call(module, broker, **fields):
    schema = request_schema(module.API_KEY, 0)
    request = Request(module.API_KEY, 0, 1, "test", make(schema, **fields))
    return asyncio.run(module.handle(broker, request, SimpleNamespace(principal="User:admin")))


def upsertion(name, mechanism=1, iterations=4096, password="pw"):
    entry = element(request_schema(alter.API_KEY, 0), "upsertions")
    salt, salted = salted_password("SCRAM-SHA-256" if mechanism == 1 else "SCRAM-SHA-512",
                                   password, max(iterations, 1))
    return entry(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                 salted_password=salted)


def deletion(name, mechanism=1):
    return element(request_schema(alter.API_KEY, 0), "deletions")(name=name, mechanism=mechanism)


def results(answer):
    return {r.user: (r.error_code, r.error_message) for r in answer.results}


def test_alter_answers_per_user_and_changes_only_the_valid_ones(tmp_path):
    store = ScramStore.open(tmp_path)
    store.apply([("old", "SCRAM-SHA-512", from_password("SCRAM-SHA-512", "x")),
                 ("twice", "SCRAM-SHA-256", from_password("SCRAM-SHA-256", "x"))])
    broker = SimpleNamespace(scram_store=lambda: store)
    answer = call(alter, broker, deletions=(deletion("twice"), deletion("missing"),
                                            deletion("old", 2)),
                  upsertions=(upsertion("twice"), upsertion("new"), upsertion("", 1),
                              upsertion("weird", 3), upsertion("few", iterations=100),
                              upsertion("many", iterations=20000)))
    assert results(answer) == {
        "old": (ErrorCode.none, None), "new": (ErrorCode.none, None),
        "twice": (ErrorCode.duplicate_resource,
                  "A user credential cannot be altered twice in the same request"),
        "missing": (ErrorCode.resource_not_found,
                    "Attempt to delete a user credential that does not exist"),
        "": (ErrorCode.unacceptable_credential, "Username must not be empty"),
        "weird": (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "few": (ErrorCode.unacceptable_credential, "Too few iterations"),
        "many": (ErrorCode.unacceptable_credential, "Too many iterations")}
    # the user altered twice keeps what it had; a deletion that fails validation is reported as
    # such even when the user appears again (Kafka checks deletions first)
    assert ScramStore.open(tmp_path).users() == ["new", "twice"]


def test_describe_all_some_unknown_and_duplicates(tmp_path):
    store = ScramStore.open(tmp_path)
    store.apply([("a", "SCRAM-SHA-256", from_password("SCRAM-SHA-256", "x", 8192)),
                 ("a", "SCRAM-SHA-512", from_password("SCRAM-SHA-512", "x")),
                 ("b", "SCRAM-SHA-256", from_password("SCRAM-SHA-256", "y"))])
    broker = SimpleNamespace(scram_store=lambda: store)
    everyone = call(describe, broker, users=None)
    assert [(r.user, [(i.mechanism, i.iterations) for i in r.credential_infos])
            for r in everyone.results] == [("a", [(1, 8192), (2, 4096)]), ("b", [(1, 4096)])]
    user = element(request_schema(describe.API_KEY, 0), "users")
    some = call(describe, broker, users=(user(name="b"), user(name="zed"), user(name="a"),
                                         user(name="a")))
    assert results(some) == {
        "b": (ErrorCode.none, None),
        "zed": (ErrorCode.resource_not_found,
                "Attempt to describe a user credential that does not exist: zed"),
        "a": (ErrorCode.duplicate_resource,
              "Cannot describe SCRAM credentials for the same user twice in a single "
              "request: a")}
