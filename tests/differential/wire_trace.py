"""A raw Kafka-protocol connection that records what it observes into a Trace, normalised.

Every request a scenario sends goes through `TracedConn`: the trace gets one entry per answer with
the API, the version, every error code in the answer (top level and nested, in order) and any
fields the scenario asks to keep. Requests are built from plain dicts (nested entities from
nested dicts) at the fixed versions in VERSIONS, the same for both peers.

Normalisation (what Kafka leaves open, so it never appears in a trace):
- member ids: replaced by m1, m2, ... in the order the trace first sees them (Kafka makes them
  `client.id-UUID`; clients only echo them back);
- topic ids: replaced by t1, t2, ...;
- node ids, hosts and ports of brokers/coordinators, cluster ids: replaced by "<node>",
  "<host>", "<port>", dropped;
- throttle times: dropped (quotas are not compared);
- KIP-848 epochs (member, group and assignment epochs): counted from the first one the trace
  sees, which becomes 1 (the first value itself is an entry of its own, "first KIP-848 epoch":
  a new group hands its first member epoch 2 in both); -1, -2 and 0 stay as they are, and so do
  gaps between epochs;
- lists of members: Kafka keeps them in a hash map, so their order is open; they are sorted by
  instance id, then by symbol;
- lists of topics by id (assignments): Kafka's order is a hash map's, so they are sorted by
  topic symbol; a scenario's topics get their symbols in the order it creates them;
- the SASL mechanisms a broker offers: sorted (Kafka keeps them in a set);
- clocks: a timer outcome is recorded as "within [lo, hi] ms" (the tolerance), never the time;
  the time itself is kept beside the trace, and roster's must lie within max(500 ms, 25%) of
  Kafka's in the same run.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import itertools
import typing
import uuid

from kio.schema.errors import ErrorCode

from roster.protocol import newer_versions
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element
from roster.protocol.codec import decode_response, encode_request, request_schema
from roster.protocol.consumer_protocol import decode_assignment, decode_subscription
from roster.security.client import (
    AuthenticationError,
    ClientSecurity,
    run_conversation,
    sasl_conversation,
)
from tests.support.wire import Wire

# One version per API for both peers: the highest that Kafka 4.4, roster and kio all speak
# while the APIs still name topics (OffsetCommit/OffsetFetch v10 switch to topic ids).
VERSIONS = {
    ApiKey.JOIN_GROUP: 9, ApiKey.SYNC_GROUP: 5, ApiKey.HEARTBEAT: 4, ApiKey.LEAVE_GROUP: 5,
    ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9, ApiKey.OFFSET_DELETE: 0,
    ApiKey.DESCRIBE_GROUPS: 5, ApiKey.LIST_GROUPS: 5, ApiKey.DELETE_GROUPS: 2,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 1, ApiKey.CONSUMER_GROUP_DESCRIBE: 1,
    ApiKey.FIND_COORDINATOR: 6, ApiKey.METADATA: 12, ApiKey.CREATE_TOPICS: 7,
    ApiKey.CREATE_PARTITIONS: 3, ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.DESCRIBE_CONFIGS: 4, ApiKey.API_VERSIONS: 3, ApiKey.CREATE_ACLS: 3,
    ApiKey.DESCRIBE_ACLS: 3,
}
MEMBER_FIELDS = {"member_id", "leader", "leader_id"}
EPOCH_FIELDS = {"member_epoch", "group_epoch", "assignment_epoch"}
DROPPED = {"throttle_time", "cluster_id"}
HIDDEN = {"node_id": "<node>", "host": "<host>", "port": "<port>", "leader_id_node": "<node>"}
CONSUMER_BYTES = {"metadata": decode_subscription, "member_metadata": decode_subscription,
                  "assignment": decode_assignment, "member_assignment": decode_assignment}


class Trace:
    """What one run of one scenario observed, in the order the scenario read it."""

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self._symbols: dict[str, dict[str, str]] = {"m": {}, "t": {}}
        self._steps: dict[str, itertools.count] = {}
        self._first_epoch: int | None = None
        # timer outcomes as measured, in ms, out of the entries: the harness compares the two
        # brokers' readings of one run against each other (harness.compare_timings)
        self.timings: dict[str, float] = {}

    def symbol(self, kind: str, real: str) -> str:
        table = self._symbols[kind]
        if real not in table:
            table[real] = f"{kind}{len(table) + 1}"
        return table[real]

    def member(self, real: str) -> str:
        return self.symbol("m", real) if real else real

    def finish(self) -> None:
        """The one epoch value the normalisation hides, kept as an entry of its own."""
        if self._first_epoch is not None:
            self.add("first KIP-848 epoch", value=self._first_epoch)

    def step(self, label: str) -> str:
        """`label#n`: the n-th entry with this label (keys the expected-differences table)."""
        counter = self._steps.setdefault(label, itertools.count(1))
        return f"{label}#{next(counter)}"

    def add(self, label: str, **observed) -> dict:
        entry = {"step": self.step(label), **observed}
        self.entries.append(entry)
        return entry

    def plain(self, value, key: str = ""):
        """A decoded answer as plain data with the normalisation applied."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: self.plain(getattr(value, f.name), f.name)
                    for f in dataclasses.fields(value)
                    if not f.name.startswith("__") and f.name not in DROPPED}
        if isinstance(value, (tuple, list)):
            if key == "mechanisms":
                return sorted(value)
            if value and all(hasattr(v, "member_id") for v in value):
                value = sorted(value, key=self._member_order)
            elif value and all(hasattr(v, "topic_id") for v in value):
                value = sorted(value, key=lambda v: self.symbol("t", str(v.topic_id)))
            return [self.plain(v, key) for v in value]
        if isinstance(value, ErrorCode):
            return value.name
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, datetime.timedelta):
            return int(value.total_seconds() * 1000)
        if isinstance(value, datetime.datetime):
            return "<time>"
        if isinstance(value, uuid.UUID):
            return "<zero>" if value.int == 0 else self.symbol("t", str(value))
        if key in HIDDEN and value is not None:
            return HIDDEN[key]
        if key in EPOCH_FIELDS and isinstance(value, int) and value > 0:
            if self._first_epoch is None:
                self._first_epoch = value
            return value - self._first_epoch + 1
        if key in MEMBER_FIELDS and isinstance(value, str):
            return self.member(value)
        if key in CONSUMER_BYTES and isinstance(value, bytes) and value:
            try:
                return self.plain(CONSUMER_BYTES[key](value))
            except ValueError:
                return value.hex()
        if isinstance(value, bytes):
            return value.hex()
        return value


    def _member_order(self, entity) -> tuple:
        known = self._symbols["m"].get(entity.member_id)
        return (getattr(entity, "group_instance_id", None) or getattr(entity, "instance_id", None)
                or "", known is None, known or entity.member_id)


