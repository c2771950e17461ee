"""The classic group state machine as data: states, their legal predecessors, and how each API
is answered in each state. The handlers look their state's cell up before anything else and do
what it says; docs/groups.md is generated from the same tables (tables_doc.py).
"""
from __future__ import annotations

from enum import Enum

from roster.frozen import frozen
from roster.protocol.errors import ErrorCode


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    # Members are singletons compared by identity: hash them by identity too, in C. (Enum's
    # own __hash__ is a Python function, and the tables below are looked up on every request.)
    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.value


S = GroupState
E = ErrorCode
ALL_STATES = frozenset(GroupState)

# target state -> the states a group may move to it from (Kafka's ClassicGroupState)
LEGAL_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.DEAD: ALL_STATES,
}

# A group marked Dead for a deletion whose tombstones then failed to be written goes back to
# what it was: an undo, which the table above (Kafka's) does not list as a transition.
UNDOABLE = {S.DEAD: frozenset({S.EMPTY})}

# States from which a rebalance may start (Kafka's canRebalance()).
CAN_REBALANCE = frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY})


class IllegalTransition(RuntimeError):
    """A transition the table forbids: a bug in the coordinator, never a client's fault."""


def check_transition(current: GroupState, target: GroupState) -> None:
    if current not in LEGAL_PREVIOUS[target]:
        raise IllegalTransition(f"group cannot move from {current} to {target}")


def check_undo(current: GroupState, target: GroupState) -> None:
    if target not in UNDOABLE.get(current, ()):
        raise IllegalTransition(f"group cannot go back from {current} to {target}")


# -- the answer tables -----------------------------------------------------------------------
#
# A cell is one of:
# - an ErrorCode: the answer to a valid member of the current generation, once the checks every
#   state shares (who is asking, which generation) have passed;
# - Refuse(code): the answer to whoever asks, before those checks (the state alone decides);
# - an Action: what the handler does instead of answering an error (the handler `match`es it).


@frozen
class Refuse:
    """Answered to any caller before it is checked: e.g. a Dead group is not asked who its
    members are."""

    error: ErrorCode


class Action(Enum):
    """What a handler does for a valid caller; the value is how docs/groups.md says it."""

    PARK_SYNC = "park until the leader's assignment is written"
    GIVE_STORED_ASSIGNMENT = "return the member's stored assignment at once"
    UPDATE_AND_WAIT = "update the member and wait for the join phase to complete"
    ANSWER_OR_REBALANCE_IF_CHANGED = ("same protocols: answer with the current generation; "
                                      "changed protocols: rebalance")
    REBALANCE_FOR_LEADER_OR_CHANGE = ("leader: rebalance; follower with changed protocols: "
                                      "rebalance; otherwise answer with the current generation")
    ADD_FIRST_MEMBER = ("add it and rebalance (an instance id the group still maps: a "
                        "coordinator bug, refused)")
    ADD_OR_REPLACE_AND_WAIT = ("add it, or give the static member its new id; wait for the join "
                               "phase to complete")
    ADD_OR_REPLACE_AND_REBALANCE = "add it, or give the static member its new id; rebalance"
    ADD_OR_REPLACE_KEEPING_GENERATION = (
        "add it and rebalance; a static member gets its new id and, once that is written, the "
        "current generation without a rebalance (unless its assignor changed)")
    REMOVE_MEMBERS = "remove them"
    REMOVE_AND_COMPLETE_JOIN = ("remove them; the join phase completes if everyone left has "
                                "rejoined")
    REMOVE_AND_REBALANCE = "remove them and rebalance"
    DELETE_GROUP = "none: the group and its offsets are deleted"
    DELETE_OFFSETS = "none (the offsets asked for are deleted)"
    KEEP_SUBSCRIBED_OFFSETS = ("consumer group: group_subscribed_to_topic for topics its members "
                               "subscribe to, the rest deleted; other protocol types: "
                               "non_empty_group")


Cell = ErrorCode | Refuse | Action

HEARTBEAT: dict[GroupState, Cell] = {
    S.EMPTY: E.unknown_member_id,
    S.PREPARING_REBALANCE: E.rebalance_in_progress,   # the session is still kept alive
    S.COMPLETING_REBALANCE: E.none,
    S.STABLE: E.none,
    S.DEAD: Refuse(E.coordinator_not_available),
}

