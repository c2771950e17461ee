"""IncrementalAlterConfigs' steps on a topic's own settings (topics.changed_configs)."""
import pytest

from roster.broker.partitions.topics import APPEND, DELETE, SET, SUBTRACT, TopicError, changed_configs


def test_set_and_delete_change_only_what_they_name():
    current = {"retention.ms": "1000", "segment.bytes": "4096"}
    assert changed_configs(current, [("retention.ms", SET, "2000"),
                                     ("segment.bytes", DELETE, None),
                                     ("retention.bytes", DELETE, None)]) == {"retention.ms": "2000"}
    assert current == {"retention.ms": "1000", "segment.bytes": "4096"}  # not changed in place


def test_append_and_subtract_work_on_list_settings_from_their_default():
    assert changed_configs({}, [("cleanup.policy", APPEND, "delete")]) == \
        {"cleanup.policy": "delete"}
    assert changed_configs({}, [("cleanup.policy", APPEND, "compact")]) == \
        {"cleanup.policy": "delete,compact"}  # check_topic_configs refuses it afterwards
    assert changed_configs({"cleanup.policy": "delete"},
                           [("cleanup.policy", SUBTRACT, "delete")]) == {"cleanup.policy": ""}


@pytest.mark.parametrize("steps, code", [
    ([("retention.ms", APPEND, "5")], "invalid_config"),      # not a list
    ([("retention.ms", SET, None)], "invalid_config"),
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], "invalid_request"),
    ([("retention.ms", 7, "1")], "invalid_request"),
])
def test_malformed_steps_are_refused(steps, code):
    with pytest.raises(TopicError) as refused:
        changed_configs({}, steps)
    assert refused.value.code == code
