"""The group console over a cluster that is not roster, an Apache Kafka cluster (`roster console
--bootstrap-server HOST:PORT --http-port PORT`): the console's pages made of what Kafka answers
(ListGroups, the describe views, OffsetFetch, ListOffsets, gathered by
roster.observability.group_report), read afresh for every page. Kafka keeps no rebalance
history, so where roster's console draws it these pages say so in one line.

The console holds no account of its own. When its connection to Kafka uses SASL
(`--command-config`), every request must carry HTTP Basic credentials, and the page is read
from Kafka as that user: Kafka checks the password and its ACLs decide what the viewer sees.
Without SASL the page is read with the connection's settings, as `roster report` reads it."""
from __future__ import annotations

import asyncio
import dataclasses
from urllib.parse import quote

from roster.admin.client import AdminAuthenticationError, AdminClient, AdminError
from roster.admin.not_roster import REPORT
from roster.observability.console import page
from roster.observability.group_report import collect
from roster.observability.http import HTML, MAX_HEAD, NO_SUCH_GROUP, basic_credentials, respond
from roster.observability.plots import esc
from roster.security.client import ClientSecurity

NO_HISTORY = REPORT.replace("this report has", "these pages have")
READS_AT_ONCE = 4       # pages read from Kafka at the same time; more requests wait their turn
READ_TIMEOUT_S = 10.0   # each admin request's


