"""The partitions an Interactive Query endpoint serves, from the tasks its member holds."""
from roster.coordinator.consumer.model import DictTopicImage
from roster.coordinator.streams.endpoints import EndpointPartitions, endpoint_partitions
from roster.coordinator.streams.model import Endpoint, StreamsMember, TaskSets, freeze
from roster.coordinator.streams.topology import Subtopology, TopicInfo

SUBTOPOLOGIES = {
    "0": Subtopology("0", ("clicks", "views"), repartition_sink_topics=("app-rep",)),
    "1": Subtopology("1", repartition_source_topics=(TopicInfo("app-rep"),)),
}
IMAGE = DictTopicImage({"clicks": (b"c" * 16, 4), "views": (b"v" * 16, 2),
                        "app-rep": (b"r" * 16, 4)})


def test_active_standby_and_warmup_tasks_map_to_their_topics_partitions():
    member = StreamsMember(
        "m", user_endpoint=Endpoint("iq-1", 8080),
        assigned=TaskSets(freeze([("0", [3, 1])]), freeze([("1", [0])]), freeze([("0", [0])])))
    assert endpoint_partitions(member, SUBTOPOLOGIES, IMAGE) == EndpointPartitions(
        Endpoint("iq-1", 8080),
        active=(("clicks", (1, 3)), ("views", (1,))),          # views has no partition 3
        standby=(("clicks", (0,)), ("views", (0,)), ("app-rep", (0,))))


def test_a_member_without_an_endpoint_is_not_listed():
    member = StreamsMember("m", assigned=TaskSets(freeze([("0", [0])])))
    assert endpoint_partitions(member, SUBTOPOLOGIES, IMAGE) is None
