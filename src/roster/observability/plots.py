"""Inline SVG plots shared by the console and the Spark report: no scripts, no fonts or files
fetched from anywhere, readable when printed. Pure functions from data to markup."""
from __future__ import annotations

import datetime
import html

from roster.observability import events as ev
from roster.observability.axes import integer_ticks, time_label, time_ticks
from roster.observability.history import moves_text

# one colour per reason, chosen to stay distinguishable for common colour-vision deficiencies
COLOURS = {
    ev.MEMBER_JOINED: "#0072b2",
    ev.STATIC_MEMBER_JOINED: "#56b4e9",
    ev.MEMBER_LEFT: "#e69f00",
    ev.SESSION_EXPIRED: "#d55e00",
    ev.REBALANCE_TIMEOUT: "#cc79a7",
    ev.STATIC_MEMBER_REPLACED: "#009e73",
    ev.LEADER_REJOIN: "#6a3d9a",
    ev.SUBSCRIPTION_CHANGED: "#f0e442",
    ev.METADATA_CHANGED: "#b15928",
    ev.ADMIN_REMOVAL: "#999999",
    ev.GROUP_DELETED: "#222222",
    ev.STATIC_REJOIN: "#009e73",
    ev.STATIC_LEAVE: "#8dd3c7",
    ev.TOPOLOGY_CHANGED: "#1b9e77",
    ev.MEMBER_CHANGED: "#a6761d",
    ev.OTHER: "#bbbbbb",
}
OWNER_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
                 "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c"]
FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def clock(ms: int, with_date: bool = False) -> str:
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


# The group page's two time plots share these margins and one time range, so that a moment
# is at the same place across the page in both.
LEFT, RIGHT = 150, 40
LABEL_CHARS = 22    # partition names longer than this are cut at the left (their end differs)


