"""A share group's part of the console's group page (console.group_page draws it for groups of
protocol "share"): what became of its records (counter cards, summed over its partitions),
each share partition with its start offset, log end, in-flight records by state, lag and the
members it is assigned to, each partition's counters, and the group's recent record events
(locks expired, archived at the delivery limit, dead letters: share_records_recorder.py).
Data attributes name each figure, so tests read the page as a browser shows it."""
from __future__ import annotations

from roster.observability.plots import clock, esc
from roster.observability.share_metrics import (
    COUNTER_FAMILIES,
    STATES,
    group_totals,
    share_rows,
)

CARD_WORDS = {"acquired": "records acquired", "redelivered": "redelivered",
              "accepted": "accepted", "released": "released", "rejected": "rejected",
              "renewed": "locks renewed", "lock_expired": "lock expiries",
              "archived": "archived at the limit", "dead_lettered": "dead letters"}


def share_sections(broker, store, group_id: str, view) -> str:
    rows = share_rows(broker, group_id)
    totals = group_totals(rows)
    in_flight = sum(r.in_flight for r in rows)
    lag = sum(r.lag for r in rows)
    cards = ('<div class="cards share-counts">'
             f'<div class="card"><b data-share="in_flight">{in_flight}</b>'
             '<span>in flight</span></div>'
             f'<div class="card"><b data-share="lag">{lag}</b><span>lag (records)</span></div>'
             + "".join(f'<div class="card"><b data-share="{field}">{getattr(totals, field)}</b>'
                       f'<span>{CARD_WORDS[field]}</span></div>'
                       for field, _, _ in COUNTER_FAMILIES)
             + '</div>')
    holders: dict[tuple[str, int], list[str]] = {}
    for member in view.members:
        for topic, partitions in member.partitions or ():
            for p in partitions:
                holders.setdefault((topic, p), []).append(member.member_id)
    if rows:
        state_heads = "".join(f'<th class="num">{label}</th>' for label, _ in STATES)
        body = "".join(
            f'<tr class="share-partition" data-topic="{esc(r.topic)}" '
            f'data-partition="{r.partition}"><td>{esc(r.topic)}</td>'
            f'<td class="num">{r.partition}</td>'
            f'<td class="num" data-field="start">{r.start}</td>'
            f'<td class="num" data-field="end">{r.end}</td>'
            + "".join(f'<td class="num" data-field="{label}">{r.states[label]}</td>'
                      for label, _ in STATES)
            + f'<td class="num" data-field="lag">{r.lag}</td>'
            f'<td class="mono">{esc(", ".join(holders.get((r.topic, r.partition), ())) or "—")}'
            '</td></tr>' for r in rows)
        partitions = ('<table><tr><th>topic</th><th class="num">partition</th>'
                      '<th class="num">start offset</th><th class="num">log end</th>'
                      f'{state_heads}<th class="num">lag</th><th>assigned to</th></tr>'
                      f'{body}</table>')
        counter_heads = "".join(f'<th class="num">{esc(CARD_WORDS[field])}</th>'
                                for field, _, _ in COUNTER_FAMILIES)
        counted = "".join(
            f'<tr class="share-counters" data-topic="{esc(r.topic)}" '
            f'data-partition="{r.partition}"><td>{esc(r.topic)}</td>'
            f'<td class="num">{r.partition}</td>'
            + "".join(f'<td class="num" data-field="{field}">{getattr(r.counts, field)}</td>'
                      for field, _, _ in COUNTER_FAMILIES) + '</tr>' for r in rows)
        counters = ('<table><tr><th>topic</th><th class="num">partition</th>'
                    f'{counter_heads}</tr>{counted}</table>'
                    '<p class="note">Since this broker started; released also counts records '
                    'a closed share session gave back.</p>')
    else:
        partitions = '<p class="empty">No share partitions initialised yet.</p>'
        counters = ""
    return (f'<section><h2>Share partitions</h2>{cards}{partitions}</section>'
            f'<section><h2>What became of the records</h2>{counters}'
            f'{_record_events(store.record_events(group_id))}</section>')


def _record_events(events) -> str:
    if not events:
        return '<p class="empty">No lock expiries, archived records or dead letters recorded.</p>'
    rows = "".join(
        f'<tr class="record-event" data-kind="{esc(e.kind)}"><td>{clock(e.at_ms, True)}</td>'
        f'<td>{esc(e.kind.replace("_", " "))}</td><td>{esc(e.trigger.detail)}'
        + (f' <span class="note">({e.extra["suppressed"]} earlier left out)</span>'
           if e.extra.get("suppressed") else "")
        + '</td></tr>' for e in reversed(events[-50:]))
    return ('<table class="timeline"><tr><th>when (UTC)</th><th>what</th><th></th></tr>'
            f'{rows}</table>')
