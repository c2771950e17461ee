"""DescribeCluster (60), v0-2: the cluster id, this broker (also the controller clients are told
of) and, when asked, the cluster's authorized operations (what admin clients'
describe_cluster(include_authorized_operations=True) shows). As in Kafka, the request needs no
permission; a principal that may not DESCRIBE the cluster is told of no operations. Asked for
controllers (endpoint type 2), a broker answers MISMATCHED_ENDPOINT_TYPE, as Kafka's brokers do."""
from __future__ import annotations

from roster.broker.network.authorized_operations import NOT_REQUESTED, requested
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import element, make
from roster.protocol.codec import response_schema
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import ApiSpec

API_KEY = ApiKey.DESCRIBE_CLUSTER
BROKERS = 1


async def handle(broker, request, connection):
    body = request.body
    schema = response_schema(API_KEY, request.api_version)
    endpoint_type = getattr(body, "endpoint_type", BROKERS)
    if endpoint_type != BROKERS:
        return make(schema, error_code=ErrorCode.mismatched_endpoint_type,
                    error_message="The request was sent to an endpoint of type BROKER, but we "
                                  f"wanted an endpoint of type {endpoint_type}",
                    endpoint_type=endpoint_type, cluster_id="", controller_id=-1, brokers=(),
                    cluster_authorized_operations=NOT_REQUESTED)
    operations = requested(broker, connection, body.include_cluster_authorized_operations)
    endpoint = getattr(connection, "endpoint", None) or broker.endpoint
    brokers = (make(element(schema, "brokers"), broker_id=endpoint.node_id, host=endpoint.host,
                    port=endpoint.port, rack=None, is_fenced=False),)
    return make(schema, error_code=ErrorCode.none, error_message=None,
                endpoint_type=BROKERS, cluster_id=broker.cluster_id,
                controller_id=endpoint.node_id, brokers=brokers,
                cluster_authorized_operations=NOT_REQUESTED if operations is None
                else operations.of_cluster())


SPEC = ApiSpec(API_KEY, "DescribeCluster", 0, 2, handle)
