"""Render the state tables of states.py as Markdown, for docs/groups.md.

`python -m roster.coordinator.classic.tables_doc` prints the block; a test checks docs/groups.md holds
exactly what this prints, so the documentation cannot drift from the code.
"""
from __future__ import annotations

from roster.coordinator.classic.states import (
    ANSWER_TABLES,
    LEGAL_PREVIOUS,
    NOTES,
    UNDOABLE,
    Action,
    Cell,
    GroupState,
    Refuse,
)
from roster.protocol.errors import ErrorCode

BEGIN = "<!-- generated from roster/coordinator/classic/states.py: begin -->"
END = "<!-- generated from roster/coordinator/classic/states.py: end -->"


def describe(api: str, state: GroupState, cell: Cell) -> str:
    match cell:
        case Refuse(error=error):
            text = f"{error.name} (to anyone)"
        case ErrorCode():
            text = cell.name
        case Action():
            text = cell.value
        case _:
            raise TypeError(f"not a table cell: {cell!r}")
    note = NOTES.get((api, state))
    return f"{text} ({note})" if note else text


def render() -> str:
    order = list(GroupState)
    lines = [BEGIN, "", "| target state | may be entered from |", "|---|---|"]
    for target in order:
        sources = ", ".join(s.value for s in order if s in LEGAL_PREVIOUS[target])
        lines.append(f"| {target.value} | {sources} |")
    for current, targets in UNDOABLE.items():
        for target in sorted(targets, key=order.index):
            lines += ["", f"Undone when its records cannot be written: {current.value} back to "
                          f"{target.value} (a group being deleted)."]
    lines += ["", "How a valid member of the current generation is answered, by state (each "
              "handler looks its cell up first; \"to anyone\" is answered before the caller "
              "is checked):", ""]
    lines.append("| API | " + " | ".join(s.value for s in order) + " |")
    lines.append("|---" * (len(order) + 1) + "|")
    for api, table in ANSWER_TABLES.items():
        lines.append(f"| {api} | " + " | ".join(describe(api, s, table[s]) for s in order) + " |")
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
