"""An admin's view of a whole cluster, for commands that talk to more than one broker.

AdminClient is one connection to one broker, which is all a roster broker needs. A Kafka
cluster spreads the work: a group's offsets and state live on its coordinator, a partition's
offsets on its leader. Cluster keeps the bootstrap connection for what any broker answers
(metadata, configs, ACLs, SCRAM users: a KRaft broker forwards the changes to the controller)
and opens, once each, the connections to the coordinators and leaders it is asked for, with the
same security settings.
"""
from __future__ import annotations

import time

from roster.admin.client import AdminClient, AdminError
from roster.admin.topics import metadata
from roster.protocol.api_keys import ApiKey

FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
GROUP_KEY = 0
# a new cluster's coordinators are answered as not available for a moment; FindCoordinator
# is asked again as Kafka's admin client does
RETRIABLE = {"coordinator_not_available", "coordinator_load_in_progress",
             "not_coordinator"}


class Cluster:
    def __init__(self, bootstrap: str, security=None, timeout_s: float = 10.0) -> None:
        """`bootstrap`: HOST:PORT, or a comma-separated list of them as Kafka's tools take
        (the first that answers is the bootstrap connection)."""
        self.bootstrap = bootstrap
        self._security = security
        self._timeout_s = timeout_s
        addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
        if not addresses:
            raise AdminError(f"expected HOST:PORT[,HOST:PORT...], got {bootstrap!r}")
        failure = None
        for address in addresses:
            try:
                self.main = AdminClient(address, timeout_s=timeout_s, security=security)
            except AdminError as exc:
                failure = exc
                continue
            self.address = address
            break
        else:
            raise failure
        self._by_address: dict[str, AdminClient] = {self.address: self.main}
        self._brokers: dict[int, str] | None = None

    def close(self) -> None:
        for client in self._by_address.values():
            client.close()
        self._by_address.clear()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def brokers(self) -> dict[int, str]:
        """node id -> host:port, as the cluster advertises them."""
        if self._brokers is None:
            answer = metadata(self.main, [])
            self._brokers = {b.node_id: f"{b.host}:{b.port}" for b in answer.brokers}
        return self._brokers

    def at(self, address: str) -> AdminClient:
        if address not in self._by_address:
            self._by_address[address] = AdminClient(address, timeout_s=self._timeout_s,
                                                    security=self._security)
        return self._by_address[address]

    def node(self, node_id: int) -> AdminClient:
        address = self.brokers().get(node_id)
        if address is None:
            raise AdminError(f"{self.bootstrap} names no broker {node_id}")
        # the bootstrap connection when it is that broker (a one-node cluster, or roster)
        if len(self.brokers()) == 1:
            return self.main
        return self.at(address)

    def coordinator(self, group_id: str, timeout_s: float = 30.0) -> AdminClient:
        """The connection to the group's coordinator."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self.main.call(FIND_COORDINATOR, key=group_id, key_type=GROUP_KEY,
                                    coordinator_keys=(group_id,))
            found = answer.coordinators[0] if getattr(answer, "coordinators", None) else answer
            error = found.error_code
            if not error.value:
                return self.node(found.node_id) if found.node_id in self.brokers() \
                    else self.at(f"{found.host}:{found.port}")
            if error.name not in RETRIABLE or time.monotonic() >= deadline:
                raise AdminError(f"cannot find the coordinator of group {group_id} on "
                                 f"{self.bootstrap}: {error.name.upper()}")
            time.sleep(0.1)   # Kafka's retry.backoff.ms

    def leaders(self, topics) -> dict[tuple[str, int], int]:
        """(topic, partition) -> leader node id, from a Metadata answer's topics."""
        return {(t.name, p.partition_index): p.leader_id for t in topics for p in t.partitions}
