"""A roster Connection served in this process with no socket: a transport stand-in that counts
and keeps what the connection writes, and a feed that hands the connection a byte stream the
way the event loop would, in reads of at most a given size. For benchmarks that measure the
connection layer and handlers without the kernel's share (bench/connection_calls.py,
bench/heartbeat_broker.py).

roster is imported only when a connection is made, so a benchmark can first choose which
source tree's roster that is.
"""
from __future__ import annotations

import inspect


class Transport:
    """What asyncio's transport offers a Protocol, reduced to what Connection calls."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.writes = 0

    def write(self, data) -> None:
        self.data += data
        self.writes += 1

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, key):
        return ("127.0.0.1", 5555) if key == "peername" else None

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def connect(broker, config):
    """A Connection to `broker` over a fresh Transport; returns both."""
    from roster.broker.network import connection as connection_module
    if "table" in inspect.signature(connection_module.Connection.__init__).parameters:
        from roster.broker.network.server import ConnectionTable
        connection = connection_module.Connection(broker, ConnectionTable(config))
    else:  # a tree from before the connection limits
        connection = connection_module.Connection(broker, on_close=lambda _: None)
    transport = Transport()
    connection.connection_made(transport)
    return connection, transport


def feed(connection, stream: bytes, read: int) -> None:
    """Hand `stream` to the connection as buffered-protocol reads of at most `read` bytes."""
    at = 0
    while at < len(stream):
        room = connection.get_buffer(-1)
        n = min(len(room), read, len(stream) - at)
        room[:n] = stream[at:at + n]
        connection.buffer_updated(n)
        at += n


async def started_broker(prefix: str):
    """A real Broker on a fresh data directory, as the in-process benchmarks run it (one
    __consumer_offsets partition, no initial rebalance delay), once its groups are loaded;
    returns it and its config."""
    import asyncio
    import tempfile
    from pathlib import Path

    from roster.broker.broker import Broker
    from roster.config import BrokerConfig
    config = BrokerConfig.from_overrides({"offsets.topic.num.partitions": "1",
                                          "group.initial.rebalance.delay.ms": "0"})
    broker = Broker(config, Path(tempfile.mkdtemp(prefix=prefix)))
    broker.start()
    while not getattr(broker.groups, "loaded", True):   # (an older tree may not say)
        await asyncio.sleep(0.005)
    return broker, config
