"""The classic group state machine as data: states, their legal predecessors, and how each API
is answered in each state. Code consults these tables; docs/groups.md is generated from them.
"""
from __future__ import annotations

from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = GroupState
ALL_STATES = frozenset(GroupState)

# target state -> the states a group may move to it from (Kafka's ClassicGroupState)
LEGAL_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.DEAD: ALL_STATES,
}

# States from which a rebalance may start (Kafka's canRebalance()).
CAN_REBALANCE = frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY})


class IllegalTransition(RuntimeError):
    """A transition the table forbids: a bug in the coordinator, never a client's fault."""


def check_transition(current: GroupState, target: GroupState) -> None:
    if current not in LEGAL_PREVIOUS[target]:
        raise IllegalTransition(f"group cannot move from {current} to {target}")


# How a request from a valid member of the current generation is answered in each state, once
# the checks common to all states have passed. Strings are Kafka error names ("none" = success);
# the special values say what the handler does instead of answering an error.
HEARTBEAT = {
    S.EMPTY: "unknown_member_id",
    S.PREPARING_REBALANCE: "rebalance_in_progress",   # the session is still kept alive
    S.COMPLETING_REBALANCE: "none",
    S.STABLE: "none",
    S.DEAD: "coordinator_not_available",
}

SYNC_GROUP = {
    S.EMPTY: "unknown_member_id",
    S.PREPARING_REBALANCE: "rebalance_in_progress",
    S.COMPLETING_REBALANCE: "park until the leader's assignment is written",
    S.STABLE: "return the member's stored assignment at once",
    S.DEAD: "coordinator_not_available",
}

OFFSET_COMMIT = {  # for a member-identified commit whose generation matches
    S.EMPTY: "none (only generation -1 commits reach Empty groups)",
    S.PREPARING_REBALANCE: "none (the still-current generation may commit)",
    S.COMPLETING_REBALANCE: "rebalance_in_progress",
    S.STABLE: "none",
    S.DEAD: "coordinator_not_available",
}

JOIN_GROUP_KNOWN_MEMBER = {
    S.EMPTY: "unknown_member_id",
    S.PREPARING_REBALANCE: "update the member and wait for the join phase to complete",
    S.COMPLETING_REBALANCE: "same protocols: answer with the current generation; "
                            "changed protocols: rebalance",
    S.STABLE: "leader: rebalance; follower with changed protocols: rebalance; "
              "otherwise answer with the current generation",
    S.DEAD: "coordinator_not_available",
}

DELETE_GROUP = {
    S.EMPTY: "none",
    S.PREPARING_REBALANCE: "non_empty_group",
    S.COMPLETING_REBALANCE: "non_empty_group",
    S.STABLE: "non_empty_group",
    S.DEAD: "group_id_not_found",
}

_WITH_MEMBERS = ("consumer group: group_subscribed_to_topic for topics its members subscribe to, "
                 "the rest deleted; other protocol types: non_empty_group")
OFFSET_DELETE = {
    S.EMPTY: "none (the offsets asked for are deleted)",
    S.PREPARING_REBALANCE: _WITH_MEMBERS,
    S.COMPLETING_REBALANCE: _WITH_MEMBERS,
    S.STABLE: _WITH_MEMBERS,
    S.DEAD: "group_id_not_found",
}

ANSWER_TABLES = {
    "Heartbeat": HEARTBEAT,
    "SyncGroup": SYNC_GROUP,
    "OffsetCommit": OFFSET_COMMIT,
    "JoinGroup (known member id)": JOIN_GROUP_KNOWN_MEMBER,
    "DeleteGroups": DELETE_GROUP,
    "OffsetDelete": OFFSET_DELETE,
}
