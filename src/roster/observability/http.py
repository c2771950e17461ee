"""The broker's HTTP listener (`roster serve --http-port PORT`, config `http.port`): /metrics
for Prometheus and the group console (/, /group/<id>). Off unless a port is given; binds to
loopback (`http.host`) by default. When a Kafka listener uses SASL, every request must carry
HTTP Basic credentials of a SCRAM user (`roster users`), checked like SASL/PLAIN against the
same store; otherwise, as the Kafka listeners, it asks for nothing.

A deliberately small HTTP/1.1 server on the broker's event loop: GET, and POST and DELETE on
the control routes of test mode (ROUTE_MODULES: the broker clock's POST /clock/advance, the
fault plane's /faults), one request per connection, bounded request heads and bodies."""
from __future__ import annotations

import asyncio
import base64
import binascii
import importlib
import inspect
import logging
from collections import OrderedDict, deque
from urllib.parse import unquote, urlsplit

from roster.observability import console
from roster.observability import events as ev
from roster.observability.event_log import EVENTS_TOPIC
from roster.observability.events import GroupEvent
from roster.observability.metrics import CONTENT_TYPE, Metrics
from roster.record_codec import MemoryRecords

log = logging.getLogger("roster.observability")

MAX_HEAD = 16 << 10
MAX_BODY = 64 << 10              # a control route's request body (JSON of a few fields)
# modules whose ROUTES ({(method, path): handler(broker, body: bytes, query: str) -> (status,
# headers, body), or a coroutine of it}) the listener serves beside its pages; each refuses
# by itself outside test mode
ROUTE_MODULES = ["roster.broker.clock_http", "roster.broker.faults.http"]
PER_GROUP = 2000                 # events the console keeps per group
PER_GROUP_RECORDS = 200          # and share-record events (locks expired, ...), apart
MAX_GROUPS = 1000                # groups it keeps them for: the most recently active
# At start the console reads only the tail of each partition of the events topic (a busy
# broker may keep months of events there: reading them all would block the loop and hold them
# all in memory): the last BACKFILL_EVENTS records, in reads of BACKFILL_BYTES.
BACKFILL_EVENTS = 5000
BACKFILL_BYTES = 1 << 20


class EventStore:
    """The console's memory of recent events: per group, the last PER_GROUP events, for the
    MAX_GROUPS groups with the most recent events (group ids are the clients' to choose, and
    deleted groups' ids never come back: without a bound this would grow for ever)."""

    def __init__(self) -> None:
        self._by_group: OrderedDict[str, deque] = OrderedDict()   # least recent first
        # a share group's record events (events.RECORD_KINDS), kept apart so that they never
        # push its generations out
        self._records: dict[str, deque] = {}
        self._recent: deque = deque(maxlen=200)
        self._counts: dict[tuple[str, str], int] = {}

    def add(self, events) -> None:
        by_group = self._by_group
        for event in events:
            group_id = event.group_id
            kept = by_group.get(group_id)
            if kept is None:
                kept = by_group[group_id] = deque(maxlen=PER_GROUP)
                if len(by_group) > MAX_GROUPS:
                    self._forget(next(iter(by_group)))
            else:
                by_group.move_to_end(group_id)
            if event.kind in ev.RECORD_KINDS:
                records = self._records.get(group_id)
                if records is None:
                    records = self._records[group_id] = deque(maxlen=PER_GROUP_RECORDS)
                records.append(event)
            else:
                kept.append(event)
                self._recent.append(event)
            key = (group_id, event.kind)
            self._counts[key] = self._counts.get(key, 0) + 1

    def _forget(self, group_id: str) -> None:
        del self._by_group[group_id]
        self._records.pop(group_id, None)
        for kind in (ev.GENERATION, ev.SAVED, ev.DELETED, *ev.RECORD_KINDS):
            self._counts.pop((group_id, kind), None)

    def events(self, group_id: str) -> list[GroupEvent]:
        return list(self._by_group.get(group_id, ()))

    def record_events(self, group_id: str) -> list[GroupEvent]:
        """A share group's recent record events (locks expired, archived, dead letters)."""
        return list(self._records.get(group_id, ()))

    def recent(self, n: int) -> list[GroupEvent]:
        return list(self._recent)[-n:]

    def count(self, group_id: str, kind: str) -> int:
        return self._counts.get((group_id, kind), 0)

    def backfill(self, broker) -> int:
        """What the topic already holds (the last BACKFILL_EVENTS of each partition),
        oldest first."""
        topic = broker.topics.get(EVENTS_TOPIC)
        if topic is None:
            return 0
        found = []
        for log_ in topic.partitions:
            end = log_.log_end_offset
            offset = first = max(log_.log_start_offset, end - BACKFILL_EVENTS, 0)
            while offset < end:
                chunk = log_.read(offset, BACKFILL_BYTES)
                if not chunk:
                    break
                batches = MemoryRecords(chunk)
                moved = False
                while (batch := batches.next_batch()) is not None:
                    for record in batch:
                        if record.offset < first:   # a batch may begin before the tail
                            continue
                        try:
                            found.append(GroupEvent.from_json(bytes(record.value)))
                        except (ValueError, TypeError, KeyError):
                            pass
                    offset = batch.base_offset + batch.last_offset_delta + 1
                    moved = True
                if not moved:
                    break
        found.sort(key=lambda e: e.at_ms)
        self.add(found)
        return len(found)


