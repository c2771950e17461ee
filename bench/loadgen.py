#!/usr/bin/env python3
"""Load generator for the coordinator benchmark (bench/coordinator.py), and a bare echo peer.

Group requests are encoded by hand at the versions librdkafka sends (JoinGroup v5, SyncGroup v3,
Heartbeat v3, all non-flexible) and checked byte for byte against kio (roster's codec) when this
module is imported, so the generator spends microseconds, not tens of them, per request.

Pieces:
  Conn       one TCP connection; request(frame) -> future of the response frame. Responses are
             matched to requests in order (the broker answers in order, like Kafka).
  Blaster    a pipelined connection: keeps `window` pre-encoded heartbeats in flight and writes a
             new one for every answer; counts answers and non-zero error codes.
  GroupDriver drives one consumer group the way a client does: JoinGroup (long poll), SyncGroup
             (the leader sends every assignment), then, until all members hold the same
             generation, a heartbeat every `poll_s` to learn of a further rebalance. A round
             starts with every member's JoinGroup written back to back and ends when every
             member has its SyncGroup answer in one generation.
  Echo       `python bench/loadgen.py echo`: a bare uvloop Protocol server that answers every
             frame at once with a canned response of the right shape and size (the leader's
             JoinGroup answer lists all N members). It is the Python networking floor: what
             any Python broker would cost before doing any group work.

Members in a rebalance each use their own connection: a JoinGroup is a long poll and a broker
reads nothing more from a connection until it has answered the current request.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from roster.protocol.build import make  # noqa: E402
from roster.protocol.codec import (  # noqa: E402
    decode_response,
    encode_request,
    encode_response,
    request_schema,
    response_schema,
)
from roster.protocol.consumer_protocol import (  # noqa: E402
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from roster.protocol.errors import ErrorCode  # noqa: E402

JOIN, SYNC, HEARTBEAT, API_VERSIONS = 11, 14, 12, 18
JOIN_V, SYNC_V, HEARTBEAT_V = 5, 3, 3   # what librdkafka sends
TOPIC = "t"

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS = 22, 25, 27
INVALID_REQUEST, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 42, 79, 82
RETRY_LATER = {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
REJOIN = {ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, INVALID_REQUEST}

I16, I32 = struct.Struct(">h"), struct.Struct(">i")
HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
CORRELATION_AT = 8


class BenchError(RuntimeError):
    pass


def raise_nofile_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


# -- hand encoding (non-flexible versions: int16-length strings, int32-length bytes/arrays) -----

def _s(text: str) -> bytes:
    data = text.encode()
    return I16.pack(len(data)) + data


def _ns(text: str | None) -> bytes:
    return b"\xff\xff" if text is None else _s(text)


def _b(data: bytes) -> bytes:
    return I32.pack(len(data)) + data


def frame(api_key: int, version: int, client_id: str, body: bytes) -> bytearray:
    head = struct.pack(">hhi", api_key, version, 0) + _s(client_id)
    return bytearray(I32.pack(len(head) + len(body)) + head + body)


def join_frame(client_id: str, group: str, session_ms: int, rebalance_ms: int, member_id: str,
               instance_id: str | None, metadata: bytes) -> bytearray:
    body = (_s(group) + I32.pack(session_ms) + I32.pack(rebalance_ms) + _s(member_id)
            + _ns(instance_id) + _s("consumer") + I32.pack(1) + _s("range") + _b(metadata))
    return frame(JOIN, JOIN_V, client_id, body)


def sync_frame(client_id: str, group: str, generation: int, member_id: str,
               instance_id: str | None, assignments: list[tuple[str, bytes]]) -> bytearray:
    parts = [_s(group), I32.pack(generation), _s(member_id), _ns(instance_id),
             I32.pack(len(assignments))]
    for assigned_id, assignment in assignments:
        parts.append(_s(assigned_id))
        parts.append(_b(assignment))
    return frame(SYNC, SYNC_V, client_id, b"".join(parts))


def heartbeat_frame(client_id: str, group: str, generation: int, member_id: str,
                    instance_id: str | None) -> bytearray:
    body = _s(group) + I32.pack(generation) + _s(member_id) + _ns(instance_id)
    return frame(HEARTBEAT, HEARTBEAT_V, client_id, body)


class Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def i16(self) -> int:
        (value,) = I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return value

    def i32(self) -> int:
        (value,) = I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def string(self) -> str | None:
        size = self.i16()
        if size < 0:
            return None
        value = self.data[self.pos:self.pos + size].decode()
        self.pos += size
        return value

    def bytes_(self) -> bytes | None:
        size = self.i32()
        if size < 0:
            return None
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value


@dataclass(slots=True)
class JoinAnswer:
    error: int
    generation: int
    protocol: str | None
    leader: str | None
    member_id: str | None
    members: list[str]


def parse_join(response: bytes) -> JoinAnswer:
    """JoinGroup v5 response frame (size prefix removed): correlation id first."""
    r = Reader(response, 8)  # correlation id, throttle time
    error, generation = r.i16(), r.i32()
    protocol, leader, member_id = r.string(), r.string(), r.string()
    members = []
    for _ in range(r.i32()):
        members.append(r.string())
        r.string()   # group instance id
        r.bytes_()   # metadata
    return JoinAnswer(error, generation, protocol, leader, member_id, members)


def error_of(response: bytes) -> int:
    """Error code of a SyncGroup v3 or Heartbeat v3 response (correlation id, throttle, error)."""
    return I16.unpack_from(response, 8)[0]


def subscription(round_no: int) -> bytes:
    """What a consumer subscribed to topic "t" sends; user data changes every round so a
    follower's rejoin counts as changed metadata and starts a rebalance wherever it lands."""
    return encode_subscription(Subscription(topics=(TOPIC,), user_data=b"round-%06d" % round_no,
                                            version=1))