def time_range(events, now_ms: int) -> tuple[int, int]:
    """The one time range the group page's plots share: from the earliest rebalance start (or
    stretch without an owner) to now, with a little room at both ends."""
    starts = [e.started_ms for e in events if e.kind in (ev.GENERATION, ev.SAVED)]
    starts += [start for segments in ownership_segments(events, now_ms).values()
               for start, _, _ in segments]
    t1 = max([e.at_ms for e in events] + [now_ms])
    t0 = min(starts, default=t1 - 1000)
    room = max((t1 - t0) // 40, 20)
    return t0 - room, t1 + room


def _time_axis(t0: int, t1: int, x, top: float, bottom: float, label_y: float) -> list[str]:
    """Grid lines at round times across the plot, labelled below it."""
    step, ticks = time_ticks(t0, t1)
    return [f'<line class="tick" x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{bottom}" '
            f'stroke="#e6e6e6"/><text x="{x(t):.1f}" y="{label_y}" font-size="11" '
            f'text-anchor="middle" fill="#555">{time_label(t, step)}</text>' for t in ticks]


def legend(kinds, colours=COLOURS) -> str:
    items = "".join(
        f'<span class="key"><i style="background:{colours.get(k, "#bbb")}"></i>'
        f'{esc(k.replace("_", " "))}</span>' for k in kinds)
    return f'<div class="legend">{items}</div>'


def generations_plot(events, span: tuple[int, int] | None = None, width: int = 900,
                     height: int = 260) -> str:
    """Generations over time: one dot per generation at its end, height = generation number,
    a line back to when its rebalance began, colour = what triggered it; a rebalance that
    static membership saved is a green diamond at the height of the generation it kept."""
    gens = [e for e in events if e.kind == ev.GENERATION]
    saved = [e for e in events if e.kind == ev.SAVED]
    points = gens + saved
    if not points:
        return '<p class="empty">No rebalances recorded yet.</p>'
    top, bottom = 14, 36
    t0, t1 = span or time_range(events, max(e.at_ms for e in points))
    g_low, g_high, g_ticks = integer_ticks(min(e.generation for e in points),
                                           max(e.generation for e in points))
    plot_w, plot_h = width - LEFT - RIGHT, height - top - bottom
    inset = 14   # dots at the lowest and highest generation stay clear of the frame

    def x(ms):
        return LEFT + (ms - t0) * plot_w / (t1 - t0)

    def y(g):
        if g_high == g_low:
            return top + plot_h / 2
        return top + inset + (g_high - g) * (plot_h - 2 * inset) / (g_high - g_low)

    parts = [f'<svg class="plot" data-plot="generations" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" aria-label="generations over time" style="{FONT}">',
             f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
             'stroke="#ddd"/>']
    parts += _time_axis(t0, t1, x, top, top + plot_h, height - 14)
    for g in g_ticks:
        parts.append(f'<line x1="{LEFT}" y1="{y(g):.1f}" x2="{LEFT + plot_w}" y2="{y(g):.1f}" '
                     f'stroke="#eee"/><text class="ytick" x="{LEFT - 8}" y="{y(g) + 4:.1f}" '
                     f'font-size="11" text-anchor="end" fill="#555">{g}</text>')
    parts.append(f'<text x="{LEFT - 40}" y="{top + plot_h / 2:.0f}" font-size="11" '
                 f'fill="#555" transform="rotate(-90 {LEFT - 40} {top + plot_h / 2:.0f})" '
                 'text-anchor="middle">generation</text>')
    for e in sorted(gens, key=lambda e: e.at_ms):
        colour = COLOURS.get(e.trigger.kind, "#bbb")
        x0, x1, yy = x(e.started_ms), x(e.at_ms), y(e.generation)
        tip = (f"generation {e.generation}: {e.trigger.kind.replace('_', ' ')}"
               f" ({e.duration_ms} ms, {e.outcome}; members {len(e.members_before)}"
               f"→{len(e.members_after)}; {moves_text(e.moved) or 'no partition moved'})")
        parts.append(f'<g class="generation" data-generation="{e.generation}">'
                     f'<title>{esc(tip)}</title>'
                     f'<line x1="{x0:.1f}" y1="{yy:.1f}" x2="{x1:.1f}" y2="{yy:.1f}" '
                     f'stroke="{colour}" stroke-width="3" stroke-opacity="0.5"/>'
                     f'<circle cx="{x1:.1f}" cy="{yy:.1f}" r="6" fill="{colour}" '
                     f'stroke="#fff" stroke-width="1.5"/></g>')
    for e in saved:
        cx, cy = x(e.at_ms), y(e.generation)
        tip = f"saved, generation {e.generation} kept: {e.trigger.detail}"
        parts.append(f'<g class="saved" data-generation="{e.generation}">'
                     f'<title>{esc(tip)}</title>'
                     f'<path d="M{cx:.1f} {cy - 7:.1f} l7 7 l-7 7 l-7 -7 z" '
                     f'fill="{COLOURS[ev.STATIC_REJOIN]}" fill-opacity="0.35" '
                     f'stroke="{COLOURS[ev.STATIC_REJOIN]}" stroke-width="1.5"/></g>')
    parts.append("</svg>")
    kinds = sorted({e.trigger.kind for e in gens})
    return "".join(parts) + legend(kinds) + (
        '<div class="legend"><span class="key"><i class="diamond"></i>rebalance saved by '
        'static membership (at the generation it kept)</span></div>' if saved else "")


def ownership_segments(events, now_ms: int):
    """Partition -> [(start, end, owner)] (owner None: nobody owned it), from the
    generations' moves and members. The key is (topic, partition); a streams group's task is
    (subtopology, partition, role), its role active, standby or warmup (one task can have a
    holder in each).

    A move names the partition's new owner. A partition whose owner is no longer a member when
    a generation ends (its session expired, it left, the group went Empty) has no owner from
    when that rebalance began, though the recorders write no move for it; should that owner be
    a member again when a later generation becomes Stable, with no move recorded for the
    partition, it holds the partition again (a recorder writes a move only when the owner
    differs from the one it last knew). A deleted group's partitions end with it."""
    owners: dict[tuple, list] = {}
    away: dict[tuple, str] = {}   # partition -> owner that left while holding it

    def close(segments, at):
        start, _, who = segments[-1]
        segments[-1] = (start, max(at, start), who)

    for e in sorted((e for e in events if e.kind in (ev.GENERATION, ev.DELETED)),
                    key=lambda e: e.at_ms):
        if e.kind == ev.DELETED:
            for segments in owners.values():
                if segments[-1][1] is None:
                    close(segments, e.at_ms)
            away.clear()
            continue
        moved = set()
        for m in e.moved:
            key = (m.topic, m.partition, m.role) if m.role else (m.topic, m.partition)
            moved.add(key)
            away.pop(key, None)
            segments = owners.setdefault(key, [])
            gap_start = e.at_ms - (m.unowned_ms or 0)
            if segments and segments[-1][1] is None and segments[-1][2] is None:
                close(segments, e.at_ms)       # ownerless since its owner left
            else:
                if segments and segments[-1][1] is None:
                    close(segments, gap_start)
                if m.unowned_ms:
                    segments.append((gap_start, e.at_ms, None))
            if m.after is not None:
                segments.append((e.at_ms, None, m.after))
        present = {instance or member for member, instance in e.members_after}
        for key, segments in owners.items():
            if key in moved or segments[-1][1] is not None:
                continue
            who = segments[-1][2]
            # a standby task may be held by several members at once ("a,b"): it is away only
            # when none of them is left
            if who is not None and not present.intersection(who.split(",")):
                close(segments, e.started_ms)
                segments.append((segments[-1][1], None, None))
                away[key] = who
            elif who is None and e.outcome == "stable" and key in away \
                    and present.intersection(away[key].split(",")):
                close(segments, e.at_ms)
                segments.append((e.at_ms, None, away.pop(key)))
    return {k: [(s, now_ms if t is None else t, w) for s, t, w in v] for k, v in owners.items()}


def _row_name(topic: str, partition: int, role: str = "") -> str:
    """A partition as topic-partition; a streams task as its role, subtopology and partition
    ("active 0_1", Kafka Streams' own task id)."""
    return f"{role} {topic}_{partition}" if role else f"{topic}-{partition}"


def _row_label(topic: str, partition: int, role: str = "") -> str:
    name = _row_name(topic, partition, role)
    shown = name if len(name) <= LABEL_CHARS else "…" + name[-(LABEL_CHARS - 1):]
    return f'<title>{esc(name)}</title>{esc(shown)}'


def ownership_plot(events, now_ms: int, span: tuple[int, int] | None = None,
                   width: int = 900, row: int = 16, max_rows: int = 64) -> str:
    segments = ownership_segments(events, now_ms)
    if not segments:
        return ('<p class="empty">No partition moves recorded yet (they are recorded for '
                'consumer groups, classic groups of protocol type "consumer", and the tasks of '
                'streams groups).</p>')
    keys = sorted(segments)[:max_rows]
    owners = sorted({w for k in keys for _, _, w in segments[k] if w is not None})
    colour = {w: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, w in enumerate(owners)}
    top = 10
    height = top + row * len(keys) + 30
    t0, t1 = span or time_range(events, now_ms)
    plot_w = width - LEFT - RIGHT

    def x(ms):
        return LEFT + (max(min(ms, t1), t0) - t0) * plot_w / (t1 - t0)

    parts = [f'<svg class="plot" data-plot="ownership" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" aria-label="partition ownership over time" '
             f'style="{FONT}">']
    parts += _time_axis(t0, t1, x, top, top + row * len(keys), height - 10)
    for i, key in enumerate(keys):
        y = top + i * row
        parts.append(f'<text x="{LEFT - 8}" y="{y + row - 4}" font-size="11" '
                     f'text-anchor="end" fill="#444">{_row_label(*key)}</text>')
        # stretches without an owner first, so that a short ownership is drawn over them
        for start, end, who in sorted(segments[key], key=lambda s: s[2] is not None):
            w = max(x(end) - x(start), 1.5)
            fill = colour.get(who, "none")
            style = (f'fill="{fill}"' if who is not None
                     else 'fill="#fff" stroke="#d55e00" stroke-dasharray="3 2"')
            label = f"{who}" if who is not None else "no owner"
            parts.append(f'<rect class="{"owned" if who is not None else "unowned"}" '
                         f'data-owner="{esc(who or "")}" x="{x(start):.1f}" y="{y + 2}" '
                         f'width="{w:.1f}" height="{row - 4}" {style}><title>'
                         f'{esc(_row_name(*key))}: {esc(label)} {clock(start)}–{clock(end)} '
                         f'({end - start} ms)</title></rect>')
    parts.append("</svg>")
    more = (f'<p class="note">First {max_rows} of {len(segments)} partitions.</p>'
            if len(segments) > max_rows else "")
    ownerless = any(w is None for k in keys for _, _, w in segments[k])
    return "".join(parts) + more + legend(owners, colour) + (
        '<div class="legend"><span class="key"><i class="gap"></i>no owner</span></div>'
        if ownerless else "")


def bar_chart(rows, width: int = 900, height: int = 240, label: str = "",
              colours=COLOURS) -> str:
    """Stacked bars of counts: rows = [(x label, {series: count})], on a whole-number scale
    from 0 with evenly spaced ticks."""
    if not rows:
        return '<p class="empty">Nothing to plot.</p>'
    left, right, top, bottom = 56, 16, 12, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    _, peak, ticks = integer_ticks(0, max(max(sum(v.values()) for _, v in rows), 1), 5)
    step = plot_w / len(rows)
    bar = min(max(step * 0.7, 1), 48)
    series = sorted({s for _, v in rows for s in v})
    parts = [f'<svg class="plot" data-plot="bars" viewBox="0 0 {width} {height}" width="100%" '
             f'role="img" aria-label="{esc(label)}" style="{FONT}">']
    for tick in ticks:
        y = top + plot_h - tick * plot_h / peak
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                     f'stroke="{"#999" if tick == 0 else "#eee"}"/><text class="ytick" '
                     f'x="{left - 8}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
                     f'fill="#555">{tick}</text>')
    every = max(len(rows) // 8, 1)
    for i, (name, values) in enumerate(rows):
        x = left + i * step + (step - bar) / 2
        base = top + plot_h
        for s in series:
            v = values.get(s, 0)
            if not v:
                continue
            h = v * plot_h / peak
            base -= h
            parts.append(f'<rect class="bar" x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" '
                         f'height="{h:.1f}" fill="{colours.get(s, "#4e79a7")}"><title>'
                         f'{esc(name)}: {esc(s.replace("_", " "))} {v:g}</title></rect>')
        if i % every == 0 and x + bar / 2 + 34 < width:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{height - 28}" font-size="10" '
                         f'text-anchor="middle" fill="#555">{esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts) + (legend(series, colours) if len(series) > 1 else "")


STYLE = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 0;
       color: #1d2330; background: #f4f6f9; }
header { background: #1d2330; color: #fff; padding: 14px 28px; display: flex;
         align-items: baseline; gap: 18px; }
header h1 { font-size: 18px; margin: 0; font-weight: 600; }
header a { color: #9ecbff; text-decoration: none; }
header .sub { color: #aab3c5; font-size: 13px; }
main { padding: 20px 28px 40px; max-width: 1180px; }
section { background: #fff; border: 1px solid #e1e5ec; border-radius: 8px; padding: 16px 20px;
          margin-bottom: 18px; box-shadow: 0 1px 2px rgba(0,0,0,.04); }
h2 { font-size: 15px; margin: 0 0 10px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #eef0f4;
         vertical-align: top; }
th { font-weight: 600; color: #555; font-size: 12px; text-transform: uppercase;
     letter-spacing: .03em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, 'SFMono-Regular', Menlo, monospace; font-size: 12.5px; }
.pill { display: inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12px;
        font-weight: 600; }
.Stable { background: #e3f5ea; color: #1b7a3d; } .Empty { background: #eef0f4; color: #555; }
.PreparingRebalance, .CompletingRebalance, .Assigning, .Reconciling
  { background: #fff1d6; color: #8a5a00; }
.Dead { background: #fde2e1; color: #a12622; }
.cards { display: flex; gap: 14px; flex-wrap: wrap; margin-bottom: 18px; }
.card { background: #fff; border: 1px solid #e1e5ec; border-radius: 8px; padding: 12px 18px;
        min-width: 150px; }
.card b { display: block; font-size: 24px; font-weight: 650; }
.card span { color: #667; font-size: 12px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 6px 0 0 56px; font-size: 12px;
          color: #444; }
.key i { display: inline-block; width: 11px; height: 11px; border-radius: 50%;
         margin-right: 5px; vertical-align: -1px; }
.key i.diamond { background: #009e7355; border: 1.5px solid #009e73; border-radius: 0;
                 transform: rotate(45deg); width: 9px; height: 9px; }
.key i.gap { background: #fff; border: 1.5px dashed #d55e00; border-radius: 2px; }
.empty, .note { color: #778; font-style: italic; }
.lagbar { background: #e15759; height: 8px; border-radius: 4px; display: inline-block; }
.timeline td:first-child { white-space: nowrap; }
.why { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
       margin-right: 6px; }
"""
