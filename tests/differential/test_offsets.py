"""OffsetCommit, OffsetFetch and OffsetDelete with their errors, and DeleteGroups on a live
group, Kafka beside roster."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, form_alone


def fetch(s, group: str, topics, who: str = "admin", require_stable: bool = False) -> None:
    s.conn(who).call(ApiKey.OFFSET_FETCH, keep=("groups",), require_stable=require_stable,
                     groups=[{"group_id": group, "topics": None if topics is None else [
                         {"name": t, "partition_indexes": list(p)} for t, p in topics]}])


@scenario(outcome="""an admin (generation -1, no member id) commits to an empty group and reads
the offsets back, for named partitions and for all; a partition that does not exist gets
UNKNOWN_TOPIC_OR_PARTITION on commit and offset -1 on fetch; an unknown group fetches -1""")
def test_offsets_commit_and_fetch(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    admin = ClassicMember(s, "admin", group, (topic,))
    admin.commit(topic, {0: 10, 1: 20})
    fetch(s, group, [(topic, (0, 1))])
    fetch(s, group, None)
    admin.commit(topic, {7: 1})
    admin.commit(s.name("missing-topic"), {0: 1})
    fetch(s, group, [(topic, (0, 1, 7)), (s.name("missing-topic"), (0,))])
    fetch(s, s.name("nobody"), [(topic, (0,))])
    fetch(s, s.name("nobody"), None)


@scenario(outcome="""OffsetDelete removes a committed offset of an empty group; for a group
still subscribed to the topic it answers GROUP_SUBSCRIBED_TO_TOPIC per partition; for an
unknown group GROUP_ID_NOT_FOUND""")
def test_offsets_delete(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 2)
    a.commit(topic, {0: 4, 1: 5})
    admin = s.conn("admin")

    def delete(name):
        admin.call(ApiKey.OFFSET_DELETE, keep=("topics",), group_id=name, topics=[
            {"name": topic, "partitions": [{"partition_index": 0}]}])

    delete(group)
    a.leave()
    delete(group)
    fetch(s, group, [(topic, (0, 1))])
    delete(s.name("nobody"))


@scenario(outcome="""DeleteGroups on a group with members answers NON_EMPTY_GROUP; once the
member leaves it deletes the group and its offsets; an unknown group gets GROUP_ID_NOT_FOUND;
the deleted group then describes as Dead""")
def test_delete_groups_live(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 2)
    a.commit(topic, {0: 4})
    admin = s.conn("admin")

    def delete(*names):
        admin.call(ApiKey.DELETE_GROUPS, keep=("results",), groups_names=list(names))

    delete(group)
    a.leave()
    delete(group, s.name("nobody"))
    fetch(s, group, [(topic, (0,))])
    s.describe(group)


@scenario(outcome="""DeleteGroups v3 (Kafka 4.4; each result carries an error message): a group
with members answers NON_EMPTY_GROUP, an unknown group GROUP_ID_NOT_FOUND, an empty group is
deleted (no message)""")
def test_delete_groups_v3(s):
    topic = s.topic("t", 1)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    form_alone(a, topic, 1)
    admin = s.conn("admin")

    def delete(*names):
        admin.call(ApiKey.DELETE_GROUPS, 3, keep=("results",), groups_names=list(names))

    delete(group)
    delete(s.name("nobody"))    # one group a request: Kafka orders results by its shards
    a.leave()
    delete(group)


@scenario(outcome="""ListGroups with a states filter returns only groups in those states (names
compared case-insensitively), with a types filter only classic or consumer groups; the
answer carries each group's state and type""")
def test_list_groups_filters(s):
    topic = s.topic("t", 2)
    stable = ClassicMember(s, "stable", s.name("stable"), (topic,))
    form_alone(stable, topic, 2)
    empty = ClassicMember(s, "empty", s.name("empty"), (topic,))
    empty.commit(topic, {0: 1})
    admin = s.conn("admin")
    for states, types in (((), ()), (("Stable",), ()), (("empty",), ()), ((), ("classic",)),
                          ((), ("consumer",)), (("Stable",), ("Classic",))):
        answer = admin.call(ApiKey.LIST_GROUPS, states_filter=list(states),
                            types_filter=list(types))
        mine = sorted((g.group_id, g.group_state, g.group_type) for g in answer.groups
                      if g.group_id.startswith(s.name("")))
        s.note("listed", states=list(states), types=list(types), groups=mine)