ASSIGNMENT = encode_assignment(Assignment(partitions=((TOPIC, (0,)),), version=1))


def _check_against_kio() -> None:
    """The hand encodings must be the bytes kio (roster's codec) produces."""
    def same(api_key, version, mine, **fields):
        theirs = encode_request(api_key, version, 0, "c", make(request_schema(api_key, version),
                                                               **fields))
        if bytes(mine) != theirs:
            raise AssertionError(f"hand-encoded api {api_key} v{version} differs from kio")

    import datetime
    meta = subscription(1)
    join_schema = request_schema(JOIN, JOIN_V)
    protocol = join_schema.__dataclass_fields__["protocols"].type.__args__[0]
    same(JOIN, JOIN_V, join_frame("c", "g", 6000, 60000, "m", "i", meta), group_id="g",
         session_timeout=datetime.timedelta(milliseconds=6000),
         rebalance_timeout=datetime.timedelta(milliseconds=60000), member_id="m",
         group_instance_id="i", protocol_type="consumer",
         protocols=(protocol(name="range", metadata=meta),))
    sync_schema = request_schema(SYNC, SYNC_V)
    entry = sync_schema.__dataclass_fields__["assignments"].type.__args__[0]
    same(SYNC, SYNC_V, sync_frame("c", "g", 3, "m", None, [("m", ASSIGNMENT), ("n", b"")]),
         group_id="g", generation_id=3, member_id="m", group_instance_id=None,
         assignments=(entry(member_id="m", assignment=ASSIGNMENT),
                      entry(member_id="n", assignment=b"")))
    same(HEARTBEAT, HEARTBEAT_V, heartbeat_frame("c", "g", 3, "m", "i"), group_id="g",
         generation_id=3, member_id="m", group_instance_id="i")
    # and the parsers read what kio writes
    answer = canned_join(7, "m-1", [("m-1", "i-1"), ("m-2", "i-2")], meta)
    parsed = parse_join(answer)
    assert (parsed.error, parsed.generation, parsed.leader, parsed.member_id, parsed.members) \
        == (0, 7, "m-1", "m-1", ["m-1", "m-2"]), parsed
    assert decode_response(JOIN, JOIN_V, answer)[1].members[1].member_id == "m-2"


def canned_join(generation: int, member_id: str, members: list[tuple[str, str]],
                metadata: bytes, leader: str | None = None) -> bytes:
    schema = response_schema(JOIN, JOIN_V)
    member = schema.__dataclass_fields__["members"].type.__args__[0]
    body = make(schema, error_code=ErrorCode.none, generation_id=generation, protocol_name="range",
                leader=leader or (members[0][0] if members else member_id), member_id=member_id,
                members=tuple(member(member_id=m, group_instance_id=i, metadata=metadata)
                              for m, i in members))
    return encode_response(JOIN, JOIN_V, 0, body)[4:]


_check_against_kio()


# -- connections -------------------------------------------------------------------------------

