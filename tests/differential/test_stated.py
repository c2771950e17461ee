"""The check of docs/compatibility.md's Kafka column against Kafka's traces (stated.py) finds
what a trace lacks (no Kafka needed: the traces here are written out)."""
from tests.differential.stated import stated_errors, stated_generations, unsupported

OUTCOME = ("first join answered MEMBER_ID_REQUIRED then generation 1 as leader (KIP-394, "
           "SCRAM); the other's heartbeat sees REBALANCE_IN_PROGRESS, then NONE in generation 2")
TRACE = [
    {"step": "a JOIN_GROUP#1", "errors": ["member_id_required"], "generation_id": -1},
    {"step": "a JOIN_GROUP#2", "errors": ["none"], "generation_id": 1},
    {"step": "b HEARTBEAT#1", "errors": ["rebalance_in_progress"]},
    {"step": "b JOIN_GROUP#1", "errors": ["none"], "members": [{"generation_id": 2}]},
]


def test_error_names_and_generations_are_read_from_the_prose():
    assert stated_errors(OUTCOME) == ["member_id_required", "rebalance_in_progress", "none"]
    assert stated_generations(OUTCOME) == [1, 2]


def test_a_trace_that_shows_everything_stated_passes():
    assert unsupported(OUTCOME, TRACE) == []


def test_an_error_or_generation_the_trace_lacks_is_named():
    assert unsupported(OUTCOME.replace("REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID")
                       .replace("generation 2", "generation 3"), TRACE) == \
        ["error UNKNOWN_MEMBER_ID", "generation 3"]


def test_an_error_name_found_only_outside_an_error_field_does_not_count():
    trace = [{"step": "rebalance_in_progress", "label": "rebalance_in_progress"}, *TRACE[:2]]
    assert unsupported(OUTCOME, trace) == ["error REBALANCE_IN_PROGRESS", "generation 2"]
