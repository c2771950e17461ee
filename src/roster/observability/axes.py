"""Axis ticks for the console's and the report's plots: whole numbers for counts and
generations (1, 2, 3, 4, never 1, 2, 4), and round clock times for time axes. Pure."""
from __future__ import annotations

import datetime
import itertools

# steps a time axis may take, in milliseconds: round on a clock face
_TIME_STEPS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500,
                  1_000, 2_000, 5_000, 10_000, 15_000, 30_000,
                  60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
                  3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
                  86_400_000, 2 * 86_400_000, 7 * 86_400_000, 14 * 86_400_000,
                  28 * 86_400_000)


def integer_ticks(lo: int, hi: int, most: int = 6) -> tuple[int, int, list[int]]:
    """Evenly spaced whole-number ticks covering lo..hi, at most `most` of them, a step of 1,
    2 or 5 times a power of ten: (axis bottom, axis top, ticks). The axis is widened to the
    ticks around lo and hi, so every tick sits at its true place and the gaps are equal."""
    lo, hi = int(lo), int(hi)
    if hi <= lo:
        return lo, lo, [lo]
    for step in (m * 10 ** k for k in itertools.count() for m in (1, 2, 5)):
        bottom, top = lo // step * step, -(-hi // step) * step
        if top - bottom <= step * (most - 1):
            return bottom, top, list(range(bottom, top + 1, step))
    raise AssertionError("unreachable")


def time_ticks(t0: int, t1: int, most: int = 7) -> tuple[int, list[int]]:
    """(step, ticks): the ticks are the multiples of a round step (1 s, 5 s, 1 min, 1 h, ...)
    that fall in t0..t1, at most `most` of them."""
    span = max(t1 - t0, 1)
    step = next((s for s in _TIME_STEPS_MS if span / s <= most - 1), _TIME_STEPS_MS[-1])
    while span / step > most - 1:   # longer than the steps above foresee (months of events)
        step *= 2
    first = -(-t0 // step) * step
    return step, list(range(first, t1 + 1, step))


def time_label(ms: int, step: int) -> str:
    """A tick's label, as precise as the step needs (UTC)."""
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    if step < 1000:
        decimals = 1 if step % 100 == 0 else 2 if step % 10 == 0 else 3
        return moment.strftime("%H:%M:%S.%f")[:9 + decimals]
    if step < 60_000:
        return moment.strftime("%H:%M:%S")
    if step < 10_800_000:
        return moment.strftime("%H:%M")
    if step < 86_400_000:
        return moment.strftime("%m-%d %H:%M")
    return moment.strftime("%m-%d")
