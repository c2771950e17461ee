"""Aligned text tables, as Kafka's tools print them: a header row of upper-case names, then one
row per item, columns padded to the widest cell and separated by two spaces."""
from __future__ import annotations

from collections.abc import Sequence

MISSING = "-"   # what Kafka's tools print for a value that does not exist (no offset, no member)


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows (the header first) as aligned lines, without trailing blanks."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows]
