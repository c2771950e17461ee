"""The API registry: each handler module declares the versions it serves, and ApiVersions is
generated from these declarations so the advertised ranges can never drift from the code.

A spec also declares what its request acts on (`resources`: a group, several groups, topics by
name or id, config resources, the cluster, a transactional id) and with which Kafka operation.
The dispatcher's admission step (broker/network/admission.py) reads these declarations: it resolves the
topics, routes group requests (COORDINATOR_LOAD_IN_PROGRESS while a group's partition loads) and
asks the authorizer, once, before the handler runs. A request refused as a whole is answered by
the spec's `refuse(request, error) -> body` (Kafka's AbstractRequest.getErrorResponse); what is
refused element by element reaches the handler as `request.admission`.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import field
from typing import Any

from roster.frozen import frozen
from roster.protocol.acl import AclOperation
from roster.protocol.errors import ErrorCode

# handler(broker, request, connection) -> response body, or None when no response is sent
Handler = Callable[..., Awaitable[Any]]
# legacy(frame, prefix) -> encoded response frame, for advertised versions kio has no schema for
LegacyAnswer = Callable[..., bytes]
# raw(broker, frame, prefix, connection) -> the encoded response frame, or an awaitable for it
# when the answer has to wait (a coroutine, or broker/network/resume.py's AnswerWhenDone): a
# handler with its own codec, run without a coroutine of its own
RawHandler = Callable[..., bytes | Awaitable[bytes]]
# refuse(request, error) -> the response body refusing the whole request with `error`
Refuse = Callable[[Any, ErrorCode], Any]
Versions = tuple[int, int] | None  # (lowest, highest) request version a declaration applies to

LOADING = ErrorCode.coordinator_load_in_progress


class _Generic:
    def __repr__(self) -> str:
        return "GENERIC"


# What a raw handler returns for a request its own codec does not read (a shape it leaves to
# kio: JoinGroup's and SyncGroup's fast paths read only the common one): the dispatcher then
# decodes it with kio, admits it and runs the spec's `handler`, as for any other API.
GENERIC = _Generic()


# -- what a request acts on -----------------------------------------------------------------

@frozen
class Group:
    """One group id, `field`: the request acts on that group as a whole and is refused as a
    whole (spec.refuse): GROUP_AUTHORIZATION_FAILED; INVALID_GROUP_ID for an empty id unless
    `allow_empty`; and, routed to the group's coordinator, `while_loading` while its
    partition is replayed (ErrorCode.none: answered as if accepted, without running the
    handler, as Kafka's classic coordinator answers heartbeats). `route=False`: the request
    names a group without going to its coordinator (FindCoordinator)."""
    operation: AclOperation
    field: str = "group_id"
    versions: Versions = None
    while_loading: ErrorCode = LOADING
    allow_empty: bool = True
    route: bool = True


@frozen
class Groups:
    """Several groups, answered one by one: `field` lists group ids, or entries whose `key`
    names one. Each refusal (GROUP_AUTHORIZATION_FAILED, COORDINATOR_LOAD_IN_PROGRESS) reaches
    the handler as request.admission.group(group_id)."""
    operation: AclOperation
    field: str
    key: str | None = None
    versions: Versions = None
    route: bool = True


@frozen
class AllGroups:
    """Every group (ListGroups): refused as a whole while any group loads; the operation on
    the cluster allows them all, else each group is filtered with admission.allows()."""
    operation: AclOperation
    versions: Versions = None


@frozen
class Topics:
    """Topic entries in `field` (nested in each entry of `within`, when given), named by
    `name`, or by `topic_id` where the name is null; `name=None`: the entries are names.
    Resolved and authorized entry by entry: request.admission.topic(index[, within index]) is
    (Topic or None, error): TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID, or, by name,
    UNKNOWN_TOPIC_OR_PARTITION (the handler may still create it). `resolve=False`: authorized
    only (CreateTopics). `whole=True`: one unauthorized topic refuses the request.
    `cluster_allows`: the operation on the cluster allows it on every topic. A null list
    means every topic: the handler filters with admission.allows()."""
    operation: AclOperation
    field: str = "topics"
    name: str | None = "name"
    topic_id: str | None = "topic_id"
    versions: Versions = None
    within: str | None = None
    resolve: bool = True
    whole: bool = False
    cluster_allows: bool = False  # the operation on the cluster allows it on every topic


@frozen
class ConfigResources:
    """Config resources (resource_type, resource_name): a topic, the broker (authorized on the
    cluster) or a group; request.admission.resource(index) is the per-entry refusal."""
    operation: AclOperation
    field: str = "resources"
    versions: Versions = None


@frozen
class Cluster:
    """The cluster: refused as a whole with CLUSTER_AUTHORIZATION_FAILED; `or_operation`, when
    given, allows it too (Kafka's WriteTxnMarkers: ALTER, else CLUSTER_ACTION)."""
    operation: AclOperation
    versions: Versions = None
    or_operation: AclOperation | None = None


@frozen
class TransactionalId:
    """A producer's transactional id: the operation on it, refused as a whole with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; when null and `idempotent`, IDEMPOTENT_WRITE on the
    cluster instead (CLUSTER_AUTHORIZATION_FAILED), as Kafka's InitProducerId."""
    operation: AclOperation
    field: str = "transactional_id"
    versions: Versions = None
    idempotent: bool = False


@frozen
class TransactionalIds:
    """Transactional ids listed in `field` (DescribeTransactions), or, with `field=None`, every
    id the coordinator knows (ListTransactions). Kafka checks each one: a described id not
    allowed is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a listed one is left out; the
    handler asks request.admission.allows() per id."""
    operation: AclOperation
    field: str | None = None
    versions: Versions = None


@frozen
class CoordinatorKeys:
    """FindCoordinator's key(s) in `field`: a group id (the operation on the GROUP) or a
    transactional id (on the TRANSACTIONAL_ID) as the request's key type says. Only the
    handler reads the key type, so it asks the authorizer itself; admission skips this."""
    operation: AclOperation
    field: str
    versions: Versions = None


@frozen
class NotAResource:
    """A field that names topics or groups but is not checked, and why (the declaration test
    requires every such field to be declared one way or the other)."""
    field: str
    why: str
    versions: Versions = None
    within: str | None = None


Resource = Group | Groups | AllGroups | Topics | ConfigResources | Cluster | TransactionalId \
    | TransactionalIds | CoordinatorKeys | NotAResource


def applies(declaration, version: int) -> bool:
    versions = declaration.versions
    return versions is None or versions[0] <= version <= versions[1]


@frozen
class ApiSpec:
    key: int
    name: str
    min_version: int   # advertised minimum
    max_version: int   # advertised maximum
    handler: Handler | None
    # Versions in [min_version, decoded_from) are advertised only so that clients' feature checks
    # pass (librdkafka's); they are answered by `legacy` without a kio decode.
    decoded_from: int | None = None
    legacy: LegacyAnswer | None = None
    # Set instead of `handler` for the hottest APIs, which decode and encode by hand (kio's
    # generic path would cost them more than their own work); set beside it when the raw
    # handler may hand a request back (GENERIC).
    raw: RawHandler | None = None
    # What the request acts on (see above), and the answer refusing it as a whole.
    resources: tuple[Resource, ...] = ()
    refuse: Refuse | None = None
    # validate(request) -> an error refusing the request before admission (Kafka's request-level
    # checks in KafkaApis, made before authorization), or None
    validate: Callable[[Any], ErrorCode | None] | None = None
    # the declarations that apply at each version (from `resources`)
    admitting: dict[int, tuple[Resource, ...]] = field(default=None, init=False, repr=False,
                                                       compare=False)
    # the versions served, and those of them decoded (not `legacy`): ranges, so that the
    # dispatcher tests a request's version without a method call
    versions: range = field(default=None, init=False, repr=False, compare=False)
    decoded: range = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "versions", range(self.min_version, self.max_version + 1))
        object.__setattr__(self, "decoded", range(
            self.min_version if self.decoded_from is None else self.decoded_from,
            self.max_version + 1))
        object.__setattr__(self, "admitting", {
            version: tuple(r for r in self.resources if applies(r, version)
                           and not isinstance(r, (NotAResource, CoordinatorKeys)))
            for version in range(self.min_version, self.max_version + 1)})

    def supports(self, version: int) -> bool:
        return version in self.versions

    def is_legacy(self, version: int) -> bool:
        return self.decoded_from is not None and version < self.decoded_from


class Registry:
    def __init__(self) -> None:
        self._specs: dict[int, ApiSpec] = {}

    def add(self, spec: ApiSpec) -> ApiSpec:
        if spec.key in self._specs:
            raise ValueError(f"api key {spec.key} registered twice")
        if spec.min_version > spec.max_version:
            raise ValueError(f"{spec.name}: empty version range")
        self._specs[spec.key] = spec
        return spec

    def get(self, api_key: int) -> ApiSpec | None:
        return self._specs.get(api_key)

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(sorted(self._specs.values(), key=lambda s: s.key))

    def version_ranges(self) -> list[tuple[int, int, int]]:
        return [(s.key, s.min_version, s.max_version) for s in self]
