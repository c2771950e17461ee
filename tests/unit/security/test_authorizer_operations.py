"""Every API is authorized with the operation Kafka checks for it (KafkaApis, AuthHelper,
ControllerApis; Kafka 3.9/4.x), per resource type: the handlers' declarations pinned against
Kafka's table, so neither can drift unnoticed.

Beyond this table, Kafka also: allows CreateTopics and auto-creation with CREATE on the
cluster (declared with cluster_allows), lets InitProducerId without a transactional id through
with IDEMPOTENT_WRITE on the cluster or WRITE on any topic (KIP-679; admission's
_may_be_idempotent), lists every group in ListGroups with DESCRIBE on the cluster."""
from __future__ import annotations

from roster.broker.handlers import build_registry
from roster.protocol.registry import (
    AllGroups,
    Cluster,
    ConfigResources,
    CoordinatorKeys,
    Group,
    Groups,
    NotAResource,
    Topics,
    TransactionalId,
    TransactionalIds,
)

KIND = {Group: "GROUP", Groups: "GROUP", AllGroups: "GROUP", Topics: "TOPIC",
        Cluster: "CLUSTER", TransactionalId: "TRANSACTIONAL_ID", ConfigResources: "CONFIG",
        CoordinatorKeys: "GROUP or TRANSACTIONAL_ID", TransactionalIds: "TRANSACTIONAL_ID"}

