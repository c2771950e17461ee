"""The group console: server-rendered HTML pages (inline CSS and SVG, no scripts fetched from
anywhere) built from the broker's live state and the flight recorder's recent events."""
from __future__ import annotations

from urllib.parse import quote

from roster.observability import events as ev
from roster.observability.history import WHY
from roster.observability.metrics import lag_rows
from roster.observability.plots import (
    COLOURS,
    STYLE,
    clock,
    esc,
    generations_plot,
    moves_text,
    ownership_plot,
    time_range,
)

REFRESH_S = 5


def page(title: str, body: str, refresh: bool = True, metrics: bool = True) -> bytes:
    """A console page; `metrics` links /metrics (the console on Kafka has none)."""
    meta = f'<meta http-equiv="refresh" content="{REFRESH_S}">' if refresh else ""
    link = ' · <a href="/metrics">/metrics</a>' if metrics else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{esc(title)}</title><style>{STYLE}</style></head><body>'
            f'<header><h1><a href="/">roster</a> · {esc(title)}</h1>'
            f'<span class="sub">refreshes every {REFRESH_S} s{link}</span></header>'
            f'<main>{body}</main></body></html>').encode()


def _groups(broker):
    """(group id, protocol, state, members, generation) of every live group."""
    return sorted((g.group_id, g.group_type, g.state, g.members, g.generation)
                  for g in broker.groups.overview()
                  # not a simple group, which only holds committed offsets (or nothing)
                  if g.protocol_type or g.members)


def index(broker, store) -> bytes:
    rows = _groups(broker)
    lag = {}
    for group_id, _, _, _, _, behind in lag_rows(broker):
        lag[group_id] = lag.get(group_id, 0) + behind
    from roster.observability.share_metrics import share_rows
    for row in share_rows(broker):      # a share group's lag: its share partitions'
        lag[row.group_id] = lag.get(row.group_id, 0) + row.lag
    members = sum(r[3] for r in rows)
    rebalancing = sum(r[2] not in ("Stable", "Empty") for r in rows)
    cards = (f'<div class="cards"><div class="card"><b data-count="groups">{len(rows)}</b>'
             f'<span>groups</span></div><div class="card"><b>{members}</b><span>members</span>'
             f'</div><div class="card"><b>{rebalancing}</b><span>rebalancing now</span></div>'
             f'<div class="card"><b>{sum(lag.values())}</b><span>total lag (records)</span>'
             '</div></div>')
    if rows:
        body = "".join(
            f'<tr class="group"><td><a href="/group/{quote(g, safe="")}">{esc(g)}</a></td>'
            f'<td>{p}</td><td><span class="pill {esc(s)}">{esc(s)}</span></td>'
            f'<td class="num">{n}</td><td class="num">{gen}</td>'
            f'<td class="num">{lag.get(g, 0)}</td>'
            f'<td class="num">{store.count(g, ev.GENERATION)}</td>'
            f'<td class="num">{store.count(g, ev.SAVED)}</td></tr>'
            for g, p, s, n, gen, in rows)
        table = ('<table><tr><th>group</th><th>protocol</th><th>state</th>'
                 '<th class="num">members</th><th class="num">generation</th>'
                 '<th class="num">lag</th><th class="num">rebalances seen</th>'
                 f'<th class="num">saved</th></tr>{body}</table>')
    else:
        table = '<p class="empty">No consumer groups yet.</p>'
    recent = store.recent(12)
    return page("groups", cards + f'<section><h2>Groups</h2>{table}</section>'
                 + f'<section><h2>Latest rebalances, every group</h2>'
                 f'{_timeline(recent, with_group=True)}</section>')


def _partitions_text(partitions) -> str:
    if not partitions:
        return "—"
    return "; ".join(f"{esc(t)} [{', '.join(str(p) for p in sorted(ps))}]"
                     for t, ps in sorted(partitions))


def _timeline(events, with_group: bool = False) -> str:
    if not events:
        return '<p class="empty">No rebalances recorded yet.</p>'
    rows = []
    for e in reversed(events):
        t = e.trigger
        colour = COLOURS.get(t.kind, "#bbb")
        who = " ".join(filter(None, [t.member_id and f"<code>{esc(t.member_id)}</code>",
                                     t.instance_id and f"(instance <b>{esc(t.instance_id)}</b>)"]))
        if e.kind == ev.SAVED:
            what = (f"<b>saved a rebalance</b>: static member <b>{esc(t.instance_id)}</b> "
                    f"came back as <code>{esc(t.member_id)}</code>, fencing "
                    f"<code>{esc(t.fenced_id)}</code>")
            took = "—"
        elif e.kind == ev.AWAY:
            what = (f"<b>no rebalance</b>: static member <b>{esc(t.instance_id)}</b> "
                    f"(<code>{esc(t.member_id)}</code>) left with epoch -2; its tasks wait "
                    "for it")
            took = "—"
        elif e.kind == ev.DELETED:
            what, took = "<b>group deleted</b>", "—"
        elif e.kind == ev.FAULT:   # injected in test mode (broker/faults)
            what, took = f"<b>fault</b> {esc(ev.fault_text(e.extra))}", "—"
        else:
            what = f"<b>{esc(WHY.get(t.kind, t.kind))}</b> {who}"
            if t.client_reason:
                what += f'<br><span class="note">client: {esc(t.client_reason)}</span>'
            if t.fenced_id:
                what += f'<br><span class="note">fenced <code>{esc(t.fenced_id)}</code></span>'
            took = f"{e.duration_ms} ms"
            if e.join_ms is not None:
                took += (f"<br><span class='note'>join {e.join_ms} · sync "
                         f"{e.sync_ms if e.sync_ms is not None else '–'}</span>")
        group = f"<td>{esc(e.group_id)}</td>" if with_group else ""
        rows.append(
            f'<tr class="event" data-kind="{e.kind}"><td>{clock(e.at_ms, True)}</td>{group}'
            f'<td class="num">{e.generation}</td>'
            f'<td><span class="why" style="background:{colour}"></span>{what}</td>'
            f'<td>{esc(e.outcome or e.kind)}</td><td class="num">{took}</td>'
            f'<td class="num">{len(e.members_before)} → {len(e.members_after)}</td>'
            f'<td class="num">{_moved_cell(e.moved)}</td></tr>')
    group_head = "<th>group</th>" if with_group else ""
    return ('<table class="timeline"><tr><th>when (UTC)</th>' + group_head +
            '<th class="num">gen</th><th>why</th><th>outcome</th><th class="num">took</th>'
            '<th class="num">members</th><th class="num">moved</th></tr>'
            + "".join(rows) + "</table>")


