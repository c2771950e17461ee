"""Kafka's kafka-share-groups tool (org.apache.kafka.tools.consumer.group.ShareGroupCommand, the
class behind bin/kafka-share-groups.sh) against roster and against the Apache Kafka peer with the
same assertions: --list (with --state), --describe (--offsets, --members, --state, --verbose),
--reset-offsets (--to-earliest, --to-latest, --to-offset; dry run, then --execute; refused while
the group has members), --delete-offsets and --delete, on a share group whose one member (the
Java KafkaShareConsumer of tests/java ShareConsumers) consumed and accepted every record.

Exact epochs are not compared: Kafka 4.4 shows group, assignment and member epoch 3 after one
member joined a group on a fresh topic (its share partitions are initialised in steps that each
bump the epoch). Neither is the start offset after consumption: Kafka 4.4 describes the start
offset it last persisted, which can trail records accepted at the front (start 3, lag 0 with 5
and 4 records accepted); the lag is compared."""
from __future__ import annotations

from tests.interop.test_kafka_tools import BOTH, table, tool
from tests.support.judges import roster_broker, target  # noqa: F401 (fixtures)
from tests.support.kafka_peer import unique_name
from tests.support.share_judges import (  # noqa: F401 (fixtures)
    ShareProgram,
    needs_share_groups,
    produce,
    share_group,
    stop_members,
    topic_with,
    wait_delivered,
)

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def share_groups(target, *args: str):
    return tool(target, SHARE_GROUPS, *args)


def rows(done, first_column: str) -> list[tuple[str, ...]]:
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(tuple(r.values()) for r in table(done.stdout, first_column))


@BOTH
def test_kafka_share_groups_lists_describes_resets_and_deletes(target):
    needs_share_groups(target)
    topic = topic_with(target, "sgtool", 2)
    group = share_group(target, "sgtool")
    values = [f"v{i}" for i in range(9)]   # 5 to partition 0, 4 to partition 1
    produce(target.bootstrap, topic, values, 2)
    java = ShareProgram.java().start()
    try:
        java.member("m1", target, group, topic, **{"share.acknowledgement.mode": "explicit"})
        wait_delivered([java], set(values), "every record")
        java.wait_for(lambda: len(java.select("acked", type="ACCEPT")) == 9, "every record accepted")
        running(target, group, topic)
        stop_members(java, ["m1"])
    finally:
        java.stop()
    empty(target, group, topic)


def running(target, group: str, topic: str) -> None:
    """While the member runs: what is described, and what is refused."""
    assert group in share_groups(target, "--list").stdout.split()
    assert (group, "Stable") in rows(share_groups(target, "--list", "--state", "stable"), "GROUP")
    offsets = rows(share_groups(target, "--describe", "--group", group), "GROUP")
    assert [(g, t, p, lag) for g, t, p, _, lag in offsets] == [
        (group, topic, "0", "0"), (group, topic, "1", "0")]
    assert all(0 <= int(start) <= end for (*_, start, _), end in zip(offsets, (5, 4)))
    verbose = rows(share_groups(target, "--describe", "--group", group, "--offsets",
                                "--verbose"), "GROUP")
    assert [(p, epoch, lag) for _, _, p, epoch, _, lag in verbose] == [
        ("0", "0", "0"), ("1", "0", "0")]

    (member,) = rows(share_groups(target, "--describe", "--group", group, "--members"), "GROUP")
    assert member[0] == group and member[2:] == ("/127.0.0.1", "m1", "2", f"{topic}:0,1")
    (member,) = rows(share_groups(target, "--describe", "--group", group, "--members",
                                  "--verbose"), "GROUP")
    member_epoch = member[5]
    (state,) = rows(share_groups(target, "--describe", "--group", group, "--state"), "GROUP")
    assert state[0] == group and state[-2:] == ("Stable", "1")
    (state,) = rows(share_groups(target, "--describe", "--group", group, "--state",
                                 "--verbose"), "GROUP")
    # GROUP COORDINATOR (ID) STATE GROUP-EPOCH ASSIGNMENT-EPOCH #MEMBERS
    assert state[-4:] == ("Stable", member_epoch, member_epoch, "1")

    busy = share_groups(target, "--reset-offsets", "--group", group, "--topic", topic,
                        "--to-earliest", "--execute")
    assert busy.returncode == 1
    assert f"Share group '{group}' is not empty." in busy.stdout + busy.stderr
    kept = share_groups(target, "--delete-offsets", "--group", group, "--topic", topic)
    assert kept.returncode == 0
    assert "Error: The group is not empty." in kept.stdout + kept.stderr
    assert [line.split(None, 1) for line in kept.stdout.splitlines()
            if line.startswith(topic)] == [[topic, "Error: The group is not empty."]]
    deleting = share_groups(target, "--delete", "--group", group)
    assert f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors." \
        f"GroupNotEmptyException: Share group '{group}' is not EMPTY." \
        in deleting.stdout + deleting.stderr
    assert group in share_groups(target, "--list").stdout.split()