def error_codes(answer) -> list[str]:
    """Every error_code in the answer, depth first in field order, as names."""
    found: list[str] = []

    def walk(value) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                item = getattr(value, f.name)
                if f.name == "error_code":
                    found.append(ErrorCode(int(item)).name)
                else:
                    walk(item)
        elif isinstance(value, tuple):
            for item in value:
                walk(item)

    walk(answer)
    return found


def build(schema: type, values: dict):
    """schema(**values), nested dicts built into their entity classes; fields left out get the
    empty value of their type (None, (), False, ""; -1 for an epoch or generation)."""
    hints = typing.get_type_hints(schema)
    kwargs = {}
    for name, hint in hints.items():
        if name.startswith("__"):
            continue
        if name not in values:
            kwargs[name] = _empty(name, hint)
            continue
        value = values[name]
        if isinstance(value, dict):
            value = build(element(schema, name), value)
        elif isinstance(value, (list, tuple)):
            value = tuple(build(element(schema, name), v) if isinstance(v, dict) else v
                          for v in value)
        elif isinstance(value, int) and "Timedelta" in str(hint):
            value = datetime.timedelta(milliseconds=value)
        kwargs[name] = value
    return schema(**kwargs)


def _empty(name: str, hint):
    text = str(hint)
    if name.endswith(("epoch", "generation_id")) and "None" not in text:
        return -1  # what clients send when they have none
    if "None" in text:
        return None
    if typing.get_origin(hint) is tuple:
        return ()
    if hint is bool:
        return False
    if hint is str:
        return ""
    raise TypeError(f"no default for a field of type {hint}")


