"""`roster report` on a cluster that is not roster (an Apache Kafka cluster): the report made of
what Kafka has. There is no flight recorder there, so no rebalance history; what the broker does
answer is each group's state and members (ListGroups, the describe views) and its committed
offsets against the log end (OffsetFetch, ListOffsets). That is a table per group, built with
the admin client alone (no Spark: nothing here is an aggregate), under the one line that says
why the rebalance sections are absent."""
from __future__ import annotations

import html
import time
from pathlib import Path

from roster.admin.client import AdminClient, AdminError
from roster.admin.groups import describe, list_groups, view_of
from roster.admin.offsets import LATEST, committed, log_offsets
from roster.observability.plots import STYLE, esc

MAX_GROUPS = 500   # as many as the roster report's group table holds


def collect(client: AdminClient, group: str | None = None) -> list[dict]:
    """One dict per group (the one named, else every group the cluster lists, by id):
    state, members and one row per committed partition with its log end and lag. A group
    the broker will not describe or whose offsets it will not give keeps what it did give."""
    listed = {g: (kind, state) for g, kind, state in list_groups(client)}
    ids = [group] if group is not None else sorted(listed)[:MAX_GROUPS]
    found = []
    for group_id in ids:
        kind, state = listed.get(group_id, ("", "—"))
        entry = {"group_id": group_id, "protocol": kind or "—", "state": state,
                 "members": None, "offsets": [], "error": None}
        try:
            answer = describe(client, group_id)
            entry["state"] = answer.group_state or state
            entry["members"] = view_of(answer).members(answer)
        except AdminError:
            pass   # not described (unknown or not allowed): its offsets may still be read
        try:
            offsets = committed(client, group_id)
            wanted: dict[str, list[int]] = {}
            for topic, partition in offsets:
                wanted.setdefault(topic, []).append(partition)
            ends = log_offsets(client, wanted, LATEST) if wanted else {}
        except AdminError as exc:
            entry["error"] = str(exc)
            offsets, ends = {}, {}
        for (topic, partition), offset in sorted(offsets.items()):
            end = ends.get((topic, partition), -1)
            entry["offsets"].append({"topic": topic, "partition": partition,
                                     "committed": offset, "end": end,
                                     "lag": max(end - offset, 0) if end >= 0 else None})
        found.append(entry)
    return found


def render(groups: list[dict], group: str | None, why: str, bootstrap: str) -> str:
    title = (f"Group report · {group}" if group else "Group report · every group")
    sections = "".join(_section(g) for g in groups) or \
        '<p class="note">The cluster lists no groups.</p>'
    written = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    body = (f'<p class="not-roster"><b>{esc(why)}</b></p>{sections}'
            f'<p class="note">{len(groups)} group(s) read from {esc(bootstrap)}; '
            f'written {written} UTC.</p>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>'
            f'<header><h1>{html.escape(title)}</h1></header><main>{body}</main></body></html>')


def _section(g: dict) -> str:
    members = g["members"]
    count = "—" if members is None else str(len(members))
    lag = sum(r["lag"] for r in g["offsets"] if r["lag"] is not None)
    head = (f'<section class="group" data-group="{esc(g["group_id"])}">'
            f'<h2>{esc(g["group_id"])}</h2><p>protocol {esc(g["protocol"])} · state '
            f'{esc(g["state"])} · {count} member(s) · lag now '
            f'<b data-lag="{lag}">{lag:,}</b></p>')
    if members:
        head += ("<table><tr><th>member</th><th>instance</th><th>client</th><th>host</th>"
                 "<th>partitions</th></tr>" + "".join(
                     f'<tr><td>{esc(m.member_id)}</td><td>{esc(m.instance_id or "—")}</td>'
                     f'<td>{esc(m.client_id)}</td><td>{esc(m.host)}</td>'
                     f'<td>{esc(", ".join(f"{t}-{p}" for t, p in m.partitions) or "—")}</td>'
                     f'</tr>' for m in members) + "</table>")
    if g["error"]:
        return head + f'<p class="note">{esc(g["error"])}</p></section>'
    if not g["offsets"]:
        return head + '<p class="note">No committed offsets.</p></section>'
    rows = "".join(
        f'<tr class="offset-row" data-topic="{esc(r["topic"])}" '
        f'data-partition="{r["partition"]}" data-committed="{r["committed"]}" '
        f'data-end="{r["end"]}" data-lag="{"" if r["lag"] is None else r["lag"]}">'
        f'<td>{esc(r["topic"])}</td><td class="num">{r["partition"]}</td>'
        f'<td class="num">{r["committed"]}</td>'
        f'<td class="num">{r["end"] if r["end"] >= 0 else "—"}</td>'
        f'<td class="num">{"—" if r["lag"] is None else r["lag"]}</td></tr>'
        for r in g["offsets"])
    return (head + '<table><tr><th>topic</th><th class="num">partition</th>'
            '<th class="num">committed offset</th><th class="num">log end</th>'
            f'<th class="num">lag</th></tr>{rows}</table></section>')


def write(bootstrap: str, out: Path, why: str, group: str | None = None,
          security=None) -> list[dict]:
    """Read the groups and write the report; the groups, for the summary line."""
    with AdminClient(bootstrap, security=security) as client:
        groups = collect(client, group)
    out.write_text(render(groups, group, why, bootstrap), encoding="utf-8")
    return groups
