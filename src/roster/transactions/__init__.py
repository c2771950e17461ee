"""Transactions (KIP-98, KIP-447): the transaction coordinator's pure core.

- state.py: TxnState (Kafka's byte ids) and the immutable TxnMetadata of a transactional id;
- log_records.py: __transaction_state records in Kafka's TransactionLogKey/Value layout;
- coordinator.py: the decisions (InitProducerId, AddPartitionsToTxn/AddOffsetsToTxn, EndTxn,
  timeouts, expiry, replay), each answering an Outcome the edge carries out;
- errors.py: errors as each request version may be told them.

The edge is roster.broker.transactions.runtime (writes, markers, timers); the handlers are
broker/handlers/{init_producer_id,add_partitions_to_txn,add_offsets_to_txn,end_txn}.py.

Seams for the parts built by others (docs/transactions.md says the same):
- READ side (last stable offset, read_committed Fetch, aborted-transaction index, ListOffsets
  isolation, compaction of aborted data): every marker enters a log through ONE function,
  roster.broker.transactions.transaction_markers.write_transaction_marker, which returns a MarkerAppended
  (topic, partition, offset, producer id/epoch, commit); the marker bytes are
  roster.log.control (marker_batch / read_marker, for scanning a log at load). Open
  transactions per partition start at the first transactional batch of a producer (produce.py
  calls TransactionRuntime.check_produce for every transactional batch: the place to note it).
- GROUP side (KIP-447 TxnOffsetCommit): offsets are written as a transactional batch to the
  group's __consumer_offsets partition and kept PENDING in the OffsetStore; the runtime calls
  TransactionRuntime.on_offsets_marker(producer_id, commit, offsets partitions) once a marker
  is durable there, to commit or drop them; replay of __consumer_offsets meets the same marker.
- ADMIN (DescribeTransactions, ListTransactions, kafka-transactions abort): iterate the
  coordinator (TransactionCoordinator.__iter__ / get) for what is described; an abort of a
  hanging transaction writes a marker through write_transaction_marker.
"""
