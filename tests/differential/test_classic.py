"""Classic-protocol group stories (docs/groups.md) against Kafka and roster, driven by raw
JoinGroup/SyncGroup/Heartbeat/LeaveGroup requests as a Java consumer sends them."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, split


@scenario(outcome="""first join answered MEMBER_ID_REQUIRED then generation 1 as leader; a second
member's join parks the group in PreparingRebalance, the first sees REBALANCE_IN_PROGRESS on
its heartbeat, both rejoin into generation 2 with the first as leader, and sync their plan""")
def test_classic_eager_formation(s):
    topic = s.topic("t", 4)
    group = s.name("g")
    a = ClassicMember(s, "a", group, (topic,))
    b = ClassicMember(s, "b", group, (topic,))
    a.join()
    a.sync(split([a], topic, 4))
    b.send_join()
    b.finish_join()          # MEMBER_ID_REQUIRED
    b.send_join()            # parks until a rejoins
    s.wait_state(group, "PreparingRebalance")
    a.heartbeat()
    a.send_join()
    a.finish_join()
    b.finish_join()
    b.send_sync()
    a.sync(split([a, b], topic, 4))
    b.finish_sync()
    a.heartbeat()
    b.heartbeat()