class KafkaConsole:
    def __init__(self, bootstrap: str, host: str, port: int,
                 security: ClientSecurity | None = None) -> None:
        self.bootstrap, self.host, self.port = bootstrap, host, port
        self.security = security
        self._reads = asyncio.Semaphore(READS_AT_ONCE)
        self._server: asyncio.base_events.Server | None = None

    @property
    def asks_credentials(self) -> bool:
        return self.security is not None and self.security.sasl

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            lambda r, w: respond(r, w, self._answer), self.host, self.port, limit=MAX_HEAD)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return f"http://{host}:{self.port}/"

    async def _answer(self, method: str, path: str, headers: dict[str, str]):
        if path == "/healthz":
            return "200 OK", {}, b"ok\n"
        if path not in ("/", "/groups") and not path.startswith("/group/"):
            return "404 Not Found", {}, b"not found\n"
        security = self.security
        if self.asks_credentials:
            credentials = basic_credentials(headers.get("authorization", ""))
            if credentials is None:
                return _ask_credentials()
            security = dataclasses.replace(security, username=credentials[0],
                                           password=credentials[1])
        group = path[len("/group/"):] if path.startswith("/group/") else None
        try:
            async with self._reads:
                groups = await asyncio.to_thread(self._read, security, group)
        except AdminAuthenticationError:
            return _ask_credentials()
        except AdminError as exc:
            return "503 Service Unavailable", HTML, page(
                "Kafka not reachable", f'<p class="empty">{esc(str(exc))}</p>', metrics=False)
        if group is None:
            return "200 OK", HTML, self._index(groups)
        if not groups:
            return NO_SUCH_GROUP
        return "200 OK", HTML, self._group_page(groups[0])

    def _read(self, security: ClientSecurity | None, group: str | None) -> list[dict]:
        with AdminClient(self.bootstrap, timeout_s=READ_TIMEOUT_S, security=security) as client:
            found = collect(client, group)
        # a group Kafka neither lists nor holds offsets for is no group
        return [g for g in found if g["members"] or g["offsets"] or g["state"] not in
                ("—", "Dead")]

    def _index(self, groups: list[dict]) -> bytes:
        lag = {g["group_id"]: _lag(g) for g in groups}
        members = sum(len(g["members"] or ()) for g in groups)
        cards = (f'<div class="cards"><div class="card"><b data-count="groups">{len(groups)}</b>'
                 f'<span>groups</span></div><div class="card"><b>{members}</b>'
                 f'<span>members</span></div><div class="card"><b>{sum(lag.values())}</b>'
                 '<span>total lag (records)</span></div></div>')
        if groups:
            rows = "".join(
                f'<tr class="group"><td><a href="/group/{quote(g["group_id"], safe="")}">'
                f'{esc(g["group_id"])}</a></td><td>{esc(g["protocol"])}</td>'
                f'<td><span class="pill {esc(g["state"])}">{esc(g["state"])}</span></td>'
                f'<td class="num">{_count(g)}</td><td class="num">{lag[g["group_id"]]}</td>'
                '</tr>' for g in groups)
            table = ('<table><tr><th>group</th><th>protocol</th><th>state</th>'
                     '<th class="num">members</th><th class="num">lag</th></tr>'
                     f'{rows}</table>')
        else:
            table = '<p class="empty">The cluster lists no groups this user may see.</p>'
        return page("groups", self._source() + cards
                    + f'<section><h2>Groups</h2>{table}</section>', metrics=False)

    def _group_page(self, g: dict) -> bytes:
        members = g["members"] or []
        cards = (f'<div class="cards"><div class="card"><b><span class="pill {esc(g["state"])}">'
                 f'{esc(g["state"])}</span></b><span>{esc(g["protocol"])} protocol</span></div>'
                 f'<div class="card"><b>{_count(g)}</b><span>members</span></div>'
                 f'<div class="card"><b data-lag="{_lag(g)}">{_lag(g)}</b>'
                 '<span>lag (records)</span></div></div>')
        if members:
            member_table = ('<table><tr><th>member id</th><th>instance id</th><th>client</th>'
                            '<th>host</th><th>assignment</th></tr>' + "".join(
                                f'<tr class="member"><td><code>{esc(m.member_id)}</code></td>'
                                f'<td>{esc(m.instance_id or "—")}</td><td>{esc(m.client_id)}'
                                f'</td><td>{esc(m.host)}</td><td class="mono">'
                                f'{esc(_partitions(m.partitions))}</td></tr>'
                                for m in members) + '</table>')
        else:
            member_table = '<p class="empty">No members.</p>'
        if g["error"]:
            lag_table = f'<p class="empty">{esc(g["error"])}</p>'
        elif g["offsets"]:
            lag_table = ('<table><tr><th>topic</th><th class="num">partition</th>'
                         '<th class="num">committed</th><th class="num">log end</th>'
                         '<th class="num">lag</th></tr>' + "".join(
                             f'<tr class="lag" data-topic="{esc(r["topic"])}" '
                             f'data-partition="{r["partition"]}"><td>{esc(r["topic"])}</td>'
                             f'<td class="num">{r["partition"]}</td>'
                             f'<td class="num">{r["committed"]}</td>'
                             f'<td class="num">{r["end"] if r["end"] >= 0 else "—"}</td>'
                             f'<td class="num">{"—" if r["lag"] is None else r["lag"]}</td>'
                             '</tr>' for r in g["offsets"]) + '</table>')
        else:
            lag_table = '<p class="empty">No committed offsets.</p>'
        return page(f"group {g['group_id']}", self._source() + cards
                    + f'<section><h2>Members</h2>{member_table}</section>'
                    + f'<section><h2>Lag</h2>{lag_table}</section>', metrics=False)

    def _source(self) -> str:
        return (f'<p class="not-roster">Read from the Kafka cluster at {esc(self.bootstrap)}. '
                f'<b>{esc(NO_HISTORY)}</b>.</p>')


def _ask_credentials():
    return ("401 Unauthorized", {"WWW-Authenticate": 'Basic realm="roster console on Kafka"'},
            b"the credentials of a SASL user of the Kafka cluster are required\n")


def _lag(g: dict) -> int:
    return sum(r["lag"] for r in g["offsets"] if r["lag"] is not None)


def _count(g: dict) -> str:
    return "—" if g["members"] is None else str(len(g["members"]))


def _partitions(partitions) -> str:
    return ", ".join(f"{t}-{p}" for t, p in partitions) or "—"
