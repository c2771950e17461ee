"""Admission: what happens to every request once it is decoded and before its handler runs.

A handler's ApiSpec declares what the request acts on (protocol/registry.py: Group, Groups,
AllGroups, Topics, ConfigResources, Cluster, TransactionalId) and with which Kafka operation.
`admit` reads those declarations, once, in Kafka's order:

1. the API's own request-level check (spec.validate), made before anything else;
2. authorize: `broker.authorizer.authorize(principal, host, operation, resource_type, name)`,
   the principal being `connection.principal` (security/): the cluster, a transactional id or
   the group a request acts on as a whole (refused as a whole), then each group, topic or
   config resource of a request that names several (refused one by one);
3. resolve: each topic entry by name or by id (unknown: UNKNOWN_TOPIC_OR_PARTITION or
   UNKNOWN_TOPIC_ID, entry by entry);
4. route: a group request goes to the group's coordinator, which answers
   COORDINATOR_LOAD_IN_PROGRESS while the group's __consumer_offsets partition is replayed.
   roster is one broker, so NOT_COORDINATOR never applies; `_route` is where it would.

A request refused as a whole is answered by its spec's `refuse(request, error)` builder, in the
API's own shape. Otherwise the handler runs with `request.admission`: per-element refusals
(`group(group_id)`, `topic(index)`, `resource(index)`) and `allows(...)` for listings that
filter ("every topic", ListGroups). A request that declares nothing per element gets the
shared ADMITTED value: on the hot path admission costs a dictionary lookup and a few calls.

The raw handlers (Heartbeat, Produce) decode themselves; they call `admit_group` and
`admit_topics` here, so each check still lives in one place.
"""
from __future__ import annotations

from roster.protocol.acl import CLUSTER_NAME, AclOperation, ResourceType
from roster.protocol.errors import ErrorCode
from roster.protocol.registry import (
    AllGroups,
    Cluster,
    ConfigResources,
    Group,
    Groups,
    Topics,
    TransactionalId,
)

NONE = ErrorCode.none
_REFUSED = {ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
            ResourceType.GROUP: ErrorCode.group_authorization_failed,
            ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
            ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed}
# DescribeConfigs' ConfigResource.Type -> the ACL resource it is authorized on
_CONFIG_TYPES = {2: ResourceType.TOPIC, 4: ResourceType.CLUSTER, 32: ResourceType.GROUP}


class AllowAll:
    """The authorizer until ACLs exist: everything is allowed. `allows_everything` lets
    admission skip the calls altogether."""

    allows_everything = True

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        return True


ALLOW_ALL = AllowAll()


# One topic entry's admission: (Topic or None, error); a plain tuple, made per entry
Resolved = tuple


