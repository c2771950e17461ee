"""Valid, plausible requests for every advertised (API key, version), from kio's schemas.

Plausible means: names of topics that exist (and sometimes ones that do not, or are invalid),
a few group ids, small partition indexes and counts, short timeouts (so that long polls and
rebalances end quickly), real record batches for Produce and real consumer-protocol bytes for
JoinGroup and SyncGroup. The mutator then breaks these on purpose.
"""
from __future__ import annotations

import random
import struct
import uuid
from dataclasses import dataclass, field

from fuzz.schema import FieldInfo, encode_request, field_infos, header_value
from roster.protocol.codec import request_schema

LEGACY = object()  # marks a version advertised without a kio schema (answered without decoding)


@dataclass
class World:
    """What exists on the broker under test, so requests can name it."""
    topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)  # name -> (id, parts)
    groups: tuple[str, ...] = ("fuzz-group", "fuzz-group-2")


def advertised_versions(registry=None) -> list[tuple[int, str, int]]:
    """(api key, name, version) for every version the broker's registry advertises."""
    if registry is None:
        from roster.broker.handlers import build_registry
        registry = build_registry()
    return [(spec.key, spec.name, v) for spec in registry
            for v in range(spec.min_version, spec.max_version + 1)]


_BAD_TOPIC_NAMES = ("", ".", "..", "a" * 250, "bad/name", "__consumer_offsets", "ünï")
_CONFIG_NAMES = ("retention.ms", "cleanup.policy", "segment.bytes", "max.message.bytes",
                 "retention.bytes", "min.insync.replicas", "no.such.config")
_CONFIG_VALUES = ("1000", "86400000", "compact", "delete", "compact,delete", "-1", "0", "abc",
                  None, "")


