"""Rolling restart of a static pipeline instance: restart one of two instances (same
group.instance.id, same checkpoint) and show that the group does not rebalance — the other
instance keeps its member id and partitions, and the group stays Stable throughout.

    python examples/rolling_restart.py [--bootstrap localhost:9092]

With static membership (KIP-345) a stopped member is not removed until session.timeout.ms
(120 s in pipeline.py), and when it comes back with the same group.instance.id the coordinator
hands it its old partitions without a rebalance. The restarted query resumes from its
checkpoint. The restart (a new SparkSession and query) must fit in the session timeout.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from two_instances import group_view, start_instance, wait_for_split  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--group", default=f"click-pipeline-rolling-{int(time.time())}",
                        help="default: a new group per run (static members of an earlier run "
                             "stay in theirs until their session times out)")
    parser.add_argument("--workdir", default="/tmp/roster-rolling-restart")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)

    first = start_instance(args.bootstrap, "rolling-1", args.group, True, workdir)
    second = start_instance(args.bootstrap, "rolling-2", args.group, False, workdir)
    seen: list = []
    watching = threading.Event()

    def watch():
        while not watching.is_set():
            seen.append(group_view(args.bootstrap, args.group))
            time.sleep(0.1)
    try:
        before = wait_for_split(args.bootstrap, args.group, 2)
        print("before:", before, flush=True)
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        print("restarting rolling-1 (SIGTERM, then start again) ...", flush=True)
        first.send_signal(signal.SIGTERM)
        first.wait(120)
        first = start_instance(args.bootstrap, "rolling-1", args.group, True, workdir)
        # the restarted member rejoins under a new member id (same group.instance.id)
        deadline = time.monotonic() + 180
        while True:
            state, view = group_view(args.bootstrap, args.group)
            if view.get("rolling-1", before["rolling-1"])[0] != before["rolling-1"][0]:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the restarted instance did not rejoin within 180 s")
            time.sleep(0.5)
        print("rolling-1 rejoined", flush=True)
        time.sleep(10)        # give the restarted instance time to run a few micro-batches
        after = wait_for_split(args.bootstrap, args.group, 2)
        watching.set()
        watcher.join(5)
    finally:
        for process in (first, second):
            process.terminate()
        for process in (first, second):
            process.wait(60)

    states = sorted({state for state, _ in seen})
    other_views = {view.get("rolling-2") for _, view in seen if "rolling-2" in view}
    print("after: ", after)
    print("group states observed while rolling-1 restarted:", states)
    print("rolling-2 as seen meanwhile:", other_views)
    unchanged = after["rolling-2"] == before["rolling-2"] and len(other_views) == 1
    same_split = {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}
    print(f"rolling-1: member {before['rolling-1'][0]} -> {after['rolling-1'][0]} "
          f"(a static member rejoins under a new member id, with the same partitions)")
    if states == ["Stable"] and unchanged and same_split:
        print("no rebalance: rolling-2 kept its member id and partitions; rolling-1 got its "
              "partitions back")
        return 0
    print("a rebalance happened (was the restart slower than session.timeout.ms?)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
