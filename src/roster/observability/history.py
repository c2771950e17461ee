"""`roster groups history GROUP [--since WHEN] [--follow]`: the flight recorder's events for one
group, read back from `__roster_group_events` with ListOffsets and Fetch (any Kafka client could
do the same), printed as a timeline of generations. Reading starts at the offset of the first
event at or after --since (default: the last 7 days), so months of kept events cost nothing."""
from __future__ import annotations

import datetime
import re
import time
from collections.abc import Iterator

from roster.admin.client import AdminClient, AdminError
from roster.admin.offsets import EARLIEST, LATEST, log_offsets
from roster.admin.topics import metadata
from roster.observability import events as ev
from roster.observability.event_log import EVENTS_TOPIC
from roster.observability.events import GroupEvent
from roster.protocol.api_keys import ApiKey
from roster.protocol.build import make
from roster.protocol.errors import ErrorCode
from roster.protocol.partitioning import partition_for
from roster.record_codec import MemoryRecords

FETCH_BYTES = 1 << 20

WHY = {
    ev.MEMBER_JOINED: "member joined",
    ev.STATIC_MEMBER_JOINED: "static member joined",
    ev.MEMBER_LEFT: "member left",
    ev.SESSION_EXPIRED: "session expired",
    ev.REBALANCE_TIMEOUT: "rebalance timeout",
    ev.STATIC_MEMBER_REPLACED: "static member replaced",
    ev.LEADER_REJOIN: "leader rejoined",
    ev.SUBSCRIPTION_CHANGED: "subscription changed",
    ev.METADATA_CHANGED: "topic metadata changed",
    ev.ADMIN_REMOVAL: "removed by an admin",
    ev.GROUP_DELETED: "group deleted",
    ev.STATIC_REJOIN: "static member rejoined in time",
    ev.STATIC_LEAVE: "static member left, to come back (epoch -2)",
    ev.TOPOLOGY_CHANGED: "topology changed",
    ev.MEMBER_CHANGED: "member's metadata changed",
    ev.OTHER: "other",
}


def moves_text(moved) -> str:
    """A generation's moves in words: partitions handed from one member to another (with the
    longest time one had no owner), assigned for the first time, and left without an owner.
    A streams group's moves are tasks (Moved.role set), counted as such."""
    handed = [m for m in moved if m.handed_over]
    noun = "task" if any(m.role for m in moved) else "partition"
    gaps = [m.unowned_ms for m in handed if m.unowned_ms is not None]
    counts = [(len(handed), "changed owner" + (
                  f" (without an owner up to {max(gaps)} ms)" if gaps else "")),
              (sum(m.before is None and m.after is not None for m in moved),
               "assigned for the first time"),
              (sum(m.after is None for m in moved), "left without an owner")]
    return "; ".join(f"{n} {noun}{'s' if n != 1 else ''} {what}" for n, what in counts if n)


def later_causes_text(count: int) -> str:
    """triggers_after, in words: causes that arrived while the rebalance was under way were
    handled by it, without a rebalance of their own."""
    changes = "1 more change" if count == 1 else f"{count} more changes"
    return (f"also covers {changes} (such as another member joining or leaving) that "
            "arrived while it was under way")


def _topic(client: AdminClient):
    """The events topic, or None on a roster that has recorded no event yet (the topic is made
    with the first)."""
    answer = metadata(client, [EVENTS_TOPIC])
    topic = answer.topics[0]
    if topic.error_code.value or not topic.partitions:
        from roster.admin.not_roster import HISTORY, NotRoster, is_roster
        if not is_roster(client):
            raise NotRoster(HISTORY)
        if topic.error_code is ErrorCode.unknown_topic_or_partition:
            return None
        raise AdminError(f"{EVENTS_TOPIC} is not there (error {topic.error_code.name.upper()}); "
                         "is the broker a roster with the flight recorder?")
    return topic


