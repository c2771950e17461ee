"""Authorization refusals, as exceptions that say what was refused: the resource, its type and
the operation Kafka checks for the request (KafkaApis), so the message is enough to ask for
the ACL that is missing.

    AuthorizationError: not authorized to READ group 'readers' (GROUP_AUTHORIZATION_FAILED);
    an ACL that allows it: roster acls add --allow-principal <principal> --operation Read
    --group readers
"""
from __future__ import annotations

from roster.protocol.errors import ErrorCode

_KINDS = {ErrorCode.topic_authorization_failed: "topic",
          ErrorCode.group_authorization_failed: "group",
          ErrorCode.cluster_authorization_failed: "cluster",
          ErrorCode.transactional_id_authorization_failed: "transactional-id"}
REFUSALS = frozenset(_KINDS)


class AuthorizationError(PermissionError):
    """The broker refused an operation on a resource (its ACLs do not allow it)."""

    def __init__(self, error: ErrorCode, resource: str, operation: str,
                 principal: str | None = None) -> None:
        self.error = error
        self.resource_type = _KINDS.get(error, "resource")
        self.resource = resource
        self.operation = operation.upper()
        who = principal or "<principal>"
        option = "--cluster" if self.resource_type == "cluster" else \
            f"--{self.resource_type} {resource}"
        camel = "".join(p.capitalize() for p in self.operation.split("_"))
        super().__init__(
            f"not authorized to {self.operation} {self.resource_type} '{resource}' "
            f"({error.name.upper()}); an ACL that allows it: roster acls add "
            f"--allow-principal {who} --operation {camel} {option}")


def refusal(error: ErrorCode, resource: str, operation: str) -> AuthorizationError | None:
    """The exception for `error`, when it is an authorization refusal."""
    if error in REFUSALS:
        return AuthorizationError(error, resource, operation)
    return None


def fatal_exception(fatal, group_id: str, subscription=()) -> Exception:
    """What a member that has given up raises: AuthorizationError for a refused group (or,
    in the consumer group protocol, a subscribed topic it may not describe: the answer does
    not say which, so the subscription is named), FencedError otherwise."""
    from roster.client.membership import FencedError
    if fatal.error is ErrorCode.topic_authorization_failed:  # KIP-848: a subscribed topic
        return AuthorizationError(fatal.error, ",".join(subscription) or "?", "DESCRIBE")
    if fatal.error in REFUSALS:
        return AuthorizationError(fatal.error, group_id, fatal.operation or "READ")
    return FencedError(fatal.message)
