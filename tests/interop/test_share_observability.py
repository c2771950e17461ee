"""Share groups (KIP-932) in roster's observability, on a real broker (in-process, test mode,
with its HTTP port) driven by real share consumers (roster.client.ShareConsumer):

- member A acquires ten records and never acknowledges them; the broker clock is advanced past
  the lock duration: one `locks_expired` event names A and offsets 0-9;
- member B gets them again (delivery count 2, the group's limit): accepts four, rejects one and
  releases five, which are archived at the limit instead of redelivered (an `archived` event
  naming B, the cause and offsets 5-9) and, with the rejected one, written to the group's
  dead-letter topic (a `dead_lettered` event);
- /metrics counts each of those per group and partition (roster_share_...), with the start
  offset, the lag and the in-flight records by state; `roster groups history` prints the
  events; `roster groups describe --http URL` adds the in-flight records to the start offset
  and lag; the console's share group page shows it all in chromium; a deleted group's series
  go.

Nothing waits on the lock's 30 s: the test advances the broker clock (roster.test.mode)."""
from __future__ import annotations

import asyncio
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from roster.admin.client import AdminClient
from roster.admin.topics import create
from roster.client.share_consumer import AcknowledgeType
from roster.observability import events as ev
from roster.observability import history
from roster.testing import RosterBroker
from tests.interop.test_console_browser import chromium, distinct_colours, screenshot
from tests.interop.test_roster_share_consumer import group_configs, joined, produce
from tests.support.cli import ok, roster
from tests.support.http import http_get

pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("console-browser")]

GROUP, TOPIC, DLQ = "invoices-workers", "invoices", "dlq.invoices"
LOCK_S = 30          # group.share.record.lock.duration.ms's default


def metrics(http: str) -> dict:
    """{(family sample name, frozenset of labels): value} of /metrics' share series."""
    status, _, text = http_get(http + "metrics")
    assert status == 200
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("roster_share_"):
                found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def series(found: dict, name: str, **labels) -> float:
    want = {"group": GROUP, "topic": TOPIC, "partition": "0", **labels}
    return found[(name, frozenset(want.items()))]


def counted(http: str) -> dict:
    found = metrics(http)
    names = ("acquired", "redelivered", "accepted", "released", "rejected", "renewed",
             "archived")
    out = {n: series(found, f"roster_share_records_{n}_total") for n in names}
    out["lock_expiries"] = series(found, "roster_share_lock_expiries_total")
    out["dead_letters"] = series(found, "roster_share_dead_letters_total")
    out["in_flight"] = {s: series(found, "roster_share_in_flight_records", state=s)
                        for s in ("available", "acquired", "acknowledged", "archived")}
    out["start"] = series(found, "roster_share_start_offset")
    out["lag"] = series(found, "roster_share_lag")
    return out


async def poll_until(consumer, count: int) -> list:
    records = []
    for _ in range(30):
        records += await consumer.poll(1.0)
        if len(records) >= count:
            return records
    raise AssertionError(f"{len(records)} of {count} records")


def follow(bootstrap: str, kinds: set) -> dict:
    """The group's events, read (long-polling) until one of each kind is there."""
    found: dict = {}
    with AdminClient(bootstrap) as client:
        for event in history.events(client, GROUP, follow=True, wait_ms=300, timeout_s=30):
            found.setdefault(event.kind, event)
            if kinds <= set(found):
                return found
    raise AssertionError(f"events: {sorted(found)}, wanted {sorted(kinds)}")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with RosterBroker(tmp_path_factory.mktemp("share-observe"), http=True) as running:
        yield running


