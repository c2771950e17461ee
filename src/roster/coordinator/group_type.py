"""What the shard (shard.py) asks of every type of group, and nothing more (Kafka's Group
interface, as OffsetMetadataManager uses it). Each type's coordinator answers for the groups of
that type by group id. Every type, the built-in ones too (the consumer coordinator,
consumer/coordinator.py; the classic one, classic/coordinator.py), comes to the shard the same way: a
GroupTypeRegistration in roster/group_types.py, the one list of the broker's types
(tests/unit/coordinator/test_stub_group_type.py registers a stub the same way).

Answers of ErrorCode | None: None lets the operation go ahead. A type changes its groups as
every type does (changes.py): at once, each change noted in the Result's `changes`, so the shard
can put it back if the write fails.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from roster.coordinator.messages import CommitRequest, GroupDescription, GroupOverview, GroupView
from roster.coordinator.offset_store import OffsetExpiry
from roster.coordinator.results import Result
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import Record


class GroupType(Protocol):
    name: str     # ListGroups' group type: "classic", "consumer"
    steps: tuple[type, ...]   # its timer events and continuations: expire/write_completed
    # the families of requests it takes on the ids it holds ("classic": JoinGroup, SyncGroup,
    # Heartbeat, LeaveGroup; "consumer": ConsumerGroupHeartbeat; a new type's own name); a
    # request of any other family on one of its ids is refused by the shard, in one place
    # (GroupShard.refused), as Kafka refuses it ("Group X is not a consumer group.")
    accepts: frozenset[str]
    # the families of requests it serves itself: on the ids it holds, and, for a family no type
    # after it in the shard's order serves, on ids nobody holds (that family's new groups are
    # its own). The classic type serves "classic"; the consumer type "consumer" and "classic"
    # (its classic-protocol members); for every family it serves it has that family's methods
    # (classic: join, sync, leave, check_in; consumer: heartbeat, steady_heartbeat,
    # describe_family). Optional: a type without it serves the family named as itself.
    serves: frozenset[str]

    def has_group(self, group_id: str) -> bool:
        """A group of this type by that id exists (being deleted counts: it is still there)."""

    def group_ids(self) -> list[str]: ...

    def group(self, group_id: str) -> Any:
        """The group object itself, for the views that read it (its flight recorder's loading)."""

    def console_view(self, group_id: str) -> GroupView | None:
        """The group as the console's group page shows it (None: it holds no such group)."""

    def being_deleted(self, group_id: str) -> bool:
        """Its deletion is being written (a classic group is Dead meanwhile): its offsets are
        neither shown nor expired."""

    def is_empty(self, group_id: str) -> bool: ...

    def subscribed_topics(self, group_id: str) -> Set[str] | None:
        """The topics its members read, whose offsets OffsetDelete keeps (None: any topic)."""

    def validate_offset_commit(self, request: CommitRequest, now: int,
                               result: Result) -> ErrorCode | None:
        """Whether the caller may commit (a classic member's commit also counts as a heartbeat:
        its timer changes go into `result`). The group may not exist yet: a simple commit
        (generation -1) makes one where the type allows it."""

    def listed(self) -> Iterable[GroupOverview]:
        """The groups it holds and shows (ListGroups, the console, /metrics); the shard applies
        the state and type filters to every type alike."""

    def describe_group(self, group_id: str) -> GroupDescription | None:
        """DescribeGroups (the classic API) on a group it holds. Kafka answers any group that is
        not a classic one as not found (Dead; from v6 GROUP_ID_NOT_FOUND, with a message saying
        why): an answer with that error and its `error_message`, or None (the message then says
        the group was not found)."""

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              epoch: int) -> ErrorCode | None: ...

    def validate_offset_delete(self, group_id: str) -> ErrorCode | None: ...

    def offset_expiry(self, group_id: str) -> OffsetExpiry | None:
        """How its offsets age past offsets.retention.minutes (None: they do not)."""

    def goes_with_its_offsets(self, group_id: str) -> bool:
        """Whether the group is deleted when its last offset is (an Empty classic group)."""

    def validate_delete_group(self, group_id: str) -> ErrorCode | None: ...

    def delete_group(self, group_id: str, now: int, result: Result) -> tuple[Record, ...]:
        """Delete one group (validated): its tombstones go into `result`, with whatever must
        follow once they are written, and the changes made meanwhile (e.g. the group marked as
        being deleted) in `result.changes`; returns those the shard replays once written."""

    def own(self, record: Record) -> Record | None:
        """This record as this type reads it (decoded from the bytes the classic layouts leave
        unread, if need be), or None when it is not one of this type's."""

    def replay(self, record: Record, now: int) -> None: ...

    def groups_loaded(self, group_ids: list[str], now: int) -> Result:
        """After loading: what its groups start with (sessions, timers)."""

    def expire(self, event, now: int) -> Result: ...

    def write_completed(self, step, error: ErrorCode | None, now: int) -> Result: ...


