"""One client connection: frames in, answers out, strictly one request at a time.

Like Kafka, a connection is served one request at a time: the next request is not looked at
until the current one is answered. Replies therefore leave in request order even when one is a
long poll (JoinGroup, SyncGroup, Fetch, a produce waiting for its fsync).

Most requests are answered without waiting for anything, so a request's handler is first run
directly, inside the read callback; only a handler that has to wait gets an asyncio task. All
answers produced from one read of the socket leave in one write, so a client that pipelines
requests (or many members multiplexed over one connection) costs one read and one write per
burst instead of one per request.

A frame that cannot be served closes this connection with a log line; other connections never
notice.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable

from roster.broker.frames import FrameBuffer
from roster.broker.handlers.api_versions import answer_unsupported_version
from roster.broker.resume import resume
from roster.protocol.codec import decode_request, encode_response
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import read_prefix

log = logging.getLogger("roster.connection")

API_VERSIONS = 18
# While a request waits, more requests may arrive behind it; past this many unserved bytes the
# socket is no longer read (Kafka mutes a busy connection outright; this saves two syscalls
# per waiting request for clients that do not pipeline).
MAX_UNSERVED = 256 * 1024


class Connection(asyncio.BufferedProtocol):
    def __init__(self, broker, on_close: Callable[[Connection], None]) -> None:
        self.broker = broker
        self._on_close = on_close
        self._transport: asyncio.Transport | None = None
        self._frames = FrameBuffer(broker.config["socket.request.max.bytes"])
        self._in_flight: asyncio.Task | None = None  # the request that had to wait
        self._write_paused = False  # the client is not reading its answers
        self._read_paused = False
        self._closed = False
        self.peer = "?"
        self.client_host = "/?"

    # -- asyncio protocol callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.peer = f"{peer[0]}:{peer[1]}"
        self.client_host = f"/{peer[0]}"  # Java's InetAddress.toString(), as Kafka reports it
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.writable()

    def buffer_updated(self, nbytes: int) -> None:
        self._frames.received(nbytes)
        try:
            if self._in_flight is None and not self._write_paused:
                self._serve_buffered()
        finally:
            self._frames.settle()  # before any other connection reads (see frames.py)
        self._update_reading()

    def eof_received(self) -> bool:
        return False  # close our side too: Kafka clients never half-close

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._in_flight is not None:
            self._in_flight.cancel()  # a parked reply for a client that is gone is dropped
        self._on_close(self)

    def pause_writing(self) -> None:
        # The client is not reading its answers: stop serving (and so reading) until it does.
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._in_flight is None and not self._closed:
            self._serve_buffered()
            self._frames.settle()
        self._update_reading()

    def close(self) -> asyncio.Task | None:
        """Shutdown: close the socket and cancel a parked request; returns that request's
        task, to wait for it to unwind."""
        parked = self._in_flight
        if self._transport is not None:
            self._transport.close()
        if parked is not None:
            parked.cancel()
        return parked

    # -- serving ---------------------------------------------------------------------------------

    def _serve_buffered(self) -> None:
        """Answer every complete frame received, in order, until one has to wait. A frame that
        cannot be served closes the connection after the answers to the frames before it."""
        answers: list[bytes] = []
        failed = False
        try:
            while (frame := self._frames.next_frame()) is not None:
                pending = self._start_request(frame)
                if pending is None:
                    continue
                if isinstance(pending, bytes):
                    answers.append(pending)
                    continue
                self._park(pending)
                break
        except MalformedRequest as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            failed = True
        except Exception:
            log.exception("closing connection from %s after an internal error", self.peer)
            failed = True
        if answers and not self._closed:
            self._transport.write(b"".join(answers) if len(answers) > 1 else answers[0])
        if failed:
            self._fail()

    def _start_request(self, frame: bytes) -> bytes | Awaitable | None:
        """Serve the request as far as it goes without waiting. Returns the encoded answer,
        None when there is none (acks=0), or an awaitable that finishes it later."""
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
        if spec.raw is not None:
            return spec.raw(self.broker, frame, prefix, self)
        coroutine = self._handle(spec, decode_request(frame, prefix))
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value
        return resume(coroutine, waiting_on)

    def _update_reading(self) -> None:
        if self._closed:
            return
        busy = self._write_paused or (
            self._in_flight is not None and self._frames.unserved > MAX_UNSERVED)
        if busy != self._read_paused:
            self._read_paused = busy
            if busy:
                self._transport.pause_reading()
            else:
                self._transport.resume_reading()

    def _park(self, pending) -> None:
        self._in_flight = asyncio.ensure_future(pending)
        self._in_flight.add_done_callback(self._parked_done)

    def _parked_done(self, task: asyncio.Task) -> None:
        self._in_flight = None
        if self._closed or task.cancelled():
            return
        error = task.exception()
        if isinstance(error, MalformedRequest):
            log.warning("closing connection from %s: %s", self.peer, error)
            self._fail()
            return
        if error is not None:
            log.error("closing connection from %s after an internal error", self.peer,
                      exc_info=error)
            self._fail()
            return
        if task.result() is not None:
            self._transport.write(task.result())
        if not self._write_paused:
            self._serve_buffered()
            self._frames.settle()
        self._update_reading()

    def _fail(self) -> None:
        self._closed = True
        self._transport.close()

    async def _handle(self, spec, request) -> bytes | None:
        body = await spec.handler(self.broker, request, self)
        if body is None:
            return None
        return encode_response(request.api_key, request.api_version, request.correlation_id,
                               body)
