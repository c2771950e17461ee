"""roster: a Kafka-wire-compatible broker whose heart is the consumer-group coordinator."""

__version__ = "0.1.0"
