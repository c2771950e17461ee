"""A share group's in-flight records per partition, as a roster broker's /metrics has them
(roster_share_in_flight_records{group,topic,partition,state}: observability/share_metrics.py),
for `roster groups describe GROUP --http URL`. Kafka has no such figures on the wire
(DescribeShareGroupOffsets gives the start offset and lag only), so they come from roster's
HTTP port (`roster serve --http-port`), never from a Kafka cluster."""
from __future__ import annotations

from roster.admin.client import AdminError

STATES = ("available", "acquired", "acknowledged", "archived")
FAMILY = "roster_share_in_flight_records"


class InFlightUnavailable(AdminError):
    """The URL gave no /metrics (not roster's console, not reachable, refused)."""


def parse(text: str, group_id: str) -> dict[tuple[str, int], dict[str, int]]:
    """(topic, partition) -> {state: records} of the group, from /metrics' text."""
    from prometheus_client.parser import text_string_to_metric_families
    found: dict[tuple[str, int], dict[str, int]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != FAMILY:
            continue
        for sample in family.samples:
            labels = sample.labels
            if labels.get("group") != group_id:
                continue
            key = (labels["topic"], int(labels["partition"]))
            found.setdefault(key, dict.fromkeys(STATES, 0))[labels["state"]] = int(sample.value)
    return found


def read(url: str, group_id: str, authorization: str | None = None,
         timeout_s: float = 30) -> dict[tuple[str, int], dict]:
    """The group's in-flight records from the console at `url` (http://host:port);
    `authorization`: an Authorization header's value (console_http.basic_authorization), which
    the console asks for when the broker's listeners use SASL."""
    import urllib.error
    import urllib.request
    target = url.rstrip("/") + "/metrics"
    request = urllib.request.Request(target)
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            text = answer.read().decode()
    except urllib.error.HTTPError as refused:
        why = ""
        if refused.code == 401:   # the listeners use SASL
            why = (", the credentials were refused" if authorization is not None else
                   ", credentials are required: a --command-config naming a SCRAM user")
        raise InFlightUnavailable(f"cannot read {target}: HTTP {refused.code}{why}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InFlightUnavailable(f"cannot read {target}: {exc}") from None
    return parse(text, group_id)
