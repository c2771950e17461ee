"""A child process that commits offsets as fast as it can with confluent-kafka and prints one
line `group partition offset` after each acknowledged commit (flushed, so the parent knows
exactly what was acknowledged before it kills the broker)."""
import sys

from confluent_kafka import Consumer, KafkaException, TopicPartition


def main(bootstrap: str, topic: str, groups: int, partitions: int) -> None:
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"storm-{i}",
                           "enable.auto.commit": False}) for i in range(groups)]
    offset = 0
    while True:
        offset += 1
        for i, consumer in enumerate(consumers):
            partition = i % partitions
            try:
                consumer.commit(offsets=[TopicPartition(topic, partition, offset)],
                                asynchronous=False)
            except KafkaException:
                continue
            print(f"storm-{i} {partition} {offset}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
