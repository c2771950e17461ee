"""Kafka's own command-line tools, run from the resolved 4.4.0 jars as a user runs them
(`java -cp '.cache/kafka-4.4.0/libs/*' CLASS ...`, the classes behind bin/kafka-*.sh), against
roster and against the Apache Kafka peer with the same assertions: kafka-topics,
kafka-console-producer/-consumer, kafka-consumer-groups (describe, reset and delete offsets,
delete), kafka-groups (listing by type), kafka-configs (group and topic configs).

The tools run in the worker's warm JVM (tests/support/kafka_tools.py), with the output and exit
code of their own JVM. Each step asserts the tool's exit code and what it prints. Outputs are compared after the
normalisation `normal()` states: member ids, topic ids and the coordinator's node id are what
Kafka leaves open. kafka-acls is in test_kafka_tools_acls.py (an ACL-enabled roster)."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.judges import (  # noqa: F401 (fixtures)
    KAFKA,
    ROSTER,
    jvm,
    member_settings,
    roster_broker,
    target,
    wait_split,
)
from tests.support.kafka_peer import unique_name
from tests.support.kafka_tools import kafka_tool

TOOLS = "org.apache.kafka.tools."
TOPICS = TOOLS + "TopicCommand"
CONSUMER_GROUPS = TOOLS + "consumer.group.ConsumerGroupCommand"
GROUPS = TOOLS + "GroupsCommand"
CONFIGS = TOOLS + "ConfigCommand"
PRODUCER = TOOLS + "ConsoleProducer"
CONSUMER = TOOLS + "consumer.ConsoleConsumer"
BOTH = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)


def tool(target, main_class: str, *args: str, stdin: str | None = None,
         bootstrap: str | None = None) -> subprocess.CompletedProcess:
    done = kafka_tool(main_class, "--bootstrap-server", bootstrap or target.bootstrap, *args,
                      stdin=stdin)
    print(f"$ {main_class.rsplit('.', 1)[1]} {' '.join(args)} -> {done.returncode}\n"
          f"{done.stdout}{done.stderr}")
    return done


def normal(text: str) -> str:
    """Member and topic ids are random; the coordinator's node id differs (roster is node 0,
    the Kafka peer node 1); hosts print as /127.0.0.1; padding is the tool's."""
    text = re.sub(r"[\w.-]*-?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                  "MEMBER", text)
    text = re.sub(r"TopicId: \S+", "TopicId: ID", text)
    text = re.sub(r"\((0|1)\)", "(NODE)", text)
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines())


def table(output: str, first_column: str) -> list[dict[str, str]]:
    """The rows of the tool's table whose header starts with `first_column`."""
    lines = [line for line in output.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.split()[0] == first_column)
    names = lines[header].split()
    return [dict(zip(names, line.split())) for line in lines[header + 1:]
            if len(line.split()) == len(names)]


# -- kafka-topics ------------------------------------------------------------------------------

