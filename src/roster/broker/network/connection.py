"""One client connection: frames in, answers out, strictly one request at a time.

Like Kafka, a connection is served one request at a time: the next request is not looked at
until the current one is answered. Replies therefore leave in request order even when one is a
long poll (JoinGroup, SyncGroup, Fetch, a produce waiting for its fsync).

Most requests are answered without waiting for anything, so a request's handler is first run
directly, inside the read callback; only a handler that has to wait gets an asyncio task.
Answers produced from one read of the socket leave together, so a client that pipelines
requests (or many members multiplexed over one connection) costs one read and one write per
burst instead of one per request.

What a connection may cost is bounded (docs/protocol.md, "Connections"):

- answers wait to be written only up to BURST_BYTES; then they are written, and a connection
  whose unsent answers are above the transport's high-water mark (a client that does not read
  them) is neither served nor read until they drain. That is checked after every answer, so
  a burst of requests with large answers stops after the first one that fills the buffer;
- while a request waits, at most MAX_UNSERVED bytes of the requests behind it are read;
- a frame's buffer grows with the bytes that arrive, not with the size it declares (frames.py);
- queued.max.request.bytes bounds, across connections, the bytes of requests received and not
  yet served (QueuedBytes);
- connections.max.idle.ms and max.connections.per.ip are kept by the server (server.py), which
  reads `active` and `idle_since` here.

A frame that cannot be served closes this connection with a log line; other connections never
notice.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Awaitable
from time import perf_counter_ns

from roster.broker.faults.gate import PASS as FAULTS_PASS
from roster.broker.handlers.api_versions import answer_unsupported_version
from roster.broker.network.admission import admit
from roster.broker.network.frames import MIN_READ, FrameBuffer
from roster.broker.network.resume import AnswerWhenDone, resume
from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import decode_request, encode_response
from roster.protocol.errors import MalformedRequest
from roster.protocol.framing import read_prefix
from roster.protocol.registry import GENERIC

log = logging.getLogger("roster.connection")

API_VERSIONS = ApiKey.API_VERSIONS
# While a request waits, more requests may arrive behind it; past this many unserved bytes the
# socket is no longer read (Kafka mutes a busy connection outright; this saves two syscalls
# per waiting request for clients that do not pipeline).
MAX_UNSERVED = 256 * 1024
# Answers to a burst of pipelined requests are joined into one write until they reach this
# many bytes; then they are written and the transport's buffer is checked before serving on.
BURST_BYTES = 256 * 1024


class QueuedBytes:
    """queued.max.request.bytes: bytes of requests received but not yet served, across all
    connections. As in Kafka, room for a frame is taken when its size is known and given back
    when it has been served; the memory itself is used only as its bytes arrive. Room is
    granted while any is left (so one frame may take the total past the limit by up to
    socket.request.max.bytes); a connection that needs more once none is left stops reading
    until served frames give some back, first come first served.

    Frames that arrive whole in one read and are served at once never take room: they cost
    nothing beyond the shared read buffer."""

    __slots__ = ("limit", "used", "_waiting")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: deque[Connection] = deque()

    @property
    def exhausted(self) -> bool:
        return self.used >= self.limit

    def wait(self, connection: Connection) -> None:
        self._waiting.append(connection)

    def forget(self, connection: Connection) -> None:
        """A waiting connection closed: it no longer waits (rare, so a linear search)."""
        try:
            self._waiting.remove(connection)
        except ValueError:
            pass

    def wake(self) -> None:
        """Room was given back: let waiting connections take it, in the order they came."""
        while self._waiting and self.used < self.limit:
            self._waiting.popleft()._room_granted()


class Connection(asyncio.BufferedProtocol):
    # Who is connected, and how (set by security/listen.py for each listener): `auth` is a
    # SASL listener's gate (security/sasl.py), shown every frame before dispatch until it
    # detaches; `principal` is what authorization sees; `endpoint` is the advertised address
    # of the listener the connection came in on (Metadata, FindCoordinator).
    auth = None
    principal = "User:ANONYMOUS"
    endpoint = None
    listener = None

    def __init__(self, broker, table) -> None:
        self.broker = broker
        self._table = table  # server.py's ConnectionTable: admission, idle sweep, queued bytes
        self._queued: QueuedBytes | None = table.queued
        self._frames = FrameBuffer(broker.config["socket.request.max.bytes"])
        self._transport: asyncio.Transport | None = None
        self._in_flight: asyncio.Future | None = None  # the request that had to wait
        self._encode = None  # its encoder, when it parked on a reply (AnswerWhenDone)
        self._measuring = None  # its frame and start, for /metrics' latency (if it is on)
        self._write_paused = False  # the client is not reading its answers
        self._read_paused = False
        self._waiting_for_room = False  # queued.max.request.bytes is used up
        self._reserved = 0  # what this connection counts in queued.max.request.bytes
        self._closed = False
        self._admitted = False
        self.active = True  # bytes moved since the last idle sweep (server.py clears it)
        self.idle_since = 0.0  # the sweep's time when it last saw this connection active
        self.unsent = 0  # the write buffer's size at the last sweep (progress of a slow reader)
        self.peer = "?"
        self.ip = "?"
        self.client_host = "/?"

    # -- asyncio protocol callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.ip = peer[0]
        self.peer = f"{peer[0]}:{peer[1]}"
        self.client_host = f"/{peer[0]}"  # Java's InetAddress.toString(), as Kafka reports it
        if not self._table.admit(self):
            self._closed = True
            transport.abort()
            return
        self._admitted = True
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def get_buffer(self, sizehint: int) -> memoryview:
        room = self._frames.writable()
        queued = self._queued
        if queued is not None and queued.used >= queued.limit and not self._reserved:
            # no room left for requests: a read may still bring small requests that are served
            # at once, but must not leave much behind
            return room[:MIN_READ]
        return room

    def buffer_updated(self, nbytes: int) -> None:
        self.active = True
        self._frames.received(nbytes)
        try:
            if self._in_flight is None and not self._write_paused:
                self._serve_buffered(nbytes)
            elif self.broker.request_stats is not None:
                self.broker.request_stats.bytes_in += nbytes
        finally:
            self._frames.settle()  # before any other connection reads (see frames.py)
        if self._queued is not None:
            self._count_queued()
        self._update_reading()

    def eof_received(self) -> bool:
        return False  # close our side too: Kafka clients never half-close

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._in_flight is not None:
            self._in_flight.cancel()  # a parked reply for a client that is gone is dropped
        self._frames.discard()
        if self._waiting_for_room:
            self._waiting_for_room = False
            self._queued.forget(self)
        if self._reserved:
            self._queued.used -= self._reserved
            self._reserved = 0
            self._queued.wake()
        if self._admitted:
            self._table.discard(self)
        sessions = getattr(self.broker, "share_sessions", None)
        if sessions is not None:   # a share consumer gone: its acquired records return now
            sessions.connection_closed(self)

    def pause_writing(self) -> None:
        # The client is not reading its answers: stop serving (and so reading) until it does.
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self.active = True
        if self._in_flight is None and not self._closed:
            self._serve_buffered()
            self._settle()
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

    def drop(self) -> None:
        """Close the connection at once, answering nothing more (an injected fault:
        broker/faults)."""
        if not self._closed:
            self._closed = True
            self._transport.abort()

    def expire(self) -> None:
        """connections.max.idle.ms passed without a byte either way: drop the connection, and
        whatever answers it has not taken."""
        if not self._closed:
            self._closed = True
            self._transport.abort()

    # -- what the security layer may do with a connection (security/listen.py, sasl.py) --------

    def limit_requests(self, max_bytes: int) -> None:
        """Refuse requests larger than `max_bytes` (before SASL authentication, as Kafka's
        sasl.server.max.receive.size) until allow_full_requests()."""
        self._frames.max_size = min(self._frames.max_size, max_bytes)

    def allow_full_requests(self) -> None:
        """Requests may be as large as socket.request.max.bytes again."""
        self._frames.max_size = self.broker.config["socket.request.max.bytes"]

    @property
    def is_open(self) -> bool:
        """Connected and not closed (or being closed) by either side."""
        return not self._closed and self._transport is not None

    @property
    def busy(self) -> bool:
        """A request is being worked on: the wait is the broker's, not the client's."""
        return self._in_flight is not None

    @property
    def unsent_bytes(self) -> int:
        if self._write_paused and not self._closed:
            return self._transport.get_write_buffer_size()
        return 0

    # -- serving ---------------------------------------------------------------------------------

    def _serve_buffered(self, received: int = 0) -> None:
        """Answer complete frames received, in order, until one has to wait or the client
        stops taking answers. A frame that cannot be served closes the connection after the
        answers to the frames before it. `received`: the bytes just read, for /metrics."""
        answers: list[bytes] = []
        pending = 0
        failed = False
        # /metrics, when it is on, observed inline (a call per request costs as much as the
        # rest): the requests answered at once are timed by runs of one API (a pipelining
        # client's burst), with one clock read where a run begins and one where it ends; each
        # request of a run is observed at the run's mean latency (RequestStats.observe_run).
        # A request that waits is observed on its own once answered (_parked_done).
        stats = self.broker.request_stats   # None unless /metrics is served
        run_key = run_count = run_start = 0
        if stats is not None:
            stats.bytes_in += received
            other = stats.OTHER
        try:
            while (frame := self._frames.next_frame()) is not None:
                if stats is not None:
                    key = frame[1] if not frame[0] else other   # (frames hold 8 bytes+)
                    if key != run_key or not run_count:
                        now = perf_counter_ns()
                        if run_count:
                            stats.observe_run(run_key, run_count, now - run_start)
                        run_key, run_count, run_start = key, 0, now
                    run_count += 1
                answer = self._start_request(frame)
                if answer is None:
                    if self._closed:   # dropped on purpose (an injected fault)
                        break
                    continue
                if isinstance(answer, bytes):
                    answers.append(answer)
                    pending += len(answer)
                    if pending >= BURST_BYTES:
                        self._write(answers, pending, stats)  # may pause writing
                        answers = []
                        pending = 0
                        if self._write_paused or self._closed:
                            break
                    continue
                if stats is not None:   # it waits: observed once answered, from now
                    run_count -= 1
                    self._measuring = (frame, perf_counter_ns())
                self._park(answer)
                break
        except MalformedRequest as exc:
            log.warning("closing connection from %s: %s", self.peer, exc)
            failed = True
        except Exception:
            log.exception("closing connection from %s after an internal error", self.peer)
            failed = True
        if run_count:
            stats.observe_run(run_key, run_count, perf_counter_ns() - run_start)
        if answers:
            self._write(answers, pending, stats)
        if failed:
            self._fail()

    def _write(self, answers: list[bytes], size: int, stats) -> None:
        if not self._closed:
            self._transport.write(b"".join(answers) if len(answers) > 1 else answers[0])
            if stats is not None:
                stats.bytes_out += size

    def _start_request(self, frame: bytes) -> bytes | Awaitable | None:
        """Serve the request as far as it goes without waiting. Returns the encoded answer,
        None when there is none (acks=0), or an awaitable that finishes it later."""
        if self.auth is not None:  # not yet authenticated, or a session that can expire
            early = self.auth.screen(frame)  # raises MalformedRequest to close
            if early is not None:
                return early
        prefix = read_prefix(frame)
        spec = self.broker.registry.get(prefix.api_key)
        if spec is None:
            raise MalformedRequest(f"unknown api key {prefix.api_key}")
        if prefix.api_version not in spec.versions:
            if prefix.api_key == API_VERSIONS:
                return answer_unsupported_version(self.broker.registry, prefix)
            raise MalformedRequest(
                f"{spec.name} v{prefix.api_version} is not supported "
                f"(versions {spec.min_version}-{spec.max_version})")
        # None unless test mode has rules (broker/faults); getattr: stand-in brokers (tests,
        # bench/dispatch.py) are plain objects without it
        armed = getattr(self.broker, "armed_faults", None)
        if armed is not None and prefix.api_key in armed.keys:
            answer = armed.intercept(self, spec, frame, prefix)
            if answer is not FAULTS_PASS:
                return answer
        # the same as dispatch(), inline: a method call per request costs as much as the check
        if prefix.api_version not in spec.decoded:
            return spec.legacy(frame, prefix)
        if spec.raw is not None:
            answer = spec.raw(self.broker, frame, prefix, self)
            if answer is not GENERIC:
                return answer
        coroutine = self._handle(spec, decode_request(frame, prefix))
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value
        return resume(coroutine, waiting_on)

    def dispatch(self, spec, frame: bytes, prefix) -> bytes | Awaitable | None:
        """A checked request to its handler: legacy, raw or decoded (and admitted); what
        _start_request does once its checks pass (a delayed answer's way in: broker/faults)."""
        if spec.is_legacy(prefix.api_version):
            return spec.legacy(frame, prefix)
        if spec.raw is not None:
            answer = spec.raw(self.broker, frame, prefix, self)
            if answer is not GENERIC:
                return answer
        coroutine = self._handle(spec, decode_request(frame, prefix))
        try:
            waiting_on = coroutine.send(None)
        except StopIteration as done:
            return done.value
        return resume(coroutine, waiting_on)

    def _settle(self) -> None:
        self._frames.settle()
        if self._queued is not None:
            self._count_queued()

    def _count_queued(self) -> None:
        """Keep this connection's share of queued.max.request.bytes equal to what it holds or
        has begun to receive; when more is needed and none is left, stop reading until there
        is (QueuedBytes.wake calls _room_granted)."""
        if self._closed:
            return
        queued = self._queued
        need = self._frames.committed
        if need == self._reserved:
            return
        if need < self._reserved or queued.used < queued.limit:
            shrinking = need < self._reserved
            queued.used += need - self._reserved
            self._reserved = need
            if shrinking:
                queued.wake()
        elif not self._waiting_for_room:
            held = self._frames.unserved  # already here: counted, but nothing more comes
            gave_back = held < self._reserved
            queued.used += held - self._reserved
            self._reserved = held
            self._waiting_for_room = True
            queued.wait(self)
            if gave_back:
                queued.wake()

    def _room_granted(self) -> None:
        self._waiting_for_room = False
        if self._closed:
            return
        need = self._frames.committed
        self._queued.used += need - self._reserved
        self._reserved = need
        self._update_reading()

    def _update_reading(self) -> None:
        if self._closed:
            return
        busy = self._write_paused or self._waiting_for_room or (
            self._in_flight is not None and self._frames.unserved > MAX_UNSERVED)
        if busy != self._read_paused:
            self._read_paused = busy
            if busy:
                self._transport.pause_reading()
            else:
                self._transport.resume_reading()

    def _park(self, pending) -> None:
        if type(pending) is AnswerWhenDone:   # a reply to wait for, then encode: no Task
            self._in_flight = pending.future
            self._encode = pending.encode
        else:
            self._in_flight = asyncio.ensure_future(pending)
        self._in_flight.add_done_callback(self._parked_done)

    def _parked_done(self, task: asyncio.Future) -> None:
        self._in_flight = None
        encode, self._encode = self._encode, None
        if self._closed or task.cancelled():
            return
        self.active = True
        error = task.exception()
        if error is None:
            try:
                answer = task.result() if encode is None else encode(task.result())
            except Exception as exc:  # noqa: BLE001 - an encoder's failure is the request's
                error = exc
        if isinstance(error, MalformedRequest):
            log.warning("closing connection from %s: %s", self.peer, error)
            self._fail()
            return
        if error is not None:
            log.error("closing connection from %s after an internal error", self.peer,
                      exc_info=error)
            self._fail()
            return
        if self._measuring is not None:
            frame, started = self._measuring
            self._measuring = None
            stats = self.broker.request_stats
            stats.observe(frame, perf_counter_ns() - started)
            if answer is not None:
                stats.bytes_out += len(answer)
        if answer is not None:
            self._transport.write(answer)
        if self.auth is not None and self.auth.failed:  # a failed authentication: answered,
            self._fail()                                # then closed (security/sasl.py)
            return
        if not self._write_paused:
            self._serve_buffered()
            self._settle()
        self._update_reading()

    def _fail(self) -> None:
        self._closed = True
        self._transport.close()

    async def _handle(self, spec, request) -> bytes | None:
        body = admit(self.broker, self, spec, request)  # None: admitted (broker/network/admission.py)
        if body is None:
            body = await spec.handler(self.broker, request, self)
        if body is None:
            return None
        return encode_response(request.api_key, request.api_version, request.correlation_id,
                               body)
