#!/usr/bin/env python3
"""What observability costs, and how fast the report is (docs/observability.md). Not a test.

  core       the pure classic coordinator in this process: a 1,000-member group (one
             generation formed) rebalances --rounds times (every member rejoins, the leader
             syncs); time per rebalance with the flight recorder, and with a recorder that
             does nothing, interleaved; then --heartbeats heartbeats through check_in (the
             recorder is never called on that path: the ratio shows the noise floor).
  broker     bench/hardening.py on this tree twice: brokers without the HTTP listener (off)
             and with it (--set http.port=0: request metrics and the console's event feed on),
             --rounds rounds interleaved, each a heartbeat measurement (--hb-members static
             members) and a 1,000-member rebalance measurement: medians, on / off (goal >=
             0.95). The flight recorder runs in both (it is not a setting): its own cost is
             the core phase's.
  report     --events synthetic events (10 groups, a realistic mix of reasons, moves and saved
             rebalances, spread over 90 days) appended to __roster_group_events of a fresh
             broker, then `roster report` on local[2]: wall time.

    .venv/bin/python bench/observability.py                      # everything
    .venv/bin/python bench/observability.py --phases core,report --events 1000000
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PYTHON = sys.executable


class NoRecorder:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def core(args) -> dict:
    from roster.coordinator.config import GroupConfig
    from roster.coordinator.classic.coordinator import Coordinator
    from roster.coordinator.messages import JoinRequest, SyncRequest
    from roster.coordinator.results import Result
    protocols = (("range", b"m"),)

    def drive(recorder_on: bool):
        ids = iter(range(10**9))
        coordinator = Coordinator(GroupConfig(initial_rebalance_delay_ms=0),
                                  lambda prefix: f"{prefix}-{next(ids)}")
        if not recorder_on:
            coordinator.recorder = NoRecorder()
        now = [0]

        def finish(result):
            for step in result.after_write:
                finish(coordinator.write_completed(step, None, now[0]))
        def join(member_id="", instance=None):
            result = coordinator.join(JoinRequest(
                group_id="g", member_id=member_id, group_instance_id=instance,
                protocol_type="consumer", protocols=protocols, session_timeout_ms=30_000,
                rebalance_timeout_ms=60_000, client_id="c", client_host="/127.0.0.1",
                api_version=9, token=0), now[0])
            finish(result)
        for i in range(args.members):
            join(instance=f"i-{i}")
        group = coordinator.groups["g"]
        from roster.coordinator.classic.timers import JoinDeadline
        finish(coordinator.expire(JoinDeadline("g", 0, 0), now[0]))

        def sync_all():
            for member_id in list(group.members):
                assignments = tuple((m, b"a") for m in group.members) \
                    if member_id == group.leader_id else ()
                finish(coordinator.sync(SyncRequest(
                    group_id="g", generation=group.generation, member_id=member_id,
                    group_instance_id=group.members[member_id].group_instance_id,
                    protocol_type=None, protocol_name=None, assignments=assignments,
                    api_version=5, token=0), now[0]))
        sync_all()
        times = []
        for _ in range(args.rounds):
            now[0] += 1000
            started = time.perf_counter()
            for member_id, member in list(group.members.items()):
                join(member_id, member.group_instance_id)
            sync_all()
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        members = list(group.members.items())
        for i in range(args.heartbeats):
            member_id, member = members[i % len(members)]
            coordinator.check_in("g", group.generation, member_id, member.group_instance_id,
                                 now[0], Result())
        hb = args.heartbeats / (time.perf_counter() - started)
        return statistics.median(times), hb

    on, off = [], []
    for _ in range(args.repeat):
        off.append(drive(False))
        on.append(drive(True))
    rb_on = statistics.median(t for t, _ in on)
    rb_off = statistics.median(t for t, _ in off)
    hb_on = statistics.median(h for _, h in on)
    hb_off = statistics.median(h for _, h in off)
    return {"rebalance_ms_on": rb_on * 1000, "rebalance_ms_off": rb_off * 1000,
            "rebalance_ratio_on_off": rb_off / rb_on,
            "heartbeats_per_s_on": hb_on, "heartbeats_per_s_off": hb_off,
            "heartbeat_ratio_on_off": hb_on / hb_off}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker(args) -> dict:
    command = [PYTHON, str(ROOT / "bench" / "hardening.py"), "--base", str(ROOT / "src"),
               "--current", str(ROOT / "src"), "--set-for", "current=http.port=0",
               "--measures", "heartbeat,rebalance", "--rounds", str(args.rounds),
               "--hb-members", str(args.hb_members), "--hb-seconds", str(args.hb_seconds),
               "--quiet-wait", str(args.quiet_wait)]
    out = subprocess.run(command, check=True, cwd=ROOT, capture_output=True, text=True)
    report = out.stdout.replace("| base |", "| off |").replace("| current |", "| on |")
    print(report, flush=True)
    return {"command": " ".join(command[1:]), "report": report}


def synthetic_events(n: int, seed: int = 7):
    from roster.observability import events as ev
    rng = random.Random(seed)
    reasons = [(ev.MEMBER_JOINED, 30), (ev.MEMBER_LEFT, 25), (ev.SESSION_EXPIRED, 10),
               (ev.LEADER_REJOIN, 10), (ev.REBALANCE_TIMEOUT, 3), (ev.SUBSCRIPTION_CHANGED, 5),
               (ev.METADATA_CHANGED, 5), (ev.STATIC_MEMBER_REPLACED, 2), (ev.ADMIN_REMOVAL, 1)]
    kinds, weights = zip(*reasons)
    start = int(time.time() * 1000) - 90 * 86_400_000
    step = 90 * 86_400_000 // max(n, 1)
    generation = {}
    for i in range(n):
        group = f"g-{i % 10}"
        at = start + i * step
        if rng.random() < 0.2:
            yield ev.GroupEvent(group, ev.CLASSIC, ev.SAVED, generation.get(group, 1),
                                ev.Trigger(ev.STATIC_REJOIN, f"m-{i}", f"i-{i % 7}", None,
                                           f"m-{i - 1}"), at, at)
            continue
        generation[group] = generation.get(group, 0) + 1
        duration = rng.randint(5, 3000)
        moved = tuple(ev.Moved("orders", p, f"i-{p % 5}", f"i-{(p + 1) % 5}",
                               rng.randint(1, duration)) for p in range(rng.randint(0, 6)))
        yield ev.GroupEvent(group, ev.CONSUMER if i % 3 == 0 else ev.CLASSIC, ev.GENERATION,
                            generation[group],
                            ev.Trigger(rng.choices(kinds, weights)[0], f"m-{i}", None),
                            at, at - duration, outcome="stable",
                            members_before=(("a", None), ("b", None)),
                            members_after=(("a", None), ("b", None), ("c", None)), moved=moved)


async def fill(data_dir: Path, n: int) -> None:
    from roster.broker.broker import Broker
    from roster.config import BrokerConfig
    from roster.observability.event_log import EVENTS_TOPIC, _batches
    config = BrokerConfig.load(None, ["offsets.topic.num.partitions=5"])
    broker = Broker(config, data_dir)
    broker.start()
    pending = {}
    for event in synthetic_events(n):
        part = broker.group_events.partition_for(event.group_id)
        pending.setdefault(part, []).append(event)
        if len(pending[part]) >= 5000:
            for batch in _batches(pending.pop(part)):
                broker.topics.partition(EVENTS_TOPIC, part).append(batch)
    for part, events in pending.items():
        for batch in _batches(events):
            broker.topics.partition(EVENTS_TOPIC, part).append(batch)
    await broker.stop()


def report(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="roster-report-bench-"))
    data_dir = work / "data"
    started = time.monotonic()
    asyncio.run(fill(data_dir, args.events))
    filled = time.monotonic() - started
    port = free_port()
    server = subprocess.Popen([PYTHON, "-m", "roster", "serve", "--port", str(port),
                               "--data-dir", str(data_dir), "--set",
                               "offsets.topic.num.partitions=5"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        for line in server.stdout:
            if line.startswith("roster listening on"):
                break
        started = time.monotonic()
        out = subprocess.run([PYTHON, "-m", "roster", "report", "--bootstrap-server",
                              f"127.0.0.1:{port}", "--out", str(work / "report.html"),
                              "--master", "local[2]"], capture_output=True, text=True,
                             cwd=ROOT, check=True)
        elapsed = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(30)
    return {"events": args.events, "fill_s": filled, "report_wall_s": elapsed,
            "report_says": out.stdout.strip(), "html_bytes": (work / "report.html").stat().st_size,
            "html": str(work / "report.html")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phases", default="core,broker,report")
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--heartbeats", type=int, default=200_000)
    p.add_argument("--hb-members", type=int, default=2000)
    p.add_argument("--hb-seconds", type=float, default=5.0)
    p.add_argument("--quiet-wait", type=float, default=10.0,
                   help="broker: before each measurement wait at most this long for a quiet "
                        "machine")
    p.add_argument("--events", type=int, default=1_000_000)
    args = p.parse_args(argv)
    results = {}
    for phase in args.phases.split(","):
        results[phase] = {"core": core, "broker": broker, "report": report}[phase](args)
        print(json.dumps({phase: results[phase]}, indent=1, default=str), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