class Conn(asyncio.Protocol):
    """One connection; requests are answered in order."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._waiting: collections.deque = collections.deque()
        self._correlation = 0
        self.lost: BaseException | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def request(self, request_frame: bytearray) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        if self.lost is not None or self.transport is None or self.transport.is_closing():
            future.set_exception(ConnectionError("connection is closed"))
            return future
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        I32.pack_into(request_frame, CORRELATION_AT, self._correlation)
        self._waiting.append((self._correlation, future))
        self.transport.write(bytes(request_frame))
        return future

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos, end = 0, len(buf)
        while end - pos >= 4:
            size = int.from_bytes(buf[pos:pos + 4], "big")
            stop = pos + 4 + size
            if stop > end:
                break
            response = bytes(buf[pos + 4:stop])
            correlation, future = self._waiting.popleft()
            if I32.unpack_from(response, 0)[0] != correlation:
                self.lost = BenchError(f"correlation id {I32.unpack_from(response, 0)[0]} "
                                       f"answers request {correlation}: out of order")
                self.transport.close()
                return
            if not future.done():
                future.set_result(response)
            pos = stop
        if pos:
            del buf[:pos]

    def connection_lost(self, exc) -> None:
        self.lost = self.lost or exc or ConnectionError("closed by the peer")
        while self._waiting:
            _, future = self._waiting.popleft()
            if not future.done():
                future.set_exception(ConnectionError(f"connection lost: {self.lost}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_conns(host: str, port: int, count: int, factory=Conn, batch: int = 4) -> list:
    """Connect a few at a time, and on Conns say ApiVersions (v0) before the next few, as
    clients do. That paces connects to the server's accept rate: a burst beyond its listen
    backlog (librdkafka's mock: 5; asyncio's default, which roster uses: 100) overflows the
    accept queue, and every dropped SYN costs a 1 s retransmit."""
    conns: list = []
    loop = asyncio.get_running_loop()
    import socket
    while len(conns) < count:
        n = min(batch, count - len(conns))
        made = await asyncio.gather(*(loop.create_connection(factory, host, port)
                                      for _ in range(n)))
        fresh = []
        for transport, protocol in made:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            fresh.append(protocol)
        if factory is Conn:
            await asyncio.gather(*(c.request(frame(API_VERSIONS, 0, "bench", b""))
                                   for c in fresh))
        conns += fresh
    return conns


def close_all(conns) -> None:
    for conn in conns:
        conn.close()


class Blaster(asyncio.Protocol):
    """Keeps `window` pre-encoded requests in flight on one connection; every answer is
    replaced by the next request at once. Counts answers and answers with an error code."""

    def __init__(self, error_at: int = 8) -> None:
        self.transport = None
        self._buf = bytearray()
        self._frames: list[bytes] = []
        self._n = 0
        self._next = 0
        self._error_at = error_at
        self.running = False
        self.answered = 0
        self.errors: collections.Counter = collections.Counter()
        self.in_flight = 0
        self.drained: asyncio.Future | None = None
        self.lost: BaseException | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def start(self, frames: list[bytes], window: int) -> None:
        if not frames:
            return
        self._frames = frames + frames  # slicing across the end without wrapping
        self._n = len(frames)
        window = min(window, self._n)
        self.running = True
        self.in_flight = window
        self._next = window % self._n
        self.transport.write(b"".join(frames[:window]))

    def stop(self) -> asyncio.Future:
        self.running = False
        self.drained = asyncio.get_running_loop().create_future()
        if self.in_flight == 0:
            self.drained.set_result(None)
        return self.drained

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos, end, k = 0, len(buf), 0
        at = self._error_at
        while end - pos >= 4:
            stop = pos + 4 + int.from_bytes(buf[pos:pos + 4], "big")
            if stop > end:
                break
            if buf[pos + 4 + at] or buf[pos + 5 + at]:
                self.errors[I16.unpack_from(buf, pos + 4 + at)[0]] += 1
            pos = stop
            k += 1
        if not k:
            return
        del buf[:pos]
        self.answered += k
        if self.running:
            i = self._next
            self.transport.write(b"".join(self._frames[i:i + k]))
            self._next = (i + k) % self._n
        else:
            self.in_flight -= k
            if self.in_flight <= 0 and self.drained is not None and not self.drained.done():
                self.drained.set_result(None)

    def connection_lost(self, exc) -> None:
        self.lost = exc or ConnectionError("closed by the peer")
        self.running = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(ConnectionError(f"connection lost: {self.lost}"))

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


# -- group driver -------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class Member:
    index: int
    instance_id: str | None
    conn: Conn
    client_id: str
    member_id: str = ""
    generation: int = -1
    synced_generation: int | None = None


@dataclass
class GroupSpec:
    session_ms: int
    rebalance_ms: int
    static: bool = True
    poll_s: float = 1.0             # heartbeat period while the group is not settled
    leader_syncs_last: bool = False  # librdkafka's mock answers a follower's late SyncGroup
    #                                  with INVALID_REQUEST: the leader waits for the followers
    heartbeats: bool = True         # False against the echo peer (its answers mean nothing)


@dataclass
class RoundStats:
    members: int
    first_join_sent: float = 0.0
    last_join_sent: float = 0.0
    last_join_answer: float = 0.0
    settled: float = 0.0
    start_generation: int = -1
    final_generation: int = -1
    joins: int = 0
    syncs: int = 0
    heartbeats: int = 0
    errors: collections.Counter = field(default_factory=collections.Counter)

    @property
    def rebalance_s(self) -> float:
        """Last JoinGroup sent -> every member has its SyncGroup answer."""
        return self.settled - self.last_join_sent

    @property
    def total_s(self) -> float:
        return self.settled - self.first_join_sent

    @property
    def generations(self) -> int:
        """Generations the round went through (a new group starts from generation 0)."""
        return self.final_generation - max(self.start_generation, 0)


class GroupDriver:
    def __init__(self, group_id: str, conns: list[Conn], spec: GroupSpec,
                 leader_client_id: str | None = None) -> None:
        self.group_id = group_id
        self.spec = spec
        self.members = [
            Member(i, f"{group_id}-i{i:05d}" if spec.static else None, conn,
                   leader_client_id if (i == 0 and leader_client_id) else "bench-member")
            for i, conn in enumerate(conns)]
        self._synced: collections.Counter = collections.Counter()
        self._settled: asyncio.Event | None = None
        self._sync_sent: dict[int, set[str]] = collections.defaultdict(set)
        self.stats: RoundStats | None = None

    @property
    def generation(self) -> int:
        return max(m.generation for m in self.members)

    def _join(self, member: Member, round_no: int) -> bytearray:
        return join_frame(member.client_id, self.group_id, self.spec.session_ms,
                          self.spec.rebalance_ms, member.member_id, member.instance_id,
                          subscription(round_no))

    async def run_round(self, round_no: int, timeout_s: float) -> RoundStats:
        """Every member sends JoinGroup (known members with new metadata); returns once every
        member holds a SyncGroup answer of one generation."""
        loop = asyncio.get_running_loop()
        self._settled = asyncio.Event()
        self._synced.clear()
        self._sync_sent.clear()
        for member in self.members:
            member.synced_generation = None
        stats = self.stats = RoundStats(len(self.members), start_generation=self.generation)
        frames = [self._join(m, round_no) for m in self.members]
        stats.first_join_sent = time.perf_counter()
        first = [m.conn.request(f) for m, f in zip(self.members, frames)]
        stats.last_join_sent = time.perf_counter()
        stats.joins += len(first)
        tasks = [loop.create_task(self._member(m, fut, round_no))
                 for m, fut in zip(self.members, first)]
        done = loop.create_task(self._settled.wait())
        try:
            finished, _ = await asyncio.wait([done, *tasks], timeout=timeout_s,
                                             return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in finished if t is not done and t.exception() is not None]
            if failed:
                raise failed[0].exception()
            if not self._settled.is_set():
                raise BenchError(self._stuck_report(timeout_s))
            await asyncio.wait_for(asyncio.gather(*tasks), timeout_s)
        finally:
            for task in (*tasks, done):
                task.cancel()
        stats.final_generation = self.generation
        return stats

    def _stuck_report(self, timeout_s: float) -> str:
        by_generation = collections.Counter(m.synced_generation for m in self.members)
        return (f"group {self.group_id}: not settled after {timeout_s:.0f} s; members synced "
                f"per generation {dict(by_generation)}; errors {dict(self.stats.errors)}")

    def _mark_synced(self, member: Member, generation: int) -> None:
        self._unmark(member)
        member.synced_generation = generation
        self._synced[generation] += 1
        if self._synced[generation] == len(self.members):
            self.stats.settled = time.perf_counter()
            self._settled.set()

    def _unmark(self, member: Member) -> None:
        if member.synced_generation is not None:
            self._synced[member.synced_generation] -= 1
            member.synced_generation = None

    async def _member(self, member: Member, pending: asyncio.Future, round_no: int) -> None:
        stats = self.stats
        while True:
            answer = parse_join(await pending)
            stats.last_join_answer = time.perf_counter()
            if answer.error != NONE:
                stats.errors[f"JoinGroup:{answer.error}"] += 1
                if answer.error == MEMBER_ID_REQUIRED:
                    member.member_id = answer.member_id
                elif answer.error == UNKNOWN_MEMBER_ID:
                    member.member_id = ""
                elif answer.error in RETRY_LATER or answer.error == REBALANCE_IN_PROGRESS:
                    await asyncio.sleep(0.05)
                else:
                    raise BenchError(f"{self.group_id}: JoinGroup answered error {answer.error}")
                pending = self._send_join(member, round_no)
                continue
            member.member_id = answer.member_id
            member.generation = answer.generation
            assignments: list[tuple[str, bytes]] = []
            if answer.leader == answer.member_id:
                assignments = [(m, ASSIGNMENT) for m in answer.members]
                if self.spec.leader_syncs_last:
                    await self._await_followers(answer.generation, set(answer.members)
                                                - {answer.member_id})
            self._sync_sent[answer.generation].add(member.member_id)
            stats.syncs += 1
            error = error_of(await member.conn.request(sync_frame(
                member.client_id, self.group_id, answer.generation, member.member_id,
                member.instance_id, assignments)))
            if error == INVALID_REQUEST and self.spec.leader_syncs_last:
                # The mock answers a follower whose SyncGroup it reads after the leader's with
                # INVALID_REQUEST, though the member is in the generation: if a heartbeat of
                # that generation passes, the member is in (it has missed its assignment).
                stats.errors["SyncGroup:42 (mock: after the leader's)"] += 1
                stats.heartbeats += 1
                error = error_of(await member.conn.request(heartbeat_frame(
                    member.client_id, self.group_id, answer.generation, member.member_id,
                    member.instance_id)))
            if error != NONE:
                stats.errors[f"SyncGroup:{error}"] += 1
                if error == UNKNOWN_MEMBER_ID:
                    member.member_id = ""
                elif error not in REJOIN:
                    raise BenchError(f"{self.group_id}: SyncGroup answered error {error}")
                pending = self._send_join(member, round_no)
                continue
            self._mark_synced(member, answer.generation)
            if await self._wait_settled(member):
                return
            pending = self._send_join(member, round_no)

    def _send_join(self, member: Member, round_no: int) -> asyncio.Future:
        self.stats.joins += 1
        return member.conn.request(self._join(member, round_no))

    async def _await_followers(self, generation: int, followers: set[str]) -> None:
        give_up = time.perf_counter() + self.spec.session_ms / 1000 / 2
        while not followers <= self._sync_sent[generation] and time.perf_counter() < give_up:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)  # let the mock read the last follower's SyncGroup

    async def _wait_settled(self, member: Member) -> bool:
        """True once the group settles; False when a heartbeat says this member must rejoin."""
        while True:
            try:
                await asyncio.wait_for(self._settled.wait(), self.spec.poll_s)
                return True
            except asyncio.TimeoutError:
                pass
            if not self.spec.heartbeats:
                continue
            self.stats.heartbeats += 1
            error = error_of(await member.conn.request(heartbeat_frame(
                member.client_id, self.group_id, member.generation, member.member_id,
                member.instance_id)))
            if error == NONE:
                continue
            if self._settled.is_set():
                return True
            self.stats.errors[f"Heartbeat:{error}"] += 1
            self._unmark(member)
            if error == UNKNOWN_MEMBER_ID:
                member.member_id = ""
            elif error not in REJOIN and error != FENCED_INSTANCE_ID:
                raise BenchError(f"{self.group_id}: Heartbeat answered error {error}")
            return False

    def heartbeat_frames(self) -> list[bytes]:
        return [bytes(heartbeat_frame(m.client_id, self.group_id, m.generation, m.member_id,
                                      m.instance_id)) for m in self.members]


async def form_groups(conns: list[Conn], group_ids: list[str], size: int, spec: GroupSpec,
                      timeout_s: float, progress=None) -> tuple[list[GroupDriver], dict]:
    """Form len(group_ids) groups of `size` members, as many at a time as `conns` allows
    (each forming member needs its own connection)."""
    slots = len(conns) // size
    if slots < 1:
        raise BenchError(f"{len(conns)} connections cannot form a group of {size}")
    drivers: list[GroupDriver] = [None] * len(group_ids)  # type: ignore[list-item]
    totals = collections.Counter()
    errors = collections.Counter()
    done = 0

    async def worker(slot: int) -> None:
        nonlocal done
        mine = conns[slot * size:(slot + 1) * size]
        for index in range(slot, len(group_ids), slots):
            driver = GroupDriver(group_ids[index], mine, spec)
            stats = await driver.run_round(0, timeout_s)
            totals["joins"] += stats.joins
            totals["syncs"] += stats.syncs
            totals["heartbeats"] += stats.heartbeats
            totals["generations"] += stats.final_generation
            errors.update(stats.errors)
            drivers[index] = driver
            done += 1
            if progress and done % max(1, len(group_ids) // 10) == 0:
                progress(f"  formed {done}/{len(group_ids)} groups")

    await asyncio.gather(*(worker(s) for s in range(min(slots, len(group_ids)))))
    return drivers, {"requests": dict(totals), "errors": dict(errors)}


# -- the echo peer ------------------------------------------------------------------------------

class Echo(asyncio.Protocol):
    """Answers each frame at once with a canned response (correlation id patched in)."""

    canned: dict = {}

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._buf = bytearray()

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos, end, out = 0, len(buf), []
        canned = self.canned
        while end - pos >= 4:
            stop = pos + 4 + int.from_bytes(buf[pos:pos + 4], "big")
            if stop > end:
                break
            api_key = buf[pos + 5]
            if api_key == JOIN:
                length = int.from_bytes(buf[pos + 12:pos + 14], "big")
                body = canned.get(bytes(buf[pos + 14:pos + 14 + length])) or canned[JOIN]
            else:
                body = canned[api_key]
            out.append(I32.pack(len(body) + 4))
            out.append(buf[pos + 8:pos + 12])
            out.append(body)
            pos = stop
        if pos:
            del buf[:pos]
            self.transport.write(b"".join(out))


def leader_client_id(size: int) -> str:
    return f"bench-leader-{size}"


def build_canned(sizes: list[int]) -> dict:
    """Response bodies (after the correlation id): a follower's JoinGroup answer, a leader's
    for each group size (all members listed, with roster-shaped member ids), SyncGroup and
    Heartbeat answers."""
    meta = subscription(1)
    canned: dict = {}
    canned[JOIN] = canned_join(1, "bench-member-" + str(uuid.uuid4()), [], meta,
                               leader="bench-leader-" + str(uuid.uuid4()))[4:]
    for size in sizes:
        members = [(f"rb-{size}-i{i:05d}-{uuid.uuid4()}", f"rb-{size}-i{i:05d}")
                   for i in range(size)]
        canned[leader_client_id(size).encode()] = canned_join(1, members[0][0], members,
                                                              meta)[4:]
    sync = make(response_schema(SYNC, SYNC_V), error_code=ErrorCode.none, assignment=ASSIGNMENT)
    canned[SYNC] = encode_response(SYNC, SYNC_V, 0, sync)[8:]
    beat = make(response_schema(HEARTBEAT, HEARTBEAT_V), error_code=ErrorCode.none)
    canned[HEARTBEAT] = encode_response(HEARTBEAT, HEARTBEAT_V, 0, beat)[8:]
    canned[API_VERSIONS] = b"\0\0" + I32.pack(0)  # no error, no api keys: nobody reads it
    return canned


async def serve_echo(host: str, port: int, sizes: list[int]) -> None:
    Echo.canned = build_canned(sizes)
    await serve_until_stopped(Echo, host, port, "echo")


async def serve_until_stopped(protocol, host: str, port: int, name: str) -> None:
    """A floor peer's server: prints "<name> listening on HOST:PORT" (what the benchmarks wait
    for), then serves until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    backlog = int(os.environ.get("ECHO_BACKLOG", "4096"))
    server = await loop.create_server(protocol, host, port, backlog=backlog)
    print(f"{name} listening on {host}:{server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    import signal
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    echo = sub.add_parser("echo", help="serve canned answers (the Python networking floor)")
    echo.add_argument("--host", default="127.0.0.1")
    echo.add_argument("--port", type=int, default=0)
    echo.add_argument("--sizes", default="100,1000,10000",
                      help="group sizes whose leader JoinGroup answer is prepared")
    args = parser.parse_args()
    raise_nofile_limit()
    import uvloop
    uvloop.run(serve_echo(args.host, args.port, [int(s) for s in args.sizes.split(",") if s]))


if __name__ == "__main__":
    main()
