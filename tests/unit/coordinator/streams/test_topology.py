"""A streams topology configured against the topic catalog: the status a heartbeat reports, the
partition counts of the internal topics, and the internal topics the coordinator creates."""
import pytest

from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.streams.topology import (
    CopartitionGroup,
    InvalidTopology,
    Status,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
    invalid_topology,
    required_topics,
)

COMPACT = (("cleanup.policy", "compact"),)


def image(**topics: int) -> DictTopicImage:
    return DictTopicImage({n.replace("_", "-"): (n.encode().ljust(16, b"\0")[:16], p)
                           for n, p in topics.items()})


def word_count() -> Topology:
    """in -> (repartition by word) -> counts kept in a store -> out."""
    return Topology(1, (
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("app-rep",)),
        Subtopology("1", repartition_source_topics=(TopicInfo("app-rep"),),
                    state_changelog_topics=(TopicInfo("app-store-changelog", configs=COMPACT),)),
    ))


def test_missing_source_topics_are_named_in_order():
    topology = Topology(1, (Subtopology("0", source_topics=("b", "a")),
                            Subtopology("1", source_topics=("c",))))
    configured = configure(topology, image(c=1))
    assert not configured.ready and configured.subtopologies is None
    assert configured.status == (Status.MISSING_SOURCE_TOPICS, "Source topics a, b are missing.")
    assert configured.to_create == {}


def test_internal_topics_take_their_counts_from_the_sources_and_are_to_be_created():
    configured = configure(word_count(), image(**{"in": 4}))
    assert configured.status == (Status.MISSING_INTERNAL_TOPICS,
                                 "Internal topics are missing: app-rep, app-store-changelog")
    assert not configured.ready
    rep, changelog = configured.to_create["app-rep"], configured.to_create["app-store-changelog"]
    assert (rep.partitions, rep.replication_factor, rep.configs) == (4, -1, ())
    # the changelog is created with the configs the client sent: compacted
    assert (changelog.partitions, changelog.configs) == (4, COMPACT)
    assert configured.subtopologies["1"].partitions == 4
    assert configured.subtopologies["1"].stateful and not configured.subtopologies["0"].stateful


def test_ready_once_the_internal_topics_exist():
    configured = configure(word_count(), image(**{"in": 4, "app_rep": 4,
                                                  "app_store_changelog": 4}))
    assert configured.ready and configured.status is None and configured.to_create == {}
    assert {s: c.partitions for s, c in configured.subtopologies.items()} == {"0": 4, "1": 4}


def test_an_internal_topic_with_another_count_is_incorrectly_partitioned():
    configured = configure(word_count(), image(**{"in": 4, "app_rep": 4,
                                                  "app_store_changelog": 2}))
    assert configured.status == (
        Status.INCORRECTLY_PARTITIONED_TOPICS,
        "Existing topic app-store-changelog has different number of partitions: expected 4, "
        "found 2")
    assert not configured.ready


def test_a_fixed_repartition_count_is_kept():
    topology = Topology(1, (
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("rep",)),
        Subtopology("1", repartition_source_topics=(TopicInfo("rep", partitions=7),),
                    state_changelog_topics=(TopicInfo("log"),)),
    ))
    configured = configure(topology, image(**{"in": 2}))
    assert configured.to_create["rep"].partitions == 7
    assert configured.to_create["log"].partitions == 7


def test_chained_repartition_topics_are_decided_in_turn():
    topology = Topology(1, (
        Subtopology("2", repartition_source_topics=(TopicInfo("r2"),),
                    state_changelog_topics=(TopicInfo("log2"),)),
        Subtopology("1", repartition_source_topics=(TopicInfo("r1"),),
                    repartition_sink_topics=("r2",)),
        Subtopology("0", source_topics=("a", "b"), repartition_sink_topics=("r1",)),
    ))
    configured = configure(topology, image(a=3, b=5))
    assert {n: t.partitions for n, t in configured.to_create.items()} == \
        {"r1": 5, "r2": 5, "log2": 5}


