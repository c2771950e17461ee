"""`roster report`: a PySpark job over `__roster_group_events` (read through roster.spark, the
`roster` data source) that writes one self-contained HTML file: rebalances per hour by reason,
partitions moved, how long partitions were without an owner, the rebalances static membership
saved, and a table per group (with its committed offsets and lag, read from the broker).

Every aggregate is computed by Spark; the driver only collects the results (an hour x reason
table, a few percentiles, one row per group), so months of events on a busy broker need no more
driver memory than a day's. Executors read the topic partition by partition in bounded Fetches.
On a cluster that is not roster there is no such topic: observability/group_report.py writes
the groups' tables alone, without Spark.
"""
from __future__ import annotations

import datetime
import html
import time
from pathlib import Path

from roster.observability import events as ev
from roster.observability.event_log import EVENTS_TOPIC
from roster.observability.history import WHY
from roster.observability.plots import COLOURS, STYLE, bar_chart, esc

EVENT_SCHEMA = (
    "group_id STRING, protocol STRING, kind STRING, generation INT, "
    "trigger STRUCT<kind: STRING, member_id: STRING, instance_id: STRING, "
    "client_reason: STRING, fenced_id: STRING, detail: STRING>, "
    "at_ms LONG, started_ms LONG, join_ms LONG, sync_ms LONG, outcome STRING, "
    "members_before ARRAY<ARRAY<STRING>>, members_after ARRAY<ARRAY<STRING>>, "
    "moved ARRAY<STRUCT<topic: STRING, partition: INT, before: STRING, after: STRING, "
    "unowned_ms LONG>>, triggers_after INT")
MAX_GROUPS_WITH_LAG = 50


