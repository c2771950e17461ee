"""What StreamsGroupHeartbeat (API key 88) and StreamsGroupDescribe (89) carry, as Kafka 4.4
serves them (v0-1 of both), and the streams group settings with Kafka's defaults.

Checked against the schemas inside Kafka 4.4.0's own jars (kafka-clients,
kafka-group-coordinator: common/message/StreamsGroup*.json). The installed kio has both APIs at
v0 only (kio.schema.streams_group_heartbeat.v0, streams_group_describe.v0); v1 is what Kafka 4.4
adds, noted here for the codec still to come.

StreamsGroupHeartbeat request (v1 is byte for byte v0; it exists so that v1 responses, and
status 6, are negotiated):
- GroupId; MemberId (made by the client, never by the coordinator); MemberEpoch (0 joins, -1
  leaves, -2 a static member leaves and will come back); EndpointInformationEpoch (the
  PartitionsByUserEndpoint the member last saw);
- InstanceId? (static membership: refused by brokers before 4.4 with INVALID_REQUEST); RackId?;
  RebalanceTimeoutMs (-1: unchanged);
- Topology? (only at epoch 0: Epoch, Subtopologies[SubtopologyId, SourceTopics[],
  SourceTopicRegex[], StateChangelogTopics[TopicInfo], RepartitionSinkTopics[],
  RepartitionSourceTopics[TopicInfo], CopartitionGroups[SourceTopics int16[],
  SourceTopicRegex int16[], RepartitionSourceTopics int16[]]]; TopicInfo = Name, Partitions,
  ReplicationFactor int16 (0: default), TopicConfigs[Key, Value]);
- ActiveTasks?, StandbyTasks?, WarmupTasks? (what the member owns: [SubtopologyId,
  Partitions[]]; null when unchanged);
- ProcessId? (the Streams instance: its threads are members sharing one process id),
  UserEndpoint? {Host, Port uint16} (Interactive Queries), ClientTags?[Key, Value];
- TaskOffsets?, TaskEndOffsets? ([SubtopologyId, Partition, Offset int64]: changelog positions,
  the lag of a warm-up; rejected before 4.4);
- ShutdownApplication bool (SHUTDOWN_APPLICATION to every member).

StreamsGroupHeartbeat response:
- ThrottleTimeMs, ErrorCode, ErrorMessage?, MemberId, MemberEpoch, HeartbeatIntervalMs;
- AcceptableRecoveryLagLegacy int32 (v0 only), TaskOffsetIntervalMs, then AcceptableRecoveryLag
  int64 (v1+, default -1, ignorable): the broker sets both, each version carries its own;
- Status?[StatusCode int8, StatusDetail] (topology.Status: 0 STALE_TOPOLOGY, 1
  MISSING_SOURCE_TOPICS, 2 INCORRECTLY_PARTITIONED_TOPICS, 3 MISSING_INTERNAL_TOPICS, 4
  SHUTDOWN_APPLICATION, 5 ASSIGNMENT_DELAYED, 6 MISSING_CLIENT_TAGS (v1 only));
- ActiveTasks?, StandbyTasks?, WarmupTasks? (null when unchanged);
- PartitionsByUserEndpoint?[UserEndpoint, ActivePartitions[Topic, Partitions[]],
  StandbyPartitions[...]] (null when unchanged since EndpointInformationEpoch);
- v1: TopologyDescriptionRequired (KIP-1331; never set without a topology description plugin,
  and Kafka 4.4 has none configured by default);
- EndpointInformationEpoch int32, then PartitionsByUserEndpoint (above), last.
Field order of the response: ThrottleTimeMs, ErrorCode, ErrorMessage, MemberId, MemberEpoch,
HeartbeatIntervalMs, AcceptableRecoveryLagLegacy (v0), TaskOffsetIntervalMs,
AcceptableRecoveryLag (v1), Status, ActiveTasks, StandbyTasks, WarmupTasks,
TopologyDescriptionRequired (v1), EndpointInformationEpoch, PartitionsByUserEndpoint.
Errors the schema lists: GROUP_AUTHORIZATION_FAILED, GROUP_ID_NOT_FOUND, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST, UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, TOPIC_AUTHORIZATION_FAILED,
CLUSTER_AUTHORIZATION_FAILED, STREAMS_INVALID_TOPOLOGY (130), STREAMS_INVALID_TOPOLOGY_EPOCH
(131), STREAMS_TOPOLOGY_FENCED (132). Static membership (4.4) also answers FENCED_INSTANCE_ID
(82), which the list leaves out.

StreamsGroupDescribe (errors: GROUP_AUTHORIZATION_FAILED, NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, INVALID_REQUEST, INVALID_GROUP_ID,
GROUP_ID_NOT_FOUND, TOPIC_AUTHORIZATION_FAILED): request GroupIds[],
IncludeAuthorizedOperations; v1 adds
IncludeTopologyDescription. Response Groups[ErrorCode, ErrorMessage?, GroupId, GroupState,
GroupEpoch, AssignmentEpoch, Topology?{Epoch, Subtopologies[SubtopologyId, SourceTopics[],
RepartitionSinkTopics[], StateChangelogTopics[TopicInfo], RepartitionSourceTopics[TopicInfo]]},
Members[MemberId, MemberEpoch, InstanceId?, RackId?, ClientId, ClientHost, TopologyEpoch,
ProcessId, UserEndpoint?, ClientTags[], TaskOffsets[], TaskEndOffsets[], Assignment,
TargetAssignment (each Active/Standby/Warmup TaskIds[]), IsClassic], AuthorizedOperations];
v1 adds TopologyDescription?, TopologyDescriptionStatus and AssignorName (KIP-1331, KIP-1357).
Without a description plugin Kafka 4.4 describes every topology description as NOT_STORED and
answers StreamsGroupTopologyDescriptionUpdate (93) with UNSUPPORTED_VERSION.
"""
from __future__ import annotations