def test_copartitioned_user_topics_must_have_equal_counts():
    topology = Topology(1, (Subtopology(
        "0", source_topics=("left", "right"),
        copartition_groups=(CopartitionGroup(source_topics=(0, 1)),)),))
    configured = configure(topology, image(left=3, right=4))
    assert configured.status == (Status.INCORRECTLY_PARTITIONED_TOPICS,
                                 "Following topics do not have the same number of partitions: "
                                 "[left, right]")
    assert configure(topology, image(left=4, right=4)).ready


def test_a_flexible_repartition_topic_follows_its_copartitioned_user_topic():
    # a join of a table topic with a re-keyed stream: the repartition topic takes the table's
    # count, not the count of the stream it is written from
    topology = Topology(1, (
        Subtopology("0", source_topics=("stream",), repartition_sink_topics=("rekeyed",)),
        Subtopology("1", source_topics=("table",),
                    repartition_source_topics=(TopicInfo("rekeyed"),),
                    copartition_groups=(CopartitionGroup(source_topics=(0,),
                                                         repartition_source_topics=(0,)),)),
    ))
    configured = configure(topology, image(stream=8, table=3))
    assert configured.to_create["rekeyed"].partitions == 3


def test_a_fixed_repartition_topic_against_its_copartitioned_topic_is_refused():
    topology = Topology(1, (
        Subtopology("0", source_topics=("stream",), repartition_sink_topics=("rekeyed",)),
        Subtopology("1", source_topics=("table",),
                    repartition_source_topics=(TopicInfo("rekeyed", partitions=5),),
                    copartition_groups=(CopartitionGroup(source_topics=(0,),
                                                         repartition_source_topics=(0,)),)),
    ))
    configured = configure(topology, image(stream=8, table=3))
    assert configured.status == (
        Status.INCORRECTLY_PARTITIONED_TOPICS,
        "Number of partitions [5] of repartition topic [rekeyed] doesn't match number of "
        "partitions [3] of the source topic.")


def test_a_repartition_topic_nobody_writes_makes_the_topology_invalid():
    topology = Topology(1, (Subtopology("0", repartition_source_topics=(TopicInfo("orphan"),)),))
    with pytest.raises(InvalidTopology, match="never used as a sink topic"):
        configure(topology, image())


def test_a_loop_of_repartition_topics_makes_the_topology_invalid():
    topology = Topology(1, (
        Subtopology("0", repartition_source_topics=(TopicInfo("a"),),
                    repartition_sink_topics=("b",)),
        Subtopology("1", repartition_source_topics=(TopicInfo("b"),),
                    repartition_sink_topics=("a",)),
    ))
    with pytest.raises(InvalidTopology, match="loops in the topology"):
        configure(topology, image())


def test_many_missing_topics_are_summed_up():
    topology = Topology(1, (Subtopology("0", source_topics=("e", "d", "c", "b", "a")),))
    assert configure(topology, image()).status == (
        Status.MISSING_SOURCE_TOPICS, "Source topics a, b, c and 2 additional topics are missing.")


def test_status_codes_are_kafkas():
    assert [(s.name, int(s)) for s in Status] == [
        ("STALE_TOPOLOGY", 0), ("MISSING_SOURCE_TOPICS", 1),
        ("INCORRECTLY_PARTITIONED_TOPICS", 2), ("MISSING_INTERNAL_TOPICS", 3),
        ("SHUTDOWN_APPLICATION", 4), ("ASSIGNMENT_DELAYED", 5), ("MISSING_CLIENT_TAGS", 6)]


def test_invalid_topologies_say_why():
    assert invalid_topology(word_count()) is None
    twice = Topology(1, (Subtopology("0"), Subtopology("0")))
    assert invalid_topology(twice) == "Duplicate subtopology ID 0."
    bad_index = Topology(1, (Subtopology("0", source_topics=("a",),
                                         copartition_groups=(CopartitionGroup((0, 1)),)),))
    assert "not among its sources" in invalid_topology(bad_index)


def test_required_topics():
    assert required_topics(word_count()) == ["app-rep", "app-store-changelog", "in"]