class TracedConn(Wire):
    """One TCP connection; `send` then `recv` (answers come back in request order), or `call`.
    Reading a frame from a connection the broker closed raises ConnectionError."""

    def __init__(self, bootstrap: str, trace: Trace | None, who: str,
                 timeout_s: float = 30.0) -> None:
        super().__init__(bootstrap, timeout_s)
        self.trace, self.who = trace, who
        self._pending: list[tuple[int, int, int]] = []

    def send(self, api: ApiKey, version: int | None = None, **fields) -> None:
        version = VERSIONS[api] if version is None else version
        body = build(request_schema(api, newer_versions.kio_version(api, version)), fields)
        correlation_id = next(self._ids)
        encode = newer_versions.encode_request if newer_versions.has_layout(api, version) \
            else encode_request
        self.sock.sendall(encode(api, version, correlation_id, self.who, body))
        self._pending.append((api, version, correlation_id))

    def authenticate(self, user: str, password: str, mechanism: str) -> dict:
        """SaslHandshake + SaslAuthenticate as `user` (roster's client conversation), out of
        the trace; returns what a client observes: accepted, the offered mechanisms (sorted:
        Kafka keeps them in a set), the SaslAuthenticate rounds, the last error and message."""
        seen = {"accepted": False, "rounds": 0, "error": None, "message": None}
        trace, self.trace = self.trace, None

        def call(api, version, fields):
            answer = self.call(api, version, **fields)
            if api == ApiKey.SASL_HANDSHAKE:
                seen["mechanisms"] = sorted(answer.mechanisms)
            else:
                seen["rounds"] += 1
            seen["error"] = ErrorCode(int(answer.error_code)).name
            seen["message"] = getattr(answer, "error_message", None)
            return answer

        security = ClientSecurity.from_config({
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password})
        versions = {ApiKey.SASL_HANDSHAKE: 1, ApiKey.SASL_AUTHENTICATE: 2}
        try:
            run_conversation(sasl_conversation(security, versions, "broker"), call)
            seen["accepted"] = True
        except AuthenticationError:
            pass
        finally:
            self.trace = trace
        return seen

    def recv(self, keep: tuple[str, ...] = ()):
        """The next answer; the trace gets its API, version, error codes and the `keep` fields."""
        api, version, correlation_id = self._pending.pop(0)
        decode = newer_versions.decode_response if newer_versions.has_layout(api, version) \
            else decode_response
        got, answer = decode(api, version, self.read_frame())
        assert got == correlation_id, (got, correlation_id)
        if self.trace is not None:
            observed = {"api": ApiKey(api).name, "v": version, "errors": error_codes(answer)}
            for name in keep:
                observed[name] = self.trace.plain(getattr(answer, name), name)
            self.trace.add(f"{self.who} {ApiKey(api).name}", **observed)
        return answer

    def call(self, api: ApiKey, version: int | None = None, keep: tuple[str, ...] = (),
             **fields):
        self.send(api, version, **fields)
        return self.recv(keep)

    def closed_by_peer(self, timeout_s: float = 5.0) -> bool:
        """True when the broker closes this connection within timeout_s (EOF or reset)."""
        self.sock.settimeout(timeout_s)
        return super().closed_by_peer()
