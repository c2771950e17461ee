"""Kafka's ACL vocabulary (AclOperation, ResourceType), with Kafka's codes: what a handler's
ApiSpec declares its request acts on, and what the authorizer is asked about."""
from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class ResourceType(IntEnum):
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5


CLUSTER_NAME = "kafka-cluster"  # Kafka's one CLUSTER resource
