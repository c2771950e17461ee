"""roster.client under ACLs: a refused group is fatal for the member (as in Kafka's clients)
and surfaces as AuthorizationError naming the group and the operation Kafka checks."""
from __future__ import annotations

import pytest

from roster.client.errors import AuthorizationError, fatal_exception, refusal
from roster.client.membership import Fatal, FencedError, MemberConfig, Membership, State
from roster.protocol.errors import ErrorCode as E
from tests.unit.client.test_membership import joined


def test_find_coordinator_refused_is_fatal_with_describe():
    m = Membership(MemberConfig("readers"))
    m.subscribe(["t"], 0)
    actions = m.on_find_coordinator(E.group_authorization_failed, 5)
    assert m.state is State.FATAL and Fatal(E.group_authorization_failed,
                                            "FindCoordinator refused", "DESCRIBE") in actions
    error = fatal_exception(m.fatal, "readers")
    assert isinstance(error, AuthorizationError)
    assert (error.resource_type, error.resource, error.operation) == ("group", "readers",
                                                                      "DESCRIBE")
    assert str(error) == (
        "not authorized to DESCRIBE group 'readers' (GROUP_AUTHORIZATION_FAILED); an ACL that "
        "allows it: roster acls add --allow-principal <principal> --operation Describe "
        "--group readers")


@pytest.mark.parametrize("where", ["heartbeat", "commit"])
def test_a_refusal_while_stable_is_fatal_with_read(where):
    m = Membership(MemberConfig("g"))
    joined(m)
    assert m.state is State.STABLE
    if where == "heartbeat":
        m.on_heartbeat(E.group_authorization_failed, 10)
    else:
        m.on_commit({("t", 0): E.group_authorization_failed}, 10)
    assert m.state is State.FATAL and m.fatal.operation == "READ"
    assert fatal_exception(m.fatal, "g").operation == "READ"


def test_other_fatal_errors_stay_fenced_errors_and_topics_get_their_own():
    assert isinstance(fatal_exception(Fatal(E.fenced_instance_id, "fenced"), "g"), FencedError)
    error = refusal(E.topic_authorization_failed, "orders", "write")
    assert (error.resource_type, error.operation) == ("topic", "WRITE")
    assert "--operation Write --topic orders" in str(error)
    assert refusal(E.not_coordinator, "g", "READ") is None
