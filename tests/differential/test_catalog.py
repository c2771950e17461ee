"""docs/compatibility.md is what the scenarios and the listed differences say (no Kafka needed)."""
from tests.differential.catalog import DOC, render


def test_compatibility_doc_lists_every_scenario_as_the_harness_compares_it():
    assert DOC.read_text() == render(), (
        "docs/compatibility.md is stale: .venv/bin/python -m tests.differential.catalog "
        "> docs/compatibility.md")
