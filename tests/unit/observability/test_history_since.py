"""`roster groups history --since WHEN`: spans back from now, ISO 8601 times (UTC unless a zone
is given), 'all', a clear error for anything else, and a 7-day window by default."""
import datetime

import pytest

from roster.admin.client import AdminError
from roster.cli import build_parser
from roster.observability.history import parse_since

NOW = 1_800_000_000_000
HOUR = 3_600_000


@pytest.mark.parametrize("text, expected", [
    ("90s", NOW - 90_000), ("30m", NOW - HOUR // 2), ("2h", NOW - 2 * HOUR),
    ("7d", NOW - 7 * 24 * HOUR), ("2w", NOW - 14 * 24 * HOUR), (" 2H ", NOW - 2 * HOUR),
])
def test_spans_back_from_now(text, expected):
    assert parse_since(text, NOW) == expected


def test_times_are_utc_unless_they_name_a_zone():
    utc = datetime.datetime(2026, 11, 1, 8, 30, tzinfo=datetime.timezone.utc)
    assert parse_since("2026-11-01T08:30", NOW) == int(utc.timestamp() * 1000)
    assert parse_since("2026-11-01T09:30+01:00", NOW) == int(utc.timestamp() * 1000)
    assert parse_since("2026-11-01", NOW) == int(utc.timestamp() * 1000) - 8 * HOUR - HOUR // 2


def test_all_means_every_event_kept():
    assert parse_since("all", NOW) is None


@pytest.mark.parametrize("text", ["", "yesterday", "5x", "-2h", "h", "2026-13-01", "²d", "1.5h"])
def test_anything_else_is_a_clear_error(text):
    with pytest.raises(AdminError, match="--since"):
        parse_since(text, NOW)


def test_the_command_reads_the_last_seven_days_unless_told():
    args = build_parser().parse_args(["groups", "history", "g"])
    assert args.since == "7d" and not args.follow
    assert build_parser().parse_args(["groups", "history", "g", "--since", "all"]).since == "all"


@pytest.mark.parametrize("text", ["99999999999999999999d", "100000w", "1900-01-01",
                                  "0001-01-01T00:00+01:00"])
def test_a_time_before_1970_reads_from_the_first_event(text):
    # never a negative timestamp: ListOffsets takes -1 and -2 for latest and earliest, and a
    # span this long does not fit its int64
    assert parse_since(text, NOW) == 0
