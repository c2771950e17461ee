"""One client connection: read a request, answer it, then read the next.

Like Kafka, a connection is served one request at a time: nothing more is read from it until the
current request's response is written. Replies therefore leave in request order even when one is
a long poll, and a request sent behind a parked one is only looked at once that one is answered.
A frame that cannot be served closes this connection with a log line; other connections never
notice.
"""
from __future__ import annotations

import asyncio
import logging

from roster.broker.handlers.api_versions import answer_unsupported_version
from roster.protocol.codec import decode_request, encode_response
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import read_prefix, read_size

log = logging.getLogger("roster.connection")

API_VERSIONS = 18


class Connection:
    def __init__(self, broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.broker = broker
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        self.client_host = f"/{peer[0]}"  # Java's InetAddress.toString(), as Kafka reports it

    async def serve(self) -> None:
        max_size = self.broker.config["socket.request.max.bytes"]
        try:
            while True:
                size = read_size(await self._reader.readexactly(4), max_size)
                frame = await self._reader.readexactly(size)
                response = await self.answer(frame)
                if response is not None:
                    self._writer.write(response)
                    await self._writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except MalformedRequest as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
        except Exception:
            log.exception("closing connection from %s after an internal error", self.peer)
        finally:
            self._writer.close()

    async def answer(self, frame: bytes) -> bytes | None:
        prefix = read_prefix(frame)
        spec = self.broker.registry.get(prefix.api_key)
        if spec is None:
            raise MalformedRequest(f"unknown api key {prefix.api_key}")
        if not spec.supports(prefix.api_version):
            if prefix.api_key == API_VERSIONS:
                return answer_unsupported_version(self.broker.registry, prefix)
            raise MalformedRequest(
                f"{spec.name} v{prefix.api_version} is not supported "
                f"(versions {spec.min_version}-{spec.max_version})")
        if spec.is_legacy(prefix.api_version):
            return spec.legacy(frame, prefix)
        request = decode_request(frame, prefix)
        body = await spec.handler(self.broker, request, self)
        if body is None:
            return None
        return encode_response(prefix.api_key, prefix.api_version, prefix.correlation_id, body)
