#!/usr/bin/env python3
"""What the dispatcher costs per request, in-process: frames served through
Connection._start_request (the path a socket's bytes take once framed: prefix, registry,
admission, decode, handler, coordinator, encode), without sockets, CPU time per request.

Run it against two source trees in alternating runs (PYTHONPATH picks the tree; the frames
are built by this checkout), pinned to one CPU, and compare medians: on a shared machine the
socket benchmarks (hardening.py, coordinator.py) swing by 3x between rounds, this by a few %.

    for i in 1 2 3 4 5 6; do for side in pre post; do
      PYTHONPATH=/tmp/roster-$side/src taskset -c 1 .venv/bin/python bench/dispatch.py
    done; done

Workloads (each timed as the best of --repeat passes of --count requests):
  heartbeat   Heartbeat v4 of a member of a Stable group of 1 (the raw handler: answered
              NONE, the member's session pushed on)
  consumer    (not in the default list) ConsumerGroupHeartbeat v1 of a member of a Stable
              consumer group of 1, steady (group, member id and epoch; every other field null)
  join        JoinGroup v5 with no member id (answered MEMBER_ID_REQUIRED at once)
  metadata    Metadata v12 naming one topic
  commit      OffsetCommit v8 of one partition into a simple group (a record written to the
              memory sink, the answer released after it)
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
import time
import uuid
from types import SimpleNamespace


def frames(api_key, version, body_fields, count):
    from roster.protocol.build import element  # noqa: F401  (same tree as the broker)
    from roster.protocol.codec import encode_request, request_schema
    schema = request_schema(api_key, version)
    frame = encode_request(api_key, version, 7, "bench", schema(**body_fields))
    return [frame[4:]] * count


def build(args):
    from roster.broker.groups.runtime import GroupRuntime
    from roster.broker.handlers import build_registry
    from roster.broker.network.connection import Connection
    from roster.broker.partitions.topics import Topic
    from roster.coordinator.config import GroupConfig
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema

    class Topics:
        version = 0   # TopicManager.version: the catalog never changes here

        def __init__(self, topic):
            self.topic = topic

        def get(self, name):
            return self.topic if name == self.topic.name else None

        def by_id(self, topic_id):
            return self.topic if topic_id == self.topic.topic_id else None

        def __iter__(self):
            return iter([self.topic])

        def __contains__(self, name):
            return name == self.topic.name

    class Broker:  # a plain object, as roster's Broker is
        pass

    broker = Broker()
    broker.config = {"socket.request.max.bytes": 100 * 1024 * 1024}
    broker.registry = build_registry()
    broker.groups = GroupRuntime(GroupConfig(initial_rebalance_delay_ms=0))
    broker.topics = Topics(Topic("orders", uuid.UUID(int=5), {}, [object()]))
    broker.endpoint = SimpleNamespace(node_id=1, host="localhost", port=9092)
    broker.cluster_id = "bench"
    broker.auto_create = lambda name: None
    conn = Connection(broker, SimpleNamespace(queued=None))
    conn.ip, conn.client_host = "127.0.0.1", "/127.0.0.1"

    def entity(key, version, *path, **values):
        schema = request_schema(key, version)
        for name in path:
            schema = element(schema, name)
        return schema(**values)

    work = {
        "join": frames(11, 5, dict(
            group_id="bench-join", session_timeout=datetime.timedelta(seconds=10),
            rebalance_timeout=datetime.timedelta(seconds=10), member_id="",
            group_instance_id=None, protocol_type="consumer",
            protocols=(entity(11, 5, "protocols", name="range", metadata=b""),)), args.count),
        "metadata": frames(3, 12, dict(
            topics=(entity(3, 12, "topics", name="orders", topic_id=None),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False),
            args.count),
        "commit": frames(8, 8, dict(
            group_id="bench-simple", generation_id_or_member_epoch=-1, member_id="",
            group_instance_id=None, topics=(entity(8, 8, "topics", name="orders", partitions=(
                entity(8, 8, "topics", "partitions", partition_index=0, committed_offset=5,
                       committed_leader_epoch=-1, committed_metadata=""),)),)), args.count),
    }
    return broker, conn, work


async def form_group(conn):
    """One member joined and synced: its heartbeats are answered NONE."""
    from roster.protocol.codec import decode_response
    join = frames(11, 5, dict(
        group_id="bench-hb", session_timeout=datetime.timedelta(seconds=30),
        rebalance_timeout=datetime.timedelta(seconds=30), member_id="",
        group_instance_id="static-1", protocol_type="consumer",
        protocols=(_protocol(),)), 1)[0]
    answer = conn._start_request(join)
    answer = answer if isinstance(answer, bytes) else await answer
    _, body = decode_response(11, 5, answer[4:])
    member_id, generation = body.member_id, body.generation_id
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    assignment = element(request_schema(14, 3), "assignments")(member_id=member_id,
                                                                 assignment=b"")
    sync = frames(14, 3, dict(group_id="bench-hb", generation_id=generation,
                              member_id=member_id, group_instance_id="static-1",
                              assignments=(assignment,)), 1)[0]
    answer = conn._start_request(sync)
    answer = answer if isinstance(answer, bytes) else await answer
    return member_id, generation


async def join_consumer(conn, count):
    """One consumer-protocol member joined: its steady ConsumerGroupHeartbeat frames."""
    from roster.protocol.codec import decode_response
    fields = dict(group_id="bench-cg", member_id=str(uuid.uuid4()), instance_id=None,
                  rack_id=None, subscribed_topic_regex=None, server_assignor=None)
    join = frames(68, 1, dict(fields, member_epoch=0, topic_partitions=(),
                              rebalance_timeout=datetime.timedelta(seconds=30),
                              subscribed_topic_names=("orders",)), 1)[0]
    answer = conn._start_request(join)
    answer = answer if isinstance(answer, bytes) else await answer
    _, body = decode_response(68, 1, answer[4:])
    return frames(68, 1, dict(fields, member_epoch=body.member_epoch, topic_partitions=None,
                              rebalance_timeout=datetime.timedelta(milliseconds=-1),
                              subscribed_topic_names=None), count)


def _protocol():
    from roster.protocol.build import element
    from roster.protocol.codec import request_schema
    return element(request_schema(11, 5), "protocols")(name="range", metadata=b"")


async def run(args) -> dict:
    broker, conn, work = build(args)
    member_id, generation = await form_group(conn)
    work["heartbeat"] = frames(12, 4, dict(group_id="bench-hb", generation_id=generation,
                                           member_id=member_id,
                                           group_instance_id="static-1"), args.count)
    if "consumer" in args.workloads.split(","):
        work["consumer"] = await join_consumer(conn, args.count)
    results = {}
    for name in args.workloads.split(","):
        best = None
        for _ in range(args.repeat):
            batch = work[name]
            start = time.process_time()
            for frame in batch:
                answer = conn._start_request(frame)
                if not isinstance(answer, bytes) and answer is not None:
                    await answer
            elapsed = time.process_time() - start
            best = elapsed if best is None else min(best, elapsed)
        results[name] = best / len(work[name]) * 1e9
    broker.groups.close()
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workloads", default="heartbeat,join,metadata,commit",
                    help="also: consumer")
    ap.add_argument("--gc", choices=("on", "off"), default="on",
                    help="off: no cyclic garbage collection while timing (the commit workload "
                         "keeps every record in memory, which makes collections ever longer)")
    args = ap.parse_args()
    if args.gc == "off":
        import gc
        gc.disable()
    import roster
    results = asyncio.run(run(args))
    print(json.dumps({"tree": roster.__file__, "ns_per_request": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
