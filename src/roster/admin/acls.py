"""`roster acls add|list|remove`: ACLs over the wire (CreateAcls, DescribeAcls, DeleteAcls), in
kafka-acls' vocabulary, so a kafka-acls command line carries over with `--add` becoming `add`:

    roster acls add --allow-principal User:alice --operation Read --topic orders --group readers
    roster acls add --allow-principal User:app --producer --topic events- \
        --resource-pattern-type prefixed
    roster acls list [--topic orders] [--principal User:alice]
    roster acls remove --allow-principal User:alice --operation Read --topic orders

It works against Apache Kafka too.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from roster.admin.client import AdminError
from roster.security.acls import (
    CLUSTER_NAME,
    PATTERN_NAMES,
    AclBinding,
    AclFilter,
    Operation,
    Pattern,
    Permission,
    Resource,
    parse_operation,
)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31


class AclsError(AdminError):
    pass


@dataclass
class AclOptions:
    """kafka-acls' options, as parsed by the CLI."""
    allow_principals: list[str]
    deny_principals: list[str]
    allow_hosts: list[str]
    deny_hosts: list[str]
    operations: list[str]
    topics: list[str]
    groups: list[str]
    cluster: bool
    transactional_ids: list[str]
    pattern: str | None
    principal: list[str]
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False


def _pattern(options: AclOptions, default: Pattern) -> Pattern:
    if options.pattern is None:
        return default
    try:
        return PATTERN_NAMES[options.pattern.lower()]
    except KeyError:
        raise AclsError(f"unknown --resource-pattern-type {options.pattern!r} (literal, "
                        "prefixed, match, any)") from None


def resources(options: AclOptions, pattern: Pattern) -> list[tuple[Resource, str, Pattern]]:
    found = [(Resource.TOPIC, t, pattern) for t in options.topics]
    found += [(Resource.GROUP, g, pattern) for g in options.groups]
    found += [(Resource.TRANSACTIONAL_ID, t, pattern) for t in options.transactional_ids]
    if options.cluster:
        found.append((Resource.CLUSTER, CLUSTER_NAME, Pattern.LITERAL
                      if pattern in (Pattern.LITERAL, Pattern.PREFIXED) else pattern))
    return found


def _entries(options: AclOptions, operations: list[Operation]):
    """(principal, host, operation, permission) for each principal, host and operation given."""
    entries = []
    for principals, hosts, permission in (
            (options.allow_principals, options.allow_hosts, Permission.ALLOW),
            (options.deny_principals, options.deny_hosts, Permission.DENY)):
        for principal, host, op in itertools.product(principals, hosts or ["*"], operations):
            entries.append((principal, host, op, permission))
    return entries


def bindings_to_add(options: AclOptions) -> list[AclBinding]:
    """What `add` creates: kafka-acls' rules, --producer and --consumer included."""
    pattern = _pattern(options, Pattern.LITERAL)
    if pattern not in (Pattern.LITERAL, Pattern.PREFIXED):
        raise AclsError("add takes --resource-pattern-type literal or prefixed")
    if not (options.allow_principals or options.deny_principals):
        raise AclsError("name at least one --allow-principal or --deny-principal")
    ops = [parse_operation(o) for o in options.operations]
    per_resource: list[tuple[tuple, list[Operation]]] = []
    if options.producer or options.consumer:
        if ops:
            raise AclsError("--producer and --consumer choose the operations; drop --operation")
        if not options.topics:
            raise AclsError("--producer and --consumer need --topic")
        if options.producer:
            per_resource += [((Resource.TOPIC, t, pattern),
                              [Operation.WRITE, Operation.DESCRIBE, Operation.CREATE])
                             for t in options.topics]
            per_resource += [((Resource.TRANSACTIONAL_ID, t, pattern),
                              [Operation.WRITE, Operation.DESCRIBE])
                             for t in options.transactional_ids]
            if options.idempotent:
                per_resource.append(((Resource.CLUSTER, CLUSTER_NAME, Pattern.LITERAL),
                                     [Operation.IDEMPOTENT_WRITE]))
        if options.consumer:
            if not options.groups:
                raise AclsError("--consumer needs --group")
            per_resource += [((Resource.TOPIC, t, pattern), [Operation.READ, Operation.DESCRIBE])
                             for t in options.topics]
            per_resource += [((Resource.GROUP, g, pattern), [Operation.READ])
                             for g in options.groups]
    else:
        found = resources(options, pattern)
        if not found:
            raise AclsError("name a resource: --topic, --group, --cluster or --transactional-id")
        per_resource = [(r, ops or [Operation.ALL]) for r in found]
    bindings = []
    for (rt, name, pat), operations in per_resource:
        for principal, host, op, permission in _entries(options, operations):
            binding = AclBinding(rt, name, pat, principal, host, op, permission)
            if binding not in bindings:
                bindings.append(binding)
    return bindings


