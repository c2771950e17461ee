"""The least a CPython broker can do per classic heartbeat: one loop over the received bytes
(Heartbeat v3 frames) that does only a heartbeat's irreducible work, inline, with no layers
between the socket's bytes and the answer: split the frame, read the header and the four
fields, find the group and the member in two dicts, compare the generation, move the member's
session deadline, and pack the answer. No authorization, no group states, no static-member
check, no timers, no metrics, no fault hooks, the clock read once per read: what roster costs
above this is the price of its request path and coordinator, not of the language.

Two uses:
- in-process, over the same byte stream as roster (bench/heartbeat_broker.py --floor: best_ns);
- as a server on loopback (`python bench/heartbeat_floor.py --members FILE`, FILE holding the
  members' [group id, generation, member id] as JSON; it prints "floor listening on
  HOST:PORT"), which bench/versus_kafka.py blasts like a broker, beside its echo floor.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import struct
import time

# size, api_key, api_version, correlation_id, then the client id's length
HEADER = struct.Struct(">ihhih")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
GENERATION_AND_LENGTH = struct.Struct(">ih")
# Heartbeat v3's answer: size 10, then (after the correlation id) throttle time and error code
ANSWER_SIZE = INT32.pack(10)
NO_THROTTLE = INT32.pack(0)
ERRORS = {code: NO_THROTTLE + INT16.pack(code) for code in (0, 22, 25)}


class Member:
    __slots__ = ("session_timeout_ms", "deadline_ms")

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.deadline_ms = 0


class Group:
    __slots__ = ("generation", "members")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.members: dict[str, Member] = {}


def serve(stream, groups: dict[str, Group], now_ms: int) -> tuple[bytes, int]:
    """Every whole frame of `stream` answered, as one write; and where the unanswered rest
    (the start of a frame) begins."""
    out = []
    start, end = 0, len(stream)
    while start + HEADER.size <= end:   # (a read may end inside a frame's header)
        size, _, _, correlation_id, client_length = HEADER.unpack_from(stream, start)
        following = start + 4 + size
        if following > end:
            break
        at = start + 14 + client_length
        (group_length,) = INT16.unpack_from(stream, at)
        at += 2
        group_id = stream[at:at + group_length].decode()
        at += group_length
        generation, member_length = GENERATION_AND_LENGTH.unpack_from(stream, at)
        at += 6
        member_id = stream[at:at + member_length].decode()
        at += member_length
        (instance_length,) = INT16.unpack_from(stream, at)
        stream[at + 2:at + 2 + instance_length].decode()   # read, as a broker must
        group = groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            error = 25   # UNKNOWN_MEMBER_ID
        elif generation != group.generation:
            error = 22   # ILLEGAL_GENERATION
        else:
            member.deadline_ms = now_ms + member.session_timeout_ms
            error = 0
        out.append(ANSWER_SIZE + INT32.pack(correlation_id) + ERRORS[error])
        start = following
    return b"".join(out), start


def member_table(members) -> dict[str, Group]:
    """Groups of the (group id, generation, member id) given, each member with a 30 s session."""
    groups: dict[str, Group] = {}
    for group_id, generation, member_id in members:
        groups.setdefault(group_id, Group(generation)).members[member_id] = Member(30_000)
    return groups


def best_ns(stream: bytes, count: int, members, repeat: int) -> tuple[float, bytes]:
    """CPU ns per heartbeat (best of `repeat` passes) of serve() over `stream`, which holds
    `count` heartbeats of `members` ((group id, generation, member id)); and one pass's answers,
    to check."""
    groups = member_table(members)
    answers, _ = serve(stream, groups, int(time.time() * 1000))
    best = None
    for _ in range(repeat):
        started = time.process_time()
        serve(stream, groups, int(time.time() * 1000))
        elapsed = time.process_time() - started
        best = elapsed if best is None else min(best, elapsed)
    return best / count * 1e9, answers


class Peer(asyncio.Protocol):
    """serve() behind a socket: each read's whole frames answered with one write."""

    groups: dict[str, Group] = {}

    def connection_made(self, transport) -> None:
        self.transport = transport
        self._buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        answers, used = serve(buffer, self.groups, int(time.time() * 1000))
        if used:
            del buffer[:used]
            self.transport.write(answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", required=True,
                        help="JSON file: [[group id, generation, member id], ...]")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with open(args.members) as f:
        Peer.groups = member_table(json.load(f))
    import uvloop

    import loadgen   # bench/, this script's folder
    uvloop.run(loadgen.serve_until_stopped(Peer, args.host, args.port, "floor"))


if __name__ == "__main__":
    main()
