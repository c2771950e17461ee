"""roster.client: the member's side of the group protocol (static membership, KIP-814 as leader,
KIP-792 generations in subscriptions), the partition assignors, and a minimal consumer and
producer on top."""
