"""Where an admin request goes on a cluster of several brokers, as Kafka's admin client sends it.

A roster broker answers everything itself. On a Kafka cluster a group's offsets and members live
on its coordinator (which answers NOT_COORDINATOR elsewhere), a transactional id's state on its
transaction coordinator, a partition's offsets, producers and records on its leader, and
ListGroups / ListTransactions answer only for what that broker coordinates. AdminClient hands a
request here once Metadata has shown more than one broker; the router sends it to the right
broker (split by leader, or asked of every broker and merged) and returns one answer shaped as
the single-broker one, so the commands do not change.
"""
from __future__ import annotations

import dataclasses
import time

from roster.protocol.api_keys import ApiKey

GROUP, TRANSACTION = 0, 1
# api -> (key type, the request field naming the group or id, the answer's list of results)
BY_KEY = {
    ApiKey.OFFSET_FETCH: (GROUP, "groups", None),
    ApiKey.OFFSET_COMMIT: (GROUP, "group_id", None),
    ApiKey.OFFSET_DELETE: (GROUP, "group_id", None),
    ApiKey.LEAVE_GROUP: (GROUP, "group_id", None),
    ApiKey.DESCRIBE_GROUPS: (GROUP, "groups", "groups"),
    ApiKey.DELETE_GROUPS: (GROUP, "groups_names", "results"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (GROUP, "group_ids", "groups"),
    ApiKey.DESCRIBE_TRANSACTIONS: (TRANSACTION, "transactional_ids", None),
}
# asked of every broker: the answer's list field that is merged
EVERY_BROKER = {ApiKey.LIST_GROUPS: "groups", ApiKey.LIST_TRANSACTIONS: "transaction_states"}
# sent to the leader of the (one) partition they name
BY_LEADER = {ApiKey.FETCH, ApiKey.DESCRIBE_PRODUCERS, ApiKey.WRITE_TXN_MARKERS}
ROUTED = frozenset(BY_KEY) | frozenset(EVERY_BROKER) | BY_LEADER | {ApiKey.LIST_OFFSETS}
RETRIABLE = {"coordinator_not_available", "coordinator_load_in_progress", "not_coordinator"}


class Router:
    def __init__(self, origin, brokers: dict[int, str], connect) -> None:
        """`origin`: the bootstrap AdminClient; `brokers`: node id -> host:port; `connect`:
        address -> a new (non-routing) AdminClient with the same security."""
        self._origin = origin
        self.brokers = brokers
        self._connect = connect
        self._clients: dict[str, object] = {}

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def send(self, api_key: int, fields: dict, send_to):
        """The answer to the request, from the broker(s) that hold what it names;
        send_to(client, fields) sends it on one connection."""
        if api_key in BY_KEY:
            return self._by_key(api_key, fields, send_to)
        if api_key in EVERY_BROKER:
            merged_field = EVERY_BROKER[api_key]
            answers = [send_to(self._node(n), fields) for n in sorted(self.brokers)]
            merged = [entry for a in answers for entry in getattr(a, merged_field)]
            return dataclasses.replace(answers[0], **{merged_field: tuple(merged)})
        if api_key == ApiKey.LIST_OFFSETS:
            return self._list_offsets(fields, send_to)
        return send_to(self._leader(*_one_partition(api_key, fields)), fields)

    # -- by group or transactional id --------------------------------------------------------

    def _by_key(self, api_key: int, fields: dict, send_to):
        key_type, field, results = BY_KEY[api_key]
        if api_key == ApiKey.OFFSET_FETCH:   # v8+ batches groups, older versions name one
            groups = fields.get("groups")
            keys = [g.group_id for g in groups] if groups else [fields["group_id"]]
        elif results is None:
            value = fields[field]
            keys = [value] if isinstance(value, str) else list(value)
        else:
            keys = list(fields[field])
        if len(keys) == 1 or results is None:
            return self._at_coordinator(keys[0], key_type, fields, send_to)
        # several groups: each to its own coordinator, the results joined in order
        answers = [self._at_coordinator(k, key_type, {**fields, field: (k,)}, send_to)
                   for k in keys]
        merged = [entry for a in answers for entry in getattr(a, results)]
        return dataclasses.replace(answers[0], **{results: tuple(merged)})

    def _at_coordinator(self, key: str, key_type: int, fields: dict, send_to,
                        timeout_s: float = 30.0):
        """Sent to the key's coordinator; again, to the one FindCoordinator names then, while
        the answer is NOT_COORDINATOR (a coordinator moving to another broker answers so for
        a moment), as Kafka's admin client retries."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = send_to(self.coordinator(key, key_type), fields)
            if not _moving(answer) or time.monotonic() >= deadline:
                return answer
            time.sleep(0.1)

    def coordinator(self, key: str, key_type: int, timeout_s: float = 30.0):
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self._origin.call_here(ApiKey.FIND_COORDINATOR, key=key, key_type=key_type,
                                            coordinator_keys=(key,))
            found = answer.coordinators[0] if getattr(answer, "coordinators", None) else answer
            if not found.error_code.value:
                return self._node(found.node_id, f"{found.host}:{found.port}")
            if found.error_code.name not in RETRIABLE or time.monotonic() >= deadline:
                return self._origin   # its answer carries the error, as on one broker
            time.sleep(0.1)   # Kafka's retry.backoff.ms while a coordinator is elected

    # -- by partition leader ---------------------------------------------------------------------

    def _leaders(self, topics, by_id: bool = False) -> dict[tuple[object, int], int]:
        """(topic, partition) -> leader node id; topics named, or by id (Fetch v13+)."""
        schema = self._origin.entry(ApiKey.METADATA, "topics")
        wanted = tuple(schema(name=None, topic_id=t) if by_id else schema(name=t, topic_id=None)
                       for t in topics)
        answer = self._origin.call_here(
            ApiKey.METADATA, topics=wanted, allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
        return {(t.topic_id if by_id else t.name, p.partition_index): p.leader_id
                for t in answer.topics for p in t.partitions}

    def _leader(self, topic, partition: int):
        by_id = not isinstance(topic, str)
        leader = self._leaders([topic], by_id).get((topic, partition), -1)
        return self._node(leader) if leader in self.brokers else self._origin

    def _list_offsets(self, fields: dict, send_to):
        """One ListOffsets per leader, each with its partitions; the answers joined back."""
        topics = fields["topics"]
        leaders = self._leaders(sorted({t.name for t in topics}))
        by_node: dict[int, list] = {}
        for topic in topics:
            for p in topic.partitions:
                by_node.setdefault(leaders.get((topic.name, p.partition_index), -1), []).append(
                    (topic, p))
        answers = []
        for node, entries in sorted(by_node.items()):
            parts: dict[str, list] = {}
            heads = {}
            for topic, p in entries:
                parts.setdefault(topic.name, []).append(p)
                heads[topic.name] = topic
            request = tuple(dataclasses.replace(heads[n], partitions=tuple(ps))
                            for n, ps in parts.items())
            target = self._node(node) if node in self.brokers else self._origin
            answers.append(send_to(target, {**fields, "topics": request}))
        joined: dict[str, list] = {}
        first: dict[str, object] = {}
        for answer in answers:
            for topic in answer.topics:
                joined.setdefault(topic.name, []).extend(topic.partitions)
                first.setdefault(topic.name, topic)
        return dataclasses.replace(answers[0], topics=tuple(
            dataclasses.replace(first[n], partitions=tuple(ps)) for n, ps in joined.items()))

    def _node(self, node_id: int, address: str | None = None):
        address = address or self.brokers[node_id]
        if address == self._origin.address:
            return self._origin
        if address not in self._clients:
            self._clients[address] = self._connect(address)
        return self._clients[address]


def _one_partition(api_key: int, fields: dict) -> tuple[str, int]:
    if api_key == ApiKey.FETCH:   # named up to v12, by id from v13
        topic = fields["topics"][0]
        name = getattr(topic, "topic", None)
        return name if name else topic.topic_id, topic.partitions[0].partition
    if api_key == ApiKey.DESCRIBE_PRODUCERS:
        topic = fields["topics"][0]
        return topic.name, topic.partition_indexes[0]
    topic = fields["markers"][0].topics[0]   # WriteTxnMarkers
    return topic.name, topic.partition_indexes[0]


def _moving(answer, depth: int = 0) -> bool:
    """Whether an answer (or an entry of its lists) says the coordinator is elsewhere (an
    undecoded answer, call_undecoded's (version, frame), is not read here)."""
    if not dataclasses.is_dataclass(answer):
        return False
    error = getattr(answer, "error_code", None)
    if error is not None and getattr(error, "name", "") in ("not_coordinator",
                                                           "coordinator_not_available"):
        return True
    if depth >= 2:
        return False
    for f in dataclasses.fields(answer):
        value = getattr(answer, f.name)
        if isinstance(value, tuple) and any(_moving(v, depth + 1) for v in value):
            return True
    return False
