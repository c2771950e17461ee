"""Random sequences of client steps (join, sync, heartbeat, leave, commit, the clock, failed
writes) never break the group invariants: each member is in one state that fits the group's,
generations only grow, a Stable group has an assignment for every member, one member per
instance id, the leader is a member; a Stable group is what its records say; and once the
clients fall silent every parked request is answered and the group empties.

Five clients share group "g": two dynamic, two static, and a second process configured with the
first static one's instance id, which starts only when a step makes it join. Each client has at
most one JoinGroup or SyncGroup in flight, like a real consumer, and learns its member id,
generation and leadership from the answers it gets; a fenced one stops, as a Java consumer does.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from roster.broker.groups.group_log import CLIENT_WRITE_ERRORS
from roster.coordinator.classic.states import GroupState
from roster.coordinator.messages import JoinReply, SyncReply
from roster.coordinator.shard import GroupShard
from roster.group_types import GROUP_TYPES
from roster.protocol.errors import ErrorCode
from tests.unit.coordinator.harness import PROTOCOLS, Harness

S = GroupState
E = ErrorCode

CLIENTS = (("dyn-1", None), ("dyn-2", None), ("st-a", "i-a"), ("st-b", "i-b"),
           ("st-a-twin", "i-a"))
SUBSCRIPTIONS = (PROTOCOLS, (("range", b"r2"),), (("roundrobin", b"rr"),),
                 (("roundrobin", b"rr3"), ("range", b"r3")))
FORGET_ID = (E.unknown_member_id, E.fenced_instance_id, E.group_max_size_reached)
QUIET_MS = 3_000_000  # far beyond every timeout the clients use


@dataclass
class Client:
    name: str
    instance: str | None
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    members: tuple[str, ...] = ()
    skip_assignment: bool = False
    next_step: str = "join"  # what its poll loop does next: join, sync, heartbeat (or stopped)
    in_flight: int | None = None  # token of a parked JoinGroup or SyncGroup

    def learn(self, reply) -> None:
        error = reply if isinstance(reply, ErrorCode) else reply.error
        if error is E.fenced_instance_id:  # fatal for a Java consumer: it stops polling
            self.member_id, self.leader, self.next_step = "", False, "stopped"
        elif error in FORGET_ID:
            self.member_id, self.leader, self.next_step = "", False, "join"
        elif isinstance(reply, JoinReply):
            if error is E.none:
                self.member_id, self.generation = reply.member_id, reply.generation
                self.leader = reply.leader == reply.member_id
                self.members = tuple(m.member_id for m in reply.members)
                self.skip_assignment = reply.skip_assignment
                self.next_step = "sync"
            else:
                if error is E.member_id_required:
                    self.member_id = reply.member_id
                self.next_step = "join"
        elif error is E.none:
            if isinstance(reply, SyncReply):
                self.next_step = "heartbeat"
        else:  # REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, ...
            self.next_step = "join"


class GroupMachine(RuleBasedStateMachine):
    @initialize(delay=st.sampled_from([0, 3000]), max_size=st.sampled_from([3, 100]))
    def start(self, delay, max_size):
        self.h = Harness(initial_rebalance_delay_ms=delay, max_size=max_size)
        self.clients = [Client(name, instance) for name, instance in CLIENTS]
        self.clients[-1].next_step = "stopped"  # the twin polls once a join or restart starts it
        self.generation = 0
        self.parked: set[int] = set()
        # replays every record
        self.loaded = GroupShard(self.h.config, lambda prefix: prefix, GROUP_TYPES)
        self.replayed = 0

    def _send(self, client: Client, token: int) -> None:
        if not self.h.answered(token):
            client.in_flight = token
            self.parked.add(token)
        else:
            client.learn(self.h.reply(token))

    def _collect(self) -> None:
        for client in self.clients:
            if client.in_flight is not None and self.h.answered(client.in_flight):
                client.learn(self.h.reply(client.in_flight))
                client.in_flight = None

    # -- client steps ------------------------------------------------------------------------

    @rule(c=st.integers(0, 4))
    def poll(self, c):
        """One turn of a well-behaved consumer's loop: join, then sync, then heartbeat."""
        self._poll(self.clients[c])
        self._collect()

    @rule(ms=st.sampled_from([0, 0, 100]))
    def everyone_polls(self, ms):
        """A round of every client's loop, then a little time."""
        self._everyone_polls(ms)

    @rule(ms=st.sampled_from([0, 0, 100]))
    def everyone_polls_again(self, ms):
        """The same, drawn twice as often: a group needs a few calm rounds to settle."""
        self._everyone_polls(ms)

    @rule()
    def settle(self):
        """Calm rounds, a second apart, until the group is Stable (or eight went by)."""
        for _ in range(8):
            group = self.h.group()
            if group is not None and group.state is S.STABLE:
                break
            self._everyone_polls(1000)

    def _everyone_polls(self, ms: int) -> None:
        for client in self.clients:
            self._poll(client)
        self._collect()
        self.h.advance(ms)
        self._collect()

    def _poll(self, client: Client) -> None:
        if client.in_flight is not None or client.next_step == "stopped":
            return
        if client.next_step == "join":
            self._send(client, self.h.join(member_id=client.member_id, instance=client.instance,
                                           client_id=client.name))
        elif client.next_step == "sync":
            self._sync(client, stale=False)
        else:
            client.learn(self.h.heartbeat(client.member_id, client.generation,
                                          instance=client.instance))

    def _sync(self, client: Client, stale: bool) -> None:
        assignments = [] if not client.leader or client.skip_assignment else [
            (m, b"assigned:" + m.encode()) for m in client.members]
        self._send(client, self.h.sync(client.member_id, client.generation - stale,
                                       assignments, instance=client.instance))

    @rule(c=st.integers(0, 4), subscription=st.sampled_from(SUBSCRIPTIONS),
          version=st.sampled_from([3, 5, 9]), restart=st.booleans(),
          session_ms=st.sampled_from([6000, 10_000, 400_000]),
          rebalance_ms=st.sampled_from([3000, 10_000, 30_000, 400_000]),
          protocol_type=st.sampled_from(["consumer", "consumer", "connect"]))
    def join(self, c, subscription, version, restart, session_ms, rebalance_ms,
             protocol_type):
        client = self.clients[c]
        if client.in_flight is None:
            self._send(client, self.h.join(
                member_id="" if restart else client.member_id, instance=client.instance,
                protocols=subscription, version=version, session_ms=session_ms,
                rebalance_ms=rebalance_ms, client_id=client.name,
                protocol_type=protocol_type))
        self._collect()

    @rule(c=st.sampled_from([2, 3, 4]), write_fails=st.booleans())
    def restart_static_member(self, c, write_fails):
        """A static consumer restarts: it rejoins with no member id (maybe as the twin)."""
        client = self.clients[c]
        if client.in_flight is None:
            if write_fails:
                self.h.fail_next_write = E.not_coordinator
            self._send(client, self.h.join(instance=client.instance, client_id=client.name))
        self._collect()

    @rule(c=st.integers(0, 4), member_id=st.sampled_from(["bogus-1", "i-a-0"]))
    def join_with_an_unknown_id(self, c, member_id):
        # ids the coordinator never hands out (a shared id would let one client's JoinGroup
        # replace another's parked one, which Kafka then never answers either)
        client = self.clients[c]
        reply = self.h.reply(self.h.join(member_id=member_id, instance=client.instance,
                                          client_id=client.name))
        assert reply is not None and reply.error is not E.none
        self._collect()

    @rule(c=st.integers(0, 4), stale=st.booleans())
    def sync(self, c, stale):
        client = self.clients[c]
        if client.in_flight is None and client.member_id:
            self._sync(client, stale)
        self._collect()

    @rule(c=st.integers(0, 4))
    def heartbeat(self, c):
        client = self.clients[c]
        if client.member_id:
            client.learn(self.h.heartbeat(client.member_id, client.generation,
                                          instance=client.instance))
        self._collect()

    @rule(c=st.integers(0, 4), offset=st.integers(0, 3), with_generation=st.booleans())
    def commit(self, c, offset, with_generation):
        client = self.clients[c]
        generation = client.generation if with_generation else -1
        member_id = client.member_id if with_generation else ""
        instance = client.instance if with_generation else None
        reply = self.h.commit({("t", c): offset}, member_id=member_id, generation=generation,
                              instance=instance)
        assert reply is not None and len(reply.errors) == 1
        self._collect()

    @rule(c=st.integers(0, 4))
    def leave(self, c):
        client = self.clients[c]
        if client.in_flight is None and client.member_id:
            self.h.leave((client.member_id, client.instance))
            client.member_id, client.leader, client.next_step = "", False, "join"
        self._collect()

    @rule(instance=st.sampled_from(["i-a", "i-b"]))
    def remove_by_instance_id(self, instance):
        # Kafka leaves a removed member's parked SyncGroup unanswered (the client times out),
        # so the admin only removes instances that are not waiting in SyncGroup.
        group = self.h.group()
        member_id = group.static_members.get(instance) if group else None
        if member_id is None or not group.is_syncing(group.members[member_id]):
            self.h.leave(("", instance))
        self._collect()

    @rule(ms=st.sampled_from([0, 0, 1, 1000, 3000, 6000, 10_000, 30_000, 300_000]))
    def advance(self, ms):
        self.h.advance(ms)
        self._collect()

    @rule(error=st.sampled_from(sorted(CLIENT_WRITE_ERRORS)))
    def fail_next_write(self, error):
        self.h.fail_next_write = error

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def group_invariants(self):
        group = self.h.group()
        if group is None:
            return
        members = group.members
        assert all(m.member_id == member_id for member_id, m in members.items())
        # the leader is a member
        assert (group.leader_id in members) if members else group.leader_id is None
        # at most one member per instance id, and the instance map says exactly who
        instances = [m.group_instance_id for m in members.values() if m.is_static]
        assert len(instances) == len(set(instances))
        assert group.static_members == {m.group_instance_id: m.member_id
                                        for m in members.values() if m.is_static}
        # each member in one state, and one that fits the group's
        assert not set(group.joining) & set(group.syncing)
        # and the tables of what members are doing name members only
        for table in (group.joining, group.syncing, group.pending_sync, group.new_members):
            assert set(table) <= set(members)
        if group.state is not S.PREPARING_REBALANCE:
            assert not group.joining
        if group.state is not S.COMPLETING_REBALANCE:
            assert not group.syncing
        if group.state in (S.EMPTY, S.DEAD):
            assert not members and group.protocol_name is None
        assert not group.pending_members.keys() & set(members)
        assert group.pending_sync.keys() <= set(members)
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
            assert not group.pending_sync
        if group.state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert all(group.protocol_name in dict(m.protocols) for m in members.values())
        # generations only grow
        assert group.generation >= self.generation
        self.generation = group.generation
        # a Stable group has an assignment for every member
        if group.state is S.STABLE:
            assert all(m.assignment for m in members.values())

    @invariant()
    def stable_group_is_what_its_records_say(self):
        for record in self.h.records[self.replayed:]:  # what a restart would load by now
            self.loaded.replay(record, self.h.now)
        self.replayed = len(self.h.records)
        live, loaded = self.h.group(), self.loaded.type_named("classic").groups.get("g")
        if live is None:
            assert loaded is None
            return
        if loaded is None:
            # the write that would have recorded the group's creation failed (a commit's or a
            # first JoinGroup's): the group lingers in memory, with nothing committed
            assert self.h.offsets() == {} and live.state is not S.STABLE
            return
        assert dict(self.loaded.offsets.of("g")) == self.h.offsets()
        if live.state is not S.STABLE:
            return
        assert loaded.state is S.STABLE
        assert (loaded.generation, loaded.leader_id, loaded.protocol_name) == \
            (live.generation, live.leader_id, live.protocol_name)
        assert loaded.static_members == live.static_members
        assert {i: (m.group_instance_id, m.assignment, m.session_timeout_ms,
                    m.rebalance_timeout_ms, m.metadata(live.protocol_name))
                for i, m in loaded.members.items()} == \
            {i: (m.group_instance_id, m.assignment, m.session_timeout_ms,
                 m.rebalance_timeout_ms, m.metadata(live.protocol_name))
             for i, m in live.members.items()}

    def teardown(self):
        if not hasattr(self, "h"):
            return
        self.h.advance(QUIET_MS)
        unanswered = [t for t in self.parked if not self.h.answered(t)]
        assert unanswered == [], f"parked requests never answered: {unanswered}"
        group = self.h.group()
        if group is not None:
            assert group.members == {} and group.state is S.EMPTY
            assert group.pending_members.keys() == set()


GroupMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_group_invariants_hold_for_random_client_steps = GroupMachine.TestCase
