"""StreamsGroupHeartbeat's request as the streams coordinator takes it: kio's request
(tasks as {subtopology: partitions}, the topology as topology.Topology) converted to a
coordinator/streams/heartbeat.StreamsHeartbeat. Apart from the handler
(broker/handlers/streams_group_heartbeat.py) so that it, and the streams type's code with
it, is loaded on the first streams heartbeat, not at every broker's start."""
from __future__ import annotations

from collections.abc import Callable, Hashable

from roster.coordinator.streams.heartbeat import StreamsHeartbeat, StreamsHeartbeatReply
from roster.coordinator.streams.model import Endpoint
from roster.coordinator.streams.topology import CopartitionGroup, Subtopology, TopicInfo, Topology
from roster.protocol.errors import ErrorCode


def refusal(error: ErrorCode, member_id: str = "") -> StreamsHeartbeatReply:
    return StreamsHeartbeatReply(error=error, member_id=member_id)


def heartbeat_of(request, client_host: str, token: Hashable,
                 create_refused: Callable[[list[str]], list[str]]) -> StreamsHeartbeat:
    """The request (its kio body) as the coordinator's StreamsHeartbeat; `create_refused(names)`
    names the internal topics the caller may not create."""
    body = request.body
    endpoint = None if body.user_endpoint is None else Endpoint(body.user_endpoint.host,
                                                                body.user_endpoint.port)
    return StreamsHeartbeat(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        endpoint_information_epoch=body.endpoint_information_epoch,
        instance_id=body.instance_id, rack_id=body.rack_id,
        rebalance_timeout_ms=int(body.rebalance_timeout.total_seconds() * 1000),
        topology=_topology(body.topology), active=_tasks(body.active_tasks),
        standby=_tasks(body.standby_tasks), warmup=_tasks(body.warmup_tasks),
        process_id=body.process_id, user_endpoint=endpoint,
        client_tags=None if body.client_tags is None else tuple(
            (t.key, t.value) for t in body.client_tags),
        task_offsets=_offsets(body.task_offsets), task_end_offsets=_offsets(body.task_end_offsets),
        shutdown_application=body.shutdown_application,
        client_id=request.client_id or "",
        client_host=client_host, api_version=request.api_version, token=token,
        create_refused=create_refused)


def _tasks(entries):
    if entries is None:
        return None
    out: dict = {}
    for e in entries:
        if e.partitions:
            out[e.subtopology_id] = out.get(e.subtopology_id, frozenset()) | frozenset(
                e.partitions)
    return out


def _info(t) -> TopicInfo:
    return TopicInfo(t.name, t.partitions, t.replication_factor,
                     tuple((c.key, c.value) for c in t.topic_configs))


def _topology(t) -> Topology | None:
    if t is None:
        return None
    return Topology(t.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
        tuple(_info(c) for c in s.state_changelog_topics), tuple(s.repartition_sink_topics),
        tuple(_info(r) for r in s.repartition_source_topics),
        tuple(CopartitionGroup(tuple(g.source_topics), tuple(g.source_topic_regex),
                               tuple(g.repartition_source_topics))
              for g in s.copartition_groups)) for s in t.subtopologies))


def _offsets(entries):
    return None if entries is None else tuple((o.subtopology_id, o.partition, o.offset)
                                              for o in entries)