HTML = {"Content-Type": "text/html; charset=utf-8"}
NO_SUCH_GROUP = ("404 Not Found", HTML, console.page(
    "no such group", '<p class="empty">No such group.</p>', refresh=False))


def basic_credentials(value: str) -> tuple[str, str] | None:
    """(user, password) of an Authorization header's HTTP Basic credentials, else None."""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return user, password


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]] | None:
    """(method, path, headers with lower-case names) of a request head; None when its first
    line is not a request line."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    method, target, _ = parts
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    url = urlsplit(target)
    if url.query:
        headers[":query"] = url.query   # a pseudo-header: no real header name has a colon
    return method, unquote(url.path), headers


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes | None:
    """A request's body by its Content-Length (none: empty); None when it is larger than
    MAX_BODY or the length is not a number."""
    text = headers.get("content-length", "0")
    if not text.isdigit() or int(text) > MAX_BODY:
        return None
    return await asyncio.wait_for(reader.readexactly(int(text)), 10) if int(text) else b""


async def respond(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer,
                  methods: tuple[str, ...] = ("GET", "HEAD")) -> None:
    """Serve one request on a connection: `answer(method, path, headers)` is awaited for
    (status, headers, body); a method of `methods` other than GET and HEAD also gets the
    request's body (`body=`). A bad request line, another method, a slow or oversized head or
    body and an answer that raised get their error here, for every page the listeners serve."""
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        request = parse_head(head)
        if request is None:
            status, headers, body = "400 Bad Request", {}, b"bad request\n"
        elif request[0] not in methods:
            allowed = ", ".join(m for m in methods if m != "HEAD")
            status, headers, body = ("405 Method Not Allowed", {"Allow": allowed},
                                     f"{allowed} only\n".encode())
        elif request[0] in ("GET", "HEAD"):
            status, headers, body = await answer(*request)
        else:
            payload = await read_body(reader, request[2])
            if payload is None:
                status, headers, body = ("413 Content Too Large", {},
                                         f"a body of at most {MAX_BODY} bytes\n".encode())
            else:
                status, headers, body = await answer(*request, body=payload)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
            ConnectionError):
        writer.close()
        return
    except Exception:
        log.exception("console request failed")
        status, headers, body = "500 Internal Server Error", {}, b"internal error\n"
    headers = {"Content-Type": "text/plain; charset=utf-8", **headers}
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close",
             "Cache-Control: no-store"] + [f"{k}: {v}" for k, v in headers.items()]
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class HttpListener:
    def __init__(self, broker, host: str, port: int, connections=lambda: 0,
                 require_auth: bool = False) -> None:
        self.broker = broker
        self.host, self.port = host, port
        self.metrics = Metrics(broker, connections)
        self.store = EventStore()
        self.require_auth = require_auth
        self._server: asyncio.base_events.Server | None = None
        self.routes: dict[tuple[str, str], object] = {}
        for name in ROUTE_MODULES:
            self.routes.update(getattr(importlib.import_module(name), "ROUTES", {}))

    async def start(self) -> None:
        loaded = self.store.backfill(self.broker)
        if loaded:
            log.info("console: %d recorded group events loaded", loaded)
        previous = self.broker.groups.on_events

        def fan_out(events) -> None:
            if previous is not None:
                previous(events)
            self.metrics.totals.add(events)
            self.store.add(events)
        self.broker.groups.on_events = fan_out
        self.broker.request_stats = self.metrics.stats
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  limit=MAX_HEAD)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self.metrics.close()

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return f"http://{host}:{self.port}/"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await respond(reader, writer, self._answer, ("GET", "HEAD", "POST", "DELETE"))

    async def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes = b""):
        if self.require_auth and not self._authorized(headers.get("authorization", "")):
            return ("401 Unauthorized", {"WWW-Authenticate": 'Basic realm="roster"'},
                    b"credentials of a SCRAM user required (the Kafka listeners use SASL)\n")
        route = self.routes.get((method if method != "HEAD" else "GET", path))
        if route is not None:
            answer = route(self.broker, body, headers.get(":query", ""))
            return await answer if inspect.isawaitable(answer) else answer
        if method not in ("GET", "HEAD"):
            known = sorted(m for m, p in self.routes if p == path)
            if known:
                return ("405 Method Not Allowed", {"Allow": ", ".join(known)},
                        f"{path}: {', '.join(known)} only\n".encode())
            return "404 Not Found", {}, b"not found\n"
        if path == "/metrics":
            return "200 OK", {"Content-Type": CONTENT_TYPE}, self.metrics.render()
        if path in ("/", "/groups"):
            return "200 OK", HTML, console.index(self.broker, self.store)
        if path.startswith("/group/"):
            page = console.group_page(self.broker, self.store, path[len("/group/"):],
                                      self.broker.now_ms())
            return ("200 OK", HTML, page) if page is not None else NO_SUCH_GROUP
        if path == "/healthz":
            return "200 OK", {}, b"ok\n"
        return "404 Not Found", {}, b"not found\n"

    def _authorized(self, value: str) -> bool:
        credentials = basic_credentials(value)
        if credentials is None:
            return False
        user, password = credentials
        store = getattr(self.broker, "scram", None)
        if store is None:
            return False
        from roster.security.credentials import password_matches
        for mechanism, credential in store.mechanisms(user).items():
            if password_matches(credential, mechanism, password):
                return True
        return False
