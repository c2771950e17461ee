"""The broker clock over the console's HTTP port (observability/http.py ROUTE_MODULES), as
authenticated as the console is:

    POST /clock/advance   body {"seconds": 45} (JSON), or ?seconds=45
                          -> 200 {"advanced_s": 45.0, "total_advanced_s": ..., "now_ms": ...}
    GET  /clock           -> 200 {"test_mode": true, "total_advanced_s": ..., "now_ms": ...}

Outside test mode both answer 403 with the reason (broker/clock.py ClockRefused); a bad number
of seconds 400 with what was wrong. `roster clock advance SECONDS --http URL` is this route's
client (roster.cli).
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs

from roster.broker.clock import ClockRefused

JSON = {"Content-Type": "application/json"}


def _answer(status: str, document: dict):
    return status, JSON, (json.dumps(document) + "\n").encode()


def _clock_of(broker):
    try:
        return broker.clock, None
    except ClockRefused as exc:
        return None, _answer("403 Forbidden", {"error": str(exc)})


def seconds_asked(body: bytes, query: str):
    """The `seconds` of a request: the JSON body's, else the query's; ValueError if neither
    holds one."""
    if body.strip():
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise ValueError('the body is not JSON: send {"seconds": N}') from None
        if not isinstance(document, dict) or "seconds" not in document:
            raise ValueError('the body must be a JSON object with "seconds"')
        return document["seconds"]
    values = parse_qs(query).get("seconds")
    if not values:
        raise ValueError('say how far: a JSON body {"seconds": N} or ?seconds=N')
    try:
        return float(values[0])
    except ValueError:
        raise ValueError(f"seconds={values[0]!r} is not a number") from None


def advance(broker, body: bytes, query: str):
    clock, refused = _clock_of(broker)
    if refused is not None:
        return refused
    try:
        seconds = seconds_asked(body, query)
        clock.advance(seconds)   # on the loop already: the due timers fire before we answer
    except ValueError as exc:
        return _answer("400 Bad Request", {"error": str(exc)})
    return _answer("200 OK", {"advanced_s": float(seconds), "total_advanced_s": clock.advanced,
                              "now_ms": clock.now_ms()})


def show(broker, body: bytes, query: str):
    clock, refused = _clock_of(broker)
    if refused is not None:
        return refused
    return _answer("200 OK", {"test_mode": True, "total_advanced_s": clock.advanced,
                              "now_ms": clock.now_ms()})


ROUTES = {("POST", "/clock/advance"): advance, ("GET", "/clock"): show}
