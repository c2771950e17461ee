"""`broker.faults`: the methods a test calls (see the package docstring for what each does).

This is the edge: it checks arguments, fills the pure fault table (rules.py), arms the request
path (broker.armed_faults, read by broker/network/connection.py) and the append path
(broker.append_faults, read by broker/partitions/appends.py) while rules are in force, runs
the coordinator actions on the group runtime, and tells the flight recorder.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import time

from roster.broker.faults.gate import FaultGate
from roster.broker.faults.rules import (
    DELAY,
    DROP,
    FAIL,
    REFUSE_COORDINATOR,
    FaultError,
    FaultTable,
)
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode

log = logging.getLogger("roster.faults")

# the flight recorder's key for a fault that names no group
FAULTS_KEY = "roster.faults"
# the group coordinator's requests: what refuse_coordinator answers wrongly
COORDINATOR_APIS = (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.LEAVE_GROUP,
                    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.TXN_OFFSET_COMMIT,
                    ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE,
                    ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
                    ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE,
                    ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE)
COORDINATOR_ERRORS = (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress,
                      ErrorCode.coordinator_not_available)
MAX_DELAY_MS = 10 * 60 * 1000
WAIT_S = 60.0   # how long a call from another thread waits for the broker's loop

TEST_MODE_HINT = ("start the broker in test mode: roster serve --test-mode, or the setting "
                  "roster.test.mode=true")


class FaultsRefused(RuntimeError):
    """Fault injection was asked of a broker not in test mode."""


def refused(what: str = "broker.faults") -> FaultsRefused:
    return FaultsRefused(f"{what}: fault injection exists only in test mode; {TEST_MODE_HINT}")


def api_key_of(broker, api) -> int:
    """An API by key, by Kafka's name (OffsetCommit) or by enum name (OFFSET_COMMIT), served
    by this broker; FaultError otherwise."""
    if isinstance(api, bool):
        raise FaultError(f"api={api!r}: expected an API key or name")
    if isinstance(api, int):
        key = int(api)
    elif isinstance(api, str) and api.strip().lstrip("-").isdigit():
        key = int(api.strip())
    elif isinstance(api, str):
        wanted = api.strip().replace("_", "").replace("-", "").lower()
        key = next((spec.key for spec in broker.registry
                    if spec.name.lower() == wanted
                    or _enum_name(spec.key).replace("_", "").lower() == wanted), None)
        if key is None:
            raise FaultError(f"api={api!r}: no such API on this broker (Kafka's names, e.g. "
                             "OffsetCommit, Heartbeat, Produce, or their keys)")
    else:
        raise FaultError(f"api={api!r}: expected an API key or name")
    if broker.registry.get(key) is None:
        raise FaultError(f"api={api!r}: this broker serves no API with key {key}")
    return key


def _enum_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


def error_of(error) -> ErrorCode:
    """An error by ErrorCode, code or name (NOT_COORDINATOR, any case); FaultError otherwise.
    NONE is refused: it is no fault."""
    if isinstance(error, ErrorCode):
        code = error
    elif isinstance(error, int) and not isinstance(error, bool):
        try:
            code = ErrorCode(error)
        except ValueError:
            raise FaultError(f"error={error!r}: no Kafka error has this code") from None
    elif isinstance(error, str):
        text = error.strip()
        try:
            code = ErrorCode(int(text)) if text.lstrip("-").isdigit() \
                else ErrorCode[text.lower()]
        except (KeyError, ValueError):
            raise FaultError(f"error={error!r}: not a Kafka error name or code (e.g. "
                             "NOT_COORDINATOR, REQUEST_TIMED_OUT, 16)") from None
    else:
        raise FaultError(f"error={error!r}: expected a Kafka error name or code")
    if code is ErrorCode.none:
        raise FaultError("error=NONE: not an error")
    return code


def _count(count, name: str = "count", allow_none: bool = True) -> int | None:
    if count is None and allow_none:
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise FaultError(f"{name}={count!r}: expected a whole number of requests, at least 1"
                         + (" (or None: until cleared)" if allow_none else ""))
    return count


def _text(value, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise FaultError(f"{name}={value!r}: expected a string")


class Faults:
    """The fault-injection control plane of one test-mode broker (package docstring)."""

    def __init__(self, broker) -> None:
        self._broker = broker
        self.table = FaultTable()
        self._gate = FaultGate(self.table, self._fired, self._now, self._rearm)
        self._appends: list[dict] = []   # fail_appends: {"id", "topic", "remaining"}
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the broker serves on (Broker.start)."""
        self._loop = loop

    def _here(self) -> bool:
        """Whether the caller runs on the broker's loop (or the broker runs on none yet)."""
        if self._loop is None or self._loop.is_closed():
            return True
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    # -- request faults -------------------------------------------------------------------

    def fail_next(self, api, error, count: int | None = 1, client_id: str | None = None,
                  group_id: str | None = None, member_id: str | None = None) -> dict:
        key = api_key_of(self._broker, api)
        return self._add(dict(kind=FAIL, api_keys=frozenset({key}),
                              api_names=(_enum_name(key),), error=error_of(error),
                              remaining=_count(count), client_id=_text(client_id, "client_id"),
                              group_id=_text(group_id, "group_id"),
                              member_id=_text(member_id, "member_id")))

    def delay(self, api, ms, count: int | None = None, client_id: str | None = None,
              group_id: str | None = None, member_id: str | None = None) -> dict:
        key = api_key_of(self._broker, api)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) \
                or not 0 <= ms <= MAX_DELAY_MS:
            raise FaultError(f"ms={ms!r}: expected milliseconds from 0 to {MAX_DELAY_MS}")
        return self._add(dict(kind=DELAY, api_keys=frozenset({key}),
                              api_names=(_enum_name(key),), delay_ms=int(ms),
                              remaining=_count(count), client_id=_text(client_id, "client_id"),
                              group_id=_text(group_id, "group_id"),
                              member_id=_text(member_id, "member_id")))

    def drop_connection(self, api, count: int | None = 1, client_id: str | None = None,
                        group_id: str | None = None, member_id: str | None = None) -> dict:
        key = api_key_of(self._broker, api)
        return self._add(dict(kind=DROP, api_keys=frozenset({key}),
                              api_names=(_enum_name(key),), remaining=_count(count),
                              client_id=_text(client_id, "client_id"),
                              group_id=_text(group_id, "group_id"),
                              member_id=_text(member_id, "member_id")))

    def refuse_coordinator(self, seconds, error="NOT_COORDINATOR",
                           group_id: str | None = None) -> dict:
        code = error_of(error)
        if code not in COORDINATOR_ERRORS:
            raise FaultError(f"error={error!r}: a coordinator refuses with NOT_COORDINATOR, "
                             "COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE")
        if seconds is not None and (isinstance(seconds, bool)
                                    or not isinstance(seconds, (int, float))
                                    or not math.isfinite(seconds) or seconds <= 0):
            raise FaultError(f"seconds={seconds!r}: expected a positive number of seconds "
                             "(or None: until cleared)")
        keys = frozenset(k for k in COORDINATOR_APIS if self._broker.registry.get(k))
        return self._add(dict(kind=REFUSE_COORDINATOR, api_keys=keys,
                              api_names=tuple(_enum_name(k) for k in sorted(keys)), error=code,
                              until=None if seconds is None else self._now() + seconds,
                              group_id=_text(group_id, "group_id")))

    def fail_next_commit(self, group, count: int = 1, error="NOT_COORDINATOR") -> dict:
        if not isinstance(group, str) or not group:
            raise FaultError(f"group={group!r}: expected a group id")
        return self.fail_next(ApiKey.OFFSET_COMMIT, error, _count(count, allow_none=False),
                              group_id=group)

    # -- storage --------------------------------------------------------------------------

    def fail_appends(self, count: int = 1, topic: str | None = None) -> dict:
        count = _count(count, allow_none=False)
        topic = _text(topic, "topic")
        return self._on_loop(lambda: self._arm_appends(count, topic))

    def _arm_appends(self, count: int, topic: str | None) -> dict:
        rule = {"id": self.table.new_id(), "kind": "fail_appends", "topic": topic,
                "remaining": count, "fired": 0}
        self._appends.append(rule)
        self._broker.append_faults = self
        self._record(None, {"action": "armed", "fault": dict(rule)})
        return dict(rule)

    def append_fails(self, topic: str) -> bool:
        """Whether this append (to `topic`) is to fail (broker/partitions/appends.py)."""
        for rule in self._appends:
            if (rule["topic"] is None and topic != _events_topic()) or rule["topic"] == topic:
                rule["remaining"] -= 1
                rule["fired"] += 1
                if rule["remaining"] <= 0:
                    self._appends.remove(rule)
                    if not self._appends:
                        self._broker.append_faults = None
                self._record(None, {"action": "fired", "fault": dict(rule), "topic": topic,
                                    "outcome": "append failed as on a full disk"})
                return True
        return False

    # -- coordinator actions --------------------------------------------------------------

    def remove_member(self, group: str, member_id: str | None = None,
                      instance_id: str | None = None):
        from roster.broker.faults.coordinator import remove_member
        if not isinstance(group, str) or not group:
            raise FaultError(f"group={group!r}: expected a group id")
        if (member_id is None) == (instance_id is None):
            raise FaultError("remove_member: give member_id or instance_id (one of them)")
        return self._action(group, "remove_member",
                            {"member_id": _text(member_id, "member_id"),
                             "instance_id": _text(instance_id, "instance_id")},
                            lambda: remove_member(self._broker, group, member_id, instance_id))

    def fence_instance(self, group: str, instance_id: str):
        from roster.broker.faults.coordinator import fence_instance
        if not isinstance(group, str) or not group:
            raise FaultError(f"group={group!r}: expected a group id")
        if not isinstance(instance_id, str) or not instance_id:
            raise FaultError(f"instance_id={instance_id!r}: expected a group.instance.id")
        return self._action(group, "fence_instance", {"instance_id": instance_id},
                            lambda: fence_instance(self._broker, group, instance_id))

    def force_rebalance(self, group: str):
        from roster.broker.faults.coordinator import force_rebalance
        if not isinstance(group, str) or not group:
            raise FaultError(f"group={group!r}: expected a group id")
        return self._action(group, "force_rebalance", {},
                            lambda: force_rebalance(self._broker, group))

    # -- the table ------------------------------------------------------------------------

    def list(self) -> list[dict]:
        return self._on_loop(self._list)

    def _list(self) -> list[dict]:
        self._expire()
        return [r.describe(self._now()) for r in self.table.rules] + [dict(r) for r in self._appends]

    def remove(self, rule_id: int) -> bool:
        return self._on_loop(lambda: self._remove(rule_id))

    def _remove(self, rule_id: int) -> bool:
        rule = self.table.remove(rule_id)
        if rule is not None:
            self._record(rule.group_id, {"action": "removed", "fault": rule.describe()})
            self._rearm()
            return True
        for entry in self._appends:
            if entry["id"] == rule_id:
                self._appends.remove(entry)
                self._rearm()
                self._record(None, {"action": "removed", "fault": dict(entry)})
                return True
        return False

    def clear(self) -> int:
        return self._on_loop(self._clear)

    def _clear(self) -> int:
        cleared = self.table.clear()
        count = len(cleared) + len(self._appends)
        self._appends.clear()
        self._rearm()
        if count:
            self._record(None, {"action": "cleared", "rules": count})
        return count

    # -- the machinery --------------------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic()

    def _add(self, fields: dict) -> dict:
        return self._on_loop(lambda: self._arm(fields))

    def _arm(self, fields: dict) -> dict:
        self._expire()
        rule = self.table.add(fields)
        self._rearm()
        described = rule.describe(self._now())
        self._record(rule.group_id, {"action": "armed", "fault": described})
        log.info("fault armed: %s", described)
        return described

    def _expire(self) -> None:
        if self.table.expire(self._now()):
            self._rearm()

    def _rearm(self) -> None:
        self._broker.armed_faults = self._gate if self.table.rules else None
        self._broker.append_faults = self if self._appends else None

    def _fired(self, rule, detail: dict) -> None:
        self._record(rule.group_id or (detail.get("group_ids") or [None])[0],
                     {"action": "fired", "fault": rule.describe(), **detail})

    def _record(self, group_id: str | None, extra: dict) -> None:
        """One flight recorder event (kind "fault")."""
        from roster.broker.faults.recording import fault_event
        event = fault_event(group_id or FAULTS_KEY, self._broker.now_ms(), extra)
        on_events = self._broker.groups.on_events
        if on_events is not None:
            on_events([event])

    def _on_loop(self, call):
        """Run `call` on the broker's loop: at once when already there (or before the broker
        runs), else on it, waiting for the outcome."""
        loop = self._loop
        if self._here():
            return call()
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(call())
            except BaseException as exc:   # handed to the caller's thread
                done.set_exception(exc)
        loop.call_soon_threadsafe(run)
        return done.result(WAIT_S)

    def _action(self, group: str, name: str, args: dict, start):
        """A coordinator action: recorded, then run on the loop. On the loop: an asyncio
        future of its outcome; from another thread: the outcome."""
        def begin():
            self._record(group, {"action": name, **{k: v for k, v in args.items()
                                                    if v is not None}})
            return asyncio.ensure_future(start())
        loop = self._loop
        if self._here():
            return begin()
        outcome = asyncio.run_coroutine_threadsafe(_awaited(begin), loop)
        return outcome.result(WAIT_S)


async def _awaited(begin):
    return await begin()


def _events_topic() -> str:
    from roster.observability.event_log import EVENTS_TOPIC
    return EVENTS_TOPIC
