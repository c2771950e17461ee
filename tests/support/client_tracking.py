"""Kafka clients in their place (a pytest plugin, loaded by tests/conftest.py).

- librdkafka (confluent-kafka) writes its log lines straight to the process's stderr from its
  own threads. A client left running after its broker stopped then prints
  `Connect to ipv4#127.0.0.1:... failed: Connection refused` every few hundred milliseconds,
  and between tests (when pytest does not capture) those lines land in the terminal. Every
  confluent-kafka client here gets librdkafka's `logger` setting instead: its lines become
  records of the `librdkafka` logger, served by the client's own poll(), which pytest captures
  with the test and shows only for a failing one. A test that passes its own `logger` keeps it.
- kafka-python and aiokafka already log through Python logging; outside a test nothing would
  handle their records but Python's last-resort handler (stderr), so their loggers get a
  NullHandler (records still reach pytest's capture while a test runs).
- Every confluent-kafka and kafka-python client a test starts (in its body or in a
  function-scoped fixture) and leaves open is closed when the test ends: those of the body
  right after it (their broker is still up, so a consumer leaves its group cleanly), those of
  its fixtures after their teardown. Clients that a module- or session-scoped fixture starts
  belong to that fixture and are left alone. A close that hangs is abandoned after
  CLOSE_TIMEOUT_S; each forced close is a line of the `tests.clients` log.
  aiokafka clients live and die with the event loop of their test (asyncio.run) and are not
  tracked.
"""
from __future__ import annotations

import logging
import threading
import weakref

import pytest

LIBRDKAFKA_LOG = logging.getLogger("librdkafka")
LOG = logging.getLogger("tests.clients")
CLOSE_TIMEOUT_S = 10.0
for _name in ("librdkafka", "kafka", "aiokafka", "tests.clients"):
    logging.getLogger(_name).addHandler(logging.NullHandler())