class Admission:
    """What admission found for a request the handler serves."""

    __slots__ = ("_authorizer", "_principal", "_host", "_groups", "_topics", "_nested",
                 "_resources", "_all")

    def __init__(self, authorizer=None, principal: str = "", host: str = "") -> None:
        self._authorizer = authorizer  # None: everything is allowed (see _authorizer)
        self._principal = principal
        self._host = host
        self._groups: dict[str, ErrorCode] | None = None
        self._topics: list[Resolved] | None = None
        self._nested: list[list[Resolved] | None] | None = None
        self._resources: list[ErrorCode] | None = None
        self._all: tuple[tuple[AclOperation, ResourceType], ...] = ()  # allowed outright

    def group(self, group_id: str) -> ErrorCode:
        """A group of a request that names several: its refusal, or NONE."""
        groups = self._groups
        return NONE if groups is None else groups.get(group_id, NONE)

    def split_groups(self, group_ids) -> tuple[list[tuple[str, ErrorCode]], list[str]]:
        """The groups of a request that names several, as Kafka's KafkaApis splits them before
        the coordinator answers the rest: (each refused one with its refusal, the admitted
        ones), both in the order asked."""
        refused, admitted = [], []
        for group_id in group_ids:
            error = self.group(group_id)
            if error:
                refused.append((group_id, error))
            else:
                admitted.append(group_id)
        return refused, admitted

    def topic(self, index: int, within: int | None = None) -> Resolved:
        """The topic entry at `index` (of the entry `within`, for nested lists)."""
        if within is None:
            return self._topics[index]
        return self._nested[within][index]

    def resource(self, index: int) -> ErrorCode:
        """The config resource at `index`: its refusal, or NONE."""
        return NONE if self._resources is None else self._resources[index]

    def allows(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """For listings that filter what may not be seen (Metadata's and OffsetFetch's every
        topic, ListGroups)."""
        if self._authorizer is None or (operation, resource_type) in self._all:
            return True
        return self._authorizer.authorize(self._principal, self._host, operation,
                                          resource_type, name)

    def describes_all(self, topic_names) -> bool:
        """For the describe APIs that answer a group whole or not at all (ConsumerGroupDescribe
        and ShareGroupDescribe on the topics assigned, StreamsGroupDescribe on its topology's:
        Kafka's KAFKA-18813 and KAFKA-18819): whether the caller may DESCRIBE every topic named."""
        return all(self.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
                   for name in topic_names)


ADMITTED = Admission()  # nothing refused, nothing resolved: shared
# What Kafka's ConsumerGroupDescribe and ShareGroupDescribe say of a group refused that way
UNAUTHORIZED_GROUP_TOPICS = ("The group has described topic(s) that the client is not "
                             "authorized to describe.")


def _authorizer(broker):
    """The authorizer to ask, or None when everything is allowed (no authorizer configured:
    Broker.authorizer is None, or one whose `allows_everything` is true). Not through the
    broker's __dict__: reading an instance's __dict__ makes CPython 3.11 keep its attributes
    in a dict from then on, and every attribute read of the broker slower."""
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None or getattr(authorizer, "allows_everything", False):
        return None
    return authorizer


def _allowed(authorizer, connection, operation, resource_type, name) -> bool:
    return authorizer is None or authorizer.authorize(
        connection.principal, connection.ip, operation, resource_type, name)


def _may_be_idempotent(authorizer, connection) -> bool:
    """InitProducerId without a transactional id, as Kafka 3.0+ (KIP-679): IDEMPOTENT_WRITE on
    the cluster, or WRITE on at least one topic (the authorizer's authorizeByResourceType)."""
    if _allowed(authorizer, connection, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                CLUSTER_NAME):
        return True
    by_type = getattr(authorizer, "authorize_by_resource_type", None)
    return by_type is not None and by_type(connection.principal, connection.ip,
                                           AclOperation.WRITE, ResourceType.TOPIC)


def _route(broker, group_id: str) -> ErrorCode:
    """Where a group's requests go: NONE when this broker can serve it now. (One broker
    coordinates every group, so NOT_COORDINATOR is never the answer.)"""
    if broker.groups.loading(group_id):
        return ErrorCode.coordinator_load_in_progress
    return NONE


# -- the raw handlers' entry points -----------------------------------------------------------

def admit_group(broker, connection, declaration: Group, group_id: str) -> ErrorCode | None:
    """A raw handler's one group: None when admitted, else the error to answer with. (Every
    heartbeat comes here: _authorizer is inlined.)"""
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is not None and not getattr(authorizer, "allows_everything", False) \
            and not _allowed(authorizer, connection, declaration.operation,
                             ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed
    if not group_id and not declaration.allow_empty:
        return ErrorCode.invalid_group_id
    if broker.groups.loading(group_id) and declaration.route:
        return declaration.while_loading
    return None


def admit_topic_names(broker, connection, declaration: Topics, names) -> ErrorCode | None:
    """A raw handler's topics named by a request refused as a whole (`declaration.whole`):
    None when the declared operation is allowed on every one, else
    TOPIC_AUTHORIZATION_FAILED."""
    authorizer = _authorizer(broker)
    if authorizer is None or all(
            _allowed(authorizer, connection, declaration.operation, ResourceType.TOPIC, name)
            for name in names):
        return None
    return ErrorCode.topic_authorization_failed


def resolve_topic(broker, name: str | None, topic_id) -> Resolved:
    """A topic entry by name, or by id when the name is null."""
    if name is None:
        topic = broker.topics.by_id(topic_id)
        return (topic, NONE) if topic is not None else (None, ErrorCode.unknown_topic_id)
    topic = broker.topics.get(name)
    return (topic, NONE) if topic is not None else (None, ErrorCode.unknown_topic_or_partition)


def partition_error(resolved: Resolved, index: int) -> ErrorCode:
    """One requested partition of an admitted topic entry: the entry's refusal, else
    UNKNOWN_TOPIC_OR_PARTITION beyond the topic's partition count, else NONE."""
    topic, error = resolved
    if topic is None:
        return error
    return NONE if 0 <= index < len(topic.partitions) else ErrorCode.unknown_topic_or_partition


def resolve_again(broker, declaration: Topics, entry, admitted: Resolved) -> Resolved:
    """An admitted topic entry looked up again (a long poll's later pass: the topic may have
    been deleted or re-created since); an authorization refusal stands for the request."""
    if admitted[1] is ErrorCode.topic_authorization_failed:
        return admitted
    return resolve_topic(broker, getattr(entry, declaration.name, None),
                         getattr(entry, declaration.topic_id, None))


def may_create_topic(broker, connection, name: str) -> bool:
    """Creating a topic a request named (auto-creation): CREATE on the cluster, or on the
    topic, as Kafka's."""
    authorizer = _authorizer(broker)
    return authorizer is None or _allowed(
        authorizer, connection, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) \
        or _allowed(authorizer, connection, AclOperation.CREATE, ResourceType.TOPIC, name)


def admit_transactional_id(broker, connection, declaration: TransactionalId,
                           transactional_id: str | None) -> ErrorCode | None:
    """A raw handler's transactional id: None when admitted, else the error."""
    authorizer = _authorizer(broker)
    if authorizer is None or transactional_id is None:
        return None
    if not _allowed(authorizer, connection, declaration.operation,
                    ResourceType.TRANSACTIONAL_ID, transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    return None


def admit_topics(broker, connection, declaration: Topics, entries) -> list[Resolved]:
    """Each topic entry's admission, in order (raw handlers call this; `admit` too)."""
    return _topics(broker, connection, _authorizer(broker), declaration, entries)


def _topics(broker, connection, authorizer, declaration: Topics, entries) -> list[Resolved]:
    if authorizer is None:  # resolution only
        if not declaration.resolve:
            return [(None, NONE)] * len(entries)
        name_field, id_field = declaration.name, declaration.topic_id
        if name_field is None:
            return [resolve_topic(broker, name, None) for name in entries]
        return [resolve_topic(broker, name, None) if (name := getattr(entry, name_field, None))
                is not None or id_field is None
                else resolve_topic(broker, None, getattr(entry, id_field, None))
                for entry in entries]
    if authorizer is not None and declaration.cluster_allows and _allowed(
            authorizer, connection, declaration.operation, ResourceType.CLUSTER, CLUSTER_NAME):
        authorizer = None
    name_field, id_field = declaration.name, declaration.topic_id
    resolved = []
    for entry in entries:
        name = entry if name_field is None else getattr(entry, name_field, None)
        if name is None and id_field is not None:
            found = resolve_topic(broker, None, getattr(entry, id_field, None))
            if found[0] is not None and authorizer is not None and not _allowed(
                    authorizer, connection, declaration.operation, ResourceType.TOPIC,
                    found[0].name):
                found = (None, ErrorCode.topic_authorization_failed)
        elif authorizer is not None and not _allowed(authorizer, connection,
                                                     declaration.operation,
                                                     ResourceType.TOPIC, name):
            found = (None, ErrorCode.topic_authorization_failed)
        elif declaration.resolve:
            found = resolve_topic(broker, name, None)
        else:
            found = (None, NONE)
        resolved.append(found)
    return resolved


# -- the dispatcher's -------------------------------------------------------------------------

def admit(broker, connection, spec, request):
    """Admit a decoded request: None when the handler is to run (request.admission is set),
    otherwise the body refusing it as a whole."""
    if spec.validate is not None:
        error = spec.validate(request)
        if error is not None:
            object.__setattr__(request, "admission", ADMITTED)
            return spec.refuse(request, error)
    declarations = spec.admitting[request.api_version]
    if not declarations:
        object.__setattr__(request, "admission", ADMITTED)
        return None
    body = request.body
    authorizer = _authorizer(broker)
    admission = ADMITTED
    routed = None  # the one group the request goes to, once everything else is admitted
    refused = None
    for declaration in declarations:
        kind = type(declaration)
        if kind is Group:
            group_id = getattr(body, declaration.field)
            if authorizer is not None and not _allowed(authorizer, connection,
                                                       declaration.operation,
                                                       ResourceType.GROUP, group_id):
                refused = ErrorCode.group_authorization_failed
            elif not declaration.allow_empty and not group_id:
                refused = ErrorCode.invalid_group_id
            elif declaration.route:
                routed = (declaration, group_id)
        elif kind is Cluster:
            if authorizer is not None and not any(
                    _allowed(authorizer, connection, operation, ResourceType.CLUSTER,
                             CLUSTER_NAME)
                    for operation in (declaration.or_operation, declaration.operation)
                    if operation is not None):
                refused = ErrorCode.cluster_authorization_failed
        elif kind is TransactionalId:
            transactional_id = getattr(body, declaration.field, None)
            if authorizer is None:
                pass
            elif transactional_id is not None:
                if not _allowed(authorizer, connection, declaration.operation,
                                ResourceType.TRANSACTIONAL_ID, transactional_id):
                    refused = ErrorCode.transactional_id_authorization_failed
            elif declaration.idempotent and not _may_be_idempotent(authorizer, connection):
                refused = ErrorCode.cluster_authorization_failed
        elif kind is AllGroups:
            if not broker.groups.loaded:
                refused = ErrorCode.coordinator_load_in_progress
            elif authorizer is not None:
                admission = _own(admission, authorizer, connection)
                if _allowed(authorizer, connection, declaration.operation,
                            ResourceType.CLUSTER, CLUSTER_NAME):
                    admission._all += ((declaration.operation, ResourceType.GROUP),)
        else:
            admission = _own(admission, authorizer, connection)
            if kind is Groups:
                _admit_groups(broker, connection, authorizer, declaration, body, admission)
            elif kind is Topics:
                refused = _admit_topic_lists(broker, connection, authorizer, declaration, body,
                                             admission)
            elif kind is ConfigResources:
                admission._resources = [
                    _config_refusal(authorizer, connection, declaration.operation, r)
                    for r in getattr(body, declaration.field)]
        if refused is not None:
            break
    object.__setattr__(request, "admission", admission)
    if refused is None and routed is not None:
        declaration, group_id = routed
        if _route(broker, group_id) is not NONE:
            refused = declaration.while_loading
    if refused is None:
        return None
    return spec.refuse(request, refused)


def _config_refusal(authorizer, connection, operation, resource) -> ErrorCode:
    """A config resource: a topic, the broker (authorized on the cluster) or a group. A type
    roster does not know is left to the handler (INVALID_REQUEST)."""
    kind = _CONFIG_TYPES.get(resource.resource_type)
    if authorizer is None or kind is None:
        return NONE
    name = CLUSTER_NAME if kind is ResourceType.CLUSTER else resource.resource_name
    if _allowed(authorizer, connection, operation, kind, name):
        return NONE
    return _REFUSED[kind]


def _own(admission: Admission, authorizer, connection) -> Admission:
    if admission is not ADMITTED:
        return admission
    return Admission(authorizer, connection.principal, connection.ip)


def _admit_groups(broker, connection, authorizer, declaration: Groups, body, admission) -> None:
    groups = admission._groups
    if groups is None:
        groups = admission._groups = {}
    key = declaration.key
    for entry in getattr(body, declaration.field):
        group_id = entry if key is None else getattr(entry, key)
        if group_id in groups:
            continue
        if authorizer is not None and not _allowed(authorizer, connection,
                                                   declaration.operation,
                                                   ResourceType.GROUP, group_id):
            groups[group_id] = ErrorCode.group_authorization_failed
        elif declaration.route:
            error = _route(broker, group_id)
            if error is not NONE:
                groups[group_id] = error


def _admit_topic_lists(broker, connection, authorizer, declaration: Topics, body, admission):
    """Fill the admission's topics; the error refusing the whole request, or None."""
    if declaration.within is None:
        entries = getattr(body, declaration.field)
        if entries is None:  # every topic: the handler filters with allows()
            return None
        resolved = _topics(broker, connection, authorizer, declaration, entries)
        if declaration.whole:
            if any(r[1] is ErrorCode.topic_authorization_failed for r in resolved):
                return ErrorCode.topic_authorization_failed
            return None
        admission._topics = resolved
        return None
    nested = []
    for outer in getattr(body, declaration.within):
        entries = getattr(outer, declaration.field)
        nested.append(None if entries is None
                      else _topics(broker, connection, authorizer, declaration, entries))
    admission._nested = nested
    return None


def topic_describer(broker, connection):
    """may_describe(topic name) for this connection's principal, or None when it may describe
    every topic (no authorizer to ask): for answers that list only what it may see."""
    authorizer = _authorizer(broker)
    if authorizer is None:
        return None
    return lambda name: _allowed(authorizer, connection, AclOperation.DESCRIBE,
                                 ResourceType.TOPIC, name)


def admission_for(broker, connection) -> Admission:
    """An Admission that asks the broker's authorizer about this connection's principal, for
    answers that report what it may do (authorized operations)."""
    return _own(ADMITTED, _authorizer(broker), connection)
