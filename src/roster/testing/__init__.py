"""roster for tests: a broker inside the test process (RosterBroker) and the pytest plugin
built on it (roster.pytest_plugin, loaded by pytest through its entry point): docs/testing.md."""
from roster.testing.broker import TEST_SETTINGS, Bootstrap, RosterBroker

__all__ = ["Bootstrap", "RosterBroker", "TEST_SETTINGS"]
