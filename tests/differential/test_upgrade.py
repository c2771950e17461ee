"""The online upgrade and downgrade between the classic and the consumer protocol (KIP-848's
migration, group.consumer.migration.policy=bidirectional), Kafka beside roster."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, Kip848Member, form_alone, split


def list_mine(s) -> None:
    answer = s.conn("admin").call(ApiKey.LIST_GROUPS, states_filter=[], types_filter=[])
    s.note("listed", groups=sorted((g.group_id, g.group_state, g.group_type)
                                   for g in answer.groups if g.group_id.startswith(s.name(""))))


@scenario(outcome="""a KIP-848 member joining a stable classic group converts it to a consumer
group (ListGroups type consumer); the classic member is asked to rejoin
(REBALANCE_IN_PROGRESS), rejoins through JoinGroup/SyncGroup and gets its share; when the
KIP-848 member leaves, the group goes back to classic with the classic member in it""")
def test_online_upgrade_and_downgrade(s):
    topic = s.topic("t", 2)
    group = s.name("g")
    old = ClassicMember(s, "old", group, (topic,))
    form_alone(old, topic, 2)
    list_mine(s)
    new = Kip848Member(s, "new", group, (topic,))
    new.heartbeat()
    list_mine(s)
    old.heartbeat()
    old.send_join()
    old.finish_join()
    old.sync()
    new.heartbeat()
    old.heartbeat()          # REBALANCE_IN_PROGRESS: the revocation is acknowledged by a join
    old.send_join()
    old.finish_join()
    old.sync()
    new.heartbeat()
    old.heartbeat()
    s.conn("admin").call(ApiKey.CONSUMER_GROUP_DESCRIBE, keep=("groups",), group_ids=[group])
    new.leave()
    list_mine(s)
    old.heartbeat()
    old.send_join()
    old.finish_join()
    old.sync(split([old], topic, 2))
    old.heartbeat()
    s.describe(group)
