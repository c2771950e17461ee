"""Kafka error codes, as released (kio generates them from Kafka's own Errors table)."""
from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "MalformedRequest"]


class MalformedRequest(Exception):
    """A frame that cannot be parsed as the request it claims to be.

    The broker answers it the way Kafka does: it closes that connection (there is no way to answer a
    request whose header or body could not be read) and logs the reason.
    """
