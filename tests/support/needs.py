"""A test that needs a program or a right the machine lacks. Where scripts/ensure-system-deps.sh
cannot have provided it (not root, or no apt-get) the test is skipped, with the reason in the
run's closing summary (pytest -ra); where it should have (root with apt-get, the machine the
project runs `make test` on, or any run with CI=true) its absence is a broken set-up and the
test fails, so a missing package never leaves a CI run green."""
from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def provided_here() -> bool:
    """True where the set-up installs what tests need, so nothing may be missing."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return True
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def missing(reason: str) -> NoReturn:
    if provided_here():
        pytest.fail(f"{reason}; this machine should have it (root with apt-get, or CI=true: "
                    "scripts/ensure-system-deps.sh installs it), so its absence is a broken "
                    "set-up, not a reason to skip", pytrace=False)
    pytest.skip(reason)
