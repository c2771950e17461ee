"""Groups of every type side by side (Kafka 4.4 beside roster): classic, consumer (KIP-848),
share (KIP-932) and streams (KIP-1071) groups, each with one live member; a group id held by one
type asked by every other type's APIs (what a client of another type, an admin tool or a
confused configuration would send at it); and the listing and describe APIs over all of them."""
from __future__ import annotations

from roster.protocol.api_keys import ApiKey
from tests.differential.harness import scenario
from tests.differential.members import ClassicMember, Kip848Member, form_alone
from tests.differential.test_share_groups import ShareMember, share_group
from tests.differential.test_streams_groups import StreamsMember

MESSAGE = ("error_message",)


def classic_requests(s, conn, group: str, topic: str) -> None:
    """What a classic consumer sends: JoinGroup (new member, then a made-up member id),
    SyncGroup, Heartbeat, LeaveGroup, OffsetCommit (a member's and an admin's), OffsetFetch,
    OffsetDelete."""
    stranger = ClassicMember(s, f"classic-at-{group}", group, (topic,))
    stranger.conn = conn
    stranger.send_join()
    stranger.finish_join()
    stranger.member_id, stranger.generation = "made-up", 1
    stranger.send_sync()
    stranger.finish_sync()
    stranger.heartbeat()
    stranger.leave()
    stranger.commit(topic, {0: 5})
    stranger.member_id, stranger.generation = "", -1
    stranger.commit(topic, {0: 5})        # as an admin tool commits: no member, generation -1
    conn.call(ApiKey.OFFSET_FETCH, keep=("groups",), groups=[
        {"group_id": group, "member_id": None, "member_epoch": -1,
         "topics": [{"name": topic, "partition_indexes": [0]}]}])
    conn.call(ApiKey.OFFSET_DELETE, keep=("topics",), group_id=group,
              topics=[{"name": topic, "partitions": [{"partition_index": 0}]}])


def describers(s, conn, group: str, topic: str) -> None:
    """Every describe API, the share offsets' APIs and DeleteGroups on the group: what each
    answers for it (its own type's describe answers the group, its epochs left out: a new
    share or streams group's first epochs differ by design, docs/compatibility.md)."""
    def noted(api: str, answer) -> None:
        (found,) = answer.groups
        s.note(f"{api} of {group}", error=found.error_code.name,
               message=getattr(found, "error_message", None),
               state=getattr(found, "group_state", None),
               members=len(found.members) if hasattr(found, "members") else None)

    for version in (5, 6):   # v6 (KIP-1043) answers another type's group with an error
        noted(f"DescribeGroups v{version}", conn.call(
            ApiKey.DESCRIBE_GROUPS, version, groups=[group], include_authorized_operations=False))
    for api, version in ((ApiKey.CONSUMER_GROUP_DESCRIBE, 1),
                         (ApiKey.SHARE_GROUP_DESCRIBE, 1), (ApiKey.STREAMS_GROUP_DESCRIBE, 0)):
        noted(api.name, conn.call(api, version, group_ids=[group],
                                  include_authorized_operations=False))
    conn.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, keep=("groups",), groups=[
        {"group_id": group, "topics": None}])
    conn.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, keep=("error_message", "responses"),
              group_id=group, topics=[{"topic_name": topic, "partitions": [
                  {"partition_index": 0, "start_offset": 0}]}])
    conn.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, keep=("error_message", "responses"),
              group_id=group, topics=[{"topic_name": topic}])
    conn.call(ApiKey.DELETE_GROUPS, keep=("results",), groups_names=[group])


@scenario(outcome="""a group id held by a classic, a consumer, a share or a streams group, each
with a live member, asked by the other types' APIs: the classic APIs (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit as a member and as an admin, OffsetFetch, OffsetDelete) on
a share and a streams group (JoinGroup INCONSISTENT_GROUP_PROTOCOL, SyncGroup, Heartbeat and
LeaveGroup UNKNOWN_MEMBER_ID, not GROUP_ID_NOT_FOUND); ShareGroupHeartbeat and
StreamsGroupHeartbeat joining the groups of the other types, ConsumerGroupHeartbeat a share and
a streams group; every describe API (DescribeGroups v5 and v6, ConsumerGroupDescribe,
ShareGroupDescribe, StreamsGroupDescribe, DescribeShareGroupOffsets), AlterShareGroupOffsets,
DeleteShareGroupOffsets and DeleteGroups on each group: each answered with Kafka's error codes and messages, and each group keeps its member""")
def test_group_ids_held_by_another_type(s):
    topic = s.topic("t", 1)
    classic, consumer = s.name("classic"), s.name("consumer")
    streams = s.name("streams")
    share = share_group(s, "share")
    form_alone(ClassicMember(s, "classic", classic, (topic,)), topic, 1)
    Kip848Member(s, "consumer", consumer, (topic,)).converge(1)
    # the share member's first answers differ by design (roster initialises the share
    # partitions before answering, Kafka after): out of the trace until it is assigned
    share_member = ShareMember(s, "share", share, topic)
    share_member.heartbeat(traced=False)
    share_member.wait_assigned(1)
    StreamsMember(s, "streams", streams, topic).heartbeat(keep=MESSAGE)
    conn = s.conn("asker")
    for group in (share, streams):
        classic_requests(s, conn, group, topic)
    # (ConsumerGroupHeartbeat on a classic group with members is the online upgrade:
    # test_consumer_protocol.py, online_upgrade_and_downgrade)
    for group in (share, streams):
        Kip848Member(s, f"consumer-at-{group}", group, (topic,)).heartbeat()
    for group in (classic, consumer, streams):
        ShareMember(s, f"share-at-{group}", group, topic).heartbeat()
    for group in (classic, consumer, share):
        StreamsMember(s, f"streams-at-{group}", group, topic).heartbeat(keep=MESSAGE)
    for group in (classic, consumer, share, streams):
        describers(s, conn, group, topic)


