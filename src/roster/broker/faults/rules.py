"""The fault table: which requests a test-mode broker answers wrongly on purpose, and how.

Pure: no asyncio, no sockets, no clock of its own (`now` is passed in, in seconds of the
event loop's monotonic clock). The one place on the request path that consults it is
broker/faults/gate.py; broker/faults/__init__.py (`broker.faults`) fills it.

A rule names the APIs it applies to and, optionally, a client id, group id or member id the
request must carry. Rules are tried in the order they were added; the first that matches a
request acts on it, and counts one use. A rule with a count is gone after that many uses; one
with a deadline (refuse_coordinator) once it has passed; the others stay until cleared.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from roster.protocol.errors import ErrorCode

# what a rule does to a request it matches
FAIL = "fail"            # answer with `error`, in the API's own answer shape
DELAY = "delay"          # serve it, but answer `delay_ms` later
DROP = "drop"            # close the connection without answering
REFUSE_COORDINATOR = "refuse_coordinator"   # FAIL, on every group API, until a deadline
KINDS = (FAIL, DELAY, DROP, REFUSE_COORDINATOR)


class FaultError(ValueError):
    """A fault that cannot be injected (an unknown API or error, a bad count or delay); the
    message says which argument and why."""


@dataclass(slots=True)
class Rule:
    id: int
    kind: str
    api_keys: frozenset[int]
    api_names: tuple[str, ...]          # as Kafka names them, for list() and the recorder
    error: ErrorCode | None = None
    remaining: int | None = None        # uses left; None: until cleared (or `until`)
    delay_ms: int = 0
    client_id: str | None = None
    group_id: str | None = None
    member_id: str | None = None
    until: float | None = None          # a deadline on the loop's clock (REFUSE_COORDINATOR)
    fired: int = 0

    @property
    def scoped(self) -> bool:
        """Whether matching needs the request's body (its group or member id)."""
        return self.group_id is not None or self.member_id is not None

    def matches(self, api_key: int, client_id: str | None, group_ids, member_id) -> bool:
        """`group_ids`: the group ids the request names (a tuple), `member_id` its member id;
        both only looked at when the rule is scoped by them."""
        if api_key not in self.api_keys:
            return False
        if self.client_id is not None and client_id != self.client_id:
            return False
        if self.group_id is not None and self.group_id not in group_ids:
            return False
        return self.member_id is None or member_id == self.member_id

    def describe(self, now: float | None = None) -> dict:
        """The rule as plain data (JSON for the HTTP port, the CLI and the flight recorder);
        `now`: the loop's clock, to say how long a deadline has left."""
        data = {"id": self.id, "kind": self.kind, "apis": list(self.api_names)}
        if self.error is not None:
            data["error"] = self.error.name.upper()
            data["error_code"] = int(self.error)
        if self.kind == DELAY:
            data["delay_ms"] = self.delay_ms
        for name in ("client_id", "group_id", "member_id"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        data["remaining"] = self.remaining
        if self.until is not None and now is not None:
            data["seconds_left"] = round(max(self.until - now, 0.0), 3)
        data["fired"] = self.fired
        return data


@dataclass(slots=True)
class FaultTable:
    """The rules in force. `keys` holds every API key some rule applies to, so the request
    path asks one set membership of a request before anything else."""

    rules: list[Rule] = field(default_factory=list)
    keys: frozenset[int] = frozenset()
    scoped_keys: frozenset[int] = frozenset()   # APIs some rule matches by group or member
    _next_id: int = 1

    def new_id(self) -> int:
        """An id no rule of this table has had (rules kept elsewhere share the numbering)."""
        self._next_id += 1
        return self._next_id - 1

    def add(self, rule_fields: dict) -> Rule:
        rule = Rule(id=self.new_id(), **rule_fields)
        self.rules.append(rule)
        self._reindex()
        return rule

    def remove(self, rule_id: int) -> Rule | None:
        for rule in self.rules:
            if rule.id == rule_id:
                self.rules.remove(rule)
                self._reindex()
                return rule
        return None

    def clear(self) -> list[Rule]:
        cleared, self.rules = self.rules, []
        self._reindex()
        return cleared

    def expire(self, now: float) -> list[Rule]:
        """Drop the rules whose deadline has passed; returns them."""
        gone = [r for r in self.rules if r.until is not None and r.until <= now]
        if gone:
            self.rules = [r for r in self.rules if r not in gone]
            self._reindex()
        return gone

    def match(self, api_key: int, client_id: str | None, group_ids=(), member_id=None,
              now: float = 0.0) -> Rule | None:
        """The first rule in force for this request, counted as used once (and dropped when
        that was its last use); None when no rule applies."""
        for rule in self.rules:
            if rule.until is not None and rule.until <= now:
                self.expire(now)   # over: gone from the table, and from `keys`
                return self.match(api_key, client_id, group_ids, member_id, now)
            if rule.matches(api_key, client_id, group_ids, member_id):
                rule.fired += 1
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self.rules.remove(rule)
                        self._reindex()
                return rule
        return None

    def _reindex(self) -> None:
        self.keys = frozenset(k for r in self.rules for k in r.api_keys)
        self.scoped_keys = frozenset(k for r in self.rules if r.scoped for k in r.api_keys)