@BOTH
def test_kafka_topics_creates_describes_alters_lists_and_deletes(target):
    topic = unique_name("tools-topic")
    done = tool(target, TOPICS, "--create", "--topic", topic, "--partitions", "3")
    assert done.returncode == 0 and done.stdout.strip() == f"Created topic {topic}."
    again = tool(target, TOPICS, "--create", "--topic", topic, "--partitions", "3")
    assert again.returncode == 1
    assert f"TopicExistsException: Topic '{topic}' already exists." in again.stdout
    described = tool(target, TOPICS, "--describe", "--topic", topic)
    assert described.returncode == 0
    assert f"Topic: {topic}\tTopicId: " in described.stdout
    assert "PartitionCount: 3\tReplicationFactor: 1" in described.stdout
    rows = [row for row in described.stdout.splitlines() if row.startswith("\tTopic:")]
    assert [row.split("\t")[2] for row in rows] == [f"Partition: {p}" for p in range(3)]
    # DescribeTopicPartitions: the ELR is known, and empty (Metadata's fallback prints N/A)
    assert all(row.endswith("\tElr: \tLastKnownElr: ") for row in rows), rows
    altered = tool(target, TOPICS, "--alter", "--topic", topic, "--partitions", "5")
    assert altered.returncode == 0 and altered.stdout.strip() == ""
    fewer = tool(target, TOPICS, "--alter", "--topic", topic, "--partitions", "2")
    assert fewer.returncode == 1
    assert f"InvalidPartitionsException: The topic {topic} currently has 5 partition(s); 2 " \
        "would not be an increase." in fewer.stdout
    same = tool(target, TOPICS, "--alter", "--topic", topic, "--partitions", "5")
    assert same.returncode == 1
    assert "InvalidPartitionsException: Topic already has 5 partition(s)." in same.stdout
    described = tool(target, TOPICS, "--describe", "--topic", topic)
    assert "PartitionCount: 5" in described.stdout
    listed = tool(target, TOPICS, "--list", "--exclude-internal")
    assert listed.returncode == 0 and topic in listed.stdout.split()
    deleted = tool(target, TOPICS, "--delete", "--topic", topic)
    assert deleted.returncode == 0
    gone = tool(target, TOPICS, "--describe", "--topic", topic)
    assert gone.returncode == 1
    assert f"Topic '{topic}' does not exist as expected" in gone.stdout + gone.stderr


# -- console producer and consumer, kafka-consumer-groups on the group it leaves -----------------

@BOTH
def test_console_clients_and_kafka_consumer_groups_offsets_reset_delete(target):
    topic, group = unique_name("tools-console"), unique_name("tools-console")
    assert tool(target, TOPICS, "--create", "--topic", topic, "--partitions", "2").returncode == 0
    lines = [f"k{i}:v{i}" for i in range(6)]
    produced = tool(target, PRODUCER, "--topic", topic, "--reader-property", "parse.key=true",
                    "--reader-property", "key.separator=:", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consumed = tool(target, CONSUMER, "--topic", topic, "--group", group, "--from-beginning",
                    "--max-messages", "6", "--formatter-property", "print.key=true",
                    "--timeout-ms", "30000")
    assert consumed.returncode == 0
    assert sorted(consumed.stdout.splitlines()) == sorted(x.replace(":", "\t") for x in lines)
    assert "Processed a total of 6 messages" in consumed.stderr

    listed = tool(target, CONSUMER_GROUPS, "--list", "--state")
    assert {"GROUP": group, "STATE": "Empty"} in [
        {"GROUP": row["GROUP"], "STATE": row["STATE"]} for row in table(listed.stdout, "GROUP")]

    def offsets() -> dict[str, tuple[str, str, str]]:
        done = tool(target, CONSUMER_GROUPS, "--describe", "--group", group, "--offsets")
        assert done.returncode == 0
        assert f"Consumer group '{group}' has no active members." in done.stderr
        return {row["PARTITION"]: (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
                for row in table(done.stdout, "GROUP")}

    before = offsets()
    assert set(before) == {"0", "1"}
    assert all(current == end and lag == "0" for current, end, lag in before.values())
    assert sum(int(end) for _, end, _ in before.values()) == 6

    dry = tool(target, CONSUMER_GROUPS, "--reset-offsets", "--group", group, "--topic", topic,
               "--to-earliest", "--dry-run")
    assert dry.returncode == 0
    assert sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in table(dry.stdout, "GROUP")) == \
        [("0", "0"), ("1", "0")]
    assert offsets() == before   # a dry run changes nothing
    executed = tool(target, CONSUMER_GROUPS, "--reset-offsets", "--group", group, "--topic",
                    f"{topic}:0", "--to-offset", "1", "--execute")
    assert executed.returncode == 0
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in table(executed.stdout, "GROUP")] == \
        [("0", "1")]
    after = offsets()
    assert after["0"][0] == "1" and after["1"] == before["1"]

    deleted = tool(target, CONSUMER_GROUPS, "--delete-offsets", "--group", group, "--topic",
                   f"{topic}:1")
    assert deleted.returncode == 0
    assert f"Request succeeded for deleting offsets from group {group}." in deleted.stdout
    assert [(r["PARTITION"], r["STATUS"]) for r in table(deleted.stdout, "TOPIC")] == \
        [("1", "Successful")]
    assert set(offsets()) == {"0"}

    gone = tool(target, CONSUMER_GROUPS, "--delete", "--group", group)
    assert gone.returncode == 0
    assert f"Deletion of requested consumer groups ('{group}') was successful." in gone.stdout
    missing = tool(target, CONSUMER_GROUPS, "--describe", "--group", group)
    assert f"Group {group} not found." in missing.stdout + missing.stderr
    twice = tool(target, CONSUMER_GROUPS, "--delete", "--group", group)
    assert f"Group '{group}' could not be deleted due to: " \
        "org.apache.kafka.common.errors.GroupIdNotFoundException" in twice.stdout