async def _scenario(broker, tmp_path) -> None:
    bootstrap, http = broker.bootstrap, broker.http_url
    with AdminClient(bootstrap) as admin:
        create(admin, TOPIC, 1, {})
        create(admin, DLQ, 1, {"errors.deadletterqueue.group.enable": "true"})
    group_configs(bootstrap, GROUP, {"share.auto.offset.reset": "earliest",
                                     "share.delivery.count.limit": "2",
                                     "errors.deadletterqueue.topic.name": DLQ})
    await produce(bootstrap, TOPIC, [b"v%d" % i for i in range(10)])

    a = await joined(bootstrap, GROUP, TOPIC, share_acknowledgement_mode="explicit")
    held = await poll_until(a, 10)
    assert [r.delivery_count for r in held] == [1] * 10
    now = counted(http)
    assert (now["acquired"], now["redelivered"], now["lock_expiries"]) == (10, 0, 0)
    assert now["in_flight"] == {"available": 0, "acquired": 10, "acknowledged": 0,
                                "archived": 0}
    assert (now["start"], now["lag"]) == (0, 10)

    # A never acknowledges: past the lock duration its ten locks expire in one pass
    await asyncio.to_thread(broker.clock.advance, LOCK_S + 1)
    now = counted(http)
    assert now["lock_expiries"] == 10
    assert now["in_flight"]["available"] == 10 and now["in_flight"]["acquired"] == 0

    b = await joined(bootstrap, GROUP, TOPIC, share_acknowledgement_mode="explicit")
    again = await poll_until(b, 10)
    assert sorted((r.offset, r.delivery_count) for r in again) == [(o, 2) for o in range(10)]
    for record in again:
        kind = (AcknowledgeType.ACCEPT if record.offset < 4 else
                AcknowledgeType.REJECT if record.offset == 4 else AcknowledgeType.RELEASE)
        b.acknowledge(record, kind)
    outcome = await b.commit_sync()
    assert outcome == {(TOPIC, 0): None}
    now = counted(http)
    assert {k: now[k] for k in ("acquired", "redelivered", "accepted", "released", "rejected",
                                "renewed", "archived", "lock_expiries")} == {
        "acquired": 20, "redelivered": 10, "accepted": 4, "released": 5, "rejected": 1,
        "renewed": 0, "archived": 5, "lock_expiries": 10}
    assert now["in_flight"] == {"available": 0, "acquired": 0, "acknowledged": 0,
                                "archived": 0}
    assert (now["start"], now["lag"]) == (10, 0)
    # three more, held by B for the page: in flight, and the lag
    await produce(bootstrap, TOPIC, [b"w%d" % i for i in range(3)])
    held = await poll_until(b, 3)
    assert [r.offset for r in held] == [10, 11, 12]
    for _ in range(50):     # the dead letters are written once the archive is durable
        now = counted(http)
        if now["dead_letters"] == 6:
            break
        await asyncio.sleep(0.1)
    assert now["dead_letters"] == 6
    assert now["in_flight"]["acquired"] == 3 and now["lag"] == 3

    found = await asyncio.to_thread(
        follow, bootstrap, {ev.LOCKS_EXPIRED, ev.ARCHIVED, ev.DEAD_LETTERED})
    expired = found[ev.LOCKS_EXPIRED]
    assert (expired.protocol, expired.generation, expired.trigger.member_id) == \
        ("share", -1, a.member_id)
    assert expired.extra["members"] == [{"member_id": a.member_id, "ranges": [[0, 9]],
                                         "left_out": 0}]
    assert expired.extra["records"] == 10 and expired.extra["archived"] == 0
    archived = found[ev.ARCHIVED]
    assert (archived.trigger.member_id, archived.extra["cause"],
            archived.extra["delivery_count"], archived.extra["ranges"]) == \
        (b.member_id, "release", 2, [[5, 9]])
    letters = found[ev.DEAD_LETTERED]
    assert (letters.extra["records"], letters.extra["dead_letter_topic"],
            letters.extra["ranges"]) == (6, DLQ, [[4, 9]])

    lines = ok(roster("--bootstrap-server", bootstrap, "groups", "history", GROUP))
    assert f"locks expired  10 acquisition lock(s) expired on {TOPIC}-0: {a.member_id} " \
           "held 0-9; released for redelivery" in lines
    assert f"archived       5 record(s) of {TOPIC}-0 archived at delivery count 2 (the " \
           "limit): released by its consumer; offsets 5-9" in lines
    assert f"dead lettered  6 record(s) of {TOPIC}-0 written to dead-letter topic " \
           f"{DLQ}-0: offsets 4-9" in lines

    # roster groups describe: start offset and lag over the wire (as on Kafka); with --http,
    # the in-flight records by state from roster's /metrics
    plain = ok(roster("--bootstrap-server", bootstrap, "groups", "describe", GROUP))
    assert "ACQUIRED" not in plain
    described = ok(roster("--bootstrap-server", bootstrap, "groups", "describe", GROUP,
                          "--http", http))
    [head, row] = [line for line in described.splitlines()
                   if line.startswith("TOPIC") or line.startswith(f"{TOPIC} ")]
    assert head.split() == ["TOPIC", "PARTITION", "START-OFFSET", "LAG", "AVAILABLE",
                            "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED", "MEMBERS"]
    # START-OFFSET is DescribeShareGroupOffsets', as Kafka 4.4 answers it: the start written
    # with the partition's last write (before that write moved it: 0 here; /metrics and the
    # console show the start now, 10); the lag counts from the start now either way
    assert row.split()[:8] == [TOPIC, "0", "0", "3", "0", "3", "0", "0"]
    assert set(row.split()[8].split(",")) == {a.member_id, b.member_id}

    # the console's share group page, in a real browser
    page = http + f"group/{GROUP}"
    dom = await asyncio.to_thread(lambda: chromium(page, tmp_path, "--dump-dom").stdout)
    assert "share protocol" in dom and dom.count('class="member"') == 2
    assert f"{TOPIC} [0]" in dom        # each member's assigned partitions
    for field, value in {"acquired": 23, "redelivered": 10, "accepted": 4, "released": 5,
                         "rejected": 1, "lock_expired": 10, "archived": 5,
                         "dead_lettered": 6, "in_flight": 3, "lag": 3}.items():
        assert f'data-share="{field}">{value}<' in dom, field
    row = dom.split(f'class="share-partition" data-topic="{TOPIC}" data-partition="0"')[1]
    row = row.split("</tr>")[0]
    for field, value in {"start": 10, "end": 13, "available": 0, "acquired": 3,
                         "acknowledged": 0, "archived": 0, "lag": 3}.items():
        assert f'data-field="{field}">{value}<' in row, field
    assert a.member_id in row and b.member_id in row
    for kind in (ev.LOCKS_EXPIRED, ev.ARCHIVED, ev.DEAD_LETTERED):
        assert dom.count(f'class="record-event" data-kind="{kind}"') == 1, kind
    png = await asyncio.to_thread(screenshot, page, tmp_path / "share.png", tmp_path)
    assert len(png) > 20_000 and distinct_colours(png) > 20, "the page looks blank"
    # the index: the group, its type, and its share partitions' lag in the lag column
    index = await asyncio.to_thread(lambda: chromium(http, tmp_path, "--dump-dom").stdout)
    row = index.split(f'href="/group/{GROUP}"')[1].split("</tr>")[0]
    assert "<td>share</td>" in row
    assert re.findall(r'<td class="num">(\d+)</td>', row)[2] == "3"     # members, gen, lag
    assert len(png) > 20_000 and distinct_colours(png) > 20, "the page looks blank"

    await a.close()
    await b.close()


