"""The group shard: every group of every type, and their committed offsets, behind one pure
face (Kafka's GroupCoordinatorShard). The edge (broker/groups/runtime.py) hands it a request and `now`
and carries out the Result; it decides nothing itself.

The shard owns:
- the group types (group_type.py), built from their registrations (roster/group_types.py, and
  any a test or Broker(group_types=...) adds), in the order it asks them which one holds a group
  id; the last one (the classic coordinator) also holds "simple" groups (commits from admin
  tools and assign() users) and so answers for any id nobody holds;
- the OffsetStore (offset_store.py): offsets by group id, whatever holds the group;
- the one replay switch over every record type, and the dispatch of timer events and
  continuations to whoever scheduled them.

It names no type. A request of a family (the classic protocol's JoinGroup, SyncGroup,
Heartbeat and LeaveGroup; ConsumerGroupHeartbeat; a new type's own) goes to the type that holds
its group id if that type serves the family (GroupType.serves), is refused if the holder does
not take it (GroupType.accepts), and otherwise goes to the family's maker: the last type that
serves it, whose new groups they make. So classic requests to a consumer group with members
reach its classic-protocol members (consumer/classic_members.py) and a classic JoinGroup on an
empty consumer group deletes it first (JoinAfterDeletion, continuations.py), both decided by the
consumer type. DeleteGroups and offset expiry (offsets and groups go together) span types here.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence

from roster.coordinator.changes import revert
from roster.coordinator.config import GroupConfig
from roster.coordinator.continuations import (
    GroupsDeleted,
    JoinAfterDeletion,
    OffsetsCommitted,
    OffsetsDeleted,
    OffsetsExpired,
)
from roster.coordinator.group_type import (
    GroupsById,
    GroupType,
    GroupTypeRegistration,
    TypeContext,
)
from roster.coordinator.messages import (
    CommitReply,
    CommitRequest,
    GroupDescription,
    GroupOverview,
    JoinReply,
    JoinRequest,
    LeaveReply,
    LeaveRequest,
    OffsetDeleteReply,
    SyncReply,
    SyncRequest,
)
from roster.coordinator.offset_store import CommittedOffset, OffsetStore
from roster.coordinator.results import Result
from roster.coordinator.unbuilt_type import UnbuiltType
from roster.protocol.errors import ErrorCode
from roster.protocol.group_records import OffsetCommit, OffsetKey, Record

log = logging.getLogger("roster.coordinator")

# TxnOffsetCommit v6+ (not served yet) may answer STALE_MEMBER_EPOCH; before, Kafka says
# ILLEGAL_GENERATION instead (TxnOffsetCommitRequest.supportsStaleMemberEpochError)
TXN_STALE_MEMBER_EPOCH_FROM = 6


class GroupShard:
    def __init__(self, config: GroupConfig, new_member_id: Callable[[str], str],
                 types: Sequence[GroupTypeRegistration],
                 new_uuid: Callable[[], str] | None = None,
                 settings: Mapping | None = None, topics=None, expected=None) -> None:
        """`types`: the registrations, in the order they are asked (roster/group_types.py);
        `topics`: the topic catalog (consumer.model.TopicImage) groups read; `expected`: group
        id -> pre-registered static members (coordinator/classic/expectations.py); `settings`: type
        name -> its own settings (GroupTypeRegistration.configure)."""
        self.config = config
        self.topics = topics
        names = [r.name for r in types]
        if len(set(names)) != len(names):   # e.g. a type both listed and handed to Broker()
            raise ValueError(f"a group type is registered twice: {names}")
        self._registrations = {r.name: r for r in types}
        self._order = names
        self._context = (config, new_member_id, topics, expected, new_uuid, settings or {})
        built: dict[str, GroupType] = {}
        for registration in reversed(types):   # the last first: a type may work beside those
            built[registration.name] = UnbuiltType(registration, self._built) \
                if registration.on_first_use is not None else self._make(registration, built)
        self.offsets = OffsetStore(config.offset_metadata_max_bytes)
        self._named = built
        self._route()

    def _make(self, registration: GroupTypeRegistration,
              built: Mapping[str, GroupType]) -> GroupType:
        return registration.make(TypeContext(*self._context, dict(built)))

    def _built(self, name: str) -> GroupType:
        """The type registered as `name`, built now if it was waiting for its first use
        (unbuilt_type.py); the shard then routes to it as to any type."""
        group_type = self._named[name]
        if isinstance(group_type, UnbuiltType):
            after = self._order[self._order.index(name) + 1:]
            group_type = self._make(self._registrations[name],
                                    {other: self._named[other] for other in after})
            self._named[name] = group_type
            self._route()
            log.info("group type %s built on first use", name)
        return group_type

    def _route(self) -> None:
        """Who is asked what, read once from the types (and again when one is built)."""
        built = self._named
        # who holds a group id: asked in this order; the last one holds any id nobody does
        self.types: tuple[GroupType, ...] = tuple(built[name] for name in self._order)
        self._last = self.types[-1]
        # whose timer events and continuations are whose (the last type's: the rest)
        self._owners: dict[type, GroupType] = {
            step: group_type for group_type in self.types[:-1] for step in group_type.steps}
        # for each family of requests (the classic APIs, ConsumerGroupHeartbeat, a new type's
        # own), the types that refuse it on the ids they hold (GroupType.accepts): the one place
        # a request meets a group of another type. With the built-in types alone, nobody
        # refuses the classic family (the consumer type serves classic members), so the
        # classic heartbeat pays a loop over an empty tuple.
        # (a type that names no `serves` serves its own family, named as itself)
        serves = {t: getattr(t, "serves", frozenset({t.name})) for t in self.types}
        families = {family for group_type in self.types
                    for family in (*group_type.accepts, *serves[group_type])}
        self._refusing: dict[str, tuple[GroupType, ...]] = {
            family: tuple(t for t in self.types if family not in t.accepts)
            for family in families}
        # the family's maker: the last type that serves it (a request on an id nobody holds
        # makes its group); its hosts: the others that serve it on the ids they hold
        self._makers: dict[str, GroupType] = {}
        for group_type in self.types:
            for family in serves[group_type]:
                self._makers[family] = group_type
        self._hosts: dict[str, tuple[GroupType, ...]] = {
            family: tuple(t for t in self.types if family in serves[t] and t is not maker)
            for family, maker in self._makers.items()}
        # the classic Heartbeat is the hot path: its routing read once, each host's membership
        # test as the dict's own `in` where the type keeps its groups in one (GroupsById), and
        # the maker's check_in bound
        self._holders = tuple(_holds(t) for t in reversed(self.types))   # _held_anywhere
        self._classic_refusing = tuple(_holds(t) for t in self._refusing.get("classic", ()))
        self._classic_hosts = tuple((_holds(t), t) for t in self._hosts.get("classic", ()))
        maker = self._makers.get("classic")
        self._classic_check_in = None if maker is None else maker.check_in

    def type_named(self, name: str) -> GroupType:
        """The type registered under `name` (for views and tests; routing never asks), built
        if it was waiting for its first use."""
        return self._built(name)

    # -- which type holds a group --------------------------------------------------------------

    def type_of(self, group_id: str) -> GroupType:
        """The type that holds the group, else the last (it answers for any id nobody holds)."""
        return self._held(group_id) or self.types[-1]

    def refused(self, group_id: str, family: str) -> str | None:
        """Why a request of `family` ("classic", "consumer", or a new type's own) may not act on
        this group id, held by a type that does not take it (Kafka's GroupIdNotFoundException:
        GROUP_ID_NOT_FOUND with this message); None: it may. A new type's handlers ask it too."""
        for group_type in self._refusing.get(family, self.types):
            if group_type.has_group(group_id):
                return f"Group {group_id} is not a {family} group."
        return None

    def _held_anywhere(self, group_id: str) -> bool:
        """_held(group_id) is not None, asked the cheapest way (_holds), the last type first:
        it holds the simple groups whose offsets a restart replays most."""
        for holds in self._holders:
            if holds(group_id):
                return True
        return False

    def _held(self, group_id: str) -> GroupType | None:
        for group_type in self.types:
            if group_type.has_group(group_id):
                return group_type
        return None

    def serving(self, family: str, group_id: str) -> GroupType | str:
        """The type that serves a request of `family` on this group id: the holder if it serves
        the family, else the family's maker; a str (why) when the holder does not take it."""
        if self._refusing.get(family, self.types):
            refused = self.refused(group_id, family)
            if refused is not None:
                return refused
        for host in self._hosts.get(family, ()):
            if host.has_group(group_id):
                return host
        return self._makers[family]

    # -- the classic protocol's requests (whichever type serves them on the id) ----------------

    def join(self, request: JoinRequest, now: int) -> Result:
        served = self.serving("classic", request.group_id)
        if served.__class__ is str:
            result = Result()
            result.reply(request.token, JoinReply(error=ErrorCode.group_id_not_found,
                                                  member_id=request.member_id))
            return result
        return served.join(request, now)

    def sync(self, request: SyncRequest, now: int) -> Result:
        served = self.serving("classic", request.group_id)
        if served.__class__ is str:
            result = Result()
            result.reply(request.token, SyncReply(error=ErrorCode.group_id_not_found))
            return result
        return served.sync(request, now)

    def leave(self, request: LeaveRequest, now: int) -> Result:
        served = self.serving("classic", request.group_id)
        if served.__class__ is str:
            result = Result()
            result.reply(request.token, LeaveReply(error=ErrorCode.group_id_not_found))
            return result
        return served.leave(request, now)

    def heartbeat(self, group_id: str, generation: int, member_id: str,
                  group_instance_id: str | None, now: int, result: Result) -> ErrorCode:
        """The classic Heartbeat: its answer at once; timer changes go into `result`. The hot
        path: `serving` inlined."""
        for holds in self._classic_refusing:   # a type that does not take classic requests
            if holds(group_id):
                return ErrorCode.group_id_not_found
        for holds, host in self._classic_hosts:
            if holds(group_id):
                return host.check_in(group_id, generation, member_id, group_instance_id, now,
                                     result)
        return self._classic_check_in(group_id, generation, member_id, group_instance_id, now,
                                      result)

    # -- ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) ------------------------------

    def maker(self, family: str) -> GroupType | None:
        """The type whose groups a request of `family` makes (for a handler's own fast path:
        the steady ConsumerGroupHeartbeat), or None when no registered type serves it."""
        return self._makers.get(family)

    def family_request(self, family: str, request, act: Callable[[GroupType, int], Result],
                       now: int) -> Result:
        """A request of a type's own family (ConsumerGroupHeartbeat: "consumer"): act(type, now) on
        the type serving it on the request's group id; refused, in the family maker's words,
        when the id's holder does not take it. Every type's own APIs come through here, so the
        runtime never grows a method per API per type."""
        served = self.serving(family, request.group_id)
        if served.__class__ is str:
            return self._makers[family].refuse(request, served)
        return act(served, now)

    def describe_family(self, family: str, group_ids: list[str]):
        """The describe API of a family (ConsumerGroupDescribe: "consumer"), as the family's
        maker answers it, knowing who holds each id (a group another type holds is "not a
        consumer group")."""
        return self._makers[family].describe_family(group_ids, self._held)

    # -- offsets -----------------------------------------------------------------------------------

    def commit_offsets(self, request: CommitRequest, now: int) -> Result:
        """The group's type checks the caller; the offsets take effect (replay) once written,
        and are answered then."""
        result = Result()
        error = self.type_of(request.group_id).validate_offset_commit(request, now, result)
        if error is not None:
            result.reply(request.token, CommitReply(tuple(
                (o.topic, o.partition, error) for o in request.offsets)))
            return result
        answers, written = self.offsets.commit(request, now)
        if written:
            self.offsets.commit_writing(request.group_id)
        result.records.extend(written)
        result.after_write.append(OffsetsCommitted(request.token, request.group_id, answers, written))
        return result

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None,
                      require_stable: bool = False):
        held = self._held(group_id)
        return self.offsets.fetch(group_id, wanted,
                                  visible=held is None or not held.being_deleted(group_id),
                                  require_stable=require_stable)

    # -- offsets inside a transaction (KIP-447; the edge: broker/txn_offsets.py) --------------

    def txn_commit_offsets(self, request: CommitRequest, now: int,
                           result: Result) -> tuple[tuple, tuple[Record, ...]]:
        """TxnOffsetCommit: (answers, the records to write in the producer's transactional
        batch). A caller that names a member is checked by the group's type as for
        OffsetCommit, so a zombie after a rebalance is fenced (ILLEGAL_GENERATION,
        UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); one naming none (an older client) is not, as
        in Kafka. The offsets stay pending (transaction_written) until the marker."""
        names_member = request.generation >= 0 or bool(request.member_id) \
            or request.group_instance_id is not None
        error = self.type_of(request.group_id).validate_offset_commit(request, now, result) \
            if names_member else None
        if error is ErrorCode.stale_member_epoch \
                and request.api_version < TXN_STALE_MEMBER_EPOCH_FROM:
            error = ErrorCode.illegal_generation   # what older TxnOffsetCommit clients know
        if error is not None:
            return tuple((o.topic, o.partition, error) for o in request.offsets), ()
        return self.offsets.commit(request, now)

    def transaction_written(self, producer_id: int, written) -> None:
        """Offset records of an open transaction are durable (or replayed): pending."""
        self.offsets.pending.add(producer_id, written)

    def txn_offsets_written(self, producer_id: int, answers: tuple, written,
                            error: ErrorCode | None) -> CommitReply:
        """TxnOffsetCommit's batch was written (error None: its offsets are pending until the
        marker) or not: then every partition gets the write's error, as for OffsetCommit."""
        if error is not None:
            return CommitReply(_unwritten(answers, error))
        self.transaction_written(producer_id, written)
        return CommitReply(answers)

    def end_transaction(self, producer_id: int, commit: bool, now: int) -> None:
        """The producer's marker reached __consumer_offsets: its pending offsets are committed
        (replayed as any commit) or dropped."""
        for record in self.offsets.pending.end(producer_id, commit):
            self.replay(record, now, committed_by_marker=True)

    def fetch_refused(self, group_id: str, member_id: str | None,
                      epoch: int) -> ErrorCode | None:
        """OffsetFetch v9+ names a member and its epoch: the group's type checks them."""
        return self.type_of(group_id).validate_offset_fetch(group_id, member_id, epoch)

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]], now: int,
                       token: Hashable) -> Result:
        """OffsetDelete: the offsets of topics the group's members read are kept
        (GROUP_SUBSCRIBED_TO_TOPIC). A group left without offsets goes too when its type says
        so (an Empty classic group). Answered once the tombstones are written."""
        result = Result()
        held = self._held(group_id)
        error = ErrorCode.group_id_not_found if held is None \
            else held.validate_offset_delete(group_id)
        if error is not None:
            result.reply(token, OffsetDeleteReply(error))
            return result
        answers, removed = self.offsets.delete(group_id, partitions,
                                               held.subscribed_topics(group_id))
        whole_group = bool(partitions) and held.goes_with_its_offsets(group_id) and \
            set(self.offsets.of(group_id)) <= set(removed) and \
            not self.offsets.committing(group_id)
        if not removed and not whole_group:
            result.reply(token, OffsetDeleteReply(partitions=answers))
            return result
        tombstones = self.offsets.tombstones(group_id, removed)
        result.records.extend(tombstones)
        if whole_group:
            tombstones += held.delete_group(group_id, now, result)
        result.after_write.append(OffsetsDeleted(token, answers, tuple(tombstones)))
        return result

    def expire_offsets(self, now: int) -> Result:
        """Offsets past offsets.retention.minutes, as each group's type ages them; a group that
        goes with its offsets and has none left is deleted too."""
        result = Result()
        retention = self.config.offsets_retention_ms
        group_ids = dict.fromkeys(self.offsets.groups())
        for group_type in self.types:
            group_ids.update(dict.fromkeys(group_type.group_ids()))
        for group_id in group_ids:
            held = self._held(group_id)
            if held is not None and held.being_deleted(group_id):
                continue
            expiry = (held or self.types[-1]).offset_expiry(group_id)
            expired = self.offsets.expired(group_id, expiry, retention, now)
            # a group an open transaction committed offsets to stays (as in Kafka)
            whole_group = held is not None and held.goes_with_its_offsets(group_id) and \
                len(expired) == len(self.offsets.of(group_id)) and \
                not self.offsets.committing(group_id) and \
                not self.offsets.pending.open_for(group_id)
            if not expired and not whole_group:
                continue
            log.info("expiring %d offsets of group %s%s", len(expired), group_id,
                     " and the group itself" if whole_group else "")
            tombstones = self.offsets.tombstones(group_id, expired)
            result.records.extend(tombstones)
            if whole_group:
                tombstones += held.delete_group(group_id, now, result)
            result.after_write.append(OffsetsExpired(tuple(tombstones)))
        return result

    # -- groups ----------------------------------------------------------------------------------

    def delete_groups(self, group_ids: list[str], now: int, token: Hashable) -> Result:
        """DeleteGroups: only empty groups go, each with its offsets (their tombstones first,
        as Kafka writes them); answered once everything is written."""
        result = Result()
        outcome: dict[str, ErrorCode] = {}
        tombstones: list[Record] = []
        for group_id in group_ids:
            held = self._held(group_id)
            error = ErrorCode.group_id_not_found if held is None \
                else held.validate_delete_group(group_id)
            if error is not None:
                outcome[group_id] = error
                continue
            offsets = self.offsets.tombstones(group_id, self.offsets.everything(group_id))
            result.records.extend(offsets)
            tombstones += offsets
            tombstones += held.delete_group(group_id, now, result)
            outcome[group_id] = ErrorCode.none
        result.after_write.append(GroupsDeleted(token, outcome, tuple(tombstones)))
        return result

    def view(self, group_id: str):
        """The group as the console's group page shows it (GroupView), as its type draws it;
        None when no type holds it."""
        held = self._held(group_id)
        return None if held is None else held.console_view(group_id)

    def describe(self, group_id: str) -> GroupDescription | None:
        """DescribeGroups: as the type that holds the group answers it (None: not found)."""
        held = self._held(group_id)
        return None if held is None else held.describe_group(group_id)

    def overview(self, states: set[str] | None = None,
                 types: set[str] | None = None) -> list[GroupOverview]:
        """The groups of every type whose state and type are in the lower-cased filters (None:
        any), as Kafka's listGroups filters every group alike; each id once, as the type that
        holds it lists it. ListGroups, the console and /metrics all read this."""
        listed = []
        for group_type in reversed(self.types):   # the classic groups first, as always
            if types and group_type.name not in types:
                continue
            listed += [overview for overview in group_type.listed()
                       if (not states or overview.state.lower() in states)
                       and self._held(overview.group_id) is group_type]
        return listed

    def list_groups(self, states: set[str] | None,
                    types: set[str] | None) -> list[tuple[str, str, str, str]]:
        """ListGroups: (group id, protocol type, state, group type) of `overview`."""
        return [(o.group_id, o.protocol_type, o.state, o.group_type)
                for o in self.overview(states, types)]

    # -- records -----------------------------------------------------------------------------------

    def replay(self, record: Record, now: int = -1, committed_by_marker: bool = False) -> None:
        """The one switch over every record type, live and while loading.
        `committed_by_marker`: an offset record of a transaction its commit marker ends."""
        key = record.key
        if type(key) is OffsetKey:
            value = record.value
            if value is not None and not self._held_anywhere(key.group):
                # offsets without a group record: a simple group holds them (as in Kafka)
                self._last.create_group(key.group, now)
            if not committed_by_marker:   # a plain commit written later wins over a pending one
                self.offsets.pending.superseded(key.group, key.topic, key.partition)
            self.offsets.replay(key.group, key.topic, key.partition, None if value is None
                                else CommittedOffset(value.offset, value.leader_epoch,
                                                     value.metadata, value.commit_timestamp,
                                                     value.expire_timestamp))
            return
        for group_type in self.types:
            own = group_type.own(record)
            if own is not None:
                group_type.replay(own, now)
                if group_type is not self._last:
                    # it replaces the memberless group of its id the last type holds (a simple
                    # group whose offsets came first, while loading), as Kafka converts it
                    self._last.give_way(own.key.group)
                return
        self._last.replay(record, now)   # (it logs and skips a type it does not know)

    def replay_offset_commits(self, commits: list[OffsetCommit], now: int) -> None:
        """Plain offset-commit records, in log order, as group_records.decode_offset_commit
        reads them: what replay() does with each, without a Record, for the million a restart
        may replay. Groups, pending offsets and committed offsets are apart from each other,
        so each is brought up to date for the whole run in turn, and each group is looked up
        once a run, in the order its first offset came."""
        pending = self.offsets.pending
        if pending.any_pending():   # a plain commit written later wins over a pending one
            for group_id, topic, partition, _ in commits:
                pending.superseded(group_id, topic, partition)
        for group_id in dict.fromkeys(group_id for group_id, _, _, fields in commits
                                      if fields is not None):
            if not self._held_anywhere(group_id):
                # offsets without a group record: a simple group holds them (as in Kafka)
                self._last.create_group(group_id, now)
        self.offsets.replay_all(commits)

    def groups_loaded(self, group_ids: list[str], now: int) -> Result:
        """After replay: sessions start now; see each type's groups_loaded."""
        result = Result()
        for group_type in reversed(self.types):
            result.merge(group_type.groups_loaded(
                [g for g in group_ids if group_type.has_group(g)], now))
        return result

    def group_ids(self) -> list[str]:
        ids: dict[str, None] = {}
        for group_type in self.types:
            ids.update(dict.fromkeys(group_type.group_ids()))
        return list(ids)

    # -- timers and writes -------------------------------------------------------------------------

    def expire(self, event, now: int) -> Result:
        return self._owners.get(type(event), self._last).expire(event, now)

    def revert(self, changes: list, now: int) -> None:
        """A result's records could not be written: what its operations changed at once is put
        back (changes.py), before any of its continuations hears of the error."""
        revert(changes, now)

    def write_completed(self, step, error: ErrorCode | None, now: int) -> Result:
        """Continue an operation whose records were written (error None) or failed to be."""
        match step:
            case OffsetsCommitted():
                result = Result()
                if error is None:
                    for record in step.records:
                        self.replay(record, now)
                    answers = step.answers
                else:
                    answers = _unwritten(step.answers, error)
                if step.records:
                    self.offsets.commit_written(step.group_id)
                result.reply(step.token, CommitReply(answers))
                return result
            case OffsetsDeleted():
                self._settle(step.tombstones, error, now)
                result = Result()
                result.reply(step.token, OffsetDeleteReply(error) if error is not None
                             else OffsetDeleteReply(partitions=step.answers))
                return result
            case OffsetsExpired():
                self._settle(step.tombstones, error, now)
                return Result()
            case GroupsDeleted():
                result = Result()
                self._settle(step.tombstones, error, now)
                outcome = dict(step.outcome)
                if error is not None:   # none of them was deleted: say why
                    outcome.update((g, error) for g, code in outcome.items()
                                   if code is ErrorCode.none)
                result.reply(step.token, outcome)
                return result
            case JoinAfterDeletion():
                if error is not None:
                    result = Result()
                    result.reply(step.request.token, JoinReply(
                        error=error, member_id=step.request.member_id))
                    return result
                # a consumer member may have made the group again meanwhile: look again
                return self.join(step.request, now)
        return self._owners.get(type(step), self._last).write_completed(step, error, now)

    def _settle(self, tombstones: tuple[Record, ...], error: ErrorCode | None,
                now: int) -> None:
        """Tombstones written (error None) take effect; unwritten, nothing happens: the groups
        marked Dead for them were put back by `revert`."""
        if error is None:
            for record in tombstones:
                self.replay(record, now)


def _holds(group_type: GroupType) -> Callable[[str], bool]:
    """The type's has_group, as cheap as it can be asked: a GroupsById type keeps its groups in
    one dict for its life, whose own `in` answers the same without a Python call."""
    if isinstance(group_type, GroupsById) and isinstance(group_type.groups, dict):
        return group_type.groups.__contains__
    return group_type.has_group


def _unwritten(answers: tuple, error: ErrorCode) -> tuple:
    """An offset commit whose records were not written: every partition is told the error."""
    return tuple((topic, partition, error) for topic, partition, _ in answers)
