"""Fault injection for tests: `broker.faults` (test mode only, `roster.test.mode`).

A test-mode broker can be told to misbehave the way real clusters do, so that a client's error
handling, retries and recovery can be tested against it. Every method returns at once with
what it armed (a dict: the rule's id and fields, as `list()` shows them); the fault then acts
on the requests that come. Every injection, and every request a fault acted on, is an event
of the flight recorder (`__roster_group_events`, kind "fault"; key: the group the fault names,
else "roster.faults"), so `roster groups history GROUP` and the console show what was done.

Request faults (broker/faults/gate.py: one check on the request path, before any handler):

    fail_next(api, error, count=1, client_id=None, group_id=None, member_id=None)
        answer the next `count` requests of `api` with `error`, in that API's answer shape
        (as librdkafka's mock cluster does with rd_kafka_mock_push_request_errors); only those
        from `client_id`, naming `group_id` or carrying `member_id`, when given. count=None:
        every such request until cleared.
    delay(api, ms, count=None, client_id=None, group_id=None, member_id=None)
        serve requests of `api` as usual but answer `ms` later (count=None: until cleared).
    drop_connection(api, count=1, client_id=None, group_id=None, member_id=None)
        close the connection a request of `api` arrives on, answering nothing.
    refuse_coordinator(seconds, error="NOT_COORDINATOR", group_id=None)
        for `seconds` (None: until cleared) answer every group coordinator request (JoinGroup,
        SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, TxnOffsetCommit,
        ConsumerGroupHeartbeat, ...) with NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
        COORDINATOR_NOT_AVAILABLE, so clients run their coordinator lookup (FindCoordinator)
        and retry. The window runs on the loop's monotonic clock, not the test clock.

A request of a version kio has no schema for (OffsetCommit v0-1, Fetch v0-3, ...) is served
as usual by fail_next (its event says so); delays and drops apply to every version.

`api` is an API key (8), Kafka's name ("OffsetCommit") or its enum name ("OFFSET_COMMIT");
`error` an ErrorCode, a code (16) or a name ("NOT_COORDINATOR", any case). Anything else is
refused with FaultError (a ValueError) naming the argument.

Coordinator actions (ordinary operations of the group runtime: they write their records and
replay like any other):

    remove_member(group, member_id=None, instance_id=None)
        remove a member as the admin API does (LeaveGroup v3+), any group type: the group
        rebalances and the removed member's next heartbeat is refused; it loses its
        partitions and joins again (classic: under a new member id; KIP-848: its own).
    fence_instance(group, instance_id)
        another process takes the static member's instance id (a JoinGroup with it and no
        member id, as Kafka's replacement of a static member): the member holding it hears
        FENCED_INSTANCE_ID, a fatal error for its client. Classic groups.
    force_rebalance(group)
        start a classic group's rebalance now, as the coordinator starts one: every member
        hears REBALANCE_IN_PROGRESS on its next heartbeat and rejoins. Classic groups.
    fail_next_commit(group, count=1, error="NOT_COORDINATOR")
        the group's next `count` OffsetCommits are answered `error` (fail_next narrowed to
        the group). To fail the coordinator's own write of a commit instead (it puts the
        commit back and answers NOT_COORDINATOR): fail_appends(topic="__consumer_offsets").

Storage:

    fail_appends(count=1, topic=None)
        the next `count` appends to a partition log (of `topic`, or of any topic but the
        flight recorder's) fail as on a full disk: Produce answers KAFKA_STORAGE_ERROR, a
        coordinator's write fails and its clients are told as when it really happens.

And:

    list() -> [dict]        the rules in force
    remove(rule_id) -> bool
    clear() -> int          remove every rule; returns how many there were

The coordinator actions run on the broker's event loop. Called from another thread (a test
beside an in-process broker) every method waits for the loop to carry it out; called on the
loop itself, the coordinator actions return an asyncio future of their outcome instead (await
it), the others their result.

Outside test mode `broker.faults` raises FaultsRefused; so do the CLI (`roster faults ...`)
and the HTTP routes (POST/GET/DELETE /faults on the console's port), which are thin shapes of
these same methods (docs/testing-faults.md).
"""
from __future__ import annotations

from roster.broker.faults.control import Faults, FaultsRefused
from roster.broker.faults.rules import FaultError

__all__ = ["Faults", "FaultsRefused", "FaultError"]
