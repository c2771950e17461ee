"""roster's pytest plugin (roster.pytest_plugin), tested with pytest's own pytester: inner test
sessions that use its fixtures with real clients, and what the outer session sees of them
(outcomes, a failing test's broker log, one broker per xdist worker, asyncio tests, the
marker's settings, usage errors)."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.interop
pytest_plugins = ["pytester"]
# no cache files in the inner runs' directories; pytest-asyncio's loop scope said, as a
# project using it says it in its ini
QUIET = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")

ROUND_TRIP = """
from confluent_kafka import Consumer, Producer


def round_trip(bootstrap, topic, group_id, value=b"hello"):
    producer = Producer(bootstrap.confluent)
    producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**bootstrap.confluent, "group.id": group_id,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        for _ in range(300):
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                return message.value()
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()
"""


@pytest.fixture
def inner(pytester):
    pytester.makepyfile(roundtrip=ROUND_TRIP)
    return pytester


def test_fixtures_serve_real_clients(inner):
    inner.makepyfile(test_inner="""
        from kafka import KafkaProducer
        from roundtrip import round_trip


        def test_confluent(roster_bootstrap, roster_topic, roster_group_id):
            assert round_trip(roster_bootstrap, roster_topic, roster_group_id) == b"hello"


        def test_kafka_python_takes_the_list(roster_bootstrap, roster_topic):
            producer = KafkaProducer(bootstrap_servers=roster_bootstrap.servers)
            producer.send(roster_topic, b"x").get(timeout=30)
            producer.close()


        def test_fresh_names_each_time(roster_topic, roster_group_id, roster_topic_factory):
            other = roster_topic_factory(partitions=3)
            assert other != roster_topic and roster_group_id.startswith("group-")


        def test_one_broker_per_session(roster_broker, roster_session_broker):
            assert roster_broker is roster_session_broker
            assert roster_broker.broker.test_mode
    """)
    result = inner.runpytest(*QUIET)
    result.assert_outcomes(passed=4)


def test_a_failing_tests_report_carries_the_brokers_log(inner):
    inner.makepyfile(test_inner="""
        from roundtrip import round_trip


        def test_passes_first(roster_bootstrap, roster_topic, roster_group_id):
            round_trip(roster_bootstrap, roster_topic, "quiet-group")


        def test_fails(roster_bootstrap, roster_topic, roster_group_id):
            round_trip(roster_bootstrap, roster_topic, roster_group_id)
            assert False, "the consumer's commit was wrong"
    """)
    result = inner.runpytest(*QUIET)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*roster broker log (127.0.0.1:*)*",
                                 "*INFO roster.coordinator: group group-test_fails-* is Stable*"])
    # only what the broker said during the failing test
    assert "quiet-group" not in result.stdout.str()


def test_marker_settings_get_their_own_broker(inner):
    inner.makepyfile(test_inner="""
        import pytest

        SETTINGS = {"group.max.session.timeout.ms": "123456"}


        @pytest.mark.roster_broker(SETTINGS)
        def test_marked(roster_broker, roster_session_broker, roster_bootstrap):
            assert roster_broker.broker.config["group.max.session.timeout.ms"] == 123456
            assert roster_broker is not roster_session_broker
            assert roster_bootstrap == roster_broker.bootstrap


        @pytest.mark.roster_broker(SETTINGS)
        def test_same_settings_share_it(roster_broker, roster_session_broker):
            assert roster_broker.port != roster_session_broker.port
            assert roster_broker.broker.config["group.max.session.timeout.ms"] == 123456


        @pytest.mark.roster_broker(memory=True)
        def test_memory_log(roster_broker, roster_topic, roster_bootstrap, roster_group_id):
            from roundtrip import round_trip
            assert round_trip(roster_bootstrap, roster_topic, roster_group_id) == b"hello"
            assert not any(roster_broker.data_dir.glob(roster_topic + "-*/*.log"))


        @pytest.mark.roster_topic(partitions=4)
        def test_topic_partitions(roster_broker, roster_topic):
            assert len(roster_broker.broker.topics.get(roster_topic).partitions) == 4


        @pytest.mark.roster_broker("not a dict")
        def test_bad_marker(roster_broker):
            pass
    """)
    result = inner.runpytest(*QUIET)
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*roster_broker takes a dict of broker settings*"])


def test_ini_settings_and_memory_log(inner):
    inner.makeini("""
        [pytest]
        roster_settings =
            num.partitions=5
            auto.create.topics.enable=true
        roster_memory_log = true
    """)
    inner.makepyfile(test_inner="""
        def test_ini(roster_broker):
            assert roster_broker.broker.config["num.partitions"] == 5
            assert roster_broker.memory
    """)
    inner.runpytest(*QUIET).assert_outcomes(passed=1)


def test_a_bad_ini_line_is_a_usage_error(inner):
    inner.makeini("""
        [pytest]
        roster_settings = no-equals-sign
    """)
    inner.makepyfile(test_inner="""
        def test_x(roster_broker):
            pass
    """)
    result = inner.runpytest(*QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*roster_settings: 'no-equals-sign' is not key=value*"])


def test_clock_and_faults_from_a_test_and_faults_cleared_after_it(inner):
    inner.makepyfile(test_inner="""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient


        def test_injects(roster_broker, roster_bootstrap):
            roster_broker.faults.fail_next("Metadata", "UNKNOWN_SERVER_ERROR", count=None)
            assert roster_broker.faults.list()
            before = roster_broker.clock.advanced
            roster_broker.clock.advance(10)
            assert roster_broker.clock.advanced == before + 10


        def test_finds_none(roster_broker, roster_bootstrap):
            assert roster_broker.faults.list() == []
            admin = AdminClient(roster_bootstrap.confluent)
            assert admin.list_topics(timeout=30).topics is not None
    """)
    inner.runpytest(*QUIET).assert_outcomes(passed=2)


def test_one_broker_per_xdist_worker(inner, tmp_path):
    seen = tmp_path / "seen"
    seen.mkdir()
    inner.makepyfile(test_inner=f"""
        import json, os, pathlib

        import pytest

        from roundtrip import round_trip


        @pytest.mark.parametrize("n", range(6))
        def test_worker(n, roster_broker, roster_bootstrap, roster_topic, roster_group_id):
            assert round_trip(roster_bootstrap, roster_topic, roster_group_id) == b"hello"
            worker = os.environ["PYTEST_XDIST_WORKER"]
            pathlib.Path({str(seen)!r}, f"{{n}}.json").write_text(
                json.dumps([worker, roster_broker.port, str(roster_broker.data_dir)]))
    """)
    result = inner.runpytest_subprocess("-n", "2", *QUIET)
    result.assert_outcomes(passed=6)
    rows = [json.loads(path.read_text()) for path in seen.iterdir()]
    by_worker: dict[str, set] = {}
    for worker, port, data_dir in rows:
        by_worker.setdefault(worker, set()).add((port, data_dir))
    assert len(by_worker) == 2, rows
    assert all(len(brokers) == 1 for brokers in by_worker.values()), by_worker
    assert len({b for brokers in by_worker.values() for b in brokers}) == 2


def test_asyncio_tests(inner):
    inner.makepyfile(test_inner="""
        import asyncio

        import pytest
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


        @pytest.mark.asyncio
        async def test_aiokafka(roster_broker, roster_bootstrap, roster_topic, roster_group_id):
            producer = AIOKafkaProducer(bootstrap_servers=roster_bootstrap)
            await producer.start()
            await producer.send_and_wait(roster_topic, b"async")
            await producer.stop()
            consumer = AIOKafkaConsumer(roster_topic, bootstrap_servers=roster_bootstrap,
                                        group_id=roster_group_id,
                                        auto_offset_reset="earliest")
            await consumer.start()
            try:
                message = await asyncio.wait_for(consumer.getone(), 30)
                assert message.value == b"async"
                # the broker is on its own loop: advancing its clock from this one is safe
                await asyncio.to_thread(roster_broker.clock.advance, 1)
                roster_broker.clock.advance(1)
            finally:
                await consumer.stop()


        @pytest.mark.asyncio
        async def test_roster_client(roster_bootstrap, roster_topic, roster_group_id):
            from roster.client.consumer import Consumer
            from roster.client.producer import Producer
            producer = Producer(roster_bootstrap)
            await producer.send(roster_topic, b"v", partition=0)
            await producer.close()
            consumer = Consumer(roster_bootstrap, roster_group_id)
            await consumer.subscribe([roster_topic])
            try:
                for _ in range(300):
                    records = await consumer.poll(timeout_ms=100)
                    if records:
                        assert records[0].value == b"v"
                        break
                else:
                    raise AssertionError("nothing consumed")
            finally:
                await consumer.close()
    """)
    inner.runpytest(*QUIET).assert_outcomes(passed=2)
