"""The `roster` command as a user runs it: the installed console script, in a child process."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROSTER = str(Path(sys.executable).with_name("roster"))   # .venv/bin/roster


def roster(*args: str, timeout_s: float = 60,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([ROSTER, *args], capture_output=True, text=True, timeout=timeout_s,
                          env=env)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def refused(result: subprocess.CompletedProcess, code: int = 2) -> str:
    """The one clear complaint of a refused command line (its stderr), checked to be neither
    a traceback nor Python's wording."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "invalid literal" not in result.stderr, \
        result.stderr
    return result.stderr


def table(text: str) -> list[dict[str, str]]:
    """Rows of an aligned table (the header first) as dicts keyed by the header's names,
    split on runs of two or more spaces ("COORDINATOR (ID)" is one name)."""
    import re
    lines = [line for line in text.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return [dict(zip(header, re.split(r"\s{2,}", line.strip()))) for line in lines[1:]]