def test_share_group_records_in_metrics_history_and_console(broker, tmp_path):
    asyncio.run(asyncio.wait_for(_scenario(broker, tmp_path), 240))
    http = broker.http_url
    # a deleted group's series go with its share state
    assert any(labels and ("group", GROUP) in labels for _, labels in metrics(http))
    ok(roster("--bootstrap-server", broker.bootstrap, "groups", "delete", GROUP))
    assert not [key for key in metrics(http) if ("group", GROUP) in key[1]]


@pytest.mark.xdist_group("security")
def test_in_flight_counts_from_a_console_that_asks_for_credentials(tmp_path):
    """With SASL listeners the console asks every request for a SCRAM user's HTTP Basic
    credentials: `groups describe --http` sends --command-config's user, and says what is
    wrong when there is none or the password is refused (the password never in the output)."""
    asyncio.run(asyncio.wait_for(_credentials_scenario(tmp_path), 240))


async def _credentials_scenario(tmp_path):
    from roster.admin import share_in_flight
    from roster.admin.console_http import basic_authorization
    from tests.support.security import PASSWORDS, secure_broker_with_console
    broker, http = secure_broker_with_console(tmp_path)
    plaintext = broker.listener("PLAINTEXT")
    try:
        with AdminClient(plaintext) as admin:
            create(admin, "held", 1, {})
        consumer = await joined(plaintext, "secured-share", "held")
        try:
            def config(password: str):
                path = tmp_path / f"client-{password}.properties"
                path.write_text("security.protocol=SASL_PLAINTEXT\n"
                                "sasl.mechanism=SCRAM-SHA-256\n"
                                f"sasl.username=alice\nsasl.password={password}\n")
                return str(path)

            def describe(*extra):
                return roster("--bootstrap-server", broker.listener("SASL_PLAINTEXT"), "groups",
                              "describe", "secured-share", "--http", http, *extra)
            lines = ok(await asyncio.to_thread(describe, "--command-config",
                                               config(PASSWORDS["alice"])))
            assert "ACQUIRED" in lines and "held " in lines
            # without a user (the admin side over PLAINTEXT), the console refuses, and says why
            done = await asyncio.to_thread(
                lambda: roster("--bootstrap-server", plaintext, "groups", "describe",
                               "secured-share", "--http", http))
            assert done.returncode != 0
            assert "HTTP 401, credentials are required" in done.stderr
            # a wrong password (over SASL it would be refused by the listener first)
            wrong = "not-" + PASSWORDS["alice"]
            with pytest.raises(share_in_flight.InFlightUnavailable) as refused:
                share_in_flight.read(http, "secured-share", basic_authorization("alice", wrong))
            assert "HTTP 401, the credentials were refused" in str(refused.value)
            assert wrong not in str(refused.value)
        finally:
            await consumer.close()
    finally:
        broker.stop()
