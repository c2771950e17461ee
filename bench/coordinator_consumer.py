"""bench/coordinator.py's phase `consumer` (issue 16's performance goals for KIP-848), measured
against the classic protocol in the same run:

  heartbeats  one broker holds --hb-members classic static members (Heartbeat v3, groups as in
              the phase `heartbeat`) and as many consumer-protocol members (ConsumerGroupHeartbeat
              v1, in --hb-groups groups on one topic of --cg-partitions partitions each). Then
              --cg-rounds rounds, each blasting the classic frames and then the steady
              ConsumerGroupHeartbeat frames (only group, member id and epoch set: what clients
              send between changes) for --cg-seconds after --hb-warmup s; the order alternates
              from round to round. Per round: answers/s (wall) and per broker-CPU-second, and the
              consumer/classic ratio of each; medians and ranges over the rounds. Goal: the
              consumer protocol's rate >= 0.8 x the classic one.
  join        a fresh broker; a consumer group of --cg-join-members members on a topic of
              --cg-join-partitions partitions, settled; then one more member joins, and every
              member heartbeats back to back (each sends its next heartbeat, with the partitions
              it owns, as soon as it has its answer): time from the joiner's first heartbeat to
              the answer after which every partition has exactly one owner again and the joiner
              holds its share. Repeated --cg-join-rounds times (one more member each time).
              With real clients the heartbeat interval (5 s by default) paces this, not the
              coordinator.
  assignors   bench/server_assignors.py's run() in this process: uniform and range on 1,000
              members x 10,000 partitions (goal <= 50 ms).

`kit` is bench/coordinator.py itself (its Targets, Snapshot, Profiler, ...): this module only
adds the phase.
"""
from __future__ import annotations

import asyncio
import statistics
import time

import consumer_heartbeat
import server_assignors
from consumer_heartbeat import Members
from loadgen import Blaster, GroupSpec, close_all, form_groups, open_conns

# consumer members must outlive the rounds in which only the classic members are heartbeating
SETTINGS = ("group.consumer.session.timeout.ms=120000",
            "group.consumer.max.session.timeout.ms=120000")
JOIN_DEADLINE_S = 120.0       # a join round's bound: time, not rounds (back-to-back rounds are quick)
CLASSIC_ERROR_AT = 8          # Heartbeat v3 answer: correlation id, throttle time, error code
GOAL_RATIO = 0.8
ASSIGNOR_GOAL_MS = server_assignors.GOAL_MS


