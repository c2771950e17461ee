"""ACLs and Kafka's StandardAuthorizer decision, as pure functions.

Nothing here does I/O or reads a clock: bindings and filters are values, `AclIndex` holds a set
of bindings arranged for lookups, and `decide()` answers one question (principal, host,
operation, resource) from an index, the super users and `allow.everyone.if.no.acl.found`.
The broker's authorizer (authorizer.py) adds the durable store, the decision cache and the
audit log around it.

The decision is Kafka's (StandardAuthorizerData.authorize/findAclRule/findResult, Kafka 3.x-4.x):

1. a super user (`super.users`, matched on the whole principal string) is allowed everything;
2. the ACLs whose pattern matches the resource are those of its type that are LITERAL with
   its exact name, LITERAL `*`, or PREFIXED with a prefix of its name (the name itself
   included); nothing else (a resource is never matched by a LITERAL prefix of its name);
3. of those, an ACL applies when its principal is the request's or `User:*`, its host is the
   client's address or `*`, and its operation is ALL, the operation asked, or, for an ALLOW
   ACL only, one implying it: DESCRIBE is implied by READ, WRITE, DELETE and ALTER;
   DESCRIBE_CONFIGS by ALTER_CONFIGS;
4. any applying DENY wins; else any applying ALLOW allows; else, when no ACL matched the
   resource at all (whoever it names), `allow.everyone.if.no.acl.found` decides (false:
   denied); else denied.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum

from roster.frozen import frozen
from roster.protocol.acl import AclOperation, ResourceType

# Kafka's AclOperation and ResourceType codes: one definition, shared with the admission step.
Operation = AclOperation
Resource = ResourceType


class Pattern(IntEnum):
    """Kafka's PatternType codes. MATCH and ANY appear in filters only."""
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Permission(IntEnum):
    """Kafka's AclPermissionType codes."""
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"  # a LITERAL resource name matching every name; a host matching every host
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

IMPLIES_DESCRIBE = frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE,
                              Operation.DELETE, Operation.ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS})

# kafka-acls' names (and Java's enum names) -> codes; case and '-'/'_' do not matter
OPERATION_NAMES = {op.name.replace("_", "").lower(): op for op in Operation}
RESOURCE_NAMES = {r.name.replace("_", "").lower(): r for r in Resource}
PATTERN_NAMES = {p.name.lower(): p for p in Pattern}
PERMISSION_NAMES = {p.name.lower(): p for p in Permission}


def _code(enum: type[IntEnum], value: int) -> IntEnum:
    try:
        return enum(value)
    except ValueError:
        return enum(0)  # UNKNOWN, as Kafka's fromCode


def parse_operation(text: str) -> Operation:
    try:
        return OPERATION_NAMES[text.replace("-", "").replace("_", "").lower()]
    except KeyError:
        raise ValueError(f"unknown operation {text!r} (one of "
                         f"{', '.join(_camel(o) for o in Operation if o > Operation.ANY)})"
                         ) from None


def _camel(op: Operation) -> str:
    """kafka-acls' spelling: Read, DescribeConfigs, IdempotentWrite."""
    return "".join(part.capitalize() for part in op.name.split("_"))


def operation_name(op: int) -> str:
    return _camel(_code(Operation, op))


@frozen
class AclBinding:
    """One ACL: a resource pattern and an access control entry (Kafka's AclBinding)."""
    resource_type: Resource
    name: str
    pattern: Pattern
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def of(cls, resource_type: int, name: str, pattern: int, principal: str, host: str,
           operation: int, permission: int) -> AclBinding:
        return cls(_code(Resource, resource_type), name, _code(Pattern, pattern), principal,
                   host, _code(Operation, operation), _code(Permission, permission))

    def to_json(self) -> list:
        return [int(self.resource_type), self.name, int(self.pattern), self.principal,
                self.host, int(self.operation), int(self.permission)]

    @classmethod
    def from_json(cls, data: list) -> AclBinding:
        return cls.of(*data)

    def __str__(self) -> str:  # as kafka-acls prints an entry
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission.name}) "
                f"on {self.resource_type.name}:{self.pattern.name}:{self.name}")