def empty(target, group: str, topic: str) -> None:
    """Once its member left: resets (dry run, then executed), offsets deleted, the group
    deleted."""
    state = share_groups(target, "--describe", "--group", group, "--state")
    assert state.stderr.strip() == f"Share group '{group}' has no active members."
    (row,) = rows(state, "GROUP")
    assert row[-2:] == ("Empty", "0")
    members = share_groups(target, "--describe", "--group", group, "--members")
    assert members.returncode == 0
    assert (members.stdout + members.stderr).strip() == \
        f"Share group '{group}' has no active members."

    def described() -> list[tuple[str, str, str]]:
        return [(p, start, lag) for _, _, p, start, lag in
                rows(share_groups(target, "--describe", "--group", group), "GROUP")]

    before = described()
    dry = share_groups(target, "--reset-offsets", "--group", group, "--topic", topic,
                       "--to-earliest", "--dry-run")
    assert rows(dry, "GROUP") == [(group, topic, "0", "0"), (group, topic, "1", "0")]
    assert described() == before
    done = share_groups(target, "--reset-offsets", "--group", group, "--topic", topic,
                        "--to-earliest", "--execute")
    assert rows(done, "GROUP") == [(group, topic, "0", "0"), (group, topic, "1", "0")]
    assert described() == [("0", "0", "5"), ("1", "0", "4")]
    done = share_groups(target, "--reset-offsets", "--group", group, "--all-topics",
                        "--to-latest", "--execute")
    assert rows(done, "GROUP") == [(group, topic, "0", "5"), (group, topic, "1", "4")]
    assert described() == [("0", "5", "0"), ("1", "4", "0")]
    done = share_groups(target, "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
                        "--to-offset", "1", "--execute")
    assert rows(done, "GROUP") == [(group, topic, "1", "1")]
    assert described() == [("0", "5", "0"), ("1", "1", "3")]

    dropped = share_groups(target, "--delete-offsets", "--group", group, "--topic", topic)
    assert [line.split(None, 1) for line in dropped.stdout.splitlines()
            if line.startswith(topic)] == [[topic, "Successful"]]
    gone = share_groups(target, "--describe", "--group", group)
    assert (gone.stdout + gone.stderr).strip() == \
        f"Share group '{group}' has no offset information."
    missing = unique_name("no-such-topic")
    unknown = share_groups(target, "--delete-offsets", "--group", group, "--topic", missing)
    assert [line.split(None, 1) for line in unknown.stdout.splitlines()
            if line.startswith(missing)] == [
        [missing, "Error: This server does not host this topic-partition."]]

    deleted = share_groups(target, "--delete", "--group", group)
    assert deleted.returncode == 0
    assert f"Deletion of requested share groups ('{group}') was successful." \
        in deleted.stdout + deleted.stderr
    assert group not in share_groups(target, "--list").stdout.split()
    after = share_groups(target, "--describe", "--group", group)
    assert f"GroupIdNotFoundException: Group {group} not found." in after.stdout + after.stderr
    nobody = unique_name("no-such-group")
    refused = share_groups(target, "--delete", "--group", nobody)
    assert f"* Group '{nobody}' could not be deleted due to: org.apache.kafka.common.errors." \
        f"GroupIdNotFoundException: Group '{nobody}' is not a share group." \
        in refused.stdout + refused.stderr
