"""Every handler declares what its request acts on, at every version it serves.

Walks every served (API, version) request schema (kio's, or roster.protocol.classic's layouts for
the versions kio lacks): each field that names topics, groups, a transactional id or config
resources must be covered by a declaration in the spec (registry.py: Group, Groups, Topics,
ConfigResources, TransactionalId, or NotAResource with a reason), and each declaration must name
a field that exists at every version it applies to. A new handler, or a new version with a new
field, cannot forget to declare one.
"""
from __future__ import annotations

import dataclasses

import pytest

from roster.broker.handlers import build_registry
from roster.protocol import classic, newer_versions
from roster.protocol.build import element
from roster.protocol.codec import request_schema
from roster.protocol.registry import (
    AllGroups,
    Cluster,
    ConfigResources,
    Group,
    Groups,
    NotAResource,
    Topics,
    TransactionalId,
    TransactionalIds,
    applies,
)

REGISTRY = build_registry()
# field names that contain a resource word but name no resource
NOT_RESOURCES = {
    "group_instance_id",                      # a member's identity within its group
    "include_topic_authorized_operations",    # flags
    "include_cluster_authorized_operations",
    "allow_auto_topic_creation",
}


def _is_resource_field(name: str) -> bool:
    if name in NOT_RESOURCES:
        return False
    return ("topic" in name or "group" in name or name in (
        "transactional_id", "resources", "key", "coordinator_keys"))


def _kio_tree(schema) -> dict:
    tree = {}
    for name in schema.__dataclass_fields__:
        try:
            inner = element(schema, name)
        except Exception:
            inner = None
        tree[name] = _kio_tree(inner) if dataclasses.is_dataclass(inner) else None
    return tree


def _classic_tree(layout) -> dict:
    tree = {}
    for name, kind in layout:
        if isinstance(kind, classic.Array):
            kind = kind.item
        tree[name] = _classic_tree(kind) if isinstance(kind, tuple) else None
    return tree


def request_tree(api_key: int, version: int) -> dict:
    """{field: nested tree or None} of a request at one version."""
    schema = request_schema(api_key, newer_versions.kio_version(api_key, version))
    if schema is not None:
        return _kio_tree(schema)
    return _classic_tree(classic._LAYOUTS[(api_key, version)][0])


def served():
    for spec in REGISTRY:
        for version in range(spec.min_version, spec.max_version + 1):
            if not spec.is_legacy(version):
                yield pytest.param(spec, version, id=f"{spec.name}-v{version}")


def _declared(declaration) -> tuple[tuple[str, ...], set[tuple[str, ...]]]:
    """(the path of the field a declaration names, the paths it covers)."""
    if isinstance(declaration, (Cluster, AllGroups)) or (
            isinstance(declaration, TransactionalIds) and declaration.field is None):
        return (), set()
    within = getattr(declaration, "within", None)
    path = (within, declaration.field) if within else (declaration.field,)
    covered = {path}
    if isinstance(declaration, Topics):
        covered |= {path + (f,) for f in (declaration.name, declaration.topic_id) if f}
    if isinstance(declaration, Groups) and declaration.key:
        covered.add(path + (declaration.key,))
    return path, covered


def _resource_paths(tree: dict, prefix=()):
    for name, inner in tree.items():
        path = prefix + (name,)
        if _is_resource_field(name):
            yield path
        if inner:
            yield from _resource_paths(inner, path)


def _exists(tree: dict, path) -> bool:
    for name in path:
        if tree is None or name not in tree:
            return False
        tree = tree[name]
    return True


@pytest.mark.parametrize(("spec", "version"), list(served()))
def test_every_resource_field_is_declared_and_every_declaration_exists(spec, version):
    tree = request_tree(spec.key, version)
    covered = set()
    ignored = []  # NotAResource: the field and everything in it
    for declaration in spec.resources:
        if not applies(declaration, version):
            continue
        path, paths = _declared(declaration)
        assert _exists(tree, path), f"{spec.name} v{version} declares {path}, absent there"
        covered |= paths
        if isinstance(declaration, NotAResource):
            ignored.append(path)
    missing = [p for p in _resource_paths(tree) if p not in covered
               and not any(p[:len(i)] == i for i in ignored)]
    assert not missing, f"{spec.name} v{version}: undeclared resource fields {missing}"


def test_declarations_apply_within_the_served_versions():
    for spec in REGISTRY:
        for declaration in spec.resources:
            if declaration.versions is not None:
                low, high = declaration.versions
                assert spec.min_version <= low <= high <= spec.max_version, (spec.name,
                                                                             declaration)


WHOLE = (Group, Cluster, TransactionalId, AllGroups)


def test_a_request_refused_as_a_whole_has_its_own_error_answer():
    for spec in REGISTRY:
        whole = [d for d in spec.resources if isinstance(d, WHOLE)
                 or (isinstance(d, Topics) and d.whole)]
        if whole and spec.handler is not None:  # raw handlers answer with their own codec
            assert spec.refuse is not None, f"{spec.name} can be refused whole: no refuse()"


def test_only_sasl_and_api_versions_act_on_nothing():
    bare = {spec.name for spec in REGISTRY if not spec.resources}
    # DescribeCluster needs no permission in Kafka either: it reports no operations instead
    assert bare == {"SaslHandshake", "ApiVersions", "SaslAuthenticate", "DescribeCluster"}


def test_config_resources_and_not_a_resource_explain_themselves():
    for spec in REGISTRY:
        for declaration in spec.resources:
            if isinstance(declaration, NotAResource):
                assert declaration.why
            if isinstance(declaration, ConfigResources):
                assert declaration.field == "resources"
