"""Issue 22, part 2: a static leader that sends JoinGroup again right after its group formed, the
orderings kafka-python 3.0.12 produces (docs/groups.md, "A kafka-python leader that rejoins
right after forming"), against Kafka and roster. Its join attempt finishes while poll() has
returned on its timeout; the next poll() throws the finished attempt away and sends a new
JoinGroup with the same member id and subscription. Kafka's rule for a leader's JoinGroup in a
Stable group is a rebalance; the leader's parked JoinGroup is answered with the next generation
once the others rejoin, and nobody is dropped."""
from __future__ import annotations

from tests.differential.harness import scenario
from tests.differential.members import split
from tests.differential.test_classic import static_group

REBALANCE_IN_PROGRESS = 27


def next_generation(s, group: str, leader, followers) -> None:
    """The leader's JoinGroup is parked in PreparingRebalance: the followers learn of it from a
    heartbeat and rejoin, and the next generation forms with all three, led by the leader."""
    s.wait_state(group, "PreparingRebalance")
    for follower in followers:
        assert follower.heartbeat() == REBALANCE_IN_PROGRESS
        follower.send_join()
    for member in (leader, *followers):
        assert member.finish_join() == 0
    assert leader.leader and len(leader.members) == 3


def rejoin_everyone(s, group: str, leader, followers, topic: str) -> None:
    """next_generation, then everyone syncs and heartbeats without error."""
    next_generation(s, group, leader, followers)
    for follower in followers:
        follower.send_sync()
    leader.sync(split([leader, *followers], topic, 4))
    for follower in followers:
        assert follower.finish_sync() == 0
    for member in (leader, *followers):
        assert member.heartbeat() == 0


@scenario(outcome="""three static members (session 6 s) formed; the leader sends JoinGroup
again, same member id and subscription, right after its SyncGroup was answered: the group
rebalances, its parked JoinGroup gets the next generation with the three members once the
followers rejoin, and every member syncs and heartbeats without error""")
def test_classic_static_leader_rejoins_right_after_forming(s):
    topic = s.topic("t", 4)
    group, (leader, *followers) = static_group(s, 3, topic, session_ms=6000)
    leader.send_join()
    rejoin_everyone(s, group, leader, followers, topic)
    s.describe(group)


@scenario(outcome="""the same, with the leader's JoinGroup sent on its connection right behind
its SyncGroup (pipelined, while the assignment is being written): the SyncGroup is answered
first, with the leader's assignment, and only then does the JoinGroup rebalance the Stable
group; the followers' SyncGroups, sent once it is rebalancing, are answered
REBALANCE_IN_PROGRESS, and all three rejoin""")
def test_classic_static_leader_join_pipelined_behind_its_sync(s):
    topic = s.topic("t", 4)
    group, (leader, *followers) = static_group(s, 3, topic, session_ms=6000)
    leader.send_join()                      # a rebalance, so that the leader syncs again
    next_generation(s, group, leader, followers)
    leader.send_sync(split([leader, *followers], topic, 4))
    leader.send_join()                      # pipelined behind the SyncGroup
    assert leader.finish_sync() == 0 and leader.owned
    # the followers sync only once the JoinGroup has rebalanced the group: sent beside the
    # leader's, on their own connections, they would race it to the broker (either answer is
    # Kafka's, depending on which connection it reads first)
    s.wait_state(group, "PreparingRebalance")
    for follower in followers:
        assert follower.sync() == REBALANCE_IN_PROGRESS
    rejoin_everyone(s, group, leader, followers, topic)
    s.describe(group)
