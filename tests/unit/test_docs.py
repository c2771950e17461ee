from pathlib import Path

from roster.coordinator.classic.tables_doc import render

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_groups_doc_holds_the_current_state_tables():
    assert render() in (DOCS / "groups.md").read_text(), \
        "regenerate with: python -m roster.coordinator.classic.tables_doc"
