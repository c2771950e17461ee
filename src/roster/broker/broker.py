"""The broker: the state every handler works on, and its background tasks."""
from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from pathlib import Path

from roster.broker.clock import TestClock, WallClock, refuse_outside_test_mode
from roster.broker.groups.expected_members import expected as expected_members
from roster.broker.groups.group_configs import GroupConfigStore
from roster.broker.groups.group_log import GroupLog
from roster.broker.groups.runtime import GroupRuntime
from roster.broker.handlers import build_registry
from roster.broker.partitions.cleaner import LogCleaner
from roster.broker.partitions.durability import Durability
from roster.broker.partitions.internal_topic import InternalTopic
from roster.broker.partitions.producers import ProducerIds, SequenceTable
from roster.broker.partitions.topic_image import LiveTopics
from roster.broker.partitions.topics import Topic, TopicError, TopicManager
from roster.broker.partitions.waiters import AppendWaiters
from roster.broker.share.state_log import STATE_TOPIC as SHARE_STATE_TOPIC
from roster.broker.share_sessions import ShareSessions
from roster.broker.transactions.runtime import TransactionRuntime
from roster.config import BrokerConfig
from roster.coordinator.config import GroupConfig
from roster.coordinator.group_type import GroupTypeRegistration
from roster.frozen import frozen
from roster.group_types import settings as group_types_settings
from roster.group_types import with_built_in
from roster.log.api import LogError
from roster.log.file import FileLog
from roster.log.files import durable_replace
from roster.observability.event_log import EventLog
from roster.security.authorizer import StandardAuthorizer

log = logging.getLogger("roster.broker")


@frozen
class Endpoint:
    node_id: int
    host: str
    port: int


def read_cluster_id(data_dir: Path) -> str:
    """The cluster id is made once per data directory and kept in meta.properties, like Kafka's."""
    path = data_dir / "meta.properties"
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "cluster.id":
                return value.strip()
    cluster_id = uuid.uuid4().hex[:22]
    durable_replace(path, f"version=1\ncluster.id={cluster_id}\n".encode())
    return cluster_id


