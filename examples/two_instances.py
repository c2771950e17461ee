"""Two instances of the click pipeline in one consumer group: they split the `clicks`
partitions, and together count every click once.

    python examples/two_instances.py [--bootstrap localhost:9092] [--seconds 60]

Each instance is a separate process with its own SparkSession and checkpoint, like two
deployments of the same job. The script shows the group's assignment (DescribeGroups), then a
few of the per-window counts the instances wrote to `click-counts`.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def group_view(bootstrap: str, group: str):
    """(state, {instance id: (member id, [partitions])}) from DescribeGroups."""
    from roster.admin.client import AdminClient, AdminError
    from roster.admin.groups import describe
    from roster.protocol.consumer_protocol import decode_assignment
    with AdminClient(bootstrap) as admin:
        try:
            group_ = describe(admin, group)
        except AdminError:
            return "Missing", {}
    members = {}
    for m in group_.members:
        parts = tuple(sorted(p for _, ps in decode_assignment(m.member_assignment).partitions
                             for p in ps)) if m.member_assignment else ()
        members[m.group_instance_id or m.member_id] = (m.member_id, parts)
    return group_.group_state, members


def start_instance(bootstrap: str, instance: str, group: str, generate: bool, workdir: Path,
                   extra=()) -> subprocess.Popen:
    command = [sys.executable, str(HERE / "pipeline.py"), "--bootstrap", bootstrap,
               "--instance", instance, "--group", group,
               "--checkpoint", str(workdir / instance), *extra]
    if not generate:
        command.append("--no-generate")
    return subprocess.Popen(command)


def wait_for_split(bootstrap: str, group: str, members: int, timeout_s: float = 180):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state, view = group_view(bootstrap, group)
        if state == "Stable" and len(view) == members and all(p for _, p in view.values()):
            return view
        time.sleep(0.5)
    raise SystemExit(f"the group did not settle with {members} members in {timeout_s}s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--group", default=f"click-pipeline-pair-{int(time.time())}",
                        help="default: a new group per run (static members of an earlier run "
                             "stay in theirs until their session times out)")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workdir", default="/tmp/roster-two-instances")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)

    processes = [start_instance(args.bootstrap, "pipeline-a", args.group, True, workdir),
                 start_instance(args.bootstrap, "pipeline-b", args.group, False, workdir)]
    try:
        view = wait_for_split(args.bootstrap, args.group, 2)
        for instance, (member, partitions) in sorted(view.items()):
            print(f"{instance}: partitions {partitions} (member {member})", flush=True)
        time.sleep(args.seconds)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(60)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)   # workers need roster installed
    from pyspark.sql import SparkSession

    import roster.spark
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \
        .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    roster.spark.register(spark)
    counts = (spark.read.format("roster").option("kafka.bootstrap.servers", args.bootstrap)
              .option("subscribe", "click-counts").load()
              .selectExpr("CAST(value AS STRING) AS count").collect())
    print(f"{len(counts)} window counts written to click-counts; the last few:")
    for row in counts[-5:]:
        print("  ", row["count"])
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