def validate_new(binding: AclBinding) -> str | None:
    """Why Kafka refuses to create `binding` (INVALID_REQUEST), or None: KafkaApis' and
    AclControlManager.validateNewAcl's checks."""
    if binding.pattern not in (Pattern.LITERAL, Pattern.PREFIXED):
        return f"Invalid patternType {binding.pattern.name}"
    if binding.resource_type in (Resource.UNKNOWN, Resource.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.operation in (Operation.UNKNOWN, Operation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {binding.permission.name}"
    if not binding.name:
        return "Resource name should not be empty"
    if binding.resource_type is Resource.CLUSTER and binding.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if ":" not in binding.principal:
        return (f"Could not parse principal from `{binding.principal}` (no colon is present "
                "separating the principal type from the principal name)")
    return None


@frozen
class AclFilter:
    """Kafka's AclBindingFilter: what DescribeAcls lists and DeleteAcls removes. None (names,
    principal, host) and ANY match anything; pattern MATCH matches the patterns that would
    apply to a resource of that name (LITERAL equal or `*`, PREFIXED a prefix of it)."""
    resource_type: Resource = Resource.ANY
    name: str | None = None
    pattern: Pattern = Pattern.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    @classmethod
    def of(cls, resource_type: int, name: str | None, pattern: int, principal: str | None,
           host: str | None, operation: int, permission: int) -> AclFilter:
        return cls(_code(Resource, resource_type), name, _code(Pattern, pattern), principal,
                   host, _code(Operation, operation), _code(Permission, permission))

    def unknown(self) -> str | None:
        """Kafka refuses a filter with an UNKNOWN element (INVALID_REQUEST)."""
        for value in (self.resource_type, self.pattern, self.operation, self.permission):
            if value == 0:
                return f"Filter contains an UNKNOWN {type(value).__name__.lower()}"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type is not Resource.ANY and self.resource_type is not b.resource_type:
            return False
        pattern = self.pattern
        if pattern not in (Pattern.ANY, Pattern.MATCH) and pattern is not b.pattern:
            return False
        name = self.name
        if name is not None:
            if pattern is Pattern.ANY or pattern is b.pattern:
                if name != b.name:
                    return False
            elif b.pattern is Pattern.LITERAL:  # MATCH
                if name != b.name and b.name != WILDCARD:
                    return False
            elif not name.startswith(b.name):  # MATCH, PREFIXED
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation is not Operation.ANY and self.operation is not b.operation:
            return False
        return self.permission is Permission.ANY or self.permission is b.permission


# -- the decision ---------------------------------------------------------------------------

ALLOWED_BY_SUPER_USER = "SuperUser"
DEFAULT_ALLOW = "DefaultAllow"
DEFAULT_DENY = "DefaultDeny"


@frozen
class Decision:
    allowed: bool
    # SuperUser, DefaultAllow, DefaultDeny, or the deciding ACL (for the audit log)
    rule: str | AclBinding

    @property
    def rule_text(self) -> str:
        """The rule as Kafka's audit line names it."""
        return self.rule if isinstance(self.rule, str) else f"MatchingAcl(acl={self.rule})"


class AclIndex:
    """A set of bindings, arranged so a decision looks at only the ACLs that can match:
    per resource type, LITERAL by name (`*` among them) and PREFIXED by prefix. Immutable
    once built; a change builds a new one (`with_changes`)."""

    __slots__ = ("bindings", "_literal", "_prefixed", "_prefix_lengths")

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.bindings: frozenset[AclBinding] = frozenset(bindings)
        # per resource type (as a plain int): name -> ACLs, prefix -> ACLs, prefix lengths
        literal: dict[int, dict[str, list[AclBinding]]] = {}
        prefixed: dict[int, dict[str, list[AclBinding]]] = {}
        for b in self.bindings:
            if b.pattern is Pattern.LITERAL:
                literal.setdefault(int(b.resource_type), {}).setdefault(b.name, []).append(b)
            elif b.pattern is Pattern.PREFIXED:
                prefixed.setdefault(int(b.resource_type), {}).setdefault(b.name, []).append(b)
        self._literal = {rt: {n: tuple(v) for n, v in names.items()}
                         for rt, names in literal.items()}
        self._prefixed = {rt: {n: tuple(v) for n, v in names.items()}
                          for rt, names in prefixed.items()}
        self._prefix_lengths = {rt: tuple(sorted({len(n) for n in names}))
                                for rt, names in prefixed.items()}

    def __len__(self) -> int:
        return len(self.bindings)

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(self.bindings)

    def with_changes(self, added: Iterable[AclBinding] = (),
                     removed: Iterable[AclBinding] = ()) -> AclIndex:
        return AclIndex((self.bindings - frozenset(removed)) | frozenset(added))

    def matching(self, resource_type: int, name: str) -> list[AclBinding]:
        """The ACLs whose pattern matches the resource (step 2 above)."""
        found: list[AclBinding] = []
        rt = int(resource_type)
        literal = self._literal.get(rt)
        if literal:
            found += literal.get(name, ())
            if name != WILDCARD:
                found += literal.get(WILDCARD, ())
        prefixed = self._prefixed.get(rt)
        if prefixed:
            size = len(name)
            for n in self._prefix_lengths[rt]:
                if n > size:
                    break
                acls = prefixed.get(name[:n])
                if acls:
                    found += acls
        return found

    def has_type(self, resource_type: int) -> bool:
        return any(b.resource_type == resource_type for b in self.bindings)


def applies(b: AclBinding, principal: str, host: str, operation: int) -> bool:
    """Step 3 above, for an ACL whose pattern matches (Kafka's findResult)."""
    if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
        return False
    if b.host != WILDCARD and b.host != host:
        return False
    op = b.operation
    if op is Operation.ALL or op == operation:
        return True
    if b.permission is Permission.ALLOW:
        if operation == Operation.DESCRIBE:
            return op in IMPLIES_DESCRIBE
        if operation == Operation.DESCRIBE_CONFIGS:
            return op in IMPLIES_DESCRIBE_CONFIGS
    return False


def decide(index: AclIndex, principal: str, host: str, operation: int, resource_type: int,
           name: str, super_users: frozenset[str] = frozenset(),
           allow_if_no_acl: bool = False) -> Decision:
    """Kafka's StandardAuthorizer decision for one action (see the module docstring)."""
    if principal in super_users:
        return Decision(True, ALLOWED_BY_SUPER_USER)
    matched = False
    allow = None
    for b in index.matching(resource_type, name):
        matched = True
        if applies(b, principal, host, operation):
            if b.permission is Permission.DENY:
                return Decision(False, b)
            allow = b
    if allow is not None:
        return Decision(True, allow)
    if not matched:
        return Decision(allow_if_no_acl, DEFAULT_ALLOW if allow_if_no_acl else DEFAULT_DENY)
    return Decision(False, DEFAULT_DENY)


def allows_any(index: AclIndex, principal: str, host: str, operation: int, resource_type: int,
               super_users: frozenset[str] = frozenset(), allow_if_no_acl: bool = False) -> bool:
    """Kafka's Authorizer.authorizeByResourceType: may the principal do `operation` on at
    least one resource of the type? True when an applying ALLOW (LITERAL or PREFIXED) is not
    cancelled by an applying DENY of the same or a wider pattern (a LITERAL `*` DENY, a DENY
    on the same literal name, or a PREFIXED DENY on a prefix of it); operations match exactly
    or by ALL, without implications, as Kafka's default implementation. (Used by
    InitProducerId: a producer allowed to WRITE some topic may be idempotent without
    IDEMPOTENT_WRITE, KIP-679.)"""
    # a made-up name first, as Kafka's default authorizeByResourceType: super users, and
    # allow.everyone.if.no.acl.found when nothing matches
    if decide(index, principal, host, operation, resource_type, "hardcode", super_users,
              allow_if_no_acl).allowed:
        return True
    denies_literal, denies_prefixed, allows = set(), [], []
    for b in index:
        if b.resource_type != resource_type:
            continue
        if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
            continue
        if b.host != WILDCARD and b.host != host:
            continue
        if b.operation is not Operation.ALL and b.operation != operation:
            continue
        if b.permission is Permission.DENY:
            if b.pattern is Pattern.LITERAL:
                if b.name == WILDCARD:
                    return False
                denies_literal.add(b.name)
            else:
                denies_prefixed.append(b.name)
        else:
            allows.append(b)
    for b in allows:
        if any(b.name.startswith(p) for p in denies_prefixed):
            continue
        if b.pattern is Pattern.LITERAL and b.name in denies_literal:
            continue
        return True
    return False
