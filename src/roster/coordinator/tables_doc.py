"""Render the state tables of states.py as Markdown, for docs/groups.md.

`python -m roster.coordinator.tables_doc` prints the block; a test checks docs/groups.md holds
exactly what this prints, so the documentation cannot drift from the code.
"""
from __future__ import annotations

from roster.coordinator.states import ANSWER_TABLES, LEGAL_PREVIOUS, GroupState

BEGIN = "<!-- generated from roster/coordinator/states.py: begin -->"
END = "<!-- generated from roster/coordinator/states.py: end -->"


def render() -> str:
    order = list(GroupState)
    lines = [BEGIN, "", "| target state | may be entered from |", "|---|---|"]
    for target in order:
        sources = ", ".join(s.value for s in order if s in LEGAL_PREVIOUS[target])
        lines.append(f"| {target.value} | {sources} |")
    lines += ["", "How a valid member of the current generation is answered, by state:", ""]
    lines.append("| API | " + " | ".join(s.value for s in order) + " |")
    lines.append("|---" * (len(order) + 1) + "|")
    for api, table in ANSWER_TABLES.items():
        lines.append(f"| {api} | " + " | ".join(table[s] for s in order) + " |")
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
