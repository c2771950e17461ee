"""tests/support/needs.py: a missing program skips a test only where the set-up could not have
provided it; on CI, or as root with apt-get, its absence fails the test."""
import os
import shutil

import pytest

from tests.support import needs


@pytest.mark.parametrize("ci", ["true", "1", "YES"])
def test_on_ci_a_missing_program_fails(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="broken set-up, not a reason to skip"):
        needs.missing("no sarama")


def test_as_root_with_apt_get_a_missing_program_fails(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(pytest.fail.Exception, match="no sarama; this machine should have it"):
        needs.missing("no sarama")


@pytest.mark.parametrize("euid, apt_get", [(1000, "/usr/bin/apt-get"), (0, None)])
def test_elsewhere_it_is_skipped_with_the_reason(monkeypatch, euid, apt_get):
    monkeypatch.setenv("CI", "false")
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    monkeypatch.setattr(shutil, "which", lambda name: apt_get)
    with pytest.raises(pytest.skip.Exception, match="^no sarama$"):
        needs.missing("no sarama")