def _fetch(client: AdminClient, topic, partition: int, offset: int, wait_ms: int):
    entry = client.entry(ApiKey.FETCH, "topics")
    part = client.entry(ApiKey.FETCH, "topics", "partitions")
    answer = client.call(
        ApiKey.FETCH, replica_id=-1, max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=1, max_bytes=FETCH_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
        rack_id="", forgotten_topics_data=(), topics=(make(
            entry, topic=EVENTS_TOPIC, topic_id=topic.topic_id, partitions=(make(
                part, partition=partition, fetch_offset=offset, log_start_offset=-1,
                current_leader_epoch=-1, last_fetched_epoch=-1,
                partition_max_bytes=FETCH_BYTES),)),))
    data = answer.responses[0].partitions[0]
    if data.error_code.value:
        raise AdminError(f"cannot read {EVENTS_TOPIC}-{partition}: "
                         f"{data.error_code.name.upper()}")
    return data.high_watermark, data.records or b""


def events(client: AdminClient, group_id: str, since_ms: int | None = None,
           follow: bool = False, wait_ms: int = 1000,
           timeout_s: float | None = None) -> Iterator[GroupEvent]:
    """The group's events recorded at or after since_ms (None: every event the topic still
    keeps), in the order they were recorded. Reading starts at the offset ListOffsets gives for
    that time (the broker's time index), not at the start of the topic, and goes one bounded
    Fetch (FETCH_BYTES) at a time. Without follow it ends at the log end as it was when it
    began; with follow it waits for more (each Fetch long-polls for up to wait_ms), for at most
    timeout_s if given."""
    until = None if timeout_s is None else time.monotonic() + timeout_s
    topic = _topic(client)
    while topic is None:   # no event on this broker yet
        if not follow or (until is not None and time.monotonic() >= until):
            return
        time.sleep(wait_ms / 1000)   # following: look again, as a long-polled Fetch would wait
        topic = _topic(client)
    partition = partition_for(group_id, len(topic.partitions))
    offset = _offset_at(client, partition, EARLIEST if since_ms is None else since_ms)
    end = None if follow else _offset_at(client, partition, LATEST)
    while end is None or offset < end:
        high, raw = _fetch(client, topic, partition, offset, wait_ms if follow else 0)
        records = MemoryRecords(raw)
        progressed = False
        while (batch := records.next_batch()) is not None:
            for record in batch:
                if record.offset < offset:
                    continue
                offset = record.offset + 1
                progressed = True
                if record.key is None or bytes(record.key).decode() != group_id:
                    continue
                try:
                    event = GroupEvent.from_json(bytes(record.value))
                except (ValueError, TypeError, KeyError):
                    continue   # not an event this roster can read (a newer one's, damaged)
                # events are appended once their records are durable, so a neighbour may be a
                # few milliseconds older than the time the lookup started from
                if since_ms is None or event.at_ms >= since_ms:
                    yield event
        if not progressed and not follow:
            return   # nothing readable before the end
        if until is not None and time.monotonic() >= until:
            return


def _offset_at(client: AdminClient, partition: int, timestamp: int) -> int:
    """ListOffsets for the group's partition: the first offset at or after a time (the log end
    when nothing is that recent), or EARLIEST/LATEST."""
    offsets = log_offsets(client, {EVENTS_TOPIC: [partition]}, timestamp)
    offset = offsets.get((EVENTS_TOPIC, partition), -1)
    if offset < 0 and timestamp >= 0:
        offset = log_offsets(client, {EVENTS_TOPIC: [partition]}, LATEST).get(
            (EVENTS_TOPIC, partition), -1)
    if offset < 0:
        raise AdminError(f"cannot find where to read {EVENTS_TOPIC}-{partition} from")
    return offset


_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_SPAN = re.compile(r"([0-9]+)([smhdwSMHDW])")   # ASCII digits: str.isdigit() accepts '²'