async def blast(kit, service, frames: list[bytes], error_at: int, args, label: str,
                 profile: bool = False) -> dict:
    """--hb-connections connections, --hb-window requests in flight on each, for --cg-seconds
    after the warm-up."""
    blasters = await open_conns(service.host, service.port, args.hb_connections,
                                factory=lambda: Blaster(error_at))
    try:
        for i, blaster in enumerate(blasters):
            blaster.start(frames[i::len(blasters)], args.hb_window)
        await asyncio.sleep(args.hb_warmup)
        count0 = sum(b.answered for b in blasters)
        before = kit.Snapshot.take(service)
        profiler = kit.Profiler(service, args, label) if profile else None
        await asyncio.sleep(args.cg_seconds)
        answered = sum(b.answered for b in blasters) - count0
        after = kit.Snapshot.take(service)
        summary = profiler.finish() if profiler is not None else None
        await asyncio.wait_for(asyncio.gather(*(b.stop() for b in blasters)), 30)
    finally:
        await kit.settle_close(blasters)
    service.check()
    errors = sum(sum(b.errors.values()) for b in blasters)
    usage = kit.cpu_between(before, after)
    result = {"answered": answered, "errors": errors, "per_s": answered / usage["wall_s"],
              "per_broker_cpu_s": answered / usage["broker_cpu_s"]
              if usage["broker_cpu_s"] else None, **usage}
    if summary is not None:
        result["profile"] = summary
    return result


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def phase_heartbeats(kit, targets, args) -> dict:
    service = targets.start("roster", "consumer-heartbeat", settings=SETTINGS)
    conns: list = []
    try:
        groups, size = args.hb_groups, args.hb_members // args.hb_groups
        await kit.wait_quiet(args, [service], "consumer vs classic heartbeat")
        pool = min(args.pool, groups * size)
        conns = await open_conns(service.host, service.port, pool)
        kit.progress(f"consumer phase: forming {groups} classic groups x {size} members")
        started = time.perf_counter()
        drivers, _ = await form_groups(conns, [f"hb-{g:03d}" for g in range(groups)], size,
                                       GroupSpec(session_ms=120_000, rebalance_ms=60_000),
                                       timeout_s=180)
        classic_formed = time.perf_counter() - started
        frames = {"classic": [f for d in drivers for f in d.heartbeat_frames()]}
        kit.progress(f"consumer phase: forming {groups} consumer groups x {size} members")
        from roster.admin.client import AdminClient
        from roster.admin.topics import create
        with AdminClient(f"{service.host}:{service.port}") as admin:
            create(admin, "cg-bench", args.cg_partitions, {})
        members, consumer_formed = await consumer_heartbeat.form(conns, groups, size,
                                                                 "cg-bench")
        close_all(conns)
        conns = []
        frames["consumer"] = [consumer_heartbeat.heartbeat_frame(g, m, e)
                              for _, g, m, e in members]
        error_at = {"classic": CLASSIC_ERROR_AT, "consumer": consumer_heartbeat.ERROR_AT}
        rounds = []
        for n in range(args.cg_rounds):
            order = ("classic", "consumer") if n % 2 == 0 else ("consumer", "classic")
            row = {}
            for kind in order:
                row[kind] = await blast(kit, service, frames[kind], error_at[kind], args,
                                         kind)
            rounds.append(row)
            kit.progress(
                f"consumer phase round {n + 1}: classic {row['classic']['per_s']:,.0f}/s "
                f"({row['classic']['per_broker_cpu_s'] or 0:,.0f} per broker-CPU-s), consumer "
                f"{row['consumer']['per_s']:,.0f}/s ({row['consumer']['per_broker_cpu_s'] or 0:,.0f}"
                f" per broker-CPU-s); errors {row['classic']['errors']} / "
                f"{row['consumer']['errors']}; rest of the machine "
                f"{max(r['other_cpus'] for r in row.values()):.2f} CPUs")
        profiles = {}
        if args.profile and "consumer" in args.profile_phases:
            for kind in ("classic", "consumer"):   # an extra, untimed round
                profiled = await blast(kit, service, frames[kind], error_at[kind], args,
                                        f"{kind}-heartbeat", profile=True)
                profiles[f"{kind} heartbeat (phase consumer)"] = profiled.get("profile", {})

        def column(kind, key):
            return [r[kind][key] or 0.0 for r in rounds]

        result = {"members": groups * size, "groups": groups, "rounds": rounds,
                  "cg_partitions": args.cg_partitions,
                  "classic_formed_s": classic_formed, "consumer_formed_s": consumer_formed,
                  "profiles": profiles}
        for key in ("per_s", "per_broker_cpu_s"):
            for kind in ("classic", "consumer"):
                result[f"{kind}_{key}"] = _spread(column(kind, key))
            result[f"ratio_{key}"] = _spread([c / k if k else 0.0 for c, k in zip(
                column("consumer", key), column("classic", key))])
        result["errors"] = sum(r[k]["errors"] for r in rounds for k in r)
        result["other_cpus_max"] = max(r[k]["other_cpus"] for r in rounds for k in r)
        return result
    finally:
        await kit.settle_close(conns)
        targets.stop(service, "consumer heartbeat")


def wait_partitions(host: str, port: int, topic: str, partitions: int,
                    timeout_s: float = 60.0) -> None:
    """Until the broker's Metadata names a leader for each of `topic`'s partitions."""
    from roster.admin.client import AdminClient
    from roster.admin.topics import metadata
    deadline = time.perf_counter() + timeout_s
    with AdminClient(f"{host}:{port}") as admin:
        while True:
            led = [p for t in metadata(admin, [topic]).topics if t.name == topic
                   for p in t.partitions if p.leader_id >= 0]
            if len(led) == partitions:
                return
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{topic}: {len(led)} of {partitions} partitions have a "
                                   f"leader after {timeout_s:.0f} s")
            time.sleep(0.05)


