"""Inputs atheris found (fuzz/corpus/atheris/<target>/) stay handled: each is replayed through
its harness in a child process (a native crash must not take pytest with it), which must exit 0:
the decoder returned or raised only its documented bad-input exception."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fuzz.atheris_run import SAVED
from fuzz.live import REPO

CASES = sorted(p for p in SAVED.glob("*/*") if p.is_file() and p.suffix != ".txt")


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}-{p.name}" for p in CASES])
def test_atheris_finding_stays_handled(path):
    result = subprocess.run(
        [sys.executable, "-m", "fuzz.atheris_targets", "--check", path.parent.name, str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert result.returncode == 0, (
        f"{path.name}: exit {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