def parse_since(text: str, now_ms: int) -> int | None:
    """`--since`: a span back from now (90s, 30m, 2h, 7d, 2w), a time in ISO 8601 (UTC unless
    it names a zone: 2026-11-01, 2026-11-01T08:30, 2026-11-01T08:30+01:00), or "all" (None:
    every event the topic keeps). Returns epoch milliseconds."""
    text = text.strip()
    if text.lower() == "all":
        return None
    span = _SPAN.fullmatch(text)
    if span:
        # a span reaching before 1970 means every event; ListOffsets reads a negative time as
        # one of its special values (-1 latest, -2 earliest) or refuses it
        return max(0, now_ms - int(span[1]) * _UNITS_MS[span[2].lower()])
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise AdminError(f"--since {text!r}: give a span back from now (30m, 2h, 7d), a time "
                         "(2026-11-01T08:30, UTC unless a zone is given) or 'all'") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0, int(when.timestamp() * 1000))


def _when(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3]


def _who(trigger) -> str:
    parts = []
    if trigger.member_id:
        parts.append(trigger.member_id)
    if trigger.instance_id:
        parts.append(f"instance {trigger.instance_id}")
    text = " (".join(parts) + (")" if len(parts) == 2 else "")
    return text


def format_event(event: GroupEvent) -> list[str]:
    """A few lines per event: the headline, then what changed."""
    t = event.trigger
    who = _who(t)
    why = WHY.get(t.kind, t.kind) + (f": {who}" if who else "")
    if event.kind == ev.SAVED:
        lines = [f"{_when(event.at_ms)}  saved      gen {event.generation:<4} "
                 f"no rebalance: {WHY[ev.STATIC_REJOIN]}: {t.instance_id} is now {t.member_id} "
                 f"(fenced {t.fenced_id})"]
    elif event.kind == ev.AWAY:
        lines = [f"{_when(event.at_ms)}  away       gen {event.generation:<4} "
                 f"no rebalance: {WHY[ev.STATIC_LEAVE]}: {who}; its tasks wait for it"]
    elif event.kind == ev.DELETED:
        lines = [f"{_when(event.at_ms)}  deleted    gen {event.generation:<4} group deleted"]
    elif event.kind == ev.FAULT:   # test mode (broker/faults): what was injected, or did
        return [f"{_when(event.at_ms)}  fault      {ev.fault_text(event.extra)}"]
    elif event.kind in ev.RECORD_KINDS:   # a share group's records (share_records_recorder)
        lines = [f"{_when(event.at_ms)}  {event.kind.replace('_', ' '):<14} {t.detail}"]
        if event.extra.get("suppressed"):
            lines.append(f"{'':25}({event.extra['suppressed']} earlier such event(s) of this "
                         "group left out: too many in a minute)")
        return lines
    else:
        took = f"{event.duration_ms} ms"
        if event.join_ms is not None:
            took += f" (join {event.join_ms} ms, sync " + \
                (f"{event.sync_ms} ms)" if event.sync_ms is not None else "never completed)")
        lines = [f"{_when(event.at_ms)}  generation {event.generation:<4} {why}",
                 f"{'':25}{event.outcome or '-'} after {took}; members "
                 f"{len(event.members_before)} -> {len(event.members_after)}"]
        if t.fenced_id:
            lines.append(f"{'':25}fenced member id {t.fenced_id}")
        if event.triggers_after:
            lines.append(f"{'':25}{later_causes_text(event.triggers_after)}")
        if event.moved:
            lines.append(f"{'':25}{moves_text(event.moved)}")
    if t.client_reason:
        lines.append(f"{'':25}client says: {t.client_reason}")
    if t.detail and event.kind == ev.GENERATION and t.kind == ev.OTHER:
        lines.append(f"{'':25}{t.detail}")
    return lines


def history_lines(client: AdminClient, group_id: str, since_ms: int | None = None) -> list[str]:
    lines = []
    generations = saved = 0
    for event in events(client, group_id, since_ms):
        lines += format_event(event)
        generations += event.kind == ev.GENERATION
        saved += event.kind == ev.SAVED
    window = "" if since_ms is None else f" since {_when(since_ms)} UTC"
    if not lines:
        hint = "" if since_ms is None else " (--since all: every event kept)"
        return [f"No recorded events for group {group_id}{window}{hint}."]
    lines.append(f"{generations} generation(s), {saved} rebalance(s) saved by static "
                 f"membership{window}")
    return lines
