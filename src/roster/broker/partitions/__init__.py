"""Partitions and appends: the topic catalog, the partition logs, the one append path and
when appended data is durable, and the log cleaner."""