@scenario(outcome="""ListGroups over groups of every type and state (a Stable classic group, a
simple group that only holds offsets, a Stable consumer group, an Empty consumer group, Stable
share and streams groups): each types filter, type names in other cases and an unknown type,
each type's own state names as filters; and each describe API asked for a group that does not
exist, an empty group id and the same id twice in one request; DeleteGroups naming a group
twice, groups it deletes beside groups it refuses: each answered with Kafka's errors, states
and messages, in Kafka's order""")
def test_list_and_describe_edges(s):
    topic = s.topic("t", 1)
    classic, simple = s.name("classic"), s.name("simple")
    consumer, emptied = s.name("consumer"), s.name("emptied")
    share, streams = share_group(s, "share"), s.name("streams")
    form_alone(ClassicMember(s, "classic", classic, (topic,)), topic, 1)
    ClassicMember(s, "admin", simple, (topic,)).commit(topic, {0: 1})
    Kip848Member(s, "consumer", consumer, (topic,)).converge(1)
    leaver = Kip848Member(s, "leaver", emptied, (topic,))
    leaver.converge(1)
    leaver.leave()
    share_member = ShareMember(s, "share", share, topic)
    share_member.heartbeat(traced=False)
    share_member.wait_assigned(1)
    StreamsMember(s, "streams", streams, topic).heartbeat(keep=MESSAGE)
    conn = s.conn("asker")
    ours = (classic, simple, consumer, emptied, share, streams)

    def listed(label, states=(), types=()):
        answer = conn.call(ApiKey.LIST_GROUPS, 5, states_filter=list(states),
                           types_filter=list(types))
        s.note(label, groups=sorted((g.group_id, g.group_state, g.group_type, g.protocol_type)
                                    for g in answer.groups if g.group_id in ours))

    listed("all")
    for types in (["classic"], ["consumer"], ["share"], ["streams"], ["Consumer"],
                  ["CLASSIC", "share"], ["nonsense"]):
        listed(f"types {types}", types=types)
    for states in (["Stable"], ["Empty"], ["stable", "empty"], ["Assigning", "Reconciling"],
                   ["NotReady"], ["Dead"], ["PreparingRebalance", "CompletingRebalance"]):
        listed(f"states {states}", states=states)
    nobody = s.name("nobody")
    for api, version in ((ApiKey.DESCRIBE_GROUPS, 5), (ApiKey.DESCRIBE_GROUPS, 6)):
        conn.call(api, version, keep=("groups",), groups=[nobody, "", classic, classic],
                  include_authorized_operations=False)
    for api, version, group in ((ApiKey.CONSUMER_GROUP_DESCRIBE, 1, consumer),
                                (ApiKey.SHARE_GROUP_DESCRIBE, 1, share),
                                (ApiKey.STREAMS_GROUP_DESCRIBE, 0, streams)):
        answer = conn.call(api, version, group_ids=[nobody, "", group, group],
                           include_authorized_operations=False)
        s.note(f"{api.name} of nobody, '', the group twice", groups=[
            (g.group_id, g.error_code.name, g.error_message, g.group_state, len(g.members))
            for g in answer.groups])
    # partition 3 holds emptied (deletable) and classic (not empty), partition 0 simple
    # (deletable) and "", partition 1 nobody
    conn.call(ApiKey.DELETE_GROUPS, keep=("results",),
              groups_names=[emptied, classic, simple, simple, nobody, ""])


# roster's own group configs (expected static members), which Kafka does not have: roster lists
# them beside Kafka's (its tools tell a roster broker by them); left out of the comparison
ROSTERS_OWN = "group.expected."


@scenario(outcome="""DescribeConfigs of a GROUP resource (a group that does not exist, with
and without keys, synonyms and documentation asked for): every group config Kafka 4.4 lists,
with its value, source, read-only and sensitive flags and type (roster lists its own
group.expected.* configs besides)""")
def test_group_configs_described(s):
    for keys, synonyms in ((None, False), (["consumer.session.timeout.ms", "nope"], True)):
        answer = s.conn("admin").call(ApiKey.DESCRIBE_CONFIGS, 4, resources=[{
            "resource_type": 32, "resource_name": s.name("g"), "configuration_keys": keys}],
            include_synonyms=synonyms, include_documentation=False)
        (result,) = answer.results
        s.note("described", keys=keys, error=result.error_code.name,
               message=result.error_message, configs=sorted(
                   (c.name, c.value, int(c.config_source), c.read_only, c.is_sensitive,
                    int(c.config_type), [(y.name, y.value, int(y.source)) for y in c.synonyms])
                   for c in result.configs if not c.name.startswith(ROSTERS_OWN)))
