"""A test-only fault hook: the process SIGKILLs itself when it reaches a named step.

Set ROSTER_TEST_KILL_AT to a step name (for the cleaner: `cleaner:staged`, `cleaner:checkpointed`,
`cleaner:swap-<n>` after the n-th change of a swap, `cleaner:swapped`) and the broker dies there
as if by `kill -9`, so a crash test hits exactly the instant it means to instead of racing a
timer. Unset (always, outside tests) it costs one dictionary lookup per step.
"""
from __future__ import annotations

import os
import signal

ENVIRONMENT_VARIABLE = "ROSTER_TEST_KILL_AT"


def reached(step: str) -> None:
    if os.environ.get(ENVIRONMENT_VARIABLE) == step:
        os.kill(os.getpid(), signal.SIGKILL)
