"""The broker's authorizer: Kafka's StandardAuthorizer over roster's durable ACL store.

`broker.authorizer.authorize(principal, host, operation, resource_type, name) -> bool` is what
admission (broker/network/admission.py) asks for every group, topic, cluster or transactional id a
request acts on. The decision itself is the pure `acls.decide`; around it:

- **a decision cache** per principal and client address (what a connection is to the
  authorizer: every connection of `User:alice` from 10.0.0.5 shares it), so a heartbeat pays
  one dictionary lookup, not an ACL scan. Any ACL change empties every cache, in the same
  event-loop step that makes the new set live, before the change is answered; so no decision
  is ever made from an older set than the one a client was told about. Bounded: the cache is
  emptied when it holds 200,000 decisions.
- **an audit trail** (logger `roster.authorizer`, Kafka's `kafka.authorizer.logger` lines):
  a denial at INFO, an allowance at DEBUG, each at most once a minute per principal, address,
  resource and operation (repeats within the minute are counted, not logged).

`authorizer.class.name` turns it on (Kafka's class names are accepted); without it the broker
keeps admission's ALLOW_ALL and the ACL APIs answer SECURITY_DISABLED, as Kafka without an
authorizer.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

from roster.security.acl_store import AclStore
from roster.security.acls import (
    AclBinding,
    AclFilter,
    AclIndex,
    Operation,
    Resource,
    allows_any,
    decide,
)

audit = logging.getLogger("roster.authorizer")

AUDIT_INTERVAL_S = 60.0
CACHE_LIMIT = 200_000  # decisions cached in all (some 40 MB at most)
_RESOURCE_NAMES = {Resource.TOPIC: "Topic", Resource.GROUP: "Group",
                   Resource.CLUSTER: "Cluster", Resource.TRANSACTIONAL_ID: "TransactionalId",
                   Resource.DELEGATION_TOKEN: "DelegationToken", Resource.USER: "User"}


def parse_super_users(text: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (`User:admin;User:CN=ops,O=example`,
    a DN's commas being part of it), as Kafka reads it."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())


class StandardAuthorizer:
    allows_everything = False  # admission asks

    def __init__(self, store: AclStore, super_users: Iterable[str] = (),
                 allow_if_no_acl: bool = False, clock=time.monotonic) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._clock = clock
        # (principal, host, operation, resource_type, name) -> (allowed, rule): one lookup
        # per check, whoever asks (every connection of a principal from an address shares it)
        self._cache: dict[tuple, tuple[bool, str]] = {}
        # the audit's memory, kept across ACL changes: (principal, host, operation,
        # resource_type, name, allowed) -> [when last logged, decisions since]
        self._audited: dict[tuple, list] = {}
        self._audit_allowed = audit.isEnabledFor(logging.DEBUG)

    @classmethod
    def from_config(cls, config, data_dir: Path) -> StandardAuthorizer | None:
        """The authorizer `authorizer.class.name` asks for, or None (allow everything)."""
        security = config.security
        if not security["authorizer.class.name"]:
            return None
        authorizer = cls(AclStore.open(data_dir), parse_super_users(security["super.users"]),
                         security["allow.everyone.if.no.acl.found"])
        audit.info("authorizer on: %d ACL(s), super users: %s, allow.everyone.if.no.acl.found"
                   "=%s", len(authorizer.store.index),
                   ", ".join(sorted(authorizer.super_users)) or "none",
                   str(authorizer.allow_if_no_acl).lower())
        return authorizer

    @property
    def index(self) -> AclIndex:
        return self.store.index

    # -- deciding -----------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, operation, resource_type, name: str) -> bool:
        key = (principal, host, operation, resource_type, name)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._decide(key)
        if entry[0] and not self._audit_allowed:
            return True
        self._audit(entry, principal, host, operation, resource_type, name)
        return entry[0]

    def _decide(self, key: tuple) -> tuple:
        principal, host, operation, resource_type, name = key
        decision = decide(self.store.index, principal, host, operation, resource_type,
                          name or "", self.super_users, self.allow_if_no_acl)
        if len(self._cache) >= CACHE_LIMIT:
            self.invalidate()  # bounded: start again (decisions are cheap to remake)
        entry = self._cache[key] = (decision.allowed, decision.rule)
        return entry

    def authorize_by_resource_type(self, principal: str, host: str, operation,
                                   resource_type) -> bool:
        """Kafka's authorizeByResourceType (see acls.allows_any); not cached (rare)."""
        return allows_any(self.store.index, principal, host, operation, resource_type,
                          self.super_users, self.allow_if_no_acl)

    def _audit(self, entry: tuple, principal, host, operation, resource_type, name) -> None:
        now = self._clock()
        allowed = entry[0]
        key = (principal, host, operation, resource_type, name, allowed)
        seen = self._audited.get(key)
        if seen is not None and now - seen[0] < AUDIT_INTERVAL_S:
            seen[1] += 1
            return
        repeats = 0 if seen is None else seen[1]
        if seen is None and len(self._audited) >= CACHE_LIMIT:
            self._audited = {k: v for k, v in self._audited.items()
                             if now - v[0] < AUDIT_INTERVAL_S}
            if len(self._audited) >= CACHE_LIMIT:
                self._audited.clear()
        self._audited[key] = [now, 0]
        line = ("Principal = %s is %s operation = %s from host = %s on resource = %s:LITERAL:%s"
                " based on rule %s%s")
        args = (principal, "Allowed" if allowed else "Denied", Operation(operation).name, host,
                _RESOURCE_NAMES.get(resource_type, str(resource_type)), name,
                entry[1] if isinstance(entry[1], str) else f"MatchingAcl(acl={entry[1]})",
                f" ({repeats} more since the last line)" if repeats else "")
        if allowed:
            audit.debug(line, *args)
        else:
            audit.info(line, *args)

    def invalidate(self) -> None:
        """Forget every cached decision (the ACLs changed)."""
        self._cache.clear()
        self._audit_allowed = audit.isEnabledFor(logging.DEBUG)

    # -- the ACL APIs ---------------------------------------------------------------------------

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return sorted((b for b in self.store.index if acl_filter.matches(b)),
                      key=lambda b: b.to_json())

    async def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add bindings (already validated), durably; live once written."""
        await self.store.apply_async(added=bindings)
        self.invalidate()

    async def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches, durably; per filter, what it removed (a binding
        matched by two filters is reported by both, as Kafka does)."""
        filters = list(filters)
        index = self.store.index
        matched = [sorted((b for b in index if f.matches(b)), key=lambda b: b.to_json())
                   for f in filters]
        removed = {b for found in matched for b in found}
        if removed:
            await self.store.apply_async(removed=removed)
            self.invalidate()
        return matched



def acl_authorizer(broker) -> StandardAuthorizer | None:
    """The broker's ACL authorizer, or None when `authorizer.class.name` is not set."""
    authorizer = getattr(broker, "authorizer", None)
    return authorizer if isinstance(authorizer, StandardAuthorizer) else None


NO_AUTHORIZER = "No Authorizer is configured on the broker"
