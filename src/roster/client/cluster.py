"""What the client knows of the cluster: brokers, topic partition leaders, topic ids, and one
connection per broker, opened when first needed."""
from __future__ import annotations

import uuid

from roster.client import requests
from roster.client.bootstrap import Bootstrap
from roster.client.connection import (
    REQUEST_TIMEOUT_MS,
    BrokerConnection,
    ConnectionClosed,
    as_security,
)
from roster.client.errors import AuthorizationError
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import request_schema
from roster.protocol.errors import ErrorCode


class CoordinatorUnavailable(ConnectionError):
    """FindCoordinator answered an error (COORDINATOR_NOT_AVAILABLE while it loads, or an
    authorization refusal): `error` says which."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(f"no coordinator: {error.name.upper()}")
        self.error = error


class Cluster:
    def __init__(self, bootstrap: str, client_id: str, security=None,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS) -> None:
        self._bootstrap = Bootstrap(bootstrap)
        self.request_timeout_ms = request_timeout_ms
        self._client_id = client_id
        self.security = as_security(security)
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap_connection: BrokerConnection | None = None
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.partitions: dict[str, int] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}

    async def _any_broker(self) -> BrokerConnection:
        """The connection for Metadata and FindCoordinator: to any bootstrap server (or known
        broker) that accepts, so one broker down does not stop the client."""
        if self._bootstrap_connection is None or self._bootstrap_connection.closed:
            self._bootstrap_connection = await self._bootstrap.connect(self._open)
        return self._bootstrap_connection

    def _bootstrap_failed(self) -> None:
        if self._bootstrap_connection is not None:
            self._bootstrap_connection.close()
        self._bootstrap_connection = None
        self._bootstrap.failed()

    async def refresh(self, topics, create: bool = False) -> dict[str, int]:
        """Metadata for these topics; returns partition counts of those that exist."""
        connection = await self._any_broker()

        def body(version):
            schema = request_schema(ApiKey.METADATA, version)
            entry = element(schema, "topics")
            return make(schema, topics=tuple(make(entry, name=t, topic_id=None) for t in topics),
                        allow_auto_topic_creation=create,
                        include_topic_authorized_operations=False)

        try:
            answer = await connection.call(ApiKey.METADATA, body)
        except ConnectionClosed:
            self._bootstrap_failed()
            raise
        self.brokers = {b.node_id: (b.host, b.port) for b in answer.brokers}
        self._bootstrap.learn(self.brokers)
        counts = {}
        for topic in answer.topics:
            if topic.error_code is ErrorCode.topic_authorization_failed:
                raise AuthorizationError(topic.error_code, topic.name, "DESCRIBE")
            if topic.error_code is not ErrorCode.none:
                continue
            counts[topic.name] = self.partitions[topic.name] = len(topic.partitions)
            if getattr(topic, "topic_id", None) is not None:
                self.topic_ids[topic.name] = topic.topic_id
            for p in topic.partitions:
                if p.leader_id >= 0:   # -1: no leader right now (an election under way)
                    self.leaders[(topic.name, p.partition_index)] = p.leader_id
                else:
                    self.leaders.pop((topic.name, p.partition_index), None)
        return counts

    async def connection_for(self, topic: str, partition: int) -> BrokerConnection:
        node = self.leaders.get((topic, partition))
        if node is None:
            await self.refresh([topic])
            node = self.leaders.get((topic, partition))
            if node is None:
                raise ConnectionClosed(f"no leader known for {topic}-{partition}")
        return await self.node(node)

    async def coordinator(self, key: str, key_type: int) -> BrokerConnection:
        """A connection to the coordinator of a group (key_type 0) or transactional id (1).
        Raises CoordinatorUnavailable with the error while the broker cannot name one
        (loading, or not available yet): the caller retries."""
        connection = await self._any_broker()
        try:
            answer = await connection.call(
                ApiKey.FIND_COORDINATOR, lambda v: requests.build(
                    "FindCoordinator", v, {"key": key, "key_type": key_type}, {}))
        except ConnectionClosed:
            self._bootstrap_failed()
            raise
        error, host, port = requests.find_coordinator_answer(answer)
        if error is not ErrorCode.none:
            raise CoordinatorUnavailable(error)
        node = answer.coordinators[0].node_id if hasattr(answer, "coordinators") \
            else answer.node_id
        self.brokers[node] = (host, port)
        return await self.node(node)

    async def node(self, node: int) -> BrokerConnection:
        """The connection to this broker, opened anew once closed (e.g. a request on it timed
        out). A broker that cannot be reached any more is forgotten with its leaderships, so
        the next call asks Metadata who leads now."""
        connection = self._connections.get(node)
        if connection is None or connection.closed:
            try:
                connection = self._connections[node] = await self._open(*self.brokers[node])
            except ConnectionClosed:
                self._connections.pop(node, None)
                self._forget_leaderships(node)
                raise
        return connection

    def _forget_leaderships(self, node: int) -> None:
        for tp in [tp for tp, leader in self.leaders.items() if leader == node]:
            del self.leaders[tp]

    def stale(self, topic: str, partition: int) -> None:
        """The leader answered NOT_LEADER_OR_FOLLOWER (or a fenced or unknown leader epoch):
        leadership moved, so the next call for this partition asks Metadata again."""
        self.leaders.pop((topic, partition), None)

    async def _open(self, host: str, port: int) -> BrokerConnection:
        return await BrokerConnection.open(host, port, self._client_id, security=self.security,
                                           request_timeout_ms=self.request_timeout_ms)

    def forget(self, connection: BrokerConnection) -> None:
        """A connection failed: reconnect (and refresh leaders) next time."""
        for node, known in list(self._connections.items()):
            if known is connection:
                del self._connections[node]
        connection.close()
        self.leaders.clear()

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()
        if self._bootstrap_connection is not None:
            self._bootstrap_connection.close()
            self._bootstrap_connection = None