@dataclass(frozen=True)
class TypeContext:
    """What a shard hands a group type it builds: its collaborators, all pure values."""
    config: Any                                  # GroupConfig
    new_member_id: Callable[[str], str]          # classic member ids: prefix -> id
    topics: Any = None                           # the topic catalog (consumer.model.TopicImage)
    expected: Any = None                         # pre-registered static members
    new_uuid: Callable[[], str] | None = None    # member ids a coordinator hands out (KIP-848)
    # type name -> that type's own settings (GroupTypeRegistration.configure; None or absent:
    # its defaults)
    settings: Mapping[str, Any] = field(default_factory=dict)
    # the types built before this one (the shard builds the last registered first): a type
    # that works beside another finds it here by name
    built: Mapping[str, "GroupType"] = field(default_factory=dict)

    def settings_of(self, name: str) -> Any:
        return self.settings.get(name)


@dataclass(frozen=True)
class GroupTypeRegistration:
    """A group type as the broker takes it in: registered once (Broker(group_types=...), or
    GroupRuntime(group_types=...)), it reaches the shard, the flight recorder and the edge.
    - `make(context)` builds the type for a shard (asked before the built-in types);
    - `recorder()` builds its flight recorder (observability/flight_recorder.py: `name`, the
      fact classes it reads in `facts`, `take(fact, out)`, `loaded(group, now)`), or None;
    - `effects`: effect class -> handler(broker, effect), what the edge does once a result's
      records are durable for an effect the type asked for in `Result.effects` (a streams
      group's internal topics to create, a share group's state to initialise);
    - `configure(broker_config, group_configs)`: its own settings from the broker's config and
      the per-group configs (a mapping group id -> {name: value}), handed to `make` as
      `context.settings_of(name)`; None: it has none;
    - `describe_view`: how `roster groups describe` asks for and draws its groups
      (admin/group_views.py's DescribeView), or None: DescribeGroups' classic view;
    - `group_configs`: the table of its own group configs (the GROUP resource's names, how
      they parse, validate and describe: broker/groups/group_configs.py), or None: it has none.
    - `on_first_use`: when given, the shard builds the type only once something needs it (a
      request of a family it makes, one of its records replayed) and until then asks these
      declarations instead (OnFirstUse): a broker that serves no such groups does not load
      the type's code at start.
    Its handlers (one module per API, as every API) are registered as any API is."""
    name: str
    make: Callable[[TypeContext], GroupType]
    recorder: Callable[[], Any] | None = None
    effects: Mapping[type, Callable[[Any, Any], None]] = field(default_factory=dict)
    configure: Callable[[Any, Any], Any] | None = None
    describe_view: Any = None
    group_configs: Any = None
    on_first_use: OnFirstUse | None = None


@dataclass(frozen=True)
class OnFirstUse:
    """What the shard knows of a type built on first use before building it: its `accepts` and
    `serves` (GroupType's), and the record types (key versions in __consumer_offsets) that are
    its own. The type, once built, must declare the same (tests/unit/coordinator/
    test_on_first_use.py checks each registration's)."""
    accepts: frozenset[str]
    serves: frozenset[str]
    record_types: frozenset[int]


class GroupsById:
    """The part of GroupType a type answers from its `groups` (group id -> a group with
    `members`), shared by the built-in types."""

    groups: dict

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def group_ids(self) -> list[str]:
        return list(self.groups)

    def group(self, group_id: str):
        return self.groups.get(group_id)

    def is_empty(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is None or not group.members