def filters_to_remove(options: AclOptions) -> list[AclFilter]:
    pattern = _pattern(options, Pattern.LITERAL)
    found = resources(options, pattern)
    if not found:
        raise AclsError("name a resource: --topic, --group, --cluster or --transactional-id")
    ops = [parse_operation(o) for o in options.operations] or [Operation.ANY]
    entries = _entries(options, ops)
    if not entries:  # every ACL of those resources
        return [AclFilter(rt, name, pat) for rt, name, pat in found]
    return [AclFilter(rt, name, pat, principal, host, op, permission)
            for (rt, name, pat), (principal, host, op, permission)
            in itertools.product(found, entries)]


def filters_to_list(options: AclOptions) -> list[AclFilter]:
    """kafka-acls --list: every ACL without a resource; with one, its LITERAL pattern unless
    --resource-pattern-type says otherwise (match: every ACL that applies to it)."""
    pattern = _pattern(options, Pattern.LITERAL)
    found = resources(options, pattern)
    principals = options.principal or [None]
    if not found:
        return [AclFilter(principal=p) for p in principals]
    return [AclFilter(rt, name, pat, principal=p)
            for (rt, name, pat), p in itertools.product(found, principals)]


# -- the wire -----------------------------------------------------------------------------------

def _filter_fields(f: AclFilter) -> dict:
    return dict(resource_type_filter=f.resource_type, resource_name_filter=f.name,
                pattern_type_filter=f.pattern, principal_filter=f.principal,
                host_filter=f.host, operation=f.operation, permission_type=f.permission)


def _error(code, message) -> str:
    name = getattr(code, "name", str(code)).upper()
    return f"{name}: {message}" if message else name


def add(client, bindings: list[AclBinding]) -> None:
    creation = client.entry(CREATE_ACLS, "creations")
    answer = client.call(CREATE_ACLS, creations=tuple(creation(
        resource_type=b.resource_type, resource_name=b.name, resource_pattern_type=b.pattern,
        principal=b.principal, host=b.host, operation=b.operation,
        permission_type=b.permission) for b in bindings))
    failed = [f"{b}: {_error(r.error_code, r.error_message)}"
              for b, r in zip(bindings, answer.results) if r.error_code != 0]
    if failed:
        raise AclsError("not added:\n  " + "\n  ".join(failed))


def describe(client, acl_filter: AclFilter) -> list[AclBinding]:
    answer = client.call(DESCRIBE_ACLS, **_filter_fields(acl_filter))
    if answer.error_code != 0:
        raise AclsError(_error(answer.error_code, answer.error_message))
    return [AclBinding.of(r.resource_type, r.resource_name, getattr(r, "pattern_type", 3),
                          a.principal, a.host, a.operation, a.permission_type)
            for r in answer.resources for a in r.acls]


def remove(client, filters: list[AclFilter]) -> list[AclBinding]:
    answer = client.call(DELETE_ACLS, filters=tuple(
        client.entry(DELETE_ACLS, "filters")(**_filter_fields(f)) for f in filters))
    removed, failed = [], []
    for result in answer.filter_results:
        if result.error_code != 0:
            failed.append(_error(result.error_code, result.error_message))
        for m in result.matching_acls:
            binding = AclBinding.of(m.resource_type, m.resource_name, m.pattern_type,
                                    m.principal, m.host, m.operation, m.permission_type)
            if m.error_code != 0:
                failed.append(f"{binding}: {_error(m.error_code, m.error_message)}")
            elif binding not in removed:
                removed.append(binding)
    if failed:
        raise AclsError("not removed:\n  " + "\n  ".join(failed))
    return removed


def format_acls(bindings: list[AclBinding]) -> list[str]:
    """kafka-acls' --list layout: each resource pattern, then its entries."""
    grouped: dict[tuple, list[AclBinding]] = {}
    for b in sorted(bindings, key=lambda b: b.to_json()):
        grouped.setdefault((b.resource_type, b.name, b.pattern), []).append(b)
    lines = []
    for (rt, name, pattern), entries in grouped.items():
        lines.append(f"Current ACLs for resource `ResourcePattern(resourceType={rt.name}, "
                     f"name={name}, patternType={pattern.name})`: ")
        lines += [f" \t(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
                  f"permissionType={b.permission.name})" for b in entries]
        lines.append("")
    return lines
