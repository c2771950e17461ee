"""roster.client's request timeout (Kafka's request.timeout.ms) over real sockets: a broker that
accepts a connection and never answers, and a coordinator whose connections stall mid-session
(a hung broker, a half-open connection after a network partition)."""
from __future__ import annotations

import asyncio
import time

import pytest

from roster.client.connection import BrokerConnection, ConnectionClosed, RequestTimedOut
from roster.client.consumer import Consumer
from roster.client.consumer_member import ConsumerGroupMember
from roster.client.member import GroupMember, join_group_timeout_ms
from roster.client.membership import MemberConfig
from roster.client.producer import Producer
from roster.protocol.api_keys import ApiKey
from tests.support.hanging_proxy import HangingProxy

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("client")]


class SilentBroker:
    """Accepts connections and reads every request, answering none."""

    def __init__(self) -> None:
        self.got_request = asyncio.Event()
        self.closed_by_client = asyncio.Event()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader, writer) -> None:
        while await reader.read(65536):
            self.got_request.set()
        self.closed_by_client.set()   # end of stream: the client closed its side
        writer.close()

    def close(self) -> None:
        self._server.close()


async def _connect(port: int, **kwargs) -> BrokerConnection:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    return BrokerConnection(reader, writer, "timeout-test", **kwargs)


def _find_coordinator(connection: BrokerConnection, **kwargs):
    return connection.call_version(ApiKey.FIND_COORDINATOR, 2, key="g", key_type=0, **kwargs)


def test_an_unanswered_request_times_out_and_closes_the_connection():
    async def scenario():
        broker = SilentBroker()
        connection = await _connect(await broker.start(), request_timeout_ms=300)
        started = time.monotonic()
        first = asyncio.ensure_future(_find_coordinator(connection))
        queued = asyncio.ensure_future(_find_coordinator(connection, timeout_ms=60_000))
        await asyncio.wait_for(broker.got_request.wait(), 5)
        with pytest.raises(RequestTimedOut, match="no answer to FIND_COORDINATOR within 300 ms"):
            await asyncio.wait_for(first, 10)   # (the guard: without a timeout it never ends)
        elapsed = time.monotonic() - started
        # the request queued behind it fails at once, as in-flight requests do in Kafka's
        # NetworkClient when it disconnects a node on a request timeout
        with pytest.raises(ConnectionClosed, match="FIND_COORDINATOR within 300 ms"):
            await asyncio.wait_for(queued, 1)
        await asyncio.wait_for(broker.closed_by_client.wait(), 5)   # the socket really closed
        assert connection.closed
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(_find_coordinator(connection), 1)
        broker.close()
        return elapsed

    elapsed = asyncio.run(scenario())
    assert 0.3 <= elapsed < 5


def test_a_per_request_timeout_replaces_the_connections():
    async def scenario():
        broker = SilentBroker()
        connection = await _connect(await broker.start())   # request.timeout.ms: 30 s
        assert connection.request_timeout_ms == 30_000
        with pytest.raises(RequestTimedOut, match="within 200 ms"):
            await asyncio.wait_for(_find_coordinator(connection, timeout_ms=200), 10)
        await asyncio.wait_for(broker.closed_by_client.wait(), 5)
        broker.close()

    asyncio.run(scenario())


def test_join_group_waits_for_the_rebalance_timeout_as_kafkas_java_client():
    # AbstractCoordinator: max(request.timeout.ms, rebalance.timeout.ms + 5000)
    assert join_group_timeout_ms(30_000, 300_000) == 305_000
    assert join_group_timeout_ms(30_000, 10_000) == 30_000


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_member_whose_coordinator_hangs_finds_it_again_and_stays_in_the_group(
        broker_factory, protocol):
    heartbeat = ApiKey.HEARTBEAT if protocol == "classic" else ApiKey.CONSUMER_GROUP_HEARTBEAT

    async def scenario():
        proxy = await HangingProxy().start()
        broker = await asyncio.to_thread(broker_factory, {
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.heartbeat.interval.ms": "300",
            "group.consumer.min.heartbeat.interval.ms": "300",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
        proxy.target_port = broker.port
        bootstrap = f"127.0.0.1:{proxy.port}"
        producer = Producer(bootstrap)
        await producer.send("hang-topic", b"x", partition=0)
        await producer.close()
        member_class = GroupMember if protocol == "classic" else ConsumerGroupMember
        member = member_class(bootstrap, MemberConfig("hang-group", session_timeout_ms=15_000,
                                                      heartbeat_interval_ms=300,
                                                      rebalance_timeout_ms=15_000),
                              request_timeout_ms=1_000)
        try:
            await member.start(["hang-topic"])
            await member.wait_stable(30)
            generation, member_id = member.machine.generation, member.machine.member_id
            proxy.freeze()   # the bootstrap and coordinator connections stall from now on
            started = time.monotonic()
            # the heartbeat times out, FindCoordinator on the stalled bootstrap connection
            # too; the member connects again and heartbeats on a new coordinator connection
            await proxy.wait_for_request(ApiKey.FIND_COORDINATOR, after_freeze=True,
                                         timeout_s=20)
            await proxy.wait_for_request(heartbeat, after_freeze=True, timeout_s=20)
            recovered = time.monotonic() - started
            await member.wait_stable(20)
            await member.commit({("hang-topic", 0): 1})   # the new coordinator takes it
            assert await member.committed([("hang-topic", 0)]) == {("hang-topic", 0): 1}
            # back within the session timeout: the same member, in the same generation (the
            # same epoch), with its partition. A classic member only looks the coordinator up
            # again and heartbeats on, as Kafka's Java client (markCoordinatorUnknown) and
            # librdkafka do: a JoinGroup would rebalance the whole group.
            assert member.machine.member_id == member_id
            assert member.machine.generation == generation
            assert member.assignment == (("hang-topic", 0),)
            if protocol == "classic":
                assert (ApiKey.JOIN_GROUP, True) not in proxy.requests
        finally:
            await member.close()
            await proxy.close()
        return recovered

    recovered = asyncio.run(scenario())
    assert recovered < 15   # within the session timeout


def test_requests_the_broker_holds_are_not_cut_short_by_the_request_timeout(
        broker_factory, caplog):
    """JoinGroup (parked here by the group's initial rebalance delay) and a long poll's Fetch
    both outlast a 2 s request timeout, legitimately. (The holds are 5 s and 4 s so that the
    requests nobody holds have 2 s to be answered: at 400 ms, a loaded machine was seen to
    answer a Fetch with no wait after the timeout.)"""
    broker = broker_factory({"group.initial.rebalance.delay.ms": "5000"})

    async def scenario():
        producer = Producer(broker.bootstrap)
        await producer.send("held-topic", b"x", partition=0)
        await producer.close()
        consumer = Consumer(broker.bootstrap, "held-group", request_timeout_ms=2000,
                            session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
        await consumer.subscribe(["held-topic"])
        try:
            started = time.monotonic()
            await consumer.member.wait_stable(30)
            joined_after = time.monotonic() - started
            while not await consumer.poll(timeout_ms=200):   # the one record
                pass
            started = time.monotonic()
            assert await consumer.poll(timeout_ms=4_000) == []   # nothing more: held 4 s
            return joined_after, time.monotonic() - started
        finally:
            await consumer.close()

    with caplog.at_level("INFO", logger="roster.client"):
        joined_after, polled_for = asyncio.run(scenario())
    assert "no answer to JOIN_GROUP" not in caplog.text
    assert "no answer to FETCH" not in caplog.text
    assert joined_after >= 4.9 and polled_for >= 3.9   # both were held longer than 2 s