KAFKA = {
    "Produce": {("TOPIC", "WRITE"), ("TRANSACTIONAL_ID", "WRITE")},
    "Fetch": {("TOPIC", "READ")},  # a consumer's fetch (followers: CLUSTER_ACTION, n/a)
    "ListOffsets": {("TOPIC", "DESCRIBE")},
    "Metadata": {("TOPIC", "DESCRIBE")},
    "OffsetCommit": {("GROUP", "READ"), ("TOPIC", "READ")},
    "OffsetFetch": {("GROUP", "DESCRIBE"), ("TOPIC", "DESCRIBE")},
    # by key type: checked in the handler (tests/unit/transactions/test_find_coordinator_acls.py)
    "FindCoordinator": {("GROUP or TRANSACTIONAL_ID", "DESCRIBE")},
    "JoinGroup": {("GROUP", "READ")},
    "Heartbeat": {("GROUP", "READ")},
    "LeaveGroup": {("GROUP", "READ")},
    "SyncGroup": {("GROUP", "READ")},
    "DescribeGroups": {("GROUP", "DESCRIBE")},
    "ListGroups": {("GROUP", "DESCRIBE")},
    "SaslHandshake": set(),
    "ApiVersions": set(),
    "SaslAuthenticate": set(),
    "CreateTopics": {("TOPIC", "CREATE")},
    "DeleteTopics": {("TOPIC", "DELETE")},
    "DeleteRecords": {("TOPIC", "DELETE")},
    "InitProducerId": {("TRANSACTIONAL_ID", "WRITE")},
    "AddPartitionsToTxn": {("TRANSACTIONAL_ID", "WRITE"), ("TOPIC", "WRITE")},
    "AddOffsetsToTxn": {("TRANSACTIONAL_ID", "WRITE"), ("GROUP", "READ")},
    "EndTxn": {("TRANSACTIONAL_ID", "WRITE")},
    "TxnOffsetCommit": {("TRANSACTIONAL_ID", "WRITE"), ("GROUP", "READ"), ("TOPIC", "READ")},
    "DescribeAcls": {("CLUSTER", "DESCRIBE")},
    "CreateAcls": {("CLUSTER", "ALTER")},
    "DeleteAcls": {("CLUSTER", "ALTER")},
    "DescribeConfigs": {("CONFIG", "DESCRIBE_CONFIGS")},
    "AlterConfigs": {("CONFIG", "ALTER_CONFIGS")},
    "IncrementalAlterConfigs": {("CONFIG", "ALTER_CONFIGS")},
    "CreatePartitions": {("TOPIC", "ALTER")},
    "DeleteGroups": {("GROUP", "DELETE")},
    "OffsetDelete": {("GROUP", "DELETE"), ("TOPIC", "READ")},
    "DescribeUserScramCredentials": {("CLUSTER", "DESCRIBE")},
    "AlterUserScramCredentials": {("CLUSTER", "ALTER")},
    "ConsumerGroupHeartbeat": {("GROUP", "READ"), ("TOPIC", "DESCRIBE")},
    "ConsumerGroupDescribe": {("GROUP", "DESCRIBE")},
    "DescribeCluster": set(),   # Kafka asks DESCRIBE on the cluster only to report operations
    "ListConfigResources": {("CLUSTER", "DESCRIBE_CONFIGS")},
    "DescribeTopicPartitions": {("TOPIC", "DESCRIBE")},
    "DescribeProducers": {("TOPIC", "READ")},
    # each id; the described partitions of topics without DESCRIBE are left out (the handler)
    "DescribeTransactions": {("TRANSACTIONAL_ID", "DESCRIBE")},
    "ListTransactions": {("TRANSACTIONAL_ID", "DESCRIBE")},
    "WriteTxnMarkers": {("CLUSTER", "CLUSTER_ACTION")},   # or ALTER on the cluster, first
    # KIP-1071: DESCRIBE on every topic of the topology, CREATE (on the cluster or each topic)
    # for the internal topics the coordinator creates; Describe also filters by topic DESCRIBE
    "StreamsGroupHeartbeat": {("GROUP", "READ"), ("TOPIC", "DESCRIBE"), ("TOPIC", "CREATE")},
    "StreamsGroupDescribe": {("GROUP", "DESCRIBE"), ("TOPIC", "DESCRIBE")},
    "StreamsGroupTopologyDescriptionUpdate": {("GROUP", "READ")},
    # KIP-932: READ on the group, DESCRIBE on each subscribed topic; Describe: DESCRIBE on each
    # group, and on the topics its members are assigned
    "ShareGroupHeartbeat": {("GROUP", "READ"), ("TOPIC", "DESCRIBE")},
    "ShareGroupDescribe": {("GROUP", "DESCRIBE"), ("TOPIC", "DESCRIBE")},
    # READ on the group and on each topic fetched or acknowledged (KafkaApis
    # handleShareFetchRequest / handleShareAcknowledgeRequest)
    "ShareFetch": {("GROUP", "READ"), ("TOPIC", "READ")},
    "ShareAcknowledge": {("GROUP", "READ"), ("TOPIC", "READ")},
    # the offsets APIs: DESCRIBE/READ/DELETE on the group, DESCRIBE or READ on its topics
    "DescribeShareGroupOffsets": {("GROUP", "DESCRIBE"), ("TOPIC", "DESCRIBE")},
    "AlterShareGroupOffsets": {("GROUP", "READ"), ("TOPIC", "READ")},
    "DeleteShareGroupOffsets": {("GROUP", "DELETE"), ("TOPIC", "READ")},
}

# what Kafka checks that no declaration can name: StreamsGroupDescribe's topic check is on the
# topics of the described topology, not on a request field, so its handler makes it itself
# (broker/handlers/streams_group_describe.py); a test that fails once it is declared
NOT_YET = {
    "StreamsGroupDescribe": {("TOPIC", "DESCRIBE")},
    # ShareGroupHeartbeat checks its topics after the member id, as Kafka orders them
    # (broker/handlers/share_group_heartbeat.py); ShareGroupDescribe's are the assigned topics
    "ShareGroupHeartbeat": {("TOPIC", "DESCRIBE")},
    "ShareGroupDescribe": {("TOPIC", "DESCRIBE")},
}


def test_every_api_checks_kafkas_operation():
    declared = {}
    for spec in build_registry():
        declared[spec.name] = {(KIND[type(d)], d.operation.name) for d in spec.resources
                               if not isinstance(d, NotAResource)}
    assert declared.keys() == KAFKA.keys(), "a new API: add Kafka's operation here"
    wanted = {name: KAFKA[name] - NOT_YET.get(name, set()) for name in KAFKA}
    wrong = {name: (declared[name], wanted[name]) for name in KAFKA
             if declared[name] != wanted[name]}
    assert not wrong, wrong