# -- describe --members --verbose and kafka-groups on live static members -----------------------

@BOTH
def test_describe_members_verbose_and_kafka_groups_list_live_groups_of_both_protocols(
        target, jvm):
    topic = unique_name("tools-live")
    assert tool(target, TOPICS, "--create", "--topic", topic, "--partitions", "4").returncode == 0
    classic, consumer = unique_name("tools-classic"), unique_name("tools-consumer")
    for group, protocol in ((classic, "classic"), (consumer, "consumer")):
        for name in ("a", "b"):
            jvm.send(f"start {group}-{name} {topic} "
                     + member_settings(target, group, protocol, f"{group}-{name}-instance"))
        wait_split(jvm, [f"{group}-a", f"{group}-b"], topic, 4, 2)

    outputs = {}
    for group in (classic, consumer):
        done = tool(target, CONSUMER_GROUPS, "--describe", "--group", group, "--members",
                    "--verbose")
        assert done.returncode == 0
        rows = table(done.stdout, "GROUP")
        assert sorted(r["CLIENT-ID"] for r in rows) == [f"{group}-a", f"{group}-b"]
        assert sorted(r["GROUP-INSTANCE-ID"] for r in rows) == \
            [f"{group}-a-instance", f"{group}-b-instance"]
        assert [r["#PARTITIONS"] for r in rows] == ["2", "2"]
        outputs[group] = normal(done.stdout)
        state = tool(target, CONSUMER_GROUPS, "--describe", "--group", group, "--state")
        row = table(state.stdout, "GROUP")[0]
        assert (row["STATE"], row["#MEMBERS"]) == ("Stable", "2")
        assert row["ASSIGNMENT-STRATEGY"] == ("range" if group == classic else "uniform")
    # the consumer-protocol group shows each member's epoch and its target
    assert "CURRENT-EPOCH" in outputs[consumer] and "TARGET-ASSIGNMENT" in outputs[consumer]

    def listed(*args: str) -> dict[str, tuple[str, str]]:
        done = tool(target, GROUPS, "--list", *args)
        assert done.returncode == 0
        return {r["GROUP"]: (r["TYPE"], r["PROTOCOL"]) for r in table(done.stdout, "GROUP")
                if r["GROUP"] in (classic, consumer)}

    both = {classic: ("Classic", "consumer"), consumer: ("Consumer", "consumer")}
    assert listed() == both
    assert listed("--consumer") == both
    assert listed("--group-type", "classic") == {classic: both[classic]}
    assert listed("--group-type", "consumer") == {consumer: both[consumer]}
    assert listed("--protocol", "consumer") == both


# -- kafka-configs ----------------------------------------------------------------------------

