"""The fault plane over the console's HTTP port (observability/http.py ROUTE_MODULES), as
authenticated as the console is (HTTP Basic of a SCRAM user when a listener uses SASL):

    POST   /faults      body: JSON {"action": NAME, ...that method's arguments}
                        -> 200 the rule armed (or the action's outcome)
    GET    /faults      -> 200 {"faults": [rules in force]}
    DELETE /faults      -> 200 {"cleared": N};  DELETE /faults?id=N -> {"removed": true|false}

NAME is a method of `broker.faults` (broker/faults/__init__.py): fail_next, delay,
drop_connection, refuse_coordinator, fail_next_commit, fail_appends, remove_member,
fence_instance, force_rebalance; e.g. {"action": "fail_next", "api": "Heartbeat",
"error": "NOT_COORDINATOR", "count": 2, "group_id": "g"}. Outside test mode every route
answers 403 saying why; a bad body, an unknown action or argument, an unknown API or error
400 with what was wrong. `roster faults ...` (roster.cli) is this route's client.
"""
from __future__ import annotations

import asyncio
import inspect
import json
from urllib.parse import parse_qs

from roster.broker.faults.control import FaultsRefused
from roster.broker.faults.rules import FaultError

JSON = {"Content-Type": "application/json"}
ACTIONS = ("fail_next", "delay", "drop_connection", "refuse_coordinator", "fail_next_commit",
           "fail_appends", "remove_member", "fence_instance", "force_rebalance")


def _answer(status: str, document) -> tuple:
    return status, JSON, (json.dumps(document) + "\n").encode()


def _faults(broker):
    try:
        return broker.faults, None
    except FaultsRefused as exc:
        return None, _answer("403 Forbidden", {"error": str(exc)})


async def arm(broker, body: bytes, query: str):
    faults, refused = _faults(broker)
    if refused is not None:
        return refused
    try:
        document = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return _answer("400 Bad Request", {"error": "the body is not JSON: send "
                                           '{"action": "fail_next", "api": ..., ...}'})
    if not isinstance(document, dict) or not isinstance(document.get("action"), str):
        return _answer("400 Bad Request", {"error": 'the body must be a JSON object with '
                                           f'"action": one of {", ".join(ACTIONS)}'})
    arguments = dict(document)
    action = arguments.pop("action")
    if action not in ACTIONS:
        return _answer("400 Bad Request", {"error": f"action {action!r}: not one of "
                                           f"{', '.join(ACTIONS)}"})
    method = getattr(faults, action)
    try:
        inspect.signature(method).bind(**arguments)
    except TypeError as exc:
        return _answer("400 Bad Request", {"error": f"{action}: {exc}"})
    try:
        outcome = method(**arguments)
        if isinstance(outcome, asyncio.Future):
            outcome = await outcome
    except FaultError as exc:
        return _answer("400 Bad Request", {"error": str(exc)})
    return _answer("200 OK", outcome)


def listed(broker, body: bytes, query: str):
    faults, refused = _faults(broker)
    if refused is not None:
        return refused
    return _answer("200 OK", {"faults": faults.list()})


def cleared(broker, body: bytes, query: str):
    faults, refused = _faults(broker)
    if refused is not None:
        return refused
    wanted = parse_qs(query).get("id")
    if wanted:
        try:
            rule_id = int(wanted[0])
        except ValueError:
            return _answer("400 Bad Request", {"error": f"id={wanted[0]!r} is not a number"})
        return _answer("200 OK", {"removed": faults.remove(rule_id)})
    return _answer("200 OK", {"cleared": faults.clear()})


ROUTES = {("POST", "/faults"): arm, ("GET", "/faults"): listed, ("DELETE", "/faults"): cleared}
