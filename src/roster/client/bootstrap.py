"""The bootstrap servers, as Kafka's clients take them: "host1:9092,host2:9092". Metadata and
FindCoordinator go to any of them, so the client keeps working while one broker is down: a
connection is opened to the first that accepts, starting after the one that last failed, and the
brokers a Metadata answer names are tried too (a cluster whose bootstrap broker died stays
reachable through the others, as Kafka's clients ask any known node)."""
from __future__ import annotations

from collections.abc import Awaitable, Callable

from roster.client.connection import BrokerConnection, ConnectionClosed

Address = tuple[str, int]


def parse_bootstrap_servers(bootstrap: str) -> list[Address]:
    """Every "host:port" of a comma-separated list ("[::1]:9092" for IPv6)."""
    addresses = []
    for entry in bootstrap.split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bootstrap servers: expected HOST:PORT, got {entry!r}")
        addresses.append((host.strip("[]") or "localhost", int(port)))
    if not addresses:
        raise ValueError(f"bootstrap servers: no HOST:PORT in {bootstrap!r}")
    return addresses


class Bootstrap:
    def __init__(self, bootstrap: str) -> None:
        self.addresses = parse_bootstrap_servers(bootstrap)
        self._known: list[Address] = []
        self._next = 0

    def learn(self, brokers: dict[int, Address]) -> None:
        """The brokers of the latest Metadata answer: candidates after the bootstrap list."""
        self._known = [a for a in brokers.values() if a not in self.addresses]

    def failed(self) -> None:
        """The connection in use failed: the next connect() starts at the next candidate."""
        self._next += 1

    async def connect(self, opener: Callable[[str, int], Awaitable[BrokerConnection]]
                      ) -> BrokerConnection:
        candidates = self.addresses + self._known
        errors = []
        for step in range(len(candidates)):
            index = (self._next + step) % len(candidates)
            try:
                connection = await opener(*candidates[index])
            except ConnectionClosed as exc:
                errors.append(str(exc))
                continue
            self._next = index
            return connection
        raise ConnectionClosed("no bootstrap server reachable: " + "; ".join(errors))
