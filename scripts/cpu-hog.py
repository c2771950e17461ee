#!/usr/bin/env python3
"""A bounded CPU hog: keeps one core busy for SECONDS (default 600), then exits by itself.

Run it beside the tests to see how they behave on a loaded machine, as CI's often is:

    python scripts/cpu-hog.py 600 & .venv/bin/python -m pytest -n 1 tests/unit

It takes no lock and writes nothing; Ctrl-C or `kill` stops it early. Run two for two cores.
"""
import sys
import time


def main(argv: list[str]) -> int:
    try:
        seconds = float(argv[1]) if len(argv) > 1 else 600.0
    except ValueError:
        print(f"usage: {argv[0]} [SECONDS]   (a number, got {argv[1]!r})", file=sys.stderr)
        return 2
    if not 0 < seconds <= 24 * 3600:
        print(f"{argv[0]}: SECONDS must be in (0, 86400], got {seconds:g}", file=sys.stderr)
        return 2
    end = time.monotonic() + seconds
    spins = 0
    try:
        while True:
            # look at the clock only now and then: the loop is meant to be pure CPU
            for _ in range(100_000):
                spins += 1
            if time.monotonic() >= end:
                return 0
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
