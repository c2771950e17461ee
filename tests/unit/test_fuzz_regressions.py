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


def _params():
    """A case whose note (<case>.txt) has a `status: open` line reports as XFAIL with it."""
    params = []
    for path in CASES:
        note = path.with_suffix(".txt")
        status = [line for line in (note.read_text().splitlines() if note.exists() else [])
                  if line.startswith("status: open")]
        marks = [pytest.mark.xfail(reason=status[0], strict=False)] if status else []
        params.append(pytest.param(path, marks=marks, id=f"{path.parent.name}-{path.name}"))
    return params


@pytest.mark.parametrize("path", _params())
def test_atheris_finding_stays_handled(path):
    result = subprocess.run(
        [sys.executable, "-m", "fuzz.atheris_targets", "--check", path.parent.name, str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert result.returncode == 0, (
        f"{path.name}: exit {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
