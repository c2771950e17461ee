"""Inline SVG plots shared by the console and the Spark report: no scripts, no fonts or files
fetched from anywhere, readable when printed. Pure functions from data to markup."""
from __future__ import annotations

import datetime
import html

from roster.observability import events as ev

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


def _ticks(t0: int, t1: int, count: int = 6) -> list[int]:
    span = max(t1 - t0, 1)
    return [t0 + span * i // (count - 1) for i in range(count)]


def tick_label(ms: int, span_ms: int) -> str:
    """A time axis label precise enough that neighbouring ticks differ."""
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    if span_ms < 30_000:
        return moment.strftime("%H:%M:%S.%f")[:-5]
    if span_ms > 2 * 86_400_000:
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%H:%M:%S")


def _anchor(i: int, count: int) -> str:
    return "start" if i == 0 else "end" if i == count - 1 else "middle"


def legend(kinds, colours=COLOURS) -> str:
    items = "".join(
        f'<span class="key"><i style="background:{colours.get(k, "#bbb")}"></i>'
        f'{esc(k.replace("_", " "))}</span>' for k in kinds)
    return f'<div class="legend">{items}</div>'


def generations_plot(events, width: int = 900, height: int = 260) -> str:
    """Generations over time: one dot per generation at its end, height = generation number,
    colour = what triggered it; saved rebalances are green diamonds on the axis."""
    gens = [e for e in events if e.kind == ev.GENERATION]
    saved = [e for e in events if e.kind == ev.SAVED]
    points = gens + saved
    if not points:
        return '<p class="empty">No rebalances recorded yet.</p>'
    left, right, top, bottom = 56, 16, 14, 36
    t0 = min(e.started_ms for e in points)
    t1 = max(e.at_ms for e in points)
    if t1 == t0:
        t0, t1 = t0 - 1000, t1 + 1000
    g_max = max([e.generation for e in points] + [1])
    g_min = min([e.generation for e in points] + [g_max])
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(ms):
        return left + (ms - t0) * plot_w / (t1 - t0)

    def y(g):
        if g_max == g_min:
            return top + plot_h / 2
        return top + plot_h - (g - g_min) * plot_h / (g_max - g_min)

    parts = [f'<svg class="plot" data-plot="generations" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" aria-label="generations over time" style="{FONT}">',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
             'stroke="#ddd"/>']
    ticks = _ticks(t0, t1)
    for i, tick in enumerate(ticks):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" '
                     f'y2="{top + plot_h}" stroke="#eee"/>'
                     f'<text x="{x(tick):.1f}" y="{height - 14}" font-size="11" '
                     f'text-anchor="{_anchor(i, len(ticks))}" fill="#555">'
                     f'{tick_label(tick, t1 - t0)}</text>')
    for g in sorted({g_min, g_max, (g_min + g_max) // 2}):
        parts.append(f'<text x="{left - 8}" y="{y(g) + 4:.1f}" font-size="11" '
                     f'text-anchor="end" fill="#555">{g}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.0f}" font-size="11" fill="#555" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.0f})" '
                 'text-anchor="middle">generation</text>')
    for e in sorted(gens, key=lambda e: e.at_ms):
        colour = COLOURS.get(e.trigger.kind, "#bbb")
        x0, x1, yy = x(e.started_ms), x(e.at_ms), y(e.generation)
        tip = (f"generation {e.generation}: {e.trigger.kind.replace('_', ' ')}"
               f" ({e.duration_ms} ms, {e.outcome}; members {len(e.members_before)}"
               f"→{len(e.members_after)}; {len(e.moved)} partitions moved)")
        parts.append(f'<g class="generation" data-generation="{e.generation}">'
                     f'<title>{esc(tip)}</title>'
                     f'<line x1="{x0:.1f}" y1="{yy:.1f}" x2="{x1:.1f}" y2="{yy:.1f}" '
                     f'stroke="{colour}" stroke-width="3" stroke-opacity="0.5"/>'
                     f'<circle cx="{x1:.1f}" cy="{yy:.1f}" r="6" fill="{colour}" '
                     f'stroke="#fff" stroke-width="1.5"/></g>')
    for e in saved:
        cx, cy = x(e.at_ms), top + plot_h - 8
        parts.append(f'<g class="saved"><title>{esc("saved: " + e.trigger.detail)}</title>'
                     f'<path d="M{cx:.1f} {cy - 7:.1f} l7 7 l-7 7 l-7 -7 z" '
                     f'fill="{COLOURS[ev.STATIC_REJOIN]}" fill-opacity="0.35" '
                     f'stroke="{COLOURS[ev.STATIC_REJOIN]}" stroke-width="1.5"/></g>')
    parts.append("</svg>")
    kinds = sorted({e.trigger.kind for e in gens})
    return "".join(parts) + legend(kinds) + (
        '<div class="legend"><span class="key"><i class="diamond"></i>rebalance saved by '
        'static membership</span></div>' if saved else "")


def ownership_segments(events, now_ms: int):
    """Partition -> [(start, end, owner)], from the generations' moves; None owner = none."""
    owners: dict[tuple[str, int], list] = {}
    for e in sorted((e for e in events if e.kind == ev.GENERATION and e.moved),
                    key=lambda e: e.at_ms):
        for m in e.moved:
            segments = owners.setdefault((m.topic, m.partition), [])
            gap_start = e.at_ms - (m.unowned_ms or 0)
            if segments and segments[-1][1] is None:
                start, _, who = segments[-1]
                segments[-1] = (start, max(gap_start, start), who)
            if m.unowned_ms:
                segments.append((gap_start, e.at_ms, None))
            if m.after is not None:
                segments.append((e.at_ms, None, m.after))
    return {k: [(s, now_ms if t is None else t, w) for s, t, w in v] for k, v in owners.items()}


def ownership_plot(events, now_ms: int, width: int = 900, row: int = 16,
                   max_rows: int = 64) -> str:
    segments = ownership_segments(events, now_ms)
    if not segments:
        return ('<p class="empty">No partition moves recorded yet (they are recorded for '
                'consumer groups and classic groups of protocol type "consumer").</p>')
    keys = sorted(segments)[:max_rows]
    owners = sorted({w for k in keys for _, _, w in segments[k] if w is not None})
    colour = {w: OWNER_COLOURS[i % len(OWNER_COLOURS)] for i, w in enumerate(owners)}
    left, right, top = 110, 16, 10
    height = top + row * len(keys) + 30
    t0 = min(s for k in keys for s, _, _ in segments[k])
    t1 = max(now_ms, max(t for k in keys for _, t, _ in segments[k]))
    if t1 == t0:
        t1 = t0 + 1000
    plot_w = width - left - right

    def x(ms):
        return left + (ms - t0) * plot_w / (t1 - t0)

    parts = [f'<svg class="plot" data-plot="ownership" viewBox="0 0 {width} {height}" '
             f'width="100%" role="img" aria-label="partition ownership over time" '
             f'style="{FONT}">']
    for i, key in enumerate(keys):
        y = top + i * row
        parts.append(f'<text x="{left - 8}" y="{y + row - 4}" font-size="11" text-anchor="end" '
                     f'fill="#444">{esc(key[0])}-{key[1]}</text>')
        for start, end, who in segments[key]:
            w = max(x(end) - x(start), 1.5)
            fill = colour.get(who, "none")
            style = (f'fill="{fill}"' if who is not None
                     else 'fill="#fff" stroke="#d55e00" stroke-dasharray="3 2"')
            label = f"{who}" if who is not None else "no owner"
            parts.append(f'<rect class="owned" x="{x(start):.1f}" y="{y + 2}" width="{w:.1f}" '
                         f'height="{row - 4}" {style}><title>{esc(key[0])}-{key[1]}: '
                         f'{esc(label)} {clock(start)}–{clock(end)} ({end - start} ms)'
                         '</title></rect>')
    ticks = _ticks(t0, t1)
    for i, tick in enumerate(ticks):
        parts.append(f'<text x="{x(tick):.1f}" y="{height - 10}" font-size="11" '
                     f'text-anchor="{_anchor(i, len(ticks))}" fill="#555">'
                     f'{tick_label(tick, t1 - t0)}</text>')
    parts.append("</svg>")
    more = (f'<p class="note">First {max_rows} of {len(segments)} partitions.</p>'
            if len(segments) > max_rows else "")
    return "".join(parts) + more + legend(owners, colour) + \
        '<div class="legend"><span class="key"><i class="gap"></i>no owner</span></div>'


def bar_chart(rows, width: int = 900, height: int = 240, label: str = "",
              colours=COLOURS) -> str:
    """Stacked bars: rows = [(x label, {series: value})]."""
    if not rows:
        return '<p class="empty">Nothing to plot.</p>'
    left, right, top, bottom = 56, 16, 12, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(sum(v.values()) for _, v in rows) or 1
    step = plot_w / len(rows)
    bar = min(max(step * 0.7, 1), 48)
    series = sorted({s for _, v in rows for s in v})
    parts = [f'<svg class="plot" data-plot="bars" viewBox="0 0 {width} {height}" width="100%" '
             f'role="img" aria-label="{esc(label)}" style="{FONT}">',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
             'stroke="#999"/>',
             f'<text x="{left - 8}" y="{top + 10}" font-size="11" text-anchor="end" '
             f'fill="#555">{peak:g}</text>',
             f'<text x="{left - 8}" y="{top + plot_h}" font-size="11" text-anchor="end" '
             'fill="#555">0</text>']
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