from dataclasses import field

from roster.coordinator.config import PerGroupConfig
from roster.frozen import frozen

# Kafka 4.4.0's messages for what the heartbeat refuses or reports (from its
# GroupMetadataManager), for the coordinator still to come; which error code goes with each is
# to be checked against Kafka beside roster when it is wired
GROUP_NOT_FOUND = "Streams group {} not found."
MAX_SIZE_REACHED = "The streams group has reached its maximum capacity of {} members."
GREATER_EPOCH = ("The streams group member has a greater member epoch ({}) than the one known "
                 "by the group coordinator ({}). The member must abandon all its partitions and "
                 "rejoin.")
SMALLER_EPOCH = ("The streams group member has a smaller member epoch ({}) than the one known "
                 "by the group coordinator ({}). The member must abandon all its partitions and "
                 "rejoin.")
STALE_TOPOLOGY = "The member's topology epoch {} is behind the group's topology epoch {}."
TOPOLOGY_EPOCH_MISMATCH = "Topology epoch {} does not match the group's current topology epoch {}."
TOPOLOGY_UPDATES_UNSUPPORTED = "Topology updates are not supported yet."
UNKNOWN_SUBTOPOLOGY = "Subtopology {} does not exist in the topology."
INVALID_TASK = "Task {} for subtopology {} is invalid. Number of tasks for this subtopology: {}"
# status 5, ASSIGNMENT_DELAYED (Kafka 4.4.0's words, from its GroupMetadataManager)
DELAYED_BY_INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
DELAYED_BY_INTERVAL = "Assignment delayed due to the configured assignment interval."
MISSING_CLIENT_TAGS = ("Missing required client tags for rack-aware standby assignment: {}. "
                       "Configure them via 'client.tag.<tagKey>' in your Streams config.")
SHUTDOWN_REQUESTED = ("Streams group member {} encountered a fatal error and requested a "
                      "shutdown for the entire application.")