class Broker:
    # None: everything is allowed (broker/network/admission.py asks no one); a class attribute, so
    # admission reads it as a plain attribute on every request
    authorizer = None
    # test mode's faults (broker/faults): None unless rules are in force, read by the request
    # path (network/connection.py) and the append path (partitions/appends.py) as plain
    # class attributes, so that they cost one load when test mode is off
    armed_faults = None
    append_faults = None
    _faults = None
    _loop = None   # the loop the broker serves on, once started

    def __init__(self, config: BrokerConfig, data_dir: Path,
                 group_types: tuple[GroupTypeRegistration, ...] = (),
                 open_log=FileLog.open) -> None:
        """`group_types`: group types beyond the built-in ones (coordinator/group_type.py),
        registered once here: they reach the group runtime, its shard and flight recorder, and
        the effects they ask for run against this broker. `open_log(directory, LogConfig)`:
        how a partition's log is opened (a test broker may keep them in memory:
        roster.testing)."""
        self.config = config
        self.data_dir = data_dir
        # the one source of "now" for the coordinators' timers (broker/clock.py): a clock a
        # test can advance in test mode, the wall clock otherwise
        self.coordinator_clock = TestClock() if config.get("roster.test.mode", False) \
            else WallClock()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = read_cluster_id(data_dir)
        self.topics = TopicManager(data_dir, config, open_log)
        self.waiters = AppendWaiters()
        # share consumers' sessions (ShareFetch, ShareAcknowledge), ended with their connection
        self.share_sessions = ShareSessions(self)
        self.durability = Durability(config["log.flush.interval.messages"],
                                     config["log.flush.interval.ms"])
        self.endpoint = Endpoint(config["node.id"], "localhost", 9092)
        self.scram = None   # the SCRAM credential store, once open (scram_store)
        self.registry = build_registry()
        # ACLs (security/authorizer.py) when authorizer.class.name asks; admission asks it
        authorizer = StandardAuthorizer.from_config(config, data_dir)
        if authorizer is not None:
            self.authorizer = authorizer
        self.producer_ids = ProducerIds(data_dir)
        self.sequences = SequenceTable()
        # the transaction coordinator (roster.transactions) and its __transaction_state
        self.transactions = TransactionRuntime(self, config)
        # share partitions (KIP-932, roster.share) and their __share_group_state
        self._share_state = None   # built on first use: the share_state property
        self._started = False
        self.group_log = GroupLog(self, config["offsets.topic.num.partitions"],
                                  config["group.coordinator.append.linger.ms"])
        types = with_built_in(group_types)
        # each type's own group configs (the GROUP resource), kept in one file
        self.group_configs = GroupConfigStore(
            data_dir, config, [t.group_configs for t in types if t.group_configs is not None])
        # classic consumer groups read the topic catalog the way KIP-848 groups do (the same
        # TopicImage view: coordinator/classic/metadata_watch.py); pre-registered static members come
        # from the group configs (coordinator/classic/expectations.py)
        self.groups = GroupRuntime(GroupConfig.from_broker(config), self.group_log,
                                   settings=group_types_settings(
                                       types, config, self.group_configs.values),
                                   topics=LiveTopics(self.topics),
                                   expected=lambda group_id: expected_members(
                                       self.group_configs.own(group_id)),
                                   group_types=group_types)
        for registration in self.groups.types:
            for effect, handler in registration.effects.items():
                self.groups.effects[effect] = functools.partial(handler, self)
        self.group_events = EventLog(self)   # the flight recorder's topic
        self.request_stats = None   # observability/metrics.RequestStats while /metrics is on
        self.groups.on_events = self.group_events.record
        # a marker durable in __consumer_offsets commits or drops the producer's pending offsets
        self.transactions.on_offsets_marker = self._transaction_marker_in_offsets
        self.transactions.ready = lambda: self.groups.loaded
        self.cleaner = LogCleaner(self.topics, config, self.now_ms,
                                  ready=lambda: self.groups.loaded)
        for runtime in (self.groups, self.transactions):
            runtime.follow(self.coordinator_clock)
        self._tasks: list[asyncio.Task] = []

    def now_ms(self) -> int:
        return self.coordinator_clock.now_ms()

    @property
    def share_state(self):
        """The share partitions (broker/share/state.py: ShareState), built on first use: at
        start when __share_group_state holds something to replay, else when a share group or
        a share API first needs them, so a broker without share groups never loads them."""
        return self._share_state or self._build_share_state()

    def _build_share_state(self):
        from roster.broker.share.state import ShareState
        state = self._share_state = ShareState(self, self.config)
        state.runtime.follow(self.coordinator_clock)
        if self._started:   # built while serving: it replays what there is and keeps its timers
            self._tasks += state.load()
        return state

    @property
    def clock(self) -> TestClock:
        """The broker clock a test advances (`broker.clock.advance(seconds)`, broker/clock.py);
        refused (ClockRefused) outside test mode."""
        if not self.coordinator_clock.manual:
            raise refuse_outside_test_mode("broker.clock")
        return self.coordinator_clock

    @property
    def test_mode(self) -> bool:
        """roster.test.mode: the fault plane (`faults`) and the test clock (`clock`) exist."""
        return self.config.get("roster.test.mode", False)

    @property
    def faults(self):
        """The fault-injection control plane (broker/faults: `broker.faults.fail_next(...)`);
        refused (FaultsRefused) outside test mode."""
        from roster.broker.faults import Faults
        from roster.broker.faults.control import refused
        if not self.test_mode:
            raise refused()
        if self._faults is None:
            self._faults = Faults(self)
            if self._loop is not None:
                self._faults.bind(self._loop)
        return self._faults

    def _transaction_marker_in_offsets(self, producer_id: int, commit: bool,
                                       partitions: list[int]) -> None:
        self.groups.end_transaction(producer_id, commit)

    def serve_on(self, listeners, opened) -> None:
        """What the listeners just opened (security/listen.py ListenerPlan.open) give the
        broker: the SCRAM store they authenticate with, which the admin APIs then share, and
        the address Metadata and FindCoordinator hand out."""
        if listeners.store is not None:
            self.scram = listeners.store
        if listeners.endpoint is not None:
            self.endpoint = listeners.endpoint
        else:
            self.advertise(listeners.host, opened[0].port)

    def scram_store(self):
        """The SCRAM credential store (security/credentials.py), opened on first use when no
        SASL listener opened it."""
        if self.scram is None:
            from roster.security.credentials import ScramStore
            self.scram = ScramStore.open(self.data_dir)
        return self.scram

    def advertise(self, host: str, port: int) -> None:
        """Set the address Metadata and FindCoordinator hand out (advertised.listeners wins)."""
        advertised = self.config["advertised.listeners"]
        if advertised:
            _, _, address = advertised.partition("://")
            host, _, port_text = address.rpartition(":")
            port = int(port_text)
        elif host in ("", "0.0.0.0", "::"):
            host = "localhost"
        self.endpoint = Endpoint(self.config["node.id"], host, port)

    def start(self) -> None:
        try:   # a jump asked from another thread (a test's) runs on this loop
            self.coordinator_clock.bind(asyncio.get_running_loop())
        except RuntimeError:
            pass
        try:   # so do faults asked from another thread
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            if self._faults is not None:
                self._faults.bind(self._loop)
        self.topics.load()
        self._restore_producer_state()
        # the broker's own topics are made on first use; an existing one with another
        # partition count stops the broker here, before anything is served
        # (InternalTopic.check_existing)
        self.transactions.log.topic.check_existing()
        self._tasks += self.transactions.load()
        if self.topics.get(SHARE_STATE_TOPIC) is not None:   # built now: it replays the topic
            self._build_share_state().log.topic.check_existing()
            self._tasks += self._share_state.load()
        self._started = True
        self.group_log.topic.check_existing()
        self.group_events.topic.check_existing()
        self._tasks.append(asyncio.ensure_future(self.groups.load()))
        self._tasks.append(asyncio.ensure_future(
            self.durability.run_periodic(self._all_partitions)))
        self._tasks.append(asyncio.ensure_future(self._enforce_retention_forever()))
        self._tasks.append(asyncio.ensure_future(self._expire_offsets_forever()))
        self._tasks.append(asyncio.ensure_future(self.cleaner.run_forever()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.transactions.stop()
        if self._share_state is not None:
            await self._share_state.stop()
        await self.cleaner.stop()
        self.groups.close()
        self.topics.close()

    def _restore_producer_state(self) -> None:
        """Idempotent producers' recent batches, from each partition's active segment: a retry
        of a batch written before a restart (kill -9 included) is still recognised."""
        started = time.monotonic()
        restored = 0
        for topic in self.topics:
            for index, partition in enumerate(topic.partitions):
                try:
                    restored += self.sequences.restore((topic.topic_id, index),
                                                       partition.active_batch_headers())
                except (LogError, OSError) as exc:  # its producers: accepted at any sequence
                    log.warning("cannot restore producer state of %s-%d: %s", topic.name, index,
                                exc)
        if restored:
            log.info("restored idempotent producer state from %d batches in %.2f s", restored,
                     time.monotonic() - started)

    def own_topic(self, name: str) -> InternalTopic | None:
        """The broker's own topic by that name (__consumer_offsets, __transaction_state,
        __share_group_state, the flight recorder's), whether or not its first use created it."""
        if name == SHARE_STATE_TOPIC:
            return self.share_state.log.topic
        for topic in (self.group_log.topic, self.transactions.log.topic, self.group_events.topic):
            if topic.name == name:
                return topic
        return None

    def auto_create(self, name: str) -> Topic | None:
        """Create a topic a client asked for by name, if auto.create.topics.enable allows it.
        One of the broker's own topics is created as the broker makes it (its partition count
        and configs), as Kafka's auto-creation makes __consumer_offsets."""
        if not self.config["auto.create.topics.enable"]:
            return None
        own = self.own_topic(name)
        try:
            if own is not None:
                own.ensure()
                return self.topics.get(name)
            return self.topics.create(name, self.config["num.partitions"])
        except TopicError as exc:
            log.warning("cannot auto-create topic %r: %s", name, exc)
            return None

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.delete(name)
        for partition in topic.partitions:
            self.durability.forget(partition)
        if self._share_state is not None:   # else no share partition exists
            self._share_state.topic_deleted(topic.topic_id)
        return topic

    def _all_partitions(self):
        for topic in self.topics:
            yield from topic.partitions

    async def _enforce_retention_forever(self) -> None:
        interval_s = self.config["log.retention.check.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval_s)
            self.enforce_retention()

    async def _expire_offsets_forever(self) -> None:
        interval_s = self.config["offsets.retention.check.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval_s)
            if self.groups.loaded:
                self.groups.expire_offsets()

    def enforce_retention(self) -> None:
        now = self.now_ms()
        for partition in list(self._all_partitions()):
            try:
                deleted = partition.enforce_retention(now)
            except OSError as exc:
                log.error("retention failed: %s", exc)
                continue
            if deleted:
                log.info("retention deleted %d segment(s); log start is now %d",
                         deleted, partition.log_start_offset)
