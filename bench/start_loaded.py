"""roster alone, started on a data dir full of offset commits: the cheap reproduction of
versus_kafka.py's "start on 1,000,000 commits" rows, without Kafka beside it.

  fill     a work dir: roster spawned as versus_kafka.py spawns it, --commits offset commits
           written by its load_commits (100 partitions a request, round-robin over 1,000
           groups, or --groups) and --bytes of log by its PipelinedProducer; then stopped
  spawn    `roster serve` on that dir, timed as versus_kafka.py times it: spawn → first
           answered Metadata → DescribeGroups answered without COORDINATOR_LOAD_IN_PROGRESS
           for a group of every partition of __consumer_offsets, in turn (the coordinator has
           replayed it all); broker CPU to then. --rounds of them, each printed;
           --profile FILE runs it under cProfile
  inproc   the same start in this process, without sockets: Broker.start() (the logs opened,
           the topics loaded), then the group coordinator's replay; --profile FILE writes
           cProfile's statistics for both, and prints the top of them

Every figure is printed with the 1-minute load average before and after it.

  .venv/bin/python bench/start_loaded.py fill --work-dir /tmp/loaded --commits 1000000
  .venv/bin/python bench/start_loaded.py spawn --work-dir /tmp/loaded --rounds 3
  .venv/bin/python bench/start_loaded.py inproc --work-dir /tmp/loaded --profile /tmp/start.prof
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import versus_kafka as vk  # noqa: E402  (it puts src/ and the repo on sys.path)

# the spawned broker runs this tree's roster too (a `git archive` of another commit, say), not
# whichever one the venv has installed
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(vk.REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])


def loadavg() -> float:
    return os.getloadavg()[0]


def fill(args) -> None:
    work = Path(args.work_dir)
    if work.exists():
        shutil.rmtree(work)
    broker = vk.Broker("roster", work)
    broker.start()
    try:
        if args.groups == 1000:   # versus_kafka.py's own fill
            vk.load_data_dir(broker, argparse.Namespace(loaded_commits=args.commits,
                                                        loaded_bytes=args.bytes))
        else:   # its commits over fewer groups: each key written more often, as with 1M
            vk.make_topics(broker, {"loaded": 100})
            asyncio.run(vk.load_commits(broker, args.commits, groups=args.groups))
    finally:
        broker.stop()


class ProfiledBroker(vk.Broker):
    """`roster serve` under cProfile, which writes its statistics once SIGTERM stops it."""

    def __init__(self, work_dir: Path, profile: str) -> None:
        super().__init__("roster", work_dir)
        self.profile = profile

    def argv(self) -> list[str]:
        python, module, *rest = super().argv()
        assert module == "-m"
        return [python, "-m", "cProfile", "-o", self.profile, "-m", *rest]


def probe_groups(partitions: int) -> list[str]:
    """One group id held by each __consumer_offsets partition, in partition order (the order
    roster loads them)."""
    from roster.protocol.partitioning import partition_for
    found: dict[int, str] = {}
    n = 0
    while len(found) < partitions:
        found.setdefault(partition_for(f"probe-{n}", partitions), f"probe-{n}")
        n += 1
    return [found[p] for p in range(partitions)]


def wait_loaded(broker, group: str, deadline: float) -> None:
    """Until DescribeGroups of `group` stops answering COORDINATOR_LOAD_IN_PROGRESS: its
    partition of __consumer_offsets is replayed. (FindCoordinator is no probe for that: roster
    answers it at once, a loading group included, as Kafka does; versus_kafka.py's group then
    waits in JoinGroup.)"""
    from roster.admin.client import AdminClient, AdminError
    from roster.protocol.api_keys import ApiKey
    while time.perf_counter() < deadline:
        broker.check()
        try:
            with AdminClient(broker.address, timeout_s=5.0) as admin:
                answer = admin.call(ApiKey.DESCRIBE_GROUPS, groups=(group,),
                                    include_authorized_operations=False)
                if answer.groups[0].error_code.name != "coordinator_load_in_progress":
                    return
        except (AdminError, OSError):
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{group}: still loading")


def spawn(args) -> None:
    """One group per partition of __consumer_offsets is described until it is loaded, in the
    order roster loads them, so the last figure is the whole replay (versus_kafka.py forms one
    group, whose partition may be the first loaded or the last)."""
    for n in range(args.rounds):
        broker = vk.Broker("roster", Path(args.work_dir)) if not args.profile else \
            ProfiledBroker(Path(args.work_dir), args.profile)
        groups = probe_groups(int(broker.settings["offsets.topic.num.partitions"]))
        before = loadavg()
        try:
            broker.start(coordinator=False)
            loaded = []
            for group in groups:
                wait_loaded(broker, group, broker.spawned_at + 600)
                loaded.append(time.perf_counter() - broker.spawned_at)
            cpu_s = broker.cpu_s()
        finally:
            broker.stop()
        print(f"spawn → Metadata {broker.timings['metadata_s']:.2f} s, → coordinator loaded "
              f"{loaded[-1]:.2f} s (partition by partition: "
              f"{', '.join(f'{s:.2f}' for s in loaded)}), broker CPU {cpu_s:.2f} s "
              f"(load {before:.1f}→{loadavg():.1f})", flush=True)
    if args.profile:
        import pstats
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(40)


def inproc(args) -> None:
    from roster.broker.broker import Broker
    from roster.broker.network.server import tune_garbage_collector
    from roster.config import BrokerConfig

    tune_garbage_collector()   # as `roster serve` runs
    config = BrokerConfig.from_overrides(vk.COMMON)
    profiler = None
    if args.profile:
        import cProfile
        profiler = cProfile.Profile()

    async def main() -> tuple[float, float, float, int]:
        t0, cpu0 = time.perf_counter(), time.process_time()
        broker = Broker(config, Path(args.work_dir) / "data")
        broker.start()
        opened = time.perf_counter() - t0
        cpu_opened = time.process_time() - cpu0
        await asyncio.sleep(0)   # the load task starts, and marks every partition loading
        while not broker.groups.loaded:
            await asyncio.sleep(0.001)
        loaded = time.perf_counter() - t0
        cpu = time.process_time() - cpu0 - cpu_opened   # the replay's CPU, threads' included
        groups = len(broker.groups.shard.group_ids())
        await broker.stop()
        return opened, loaded, cpu, groups

    before = loadavg()
    if profiler is not None:
        profiler.enable()
    opened, loaded, cpu, groups = asyncio.run(main())
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)
    print(f"in process: logs opened {opened:.2f} s, coordinator loaded {loaded:.2f} s "
          f"({groups} groups), replay CPU {cpu:.2f} s (load {before:.1f}→{loadavg():.1f})", flush=True)
    if profiler is not None:
        import pstats
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fill")
    f.add_argument("--work-dir", required=True)
    f.add_argument("--commits", type=int, default=1_000_000)
    f.add_argument("--bytes", type=int, default=0)
    f.add_argument("--groups", type=int, default=1000,
                   help="the commits' groups (100 partitions each); fewer than versus_kafka.py's "
                        "1,000 repeat each key more often (no --bytes then)")
    s = sub.add_parser("spawn")
    s.add_argument("--work-dir", required=True)
    s.add_argument("--rounds", type=int, default=1)
    s.add_argument("--profile", help="run the broker under cProfile, its statistics to this "
                                     "file (the last round's), and print the top of them")
    i = sub.add_parser("inproc")
    i.add_argument("--work-dir", required=True)
    i.add_argument("--profile")
    args = p.parse_args()
    {"fill": fill, "spawn": spawn, "inproc": inproc}[args.command](args)


if __name__ == "__main__":
    main()
