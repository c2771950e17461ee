"""FindCoordinator authorizes each key as Kafka does: DESCRIBE on the GROUP for a group key,
DESCRIBE on the TRANSACTIONAL_ID for a transaction key (it used to be asked as a group), and
the transactional APIs ask WRITE on the transactional id (a whole-request refusal)."""
from __future__ import annotations

import datetime
from types import SimpleNamespace

from roster.protocol.acl import AclOperation, ResourceType
from roster.protocol.api_keys import ApiKey
from roster.protocol.errors import ErrorCode as E
from tests.unit.test_admission import Recording, make_broker, serve

TXN = ResourceType.TRANSACTIONAL_ID


def only_transactional_ids(operation, resource_type, name):
    return resource_type == TXN and name == "allowed"


def broker_with(authorizer):
    broker = make_broker(authorizer)
    created = []
    broker.transactions = SimpleNamespace(log=SimpleNamespace(
        ensure_topic=lambda: created.append(True)))
    return broker, created


def test_a_transaction_key_is_authorized_on_the_transactional_id():
    recording = Recording(only_transactional_ids)
    broker, created = broker_with(recording)
    found = serve(broker, ApiKey.FIND_COORDINATOR, 4, key_type=1,
                  coordinator_keys=("allowed", "other"))
    assert [(c.key, c.error_code) for c in found.coordinators] == [
        ("allowed", E.none), ("other", E.transactional_id_authorization_failed)]
    assert ("User:alice", "10.0.0.1", AclOperation.DESCRIBE, TXN, "allowed") in recording.asked
    assert created       # __transaction_state is created on the first transaction lookup
    # a group key is still a group
    grouped = serve(broker, ApiKey.FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("allowed",))
    assert [c.error_code for c in grouped.coordinators] == [E.group_authorization_failed]
    old = serve(broker, ApiKey.FIND_COORDINATOR, 2, key_type=1, key="other")
    assert old.error_code is E.transactional_id_authorization_failed
    assert serve(broker, ApiKey.FIND_COORDINATOR, 2, key_type=1, key="allowed").error_code \
        is E.none


def test_transactional_apis_refuse_without_write_on_the_transactional_id():
    broker, _ = broker_with(Recording(lambda *_: False))
    assert serve(broker, ApiKey.INIT_PRODUCER_ID, 4, transactional_id="t",
                 transaction_timeout=datetime.timedelta(seconds=10), producer_id=-1,
                 producer_epoch=-1).error_code is E.transactional_id_authorization_failed
    assert serve(broker, ApiKey.END_TXN, 3, transactional_id="t", producer_id=1,
                 producer_epoch=0, committed=True).error_code \
        is E.transactional_id_authorization_failed
    assert serve(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, transactional_id="t", producer_id=1,
                 producer_epoch=0, group_id="g").error_code \
        is E.transactional_id_authorization_failed
