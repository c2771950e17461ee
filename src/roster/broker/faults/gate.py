"""The one place on the request path that consults the fault table.

broker/network/connection.py asks `broker.armed_faults` (None unless test mode is on and a
rule is in force: a class attribute, one load per request) before a request is dispatched:
after the SASL screen and the version check, before legacy, raw (Heartbeat, Produce) and
decoded handlers alike, so no handler knows about faults. A request of an API no rule names
costs one set lookup more; only a request some rule could match is looked at further (its
client id from the header, and its body decoded only when a rule is scoped by group or
member).
"""
from __future__ import annotations

import asyncio

from roster.broker.faults.answers import error_answer
from roster.broker.faults.rules import DELAY, DROP, FaultTable
from roster.broker.network.admission import admit
from roster.protocol.api_keys import ApiKey
from roster.protocol.codec import decode_request, encode_response, request_schema
from roster.protocol.errors import MalformedRequest

PASS = object()   # no rule applies: serve the request as usual


def client_id_of(frame) -> str | None:
    """The request header's client id (a nullable int16-length string after the api key,
    version and correlation id)."""
    if len(frame) < 10:
        return None
    size = int.from_bytes(frame[8:10], "big", signed=True)
    if size < 0:
        return None
    return bytes(frame[10:10 + size]).decode("utf-8", "replace")


def named_groups(body) -> tuple[str, ...]:
    """The group ids a request names: group_id, FindCoordinator's key(s), DescribeGroups'
    and DeleteGroups' lists, OffsetFetch's groups."""
    found = []
    group_id = getattr(body, "group_id", None)
    if isinstance(group_id, str):
        found.append(group_id)
    if getattr(body, "key_type", 0) == 0:
        key = getattr(body, "key", None)
        if isinstance(key, str):
            found.append(key)
        found += [k for k in getattr(body, "coordinator_keys", ()) or () if isinstance(k, str)]
    for name in ("groups", "groups_names"):
        for entry in getattr(body, name, ()) or ():
            found.append(entry if isinstance(entry, str) else getattr(entry, "group_id", ""))
    return tuple(found)


class FaultGate:
    """What the request path holds while rules are in force: the table, and what to do with a
    request a rule matched. `record(rule, detail)` tells the flight recorder."""

    def __init__(self, table: FaultTable, record, now, emptied) -> None:
        self.table = table
        self._record = record
        self._now = now
        self._emptied = emptied   # the last rule is gone: the request path is disarmed

    @property
    def keys(self) -> frozenset[int]:
        return self.table.keys

    def intercept(self, connection, spec, frame, prefix):
        """The answer to a request some rule may apply to: PASS when none does, else the
        encoded error answer, None (a dropped connection, or acks=0), or an awaitable (a
        delayed answer)."""
        table = self.table
        api_key = prefix.api_key
        client_id = client_id_of(frame)
        request = None
        group_ids, member_id = (), None
        if api_key in table.scoped_keys and not spec.is_legacy(prefix.api_version):
            try:
                request = decode_request(frame, prefix)
            except MalformedRequest:
                return PASS   # the handler refuses it as it would
            group_ids = named_groups(request.body)
            member_id = getattr(request.body, "member_id", None)
        rule = table.match(api_key, client_id, group_ids, member_id, self._now())
        if not table.rules:
            self._emptied()
        if rule is None:
            return PASS
        detail = {"api": _api_name(api_key), "api_version": prefix.api_version,
                  "client_id": client_id, "peer": connection.peer}
        if group_ids:
            detail["group_ids"] = list(group_ids)
        if rule.kind == DROP:
            self._record(rule, {**detail, "outcome": "connection dropped"})
            connection.drop()
            return None
        if rule.kind == DELAY:
            self._record(rule, {**detail, "outcome": f"answer delayed {rule.delay_ms} ms"})
            return self._delayed(connection, spec, frame, prefix, rule.delay_ms / 1000)
        if spec.is_legacy(prefix.api_version) \
                or request_schema(api_key, prefix.api_version) is None:
            # an old (or newest) version kio has no schema for: no error answer is built for
            # it, so it is served as usual (delays and drops apply to it all the same)
            self._record(rule, {**detail, "outcome": "version without a schema: served"})
            return PASS
        if request is None:
            try:
                request = decode_request(frame, prefix)
            except MalformedRequest:
                return PASS
        if api_key == ApiKey.PRODUCE and getattr(request.body, "acks", 1) == 0:
            self._record(rule, {**detail, "outcome": "acks=0: dropped unanswered"})
            return None   # acks=0: no answer, as for any produce of that kind
        # admitted as usual first (authorized, topics resolved): an answer the broker refuses
        # for real stays its own, and an API's refuse() finds request.admission as always
        body = admit(connection.broker, connection, spec, request)
        if body is None:
            body = error_answer(spec, request, rule.error)
            self._record(rule, {**detail, "outcome": f"answered {rule.error.name.upper()}"})
        else:
            self._record(rule, {**detail, "outcome": "refused by admission before the fault"})
        return encode_response(api_key, prefix.api_version, prefix.correlation_id, body)

    async def _delayed(self, connection, spec, frame, prefix, seconds: float):
        await asyncio.sleep(seconds)
        answer = connection.dispatch(spec, frame, prefix)
        if answer is None or isinstance(answer, bytes):
            return answer
        return await answer


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)