HEARTBEAT_API_KEY = 88
DESCRIBE_API_KEY = 89
TOPOLOGY_DESCRIPTION_UPDATE_API_KEY = 93
VERSIONS = (0, 1)            # both APIs, Kafka 4.4


# a group config (streams.* on the GROUP resource) -> the StreamsConfig field it overrides
# for that group; the broker setting behind each is group.<config>
GROUP_CONFIG_FIELDS = {
    "streams.session.timeout.ms": "session_timeout_ms",
    "streams.heartbeat.interval.ms": "heartbeat_interval_ms",
    "streams.num.standby.replicas": "num_standby_replicas",
    "streams.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
    "streams.assignment.interval.ms": "assignment_interval_ms",
    "streams.task.offset.interval.ms": "task_offset_interval_ms",
    "streams.num.warmup.replicas": "num_warmup_replicas",
    "streams.acceptable.recovery.lag": "acceptable_recovery_lag",
}


@frozen
class StreamsConfig(PerGroupConfig):
    """Broker settings (group.streams.*) with Kafka 4.4.0's defaults (its GroupCoordinatorConfig),
    and per-group overrides (streams.* on a GROUP resource) read at each use, so a config
    altered while the group runs applies from its next heartbeat or timer, as in Kafka."""

    config_fields = GROUP_CONFIG_FIELDS
    max_size_setting = "group.streams.max.size"

    session_timeout_ms: int = 45_000          # group.streams.session.timeout.ms (45000-60000)
    heartbeat_interval_ms: int = 5_000        # group.streams.heartbeat.interval.ms (5000-15000)
    max_size: int = 2**31 - 1                 # group.streams.max.size
    num_standby_replicas: int = 0             # group.streams.num.standby.replicas (max 2)
    initial_rebalance_delay_ms: int = 3_000   # group.streams.initial.rebalance.delay.ms
    assignment_interval_ms: int = 1_000       # group.streams.assignment.interval.ms (0-15000)
    task_offset_interval_ms: int = 60_000     # group.streams.task.offset.interval.ms (min 15000)
    num_warmup_replicas: int = 2              # group.streams.num.warmup.replicas (max 20)
    acceptable_recovery_lag: int = 10_000     # group.streams.acceptable.recovery.lag (a long)
    # Kafka 4.4.0 hands out no warm-up tasks whatever num.warmup.replicas says (its
    # AssignmentRefiner returns the target); roster's refinement (assignor.refine_with_warmups)
    # runs only when this is set
    refine_warmups: bool = False
    # group id -> {group config name: value} (broker/groups/group_configs.py keeps it, shared)
    group_overrides: dict = field(default_factory=dict)

    def session_ms(self, group_id: str) -> int:
        return self.of(group_id, "streams.session.timeout.ms")

    def heartbeat_ms(self, group_id: str) -> int:
        return self.of(group_id, "streams.heartbeat.interval.ms")

    def standby_replicas(self, group_id: str) -> int:
        return self.of(group_id, "streams.num.standby.replicas")

    def initial_delay_ms(self, group_id: str) -> int:
        return self.of(group_id, "streams.initial.rebalance.delay.ms")

    def assignment_interval(self, group_id: str) -> int:
        return self.of(group_id, "streams.assignment.interval.ms")

    def task_offset_interval(self, group_id: str) -> int:
        return self.of(group_id, "streams.task.offset.interval.ms")

    def recovery_lag(self, group_id: str) -> int:
        return self.of(group_id, "streams.acceptable.recovery.lag")

    def rack_tags(self, group_id: str) -> tuple[str, ...]:
        """The client tag keys standby tasks are placed by (the group's own
        streams.rack.aware.assignment.tags; none by default)."""
        tags = self.group_overrides.get(group_id, {}).get("streams.rack.aware.assignment.tags")
        return tuple(tags.split(",")) if tags else ()