class Generator:
    def __init__(self, rng: random.Random, world: World) -> None:
        self.rng = rng
        self.world = world
        self._batches: list[bytes] = []
        self.last_body: dict = {}

    # -- names ------------------------------------------------------------------------------

    def topic_name(self) -> str:
        r = self.rng.random()
        if self.world.topics and r < 0.8:
            return self.rng.choice(sorted(self.world.topics))
        if r < 0.9:
            return f"fuzz-new-{self.rng.randrange(4)}"
        return self.rng.choice(_BAD_TOPIC_NAMES)

    def topic_id(self) -> uuid.UUID:
        r = self.rng.random()
        if self.world.topics and r < 0.8:
            return self.world.topics[self.rng.choice(sorted(self.world.topics))][0]
        return uuid.UUID(int=0) if r < 0.9 else uuid.UUID(int=self.rng.getrandbits(128))

    def group(self) -> str:
        return self.rng.choice(self.world.groups + ("",)) if self.rng.random() < 0.1 \
            else self.rng.choice(self.world.groups)

    def text(self) -> str:
        return "".join(self.rng.choice("abcdefghij-._") for _ in range(self.rng.randrange(8)))

    # -- payloads ---------------------------------------------------------------------------

    def record_batch(self) -> bytes:
        from roster.record_codec import DefaultRecordBatchBuilder
        if len(self._batches) < 8:
            builder = DefaultRecordBatchBuilder(
                magic=2, compression_type=self.rng.choice([0, 0, 1]), is_transactional=False,
                producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
            for i in range(self.rng.randrange(1, 4)):
                builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i,
                               value=b"v" * self.rng.randrange(20), headers=[])
            self._batches.append(bytes(builder.build()))
        return self.rng.choice(self._batches)

    def subscription(self) -> bytes:
        from roster.protocol.consumer_protocol import Subscription, encode_subscription
        topics = tuple(self.topic_name() for _ in range(self.rng.randrange(3)))
        return encode_subscription(Subscription(topics, version=self.rng.randrange(4)))

    def assignment(self) -> bytes:
        from roster.protocol.consumer_protocol import Assignment, encode_assignment
        parts = tuple((self.topic_name(), (0,)) for _ in range(self.rng.randrange(3)))
        return encode_assignment(Assignment(parts))

    # -- fields -----------------------------------------------------------------------------

    def entity(self, cls: type, path: str = "") -> dict:
        value = {}
        for info in field_infos(cls):
            if info.tag is not None:  # tagged fields: present now and then, never null
                if self.rng.random() < 0.3:
                    value[info.name] = self.field(cls, info, allow_null=False)
                continue
            value[info.name] = self.field(cls, info, allow_null=True)
        return value

    def field(self, owner: type, info: FieldInfo, allow_null: bool):
        if allow_null and info.nullable and self.rng.random() < 0.15:
            return None
        if info.array:
            count = self.rng.choice((0, 1, 1, 1, 2, 3))
            return [self.single(owner, info, element=True) for _ in range(count)]
        return self.single(owner, info)

    def single(self, owner: type, info: FieldInfo, element: bool = False):
        if info.entity is not None:
            return self.entity(info.entity)
        name, kind, where = info.name, info.kafka_type, owner.__name__
        rng = self.rng
        if kind == "string":
            text = self.string(name, where)
            # a config's value may be null where the schema allows it (AlterConfigs), not in a
            # key-value pair that must hold one (StreamsGroupHeartbeat's topic configs)
            return "" if text is None and not info.nullable else text
        if kind == "records":
            return self.record_batch() if rng.random() < 0.9 else rng.randbytes(rng.randrange(70))
        if kind == "bytes":
            if name == "metadata":
                return self.subscription()
            if name == "assignment":
                return self.assignment()
            return rng.randbytes(rng.randrange(8))
        if kind == "uuid":
            return self.topic_id()
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "float64":
            return rng.random()
        return self.number(name, kind, where)

    def string(self, name: str, where: str) -> str:
        rng = self.rng
        if name == "name" and "Config" in where:
            return rng.choice(_CONFIG_NAMES)
        if name in ("topic", "topic_names") or (name == "name" and "Topic" in where):
            return self.topic_name()
        if name == "resource_name":
            return self.topic_name() if rng.random() < 0.7 else rng.choice(("0", "1", ""))
        if name == "name" and "Config" in where:
            return rng.choice(_CONFIG_NAMES)
        if name == "value":
            return rng.choice(_CONFIG_VALUES)
        if name in ("group_id", "groups", "groups_names", "coordinator_keys", "key"):
            return self.group()
        if name == "member_id":
            return rng.choice(("", "", "fuzz-member", "consumer-1-abc"))
        if name == "group_instance_id":
            return rng.choice(("inst-1", "inst-2"))
        if name == "protocol_type":
            return rng.choice(("consumer", "consumer", "connect", ""))
        if name in ("protocol_name", "name"):
            return rng.choice(("range", "roundrobin", "cooperative-sticky"))
        if name == "states_filter":
            return rng.choice(("Stable", "Empty", "PreparingRebalance", "Dead", "bogus"))
        if name == "types_filter":
            return rng.choice(("classic", "consumer", "share"))
        if name == "configuration_keys":
            return rng.choice(_CONFIG_NAMES)
        if name == "transactional_id":
            return "fuzz-txn"
        return self.text()

    def number(self, name: str, kind: str, where: str) -> int:
        rng = self.rng
        if name in ("partition", "partition_index", "index", "partitions", "partition_indexes",
                    "broker_ids"):
            return rng.choice((0, 0, 1, 1, 2, -1, 7))
        if name == "num_partitions":
            return rng.choice((1, 2, 3, -1, 0))
        if name == "count":
            return rng.choice((1, 2, 3, 4, 5))
        if name == "replication_factor":
            return rng.choice((1, 1, -1, 3))
        if name == "acks":
            return rng.choice((-1, 1, 1, 0, 2))
        if name in ("max_wait", "timeout"):
            return rng.choice((0, 1, 10, 100))
        if name == "rebalance_timeout":
            return rng.choice((10, 100, 500))
        if name == "session_timeout":
            return rng.choice((6000, 10000, 1, 0))
        if name == "transaction_timeout":
            return rng.choice((1000, 60000))
        if name == "retention_time":
            return rng.choice((-1, 1000))
        if name in ("min_bytes",):
            return rng.choice((0, 1))
        if name in ("max_bytes", "partition_max_bytes"):
            return rng.choice((0, 100, 65536, 1 << 20))
        if name in ("fetch_offset", "committed_offset", "offset", "log_start_offset",
                    "high_watermark"):
            return rng.choice((0, 0, 1, 5, -1, 1000))
        if name == "timestamp":
            return rng.choice((-1, -2, -3, 0, 1_700_000_000_000))
        if name in ("generation_id", "generation_id_or_member_epoch", "member_epoch"):
            return rng.choice((-1, 0, 1))
        if name == "key_type":
            return rng.choice((0, 0, 1, 2))
        if name == "resource_type":
            return rng.choice((2, 2, 4, 0, 99))
        if name == "config_operation":
            return rng.choice((0, 1, 2, 3, 4))
        if name == "isolation_level":
            return rng.choice((0, 1))
        if name in ("producer_id", "replica_id", "session_epoch", "current_leader_epoch",
                    "last_fetched_epoch", "committed_leader_epoch", "producer_epoch",
                    "replica_epoch"):
            return rng.choice((-1, -1, 0))
        lo, hi = {"b": (-128, 127), "h": (-2**15, 2**15 - 1), "i": (-2**31, 2**31 - 1),
                  "q": (-2**63, 2**63 - 1)}.get(_fmt(kind), (0, 255))
        return max(lo, min(hi, rng.choice((0, 0, 1, 2, -1, 10))))

    # -- requests ---------------------------------------------------------------------------

    def request(self, api_key: int, version: int, correlation_id: int | None = None):
        """(frame without size prefix, spans, schema) of a valid request; schema is None and
        spans only the header for a version advertised without a kio schema."""
        schema = request_schema(api_key, version)
        cid = self.rng.randrange(2**31) if correlation_id is None else correlation_id
        client_id = self.rng.choice(("fuzz", "fuzz", None, ""))
        if schema is None:  # e.g. Produce v0-2: a classic header and an arbitrary body
            self.last_body = {}
            frame = struct.pack(">hhih", api_key, version, cid, 4) + b"fuzz" \
                + self.rng.randbytes(self.rng.randrange(40))
            return frame, [], None
        body = self.last_body = self.entity(schema)
        if api_key == 3 and version in (10, 11):
            # the schema has topic ids from v10, but Kafka refuses them below v12
            # (INVALID_REQUEST; roster closes the connection): a valid request names topics
            for topic in body.get("topics") or ():
                topic["topic_id"] = uuid.UUID(int=0)
                if topic.get("name") is None:
                    topic["name"] = self.topic_name()
        frame, spans = encode_request(schema, header_value(api_key, version, cid, client_id),
                                      body)
        return frame, spans, schema


def _fmt(kind: str) -> str:
    from fuzz.schema import FIXED
    return FIXED.get(kind, "B")
