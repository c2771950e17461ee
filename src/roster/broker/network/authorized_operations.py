"""Authorized operations, as Kafka reports them in Metadata (topics, and the cluster up to v10),
DescribeCluster, DescribeGroups and ConsumerGroupDescribe: a 32-bit field with bit `code` set for
each operation of the resource type's supported set (Kafka's AclEntry.supportedOperations) that
the principal may perform. The authorizer answers each, implied operations included (ALTER,
READ, WRITE and DELETE imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS). Without an
authorizer every supported operation is allowed. Not asked for: Integer.MIN_VALUE."""
from __future__ import annotations

from roster.broker.network.admission import admission_for
from roster.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType

NOT_REQUESTED = -2**31
_OP = AclOperation
SUPPORTED = {
    ResourceType.TOPIC: (_OP.READ, _OP.WRITE, _OP.CREATE, _OP.DESCRIBE, _OP.DELETE, _OP.ALTER,
                         _OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS),
    ResourceType.GROUP: (_OP.READ, _OP.DESCRIBE, _OP.DELETE, _OP.DESCRIBE_CONFIGS,
                         _OP.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_OP.CREATE, _OP.CLUSTER_ACTION, _OP.DESCRIBE_CONFIGS,
                           _OP.ALTER_CONFIGS, _OP.IDEMPOTENT_WRITE, _OP.ALTER, _OP.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_OP.DESCRIBE, _OP.WRITE),
}


class AuthorizedOperations:
    """What one request's principal may do, asked of the authorizer once per resource."""

    __slots__ = ("_admission",)

    def __init__(self, broker, connection) -> None:
        self._admission = admission_for(broker, connection)

    def of(self, resource_type: ResourceType, name: str) -> int:
        field = 0
        for operation in SUPPORTED[resource_type]:
            if self._admission.allows(operation, resource_type, name):
                field |= 1 << operation
        return field

    def of_cluster(self) -> int:
        """Kafka's rule for the cluster: nothing unless the principal may DESCRIBE it."""
        if not self._admission.allows(_OP.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return 0
        return self.of(ResourceType.CLUSTER, CLUSTER_NAME)


def requested(broker, connection, asked: bool) -> AuthorizedOperations | None:
    """An AuthorizedOperations when the request asked for them, else None (answer
    NOT_REQUESTED)."""
    return AuthorizedOperations(broker, connection) if asked else None