SYNC_GROUP: dict[GroupState, Cell] = {
    S.EMPTY: Refuse(E.unknown_member_id),   # Kafka answers this before all else
    S.PREPARING_REBALANCE: E.rebalance_in_progress,
    S.COMPLETING_REBALANCE: Action.PARK_SYNC,
    S.STABLE: Action.GIVE_STORED_ASSIGNMENT,
    S.DEAD: Refuse(E.coordinator_not_available),
}

OFFSET_COMMIT: dict[GroupState, Cell] = {   # for a commit that names a member, or generation -1
    S.EMPTY: E.none,
    S.PREPARING_REBALANCE: E.none,
    S.COMPLETING_REBALANCE: E.rebalance_in_progress,
    S.STABLE: E.none,
    S.DEAD: Refuse(E.coordinator_not_available),
}

JOIN_GROUP_KNOWN_MEMBER: dict[GroupState, Cell] = {
    S.EMPTY: E.unknown_member_id,
    S.PREPARING_REBALANCE: Action.UPDATE_AND_WAIT,
    S.COMPLETING_REBALANCE: Action.ANSWER_OR_REBALANCE_IF_CHANGED,
    S.STABLE: Action.REBALANCE_FOR_LEADER_OR_CHANGE,
    S.DEAD: Refuse(E.coordinator_not_available),
}

JOIN_GROUP_NEW_MEMBER: dict[GroupState, Cell] = {   # member id "" (KIP-394 ids first, for v4+)
    S.EMPTY: Action.ADD_FIRST_MEMBER,
    S.PREPARING_REBALANCE: Action.ADD_OR_REPLACE_AND_WAIT,
    # the leader may be assigning to the old id: start over so nobody ends up unassigned
    S.COMPLETING_REBALANCE: Action.ADD_OR_REPLACE_AND_REBALANCE,
    S.STABLE: Action.ADD_OR_REPLACE_KEEPING_GENERATION,   # KIP-345 / KIP-814
    S.DEAD: Refuse(E.coordinator_not_available),
}

LEAVE_GROUP: dict[GroupState, Cell] = {
    S.EMPTY: Action.REMOVE_MEMBERS,   # only pending member ids can be known here
    S.PREPARING_REBALANCE: Action.REMOVE_AND_COMPLETE_JOIN,
    S.COMPLETING_REBALANCE: Action.REMOVE_AND_REBALANCE,
    S.STABLE: Action.REMOVE_AND_REBALANCE,
    S.DEAD: Refuse(E.coordinator_not_available),
}

DELETE_GROUP: dict[GroupState, Cell] = {
    S.EMPTY: Action.DELETE_GROUP,
    S.PREPARING_REBALANCE: E.non_empty_group,
    S.COMPLETING_REBALANCE: E.non_empty_group,
    S.STABLE: E.non_empty_group,
    S.DEAD: E.group_id_not_found,
}

OFFSET_DELETE: dict[GroupState, Cell] = {
    S.EMPTY: Action.DELETE_OFFSETS,
    S.PREPARING_REBALANCE: Action.KEEP_SUBSCRIBED_OFFSETS,
    S.COMPLETING_REBALANCE: Action.KEEP_SUBSCRIBED_OFFSETS,
    S.STABLE: Action.KEEP_SUBSCRIBED_OFFSETS,
    S.DEAD: E.group_id_not_found,
}

ANSWER_TABLES: dict[str, dict[GroupState, Cell]] = {
    "Heartbeat": HEARTBEAT,
    "SyncGroup": SYNC_GROUP,
    "OffsetCommit": OFFSET_COMMIT,
    "JoinGroup (known member id)": JOIN_GROUP_KNOWN_MEMBER,
    "JoinGroup (no member id)": JOIN_GROUP_NEW_MEMBER,
    "LeaveGroup": LEAVE_GROUP,
    "DeleteGroups": DELETE_GROUP,
    "OffsetDelete": OFFSET_DELETE,
}

# Why a cell says what it says, where the answer alone would puzzle a reader of the docs.
NOTES: dict[tuple[str, GroupState], str] = {
    ("OffsetCommit", S.EMPTY): "only generation -1 commits reach Empty groups",
    ("OffsetCommit", S.PREPARING_REBALANCE): "the still-current generation may commit",
}