def load_events(spark, bootstrap: str, group: str | None = None, options: dict | None = None):
    """The events as a DataFrame (one row per event), read with the roster data source."""
    from pyspark.sql import functions as F
    reader = (spark.read.format("roster").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", EVENTS_TOPIC))
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    raw = reader.load()
    if group is not None:
        raw = raw.where(F.col("key") == F.lit(group.encode()))
    return parse_events(raw)


def parse_events(raw):
    """Records of `__roster_group_events` (a `value` column of event JSON) as event rows."""
    from pyspark.sql import functions as F
    return raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e")) \
        .select("e.*").where(F.col("kind").isNotNull())


def _handed_over(moved):
    """How many of a generation's moves handed a partition from one member to another: its
    first assignment is not a move, nor is a partition left without an owner
    (events.Moved.handed_over, in Spark)."""
    from pyspark.sql import functions as F
    return F.size(F.filter(moved, lambda m: m["before"].isNotNull() & m["after"].isNotNull()))


def top_reasons(rows) -> dict:
    """group -> (count, [reasons]) from (group, reason, count) rows: the most common reason
    of each group's rebalances, every one of them when several share the top count (sorted,
    so the answer never depends on the order Spark returned the rows in)."""
    best: dict[str, tuple[int, list]] = {}
    for group_id, reason, count in rows:
        top, reasons = best.get(group_id, (0, []))
        if count > top:
            best[group_id] = (count, [reason])
        elif count == top:
            reasons.append(reason)
    return {g: (count, sorted(reasons, key=str)) for g, (count, reasons) in best.items()}


def aggregate(events) -> dict:
    """Everything the report shows, collected: small by construction."""
    from pyspark.sql import functions as F
    hour = F.date_format(F.from_unixtime(F.col("at_ms") / 1000), "yyyy-MM-dd HH:00") \
        .alias("hour")
    events = events.cache()
    gens = events.where(F.col("kind") == ev.GENERATION)
    per_hour = (gens.groupBy(hour, F.col("trigger.kind").alias("reason")).count()
                .orderBy("hour").collect())
    moved_hour = (gens.groupBy(hour).agg(F.sum(_handed_over("moved")).alias("moved"))
                  .orderBy("hour").collect())
    saved_hour = (events.where(F.col("kind") == ev.SAVED).groupBy(hour).count()
                  .orderBy("hour").collect())
    gaps = (gens.select(F.explode("moved").alias("m"))
            .where(F.col("m.unowned_ms").isNotNull()).select(F.col("m.unowned_ms").alias("ms")))
    gap_row = gaps.agg(F.count("ms").alias("n"), F.max("ms").alias("max"),
                       F.percentile_approx("ms", [0.5, 0.9, 0.99]).alias("p")).collect()[0]
    bounds = [0, 100, 500, 1000, 5000, 10_000, 30_000, 60_000]
    bucket = F.when(F.col("ms") < bounds[1], 0)
    for i in range(2, len(bounds)):
        bucket = bucket.when(F.col("ms") < bounds[i], i - 1)
    gap_buckets = {r["b"]: r["count"] for r in
                   gaps.select(bucket.otherwise(len(bounds) - 1).alias("b"))
                   .groupBy("b").count().collect()}
    duration = (gens.select((F.col("at_ms") - F.col("started_ms")).alias("ms"))
                .agg(F.percentile_approx("ms", [0.5, 0.9, 0.99]).alias("p"),
                     F.max("ms").alias("max")).collect()[0])
    per_group = (events.groupBy("group_id", "protocol").agg(
        F.sum(F.when(F.col("kind") == ev.GENERATION, 1).otherwise(0)).alias("generations"),
        F.sum(F.when(F.col("kind") == ev.SAVED, 1).otherwise(0)).alias("saved"),
        F.sum(F.when(F.col("kind") == ev.GENERATION, _handed_over("moved")).otherwise(0))
        .alias("moved"),
        F.percentile_approx(F.when(F.col("kind") == ev.GENERATION,
                                   F.col("at_ms") - F.col("started_ms")), 0.5)
        .alias("median_ms"),
        F.max("at_ms").alias("last_ms"))
        .orderBy(F.desc("generations")).limit(500).collect())
    top_reason = top_reasons(
        (r["group_id"], r["reason"], r["count"]) for r in
        gens.groupBy("group_id", F.col("trigger.kind").alias("reason")).count().collect())
    totals = events.groupBy("kind").count().collect()
    span = events.agg(F.min("at_ms").alias("first"), F.max("at_ms").alias("last")).collect()[0]
    events.unpersist()
    return {
        "per_hour": [(r["hour"], r["reason"], r["count"]) for r in per_hour],
        "moved_hour": [(r["hour"], r["moved"] or 0) for r in moved_hour],
        "saved_hour": [(r["hour"], r["count"]) for r in saved_hour],
        "gaps": {"n": gap_row["n"], "max": gap_row["max"], "p": list(gap_row["p"] or []),
                 "bounds": bounds, "buckets": gap_buckets},
        "duration": {"p": list(duration["p"] or []), "max": duration["max"]},
        "groups": [dict(r.asDict(), top_reason=top_reason.get(r["group_id"], (0, [])))
                   for r in per_group],
        "totals": {r["kind"]: r["count"] for r in totals},
        "first_ms": span["first"], "last_ms": span["last"],
    }


def lag_by_group(bootstrap: str, group_ids, security=None) -> dict:
    """Committed offsets and lag of the report's groups (the busiest first, bounded).
    `security`: client settings for a secured broker (a --command-config file's)."""
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.offsets import committed, log_offsets
    found = {}
    try:
        with AdminClient(bootstrap, security=security) as client:
            for group_id in list(group_ids)[:MAX_GROUPS_WITH_LAG]:
                try:
                    offsets = committed(client, group_id)
                except AdminError:
                    continue
                if not offsets:
                    continue
                wanted: dict[str, list[int]] = {}
                for topic, partition in offsets:
                    wanted.setdefault(topic, []).append(partition)
                ends = log_offsets(client, wanted, -1)
                found[group_id] = sum(max(ends.get(tp, o) - o, 0)
                                      for tp, o in offsets.items())
    except (AdminError, OSError):
        pass
    return found


def _fmt_ms(ms) -> str:
    if ms is None:
        return "—"
    ms = float(ms)
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


def render(data: dict, group: str | None, lags: dict, elapsed_s: float) -> str:
    hours = sorted({h for h, _, _ in data["per_hour"]} | {h for h, _ in data["saved_hour"]})
    by_hour = {h: {} for h in hours}
    for h, reason, n in data["per_hour"]:
        by_hour[h][reason] = n
    saved = dict(data["saved_hour"])
    moved = dict(data["moved_hour"])
    totals = data["totals"]
    generations = totals.get(ev.GENERATION, 0)
    n_saved = totals.get(ev.SAVED, 0)
    gaps = data["gaps"]
    p = gaps["p"] + [None] * (3 - len(gaps["p"]))
    dp = data["duration"]["p"] + [None] * (3 - len(data["duration"]["p"]))
    span = ("—" if data["first_ms"] is None else
            f"{_when(data['first_ms'])} → {_when(data['last_ms'])} UTC")
    title = f"Rebalance report · {group}" if group else "Rebalance report · every group"
    share = (f"{100 * n_saved / (n_saved + generations):.0f}%"
             if n_saved + generations else "—")
    cards = "".join(
        f'<div class="card"><b data-count="{k}">{v}</b><span>{label}</span></div>'
        for k, v, label in [
            ("generations", f"{generations:,}", "rebalances (generations)"),
            ("saved", f"{n_saved:,}", "saved by static membership"),
            ("share", share, "of would-be rebalances saved"),
            ("moved", f"{sum(moved.values()):,}", "partitions moved between members"),
            ("gap", _fmt_ms(p[1]), "p90 time without an owner"),
            ("duration", _fmt_ms(dp[1]), "p90 rebalance duration")])
    gap_rows = []
    bounds = gaps["bounds"]
    for i, lower in enumerate(bounds):
        upper = bounds[i + 1] if i + 1 < len(bounds) else None
        name = f"{_fmt_ms(lower)}–{_fmt_ms(upper)}" if upper else f"≥ {_fmt_ms(lower)}"
        gap_rows.append((name, {"": gaps["buckets"].get(i, 0)}))
    group_rows = "".join(
        f'<tr class="group-row"><td>{esc(g["group_id"])}</td><td>{esc(g["protocol"])}</td>'
        f'<td class="num">{g["generations"]}</td><td class="num">{g["saved"]}</td>'
        f'<td class="num">{g["moved"]}</td><td class="num">{_fmt_ms(g["median_ms"])}</td>'
        f'<td class="reason">{_reason_cell(*g["top_reason"])}</td>'
        f'<td class="num">{lags.get(g["group_id"], "—")}</td>'
        f'<td>{_when(g["last_ms"])}</td></tr>' for g in data["groups"])
    body = f"""
<div class="cards">{cards}</div>
<section><h2>Rebalances per hour, by reason</h2>
{bar_chart([(h[5:], by_hour[h]) for h in hours], label="rebalances per hour")}</section>
<section><h2>Rebalances saved by static membership, per hour</h2>
{bar_chart([(h[5:], {ev.STATIC_REJOIN: saved.get(h, 0)}) for h in hours],
           label="saved per hour")}</section>
<section><h2>Partitions moved between members per hour</h2>
<p class="note">A partition's first assignment is not a move.</p>
{bar_chart([(h[5:], {"moved": moved.get(h, 0)}) for h in hours], label="partitions moved",
           colours={"moved": "#4e79a7"})}</section>
<section><h2>Time without an owner</h2>
<p>{gaps["n"]:,} partition hand-overs timed: median {_fmt_ms(p[0])}, p90 {_fmt_ms(p[1])},
p99 {_fmt_ms(p[2])}, longest {_fmt_ms(gaps["max"])}.</p>
{bar_chart(gap_rows, label="hand-overs by time without an owner",
           colours={"": "#e15759"})}</section>
<section><h2>Groups</h2><table><tr><th>group</th><th>protocol</th>
<th class="num">rebalances</th><th class="num">saved</th><th class="num">moved</th>
<th class="num">median duration</th><th>most common reason</th><th class="num">lag now</th>
<th>last event (UTC)</th></tr>{group_rows}</table></section>
<p class="note">{sum(totals.values())} events from {esc(EVENTS_TOPIC)}, {span}; computed by
Spark in {elapsed_s:.1f} s; written {_when(int(time.time() * 1000))} UTC.</p>"""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>'
            f'<header><h1>{html.escape(title)}</h1><span class="sub">{esc(span)}</span>'
            f'</header><main>{body}</main></body></html>')