@BOTH
def test_kafka_configs_sets_describes_and_deletes_a_group_config(target):
    group = unique_name("tools-config")
    name = ["--entity-type", "groups", "--entity-name", group]
    done = tool(target, CONFIGS, "--alter", *name, "--add-config",
                "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=600")
    assert done.returncode == 0
    assert done.stdout.strip() == f"Completed updating config for group {group}."
    described = tool(target, CONFIGS, "--describe", *name)
    assert described.returncode == 0
    # with Kafka's synonyms: the group's own value, then the broker setting it defaults to as
    # the operator set it, then that setting's default
    assert described.stdout.splitlines()[1:] == [
        "  consumer.heartbeat.interval.ms=600 sensitive=false synonyms="
        "{DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=600, "
        "STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=500, "
        "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}",
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms="
        "{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "STATIC_BROKER_CONFIG:group.consumer.session.timeout.ms=45000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}"]
    # every group with a config of its own, existing or not (ListConfigResources)
    every = tool(target, CONFIGS, "--describe", "--entity-type", "groups")
    assert every.returncode == 0
    assert f"Dynamic configs for group {group} are:" in every.stdout.splitlines()
    refused = tool(target, CONFIGS, "--alter", *name, "--add-config",
                   "consumer.session.timeout.ms=5")
    assert refused.returncode == 1
    assert "InvalidConfigurationException: consumer.session.timeout.ms must be in the range " \
        "1000 to 60000 inclusive." in refused.stderr
    removed = tool(target, CONFIGS, "--alter", *name, "--delete-config",
                   "consumer.session.timeout.ms,consumer.heartbeat.interval.ms")
    assert removed.returncode == 0
    # a group without members, offsets or configs: the tool asks ListConfigResources
    empty = tool(target, CONFIGS, "--describe", *name)
    assert empty.returncode == 0
    assert empty.stdout.strip() == \
        f"The group '{group}' doesn't exist and doesn't have dynamic config."


@BOTH
def test_kafka_configs_sets_describes_and_deletes_topic_configs(target):
    topic = unique_name("tools-topic-config")
    name = ["--entity-type", "topics", "--entity-name", topic]
    created = tool(target, TOPICS, "--create", "--topic", topic, "--partitions", "1",
                   "--config", "cleanup.policy=compact", "--config", "min.compaction.lag.ms=100")
    assert created.returncode == 0
    compact = ("  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
               "cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}")
    lag = ("  min.compaction.lag.ms=100 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
           "min.compaction.lag.ms=100, DEFAULT_CONFIG:log.cleaner.min.compaction.lag.ms=0}")
    segment = ("  segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
               "segment.bytes=1048576, DEFAULT_CONFIG:log.segment.bytes=1073741824}")

    def dynamic() -> list[str]:
        done = tool(target, CONFIGS, "--describe", *name)
        assert done.returncode == 0
        assert done.stdout.splitlines()[0] == f"Dynamic configs for topic {topic} are:"
        return done.stdout.splitlines()[1:]

    assert dynamic() == [compact, lag]
    altered = tool(target, CONFIGS, "--alter", *name, "--add-config",
                   "retention.ms=3600000,segment.bytes=1048576")
    assert altered.returncode == 0
    assert altered.stdout.strip() == f"Completed updating config for topic {topic}."
    assert dynamic() == [compact, lag, "  retention.ms=3600000 sensitive=false synonyms="
                         "{DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}", segment]
    for bad, why in (("retention.ms=abc", "Invalid value abc for configuration retention.ms: "
                                          "Not a number of type LONG"),
                     ("no.such.config=1", "Unknown topic config name: no.such.config")):
        refused = tool(target, CONFIGS, "--alter", *name, "--add-config", bad)
        assert refused.returncode == 1
        assert f"InvalidConfigurationException: {why}" in refused.stdout + refused.stderr
    removed = tool(target, CONFIGS, "--alter", *name, "--delete-config", "retention.ms")
    assert removed.returncode == 0
    assert dynamic() == [compact, lag, segment]
    described = tool(target, TOPICS, "--describe", "--topic", topic)
    configs = described.stdout.splitlines()[0].split("Configs: ")[1].split(",")
    assert {"cleanup.policy=compact", "segment.bytes=1048576",
            "min.compaction.lag.ms=100"} <= set(configs)
    missing = tool(target, CONFIGS, "--describe", "--entity-type", "topics", "--entity-name",
                   f"{topic}-nope")
    assert missing.returncode == 0
    assert missing.stdout.strip() == \
        f"The topic '{topic}-nope' doesn't exist and doesn't have dynamic config."