async def phase_join(kit, targets, args) -> dict:
    service = targets.start("roster", "consumer-join", settings=SETTINGS)
    conns: list = []
    try:
        await kit.wait_quiet(args, [service], "consumer join")
        from roster.admin.client import AdminClient
        from roster.admin.topics import create
        with AdminClient(f"{service.host}:{service.port}") as admin:
            create(admin, "cg-join", args.cg_join_partitions, {})
        # Kafka answers CreateTopics before its metadata has the topic; members that join
        # then are assigned nothing, and the group stays so for minutes (Kafka refreshes a
        # group's view of a topic it did not know lazily): a joiner would never get a partition
        await asyncio.to_thread(wait_partitions, service.host, service.port, "cg-join",
                                args.cg_join_partitions)
        conns = await open_conns(service.host, service.port, args.hb_connections)
        group = Members(conns, "join", "cg-join", args.cg_join_partitions)
        started = time.perf_counter()
        await group.join([f"member-{i:05d}" for i in range(args.cg_join_members)])
        formed_rounds = await group.settle()
        # a round that changed nothing is not yet a formed group: Kafka may answer a round or
        # more with no assignment before its first target assignment reaches the members
        while not group.exactly_once():
            formed_rounds += 1
            if time.perf_counter() - started > JOIN_DEADLINE_S:
                raise RuntimeError(f"{args.cg_join_members} members own {len(group.holders)} "
                                   f"of {args.cg_join_partitions} partitions after "
                                   f"{JOIN_DEADLINE_S:.0f} s ({formed_rounds} rounds)")
            await group.round()
        formed_s = time.perf_counter() - started
        kit.progress(f"consumer join: {args.cg_join_members} members settled in "
                     f"{formed_s:.1f} s ({formed_rounds} rounds)")
        runs = []
        profiler = kit.Profiler(service, args, "consumer-join") \
            if args.profile and "consumer" in args.profile_phases else None
        for n in range(args.cg_join_rounds):
            joiner = f"joiner-{n}"
            before = kit.Snapshot.take(service)
            sent = group.sent
            t0 = time.perf_counter()
            await group.join([joiner])
            rounds = 0
            while not (group.exactly_once() and group.state[joiner][1]):
                rounds += 1
                if time.perf_counter() - t0 > JOIN_DEADLINE_S:
                    raise RuntimeError(f"{joiner} had no partitions after {JOIN_DEADLINE_S:.0f}"
                                       f" s ({rounds} rounds)")
                await group.round()
            done_s = time.perf_counter() - t0
            after = kit.Snapshot.take(service)
            heartbeats = group.sent - sent
            await group.settle()
            runs.append({"members": len(group.state), "seconds": done_s, "rounds": rounds,
                         "heartbeats": heartbeats,
                         "broker_cpu_s": after.broker_cpu - before.broker_cpu,
                         "other_cpus": kit.cpu_between(before, after)["other_cpus"],
                         "joiner_partitions": sum(len(ps) for _, ps in group.state[joiner][1])})
            kit.progress(f"consumer join {n + 1}: every partition owned again after "
                         f"{done_s * 1000:,.0f} ms ({rounds} rounds of {len(group.state)} "
                         f"heartbeats, broker CPU {runs[-1]['broker_cpu_s'] * 1000:,.0f} ms)")
        profile = profiler.finish() if profiler is not None else None
        return {"members": args.cg_join_members, "partitions": args.cg_join_partitions,
                "formed_s": formed_s, "runs": runs,
                "profiles": {"consumer join (phase consumer)": profile} if profile else {},
                "median_s": statistics.median(r["seconds"] for r in runs)}
    finally:
        await kit.settle_close(conns)
        targets.stop(service, "consumer join")


def phase_assignors(kit, args) -> list:
    kit.progress("consumer phase: server-side assignors (bench/server_assignors.py) in-process")
    return server_assignors.run(args.cg_assignor_members, 10, args.cg_assignor_partitions // 10,
                                repeat=3)


async def phase(kit, targets, args, results) -> dict:
    """Every part; one that fails is reported in `results` and the others still run."""
    out: dict = {}
    for name, part in (("heartbeats", phase_heartbeats), ("join", phase_join)):
        if kit.STOPPING:
            break
        try:
            out[name] = await part(kit, targets, args)
        except Exception as exc:
            kit._failed(results, f"consumer {name}", exc)
    try:
        out["assignors"] = phase_assignors(kit, args)
    except Exception as exc:
        kit._failed(results, "consumer assignors", exc)
    return out