def _reason_cell(count: int, reasons: list) -> str:
    """The most common reason and how often it was the cause; a tie says so and names each."""
    if not reasons:
        return "—"
    names = ", ".join(f'<span class="why" style="background:{COLOURS.get(r, "#bbb")}">'
                      f'</span>{esc(WHY.get(r, r))}' for r in reasons)
    if len(reasons) == 1:
        return f'{names} <span class="note">({count}×)</span>'
    return f'tie: {names} <span class="note">({count}× each)</span>'


def _when(ms) -> str:
    if ms is None:
        return "—"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc) \
        .strftime("%Y-%m-%d %H:%M")


def run(spark, bootstrap: str, out: Path, group: str | None = None,
        options: dict | None = None) -> dict:
    started = time.monotonic()
    data = aggregate(load_events(spark, bootstrap, group, options))
    lags = lag_by_group(bootstrap, [g["group_id"] for g in data["groups"]], options)
    elapsed = time.monotonic() - started
    out.write_text(render(data, group, lags, elapsed), encoding="utf-8")
    data["elapsed_s"] = elapsed
    return data


def not_roster(bootstrap: str, security=None) -> str | None:
    """The line to print (and to put in place of the rebalance sections) when the broker has
    no flight recorder topic because it is not roster (an Apache Kafka cluster); None when
    there is something to read, or when the broker cannot be asked (the job then fails with its
    own error)."""
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.not_roster import REPORT, NotRoster, is_roster
    from roster.admin.topics import metadata
    try:
        with AdminClient(bootstrap, security=security) as client:
            topic = metadata(client, [EVENTS_TOPIC]).topics[0]
            if topic.error_code.value and not is_roster(client):
                return str(NotRoster(REPORT))
    except (AdminError, OSError):
        return None
    return None


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os
    import sys
    parser = argparse.ArgumentParser(prog="roster report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server", default="localhost:9092", metavar="HOST:PORT")
    parser.add_argument("--group", help="one group (default: every group)")
    parser.add_argument("--out", type=Path, default=Path("rebalance-report.html"))
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client properties for a secured broker (docs/security.md)")
    args = parser.parse_args(argv)
    from roster.security.client import read_properties
    options = read_properties(args.command_config) if args.command_config else None
    refusal = not_roster(args.bootstrap_server, options)
    if refusal:   # no flight recorder: the groups' tables from the admin APIs, and no Spark
        from roster.observability.group_report import write
        groups = write(args.bootstrap_server, args.out, refusal, args.group, options)
        print(f"roster report: {refusal}", file=sys.stderr)
        print(f"wrote {args.out}: {len(groups)} group(s), their committed offsets and lag "
              "only")
        return 0
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    import roster.spark
    spark = (SparkSession.builder.master(args.master).appName("roster-report")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    roster.spark.register(spark)
    try:
        data = run(spark, args.bootstrap_server, args.out, args.group, options)
    finally:
        spark.stop()
    totals = data["totals"]
    print(f"wrote {args.out}: {totals.get(ev.GENERATION, 0)} rebalances, "
          f"{totals.get(ev.SAVED, 0)} saved by static membership, "
          f"{len(data['groups'])} group(s), in {data['elapsed_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