class _Registry:
    """The clients started so far, with who owns them: "test" or a wider fixture scope."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[tuple[weakref.ref, str]] = []
        self.wide_fixtures = 0      # module/class/package/session fixtures being set up now

    def add(self, client) -> None:
        owner = "fixture" if self.wide_fixtures else "test"
        with self.lock:
            self.started.append((weakref.ref(client), owner))

    def mark(self) -> int:
        with self.lock:
            return len(self.started)

    def take_since(self, mark: int) -> list:
        """The test-owned clients started since `mark` that are still alive and open."""
        with self.lock:
            taken = self.started[mark:]
            del self.started[mark:]
            # what is still referenced by a wider scope stays listed, so marks stay valid
            self.started += [(ref, owner) for ref, owner in taken if owner != "test"]
        clients = [ref() for ref, owner in taken if owner == "test"]
        return [c for c in clients if c is not None and not c._tracked_closed]


REGISTRY = _Registry()


class _Tracked:
    """Mixed into each client class: registered when made, remembers being closed."""

    _tracked_closed = False
    _tracked_polling = 0

    def _track(self) -> None:
        REGISTRY.add(self)

    def _force_close(self) -> None:
        raise NotImplementedError


def _with_logger(args: tuple, kwargs: dict) -> dict:
    config = args[0] if args and isinstance(args[0], dict) else {}
    if "logger" not in config and "logger" not in kwargs:
        kwargs = {**kwargs, "logger": LIBRDKAFKA_LOG}
    return kwargs


def _install_confluent() -> None:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError:
        return
    base_producer, base_consumer = confluent_kafka.Producer, confluent_kafka.Consumer
    base_admin = confluent_kafka.admin.AdminClient
    if issubclass(base_producer, _Tracked):   # installed already
        return

    class Producer(_Tracked, base_producer):
        __doc__ = base_producer.__doc__

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **_with_logger(args, kwargs))
            self._track()

        def close(self, *args, **kwargs):
            self._tracked_closed = True
            return super().close(*args, **kwargs)

        def _force_close(self):
            # what is still queued goes nowhere: the test is over, and a flush would wait
            # for message.timeout.ms on a broker that is gone
            self.purge()
            self.close()

    class Consumer(_Tracked, base_consumer):
        __doc__ = base_consumer.__doc__

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **_with_logger(args, kwargs))
            self._track()

        def close(self, *args, **kwargs):
            self._tracked_closed = True
            return super().close(*args, **kwargs)

        # a consumer that another thread still polls must not be closed under it
        def poll(self, *args, **kwargs):
            self._tracked_polling += 1
            try:
                return super().poll(*args, **kwargs)
            finally:
                self._tracked_polling -= 1

        def consume(self, *args, **kwargs):
            self._tracked_polling += 1
            try:
                return super().consume(*args, **kwargs)
            finally:
                self._tracked_polling -= 1

        def _force_close(self):
            self.close()

    # librdkafka's admin client has no close (it ends with its last reference), so it is not
    # tracked; only its log lines are rerouted. Its class calls super(AdminClient, self) by
    # its module's name, so it is patched in place rather than replaced by a subclass.
    admin_init = base_admin.__init__

    def __init__(self, conf=None, **kwargs):
        admin_init(self, conf, **_with_logger((conf,), kwargs))

    base_admin.__init__ = __init__

    for cls, base in ((Producer, base_producer), (Consumer, base_consumer)):
        cls.__module__, cls.__qualname__ = base.__module__, base.__qualname__
    confluent_kafka.Producer = Producer
    confluent_kafka.Consumer = Consumer


def _install_kafka_python() -> None:
    try:
        import kafka
    except ImportError:
        return
    if issubclass(kafka.KafkaConsumer, _Tracked):
        return

    def tracked(base, force_close):
        class Client(_Tracked, base):
            __doc__ = base.__doc__

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self._track()

            def close(self, *args, **kwargs):
                self._tracked_closed = True
                return super().close(*args, **kwargs)

            _force_close = force_close

        Client.__name__ = Client.__qualname__ = base.__name__
        Client.__module__ = base.__module__
        return Client

    kafka.KafkaConsumer = tracked(kafka.KafkaConsumer, lambda c: c.close(autocommit=False))
    kafka.KafkaProducer = tracked(kafka.KafkaProducer, lambda c: c.close(timeout=5))
    kafka.KafkaAdminClient = tracked(kafka.KafkaAdminClient, lambda c: c.close())


_install_confluent()
_install_kafka_python()


def close_left_open(clients: list, when: str) -> None:
    for client in clients:
        name = type(client).__name__
        if client._tracked_polling:
            LOG.warning("a %s the test started is still being polled by another thread; "
                        "left open", name)
            continue
        LOG.warning("closing a %s the test left open (%s)", name, when)
        closer = threading.Thread(target=_close_quietly, args=(client,), daemon=True,
                                  name=f"closing-{name}")
        closer.start()
        closer.join(CLOSE_TIMEOUT_S)
        if closer.is_alive():
            LOG.warning("the %s did not close within %.0fs; abandoned", name, CLOSE_TIMEOUT_S)


def _close_quietly(client) -> None:
    try:
        client._force_close()
    except Exception as exc:    # closed meanwhile, or its broker is gone: nothing left to do
        LOG.info("closing a %s: %s", type(client).__name__, exc)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    wide = fixturedef.scope != "function"
    REGISTRY.wide_fixtures += wide
    try:
        return (yield)
    finally:
        REGISTRY.wide_fixtures -= wide


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_SETUP_MARK] = REGISTRY.mark()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    mark = REGISTRY.mark()
    try:
        return (yield)
    finally:
        close_left_open(REGISTRY.take_since(mark), "after its body")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    try:
        return (yield)
    finally:
        close_left_open(REGISTRY.take_since(item.stash.get(_SETUP_MARK, 0)),
                        "after its fixtures' teardown")


_SETUP_MARK = pytest.StashKey[int]()