def render(result: dict, args) -> list[str]:
    out = []
    hb = result.get("heartbeats")
    if hb:
        out.append(f"## ConsumerGroupHeartbeat (KIP-848) vs Heartbeat, one broker, "
                   f"{hb['members']:,} members of each protocol in {hb['groups']} groups each; "
                   f"{len(hb['rounds'])} interleaved rounds of {args.cg_seconds:.0f} s, "
                   f"{args.hb_connections} connections x {args.hb_window} in flight")
        out.append("")
        out.append("| | classic Heartbeat v3 | ConsumerGroupHeartbeat v1 (steady) | "
                   "consumer / classic |")
        out.append("|---|---:|---:|---:|")
        for key, label in (("per_s", "answers/s (wall), median"),
                           ("per_broker_cpu_s", "per broker-CPU-second, median")):
            c, k, r = hb[f"classic_{key}"], hb[f"consumer_{key}"], hb[f"ratio_{key}"]
            out.append(f"| {label} [range] | {c['median']:,.0f} [{c['min']:,.0f}-"
                       f"{c['max']:,.0f}] | {k['median']:,.0f} [{k['min']:,.0f}-"
                       f"{k['max']:,.0f}] | {r['median']:.2f} [{r['min']:.2f}-"
                       f"{r['max']:.2f}] |")
        out.append("")
        out.append(f"Formation: classic {hb['classic_formed_s']:.1f} s, consumer "
                   f"{hb['consumer_formed_s']:.1f} s; error answers {hb['errors']}; rest of "
                   f"the machine at most {hb['other_cpus_max']:.2f} CPUs. Goal: consumer / "
                   f"classic >= {GOAL_RATIO} per broker-CPU-second: "
                   f"{'met' if hb['ratio_per_broker_cpu_s']['median'] >= GOAL_RATIO else 'NOT met'}.")
        out.append("")
    join = result.get("join")
    if join:
        out.append(f"## A member joins a consumer group of {join['members']:,} "
                   f"({join['partitions']:,} partitions): until every partition has its new "
                   "owner (members heartbeat back to back)")
        out.append("")
        out.append("| group size | time | rounds | heartbeats | broker CPU | joiner's "
                   "partitions | rest of machine |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|")
        for r in join["runs"]:
            out.append(f"| {r['members']:,} | {r['seconds'] * 1000:,.0f} ms | {r['rounds']} | "
                       f"{r['heartbeats']:,} | {r['broker_cpu_s'] * 1000:,.0f} ms | "
                       f"{r['joiner_partitions']} | {r['other_cpus']:.2f} CPUs |")
        out.append("")
        out.append(f"Median {join['median_s'] * 1000:,.0f} ms; forming the group took "
                   f"{join['formed_s']:.1f} s.")
        out.append("")
    assignors = result.get("assignors")
    if assignors:
        out.append(f"## Server-side assignors, {args.cg_assignor_members:,} members x "
                   f"{args.cg_assignor_partitions:,} partitions (CPU ms, best of 3; goal "
                   f"<= {ASSIGNOR_GOAL_MS:.0f} ms)")
        out.append("")
        out.append("| assignor | from scratch | unchanged | one joins | one leaves | moved on "
                   "join | moved on leave |")
        out.append("|---|---:|---:|---:|---:|---:|---:|")
        for r in assignors:
            out.append(f"| {r['assignor']} | {r['scratch_ms']:.1f} | {r['steady_ms']:.1f} | "
                       f"{r['join_ms']:.1f} | {r['leave_ms']:.1f} | {r['moved_on_join']} | "
                       f"{r['moved_on_leave']} |")
        out.append("")
    return out


def target_rows(result: dict, args) -> list[str]:
    """Lines of bench/coordinator.py's "Targets and ratios" table."""
    rows = []
    hb = result.get("heartbeats")
    if hb:
        ratio = hb["ratio_per_broker_cpu_s"]["median"]
        rows.append(f"| ConsumerGroupHeartbeat / Heartbeat per broker-CPU-second, "
                    f"{hb['members']:,} members | {ratio:.2f} | >= {GOAL_RATIO} | "
                    f"{'met' if ratio >= GOAL_RATIO else 'NOT met'} | |")
    join = result.get("join")
    if join:
        rows.append(f"| a member joins a consumer group of {join['members']:,}: every partition "
                    f"owned again | {join['median_s'] * 1000:,.0f} ms | | | |")
    for r in result.get("assignors") or ():
        worst = max(r["scratch_ms"], r["steady_ms"], r["join_ms"], r["leave_ms"])
        rows.append(f"| {r['assignor']} assignor, {args.cg_assignor_members:,} members x "
                    f"{args.cg_assignor_partitions:,} partitions, slowest case | {worst:.1f} ms | "
                    f"<= {ASSIGNOR_GOAL_MS:.0f} ms | "
                    f"{'met' if worst <= ASSIGNOR_GOAL_MS else 'NOT met'} | |")
    return rows
