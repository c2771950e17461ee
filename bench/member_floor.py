"""How small can a group member be in CPython? The floor under the coordinator benchmark's
memory line, measured rather than argued.

The coordinator benchmark (bench/coordinator.py) measures roster's memory per idle member and
compares it with librdkafka's C mock (322 B per member at 100,000 members). This script builds
only what any coordinator must keep for an idle static member, in three idealised layouts, and
measures RSS growth per member in this process:

- objects:  one slotted object per member (member id, instance id, a shared profile, shared
            protocols, its assignment, its session deadline) in a dict by member id, plus a
            dict from instance id to member id: the shape of roster's coordinator;
- columns:  no object per member: per group, a dict from member id to a slot number, a dict
            from instance id to slot, a list of member ids, a list of assignments and an
            array of deadlines (struct-of-arrays);
- int-keys: columns, and the member id not kept as a string at all: the dict is keyed by the
            UUID part of the id as a 128-bit int (the id would be rebuilt from the instance id
            when needed), and the group's assignments share one bytes object.

Nothing else a real coordinator holds is built: no group state, protocol counts, timers,
pending sets or offsets, and allocation is in order (no fragmentation from requests served in
between). Every string and bytes value is a fresh object, as a decoded request gives a broker.
Use: .venv/bin/python bench/member_floor.py [--groups 10000] [--size 10]
"""
from __future__ import annotations

import argparse
import array
import gc
import random
import subprocess
import sys
import uuid

LAYOUTS = ("objects", "columns", "int-keys")
ASSIGNMENT = bytes(21)                 # the coordinator benchmark's assignment size
PROFILE = ("bench-member", "/127.0.0.1", 120_000, 120_000)   # shared by every member
PROTOCOLS = (("range", bytes(29)),)    # shared within a group
NOW_MS = 1_795_340_000_000


class Member:
    __slots__ = ("member_id", "instance_id", "profile", "protocols", "assignment", "deadline")

    def __init__(self, member_id, instance_id, profile, protocols, assignment, deadline):
        self.member_id, self.instance_id = member_id, instance_id
        self.profile, self.protocols = profile, protocols
        self.assignment, self.deadline = assignment, deadline


def decoded(value: str) -> str:
    return value.encode().decode()     # a new object, as the wire would give


def deadline() -> int:
    return NOW_MS + random.randrange(1 << 20)


def group_objects(group_id: str, size: int):
    members, static = {}, {}
    for i in range(size):
        instance = decoded(f"{group_id}-i{i:05d}")
        member_id = f"{instance}-{uuid.uuid4()}"
        members[member_id] = Member(member_id, instance, PROFILE, PROTOCOLS,
                                    bytes(bytearray(ASSIGNMENT)), deadline())
        static[instance] = member_id
    return members, static


def group_columns(group_id: str, size: int):
    slots, static, ids, assignments = {}, {}, [], []
    deadlines = array.array("q")
    for i in range(size):
        instance = decoded(f"{group_id}-i{i:05d}")
        member_id = f"{instance}-{uuid.uuid4()}"
        slots[member_id] = static[instance] = i
        ids.append(member_id)
        assignments.append(bytes(bytearray(ASSIGNMENT)))
        deadlines.append(deadline())
    return slots, static, ids, assignments, deadlines


def group_int_keys(group_id: str, size: int):
    slots, static, instances = {}, {}, []
    assignments = bytearray()
    deadlines = array.array("q")
    for i in range(size):
        instance = decoded(f"{group_id}-i{i:05d}")
        slots[uuid.uuid4().int] = static[instance] = i
        instances.append(instance)
        assignments += ASSIGNMENT
        deadlines.append(deadline())
    return slots, static, instances, bytes(assignments), deadlines


BUILDERS = {"objects": group_objects, "columns": group_columns, "int-keys": group_int_keys}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def measure(layout: str, groups: int, size: int) -> float:
    """RSS growth per member for one layout (call in a fresh process)."""
    build = BUILDERS[layout]
    gc.collect()
    before = rss()
    kept = [build(f"mem-{g:05d}", size) for g in range(groups)]
    gc.collect()
    grown = rss() - before
    assert len(kept) == groups
    return grown / (groups * size)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--layout", choices=LAYOUTS, help="measure one layout, in this process")
    args = parser.parse_args(argv)
    if args.layout:
        print(f"{measure(args.layout, args.groups, args.size):.0f}")
        return 0
    print(f"Idealised bytes per idle static member, {args.groups * args.size:,} members in "
          f"{args.groups:,} groups, CPython {sys.version.split()[0]} (RSS growth, each layout "
          f"in a fresh process):\n")
    print("| layout | B/member |\n|---|---:|")
    for layout in LAYOUTS:  # a fresh process each, so no layout reuses another's freed memory
        out = subprocess.run([sys.executable, __file__, "--layout", layout, "--groups",
                              str(args.groups), "--size", str(args.size)],
                             capture_output=True, text=True, check=True).stdout
        print(f"| {layout} | {out.strip()} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