def _moved_cell(moved) -> str:
    """Partitions handed from one member to another (a first assignment is not a move),
    with the whole story in a tooltip."""
    if not moved:
        return "—"
    return f'<span title="{esc(moves_text(moved))}">{sum(m.handed_over for m in moved)}</span>'


def group_page(broker, store, group_id: str, now_ms: int) -> bytes | None:
    view = broker.groups.view(group_id)   # as the group's type draws it (GroupType.console_view)
    if view is None:
        return None
    state, protocol, generation = view.state, view.protocol, view.generation
    members = [(m.member_id, m.instance_id, m.client_id, m.client_host,
                _partitions_text(m.partitions) if m.partitions is not None
                else f"{m.assignment_bytes} bytes", m.note)
               for m in view.members]
    events = store.events(group_id)
    gens = [e for e in events if e.kind == ev.GENERATION]
    saved = [e for e in events if e.kind == ev.SAVED]
    cards = (f'<div class="cards"><div class="card"><b><span class="pill {esc(state)}">'
             f'{esc(state)}</span></b><span>{protocol} protocol</span></div>'
             f'<div class="card"><b>{generation}</b><span>generation</span></div>'
             f'<div class="card"><b>{len(members)}</b><span>members</span></div>'
             + "".join(f'<div class="card"><b data-count="{esc(kind)}">{n}</b>'
                       f'<span>{esc(kind)} tasks</span></div>' for kind, n in view.work)
             + f'<div class="card"><b data-count="generations">{len(gens)}</b>'
             f'<span>rebalances recorded</span></div>'
             f'<div class="card"><b data-count="saved">{len(saved)}</b><span>saved by static '
             f'membership</span></div></div>')
    if members:
        rows = "".join(
            f'<tr class="member"><td><code>{esc(m)}</code></td><td>{esc(i or "—")}</td>'
            f'<td>{esc(c)}</td><td>{esc(h)}</td><td class="mono">{a}</td><td>{esc(n)}</td></tr>'
            for m, i, c, h, a, n in members)
        member_table = ('<table><tr><th>member id</th><th>instance id</th><th>client</th>'
                        '<th>host</th><th>assignment</th><th></th></tr>' + rows + '</table>')
    else:
        member_table = '<p class="empty">No members.</p>'
    lag = [r for r in lag_rows(broker) if r[0] == group_id]
    if lag:
        peak = max(r[5] for r in lag) or 1
        lag_table = ('<table><tr><th>topic</th><th class="num">partition</th>'
                     '<th class="num">committed</th><th class="num">log end</th>'
                     '<th class="num">lag</th><th></th></tr>' + "".join(
                         f'<tr class="lag"><td>{esc(t)}</td><td class="num">{p}</td>'
                         f'<td class="num">{c}</td><td class="num">{e}</td>'
                         f'<td class="num">{b}</td><td style="width:30%"><span class="lagbar" '
                         f'style="width:{100 * b / peak:.0f}%"></span></td></tr>'
                         for _, t, p, c, e, b in lag) + '</table>')
    else:
        lag_table = '<p class="empty">No committed offsets.</p>'
    if protocol == "share":     # no committed offsets: its share partitions instead
        from roster.observability.share_console import share_sections
        lag_section = share_sections(broker, store, group_id, view)
    else:
        lag_section = f'<section><h2>Lag</h2>{lag_table}</section>'
    span = time_range(events, now_ms)   # one time axis for both plots
    body = (cards
            + f'<section><h2>Rebalances over time</h2>{generations_plot(events, span)}</section>'
            + f'<section><h2>Partition ownership</h2>{ownership_plot(events, now_ms, span)}'
            '</section>'
            + f'<section><h2>Members</h2>{member_table}</section>'
            + lag_section
            + f'<section><h2>Timeline</h2>{_timeline(events[-50:])}</section>')
    return page(f"group {group_id}", body)
