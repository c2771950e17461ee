"""confluent-kafka's ShareConsumer (librdkafka's KIP-932 share consumer) driven as the Java judge
tests/java ShareConsumers is: the same stdin commands, the same JSON-line events, so a test
drives both clients alike and can kill -9 this process while it holds records.

    python -m tests.support.share_consumer_process

  start NAME TOPIC[,TOPIC] key=value ...   a ShareConsumer (client.id=NAME) on its own thread
  stop NAME                                 commit_sync() (implicit mode) and close() it
  quit                                      close everything and exit

judge.ack as in ShareConsumers.java: accept | release | release-once | reject-marked | hold
(confluent-kafka 2.16's AcknowledgeType has no RENEW, so no renew policy here). Events: ready,
started, record (partition, offset, deliveryCount, value, headers, t = time.monotonic_ns(), the
clock Java's System.nanoTime() reads), acked (after commit_sync answered; "sent": when it
was sent), holding, closed,
error."""
from __future__ import annotations

import json
import sys
import threading
import time

from confluent_kafka import AcknowledgeType, ShareConsumer

_OUT = threading.Lock()
MEMBERS: dict[str, Member] = {}


def emit(event: dict) -> None:
    with _OUT:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def _text(data) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


class Member:
    def __init__(self, name: str, topics: list[str], settings: dict[str, str]) -> None:
        self.name, self.topics = name, topics
        self.policy = settings.pop("judge.ack", "accept")
        self.conf = {"client.id": name, **settings}
        self.explicit = self.conf.get("share.acknowledgement.mode") == "explicit"
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"share-member-{name}", daemon=True)

    def decide(self, message) -> AcknowledgeType:
        if self.policy == "release":
            return AcknowledgeType.RELEASE
        if self.policy == "release-once":
            return AcknowledgeType.RELEASE if (message.delivery_count() or 1) == 1 \
                else AcknowledgeType.ACCEPT
        if self.policy == "reject-marked":
            value = _text(message.value()) or ""
            return AcknowledgeType.REJECT if value.startswith("reject") else AcknowledgeType.ACCEPT
        return AcknowledgeType.ACCEPT

    def event(self, kind: str, message=None) -> dict:
        event = {"event": kind, "member": self.name}
        if message is not None:
            event.update(topic=message.topic(), partition=message.partition(),
                         offset=message.offset(), t=time.monotonic_ns())
        return event

    def run(self) -> None:
        emit(self.event("started"))
        consumer = None
        try:
            consumer = ShareConsumer(self.conf)
            consumer.subscribe(self.topics)
            while not self.stopping.is_set():
                records = []
                for message in consumer.poll(0.2):
                    if message.error() is not None:
                        emit({**self.event("error"), "error": str(message.error())})
                        continue
                    records.append(message)
                    emit({**self.event("record", message), "deliveryCount": message.delivery_count(),
                          "key": _text(message.key()), "value": _text(message.value()),
                          "headers": {k: _text(v) for k, v in (message.headers() or [])}})
                if not self.explicit or not records:
                    continue
                if self.policy == "hold":
                    emit(self.event("holding"))
                    self.stopping.wait()
                    break
                types = {}
                for message in records:
                    types[(message.topic(), message.partition(), message.offset())] = \
                        kind = self.decide(message)
                    consumer.acknowledge(message, kind)
                sent = time.monotonic_ns()
                results = consumer.commit_sync(30)
                failed = {(tp.topic, tp.partition): str(error)
                          for tp, error in (results or {}).items() if error is not None}
                for message in records:
                    event = {**self.event("acked", message),
                             "type": types[(message.topic(), message.partition(),
                                            message.offset())].name, "sent": sent}
                    if (message.topic(), message.partition()) in failed:
                        event["error"] = failed[(message.topic(), message.partition())]
                    emit(event)
        except Exception as exc:   # reported, as the Java judge reports its exceptions
            emit({**self.event("error"), "error": type(exc).__name__, "message": str(exc)})
        if consumer is not None:
            try:
                if not self.explicit:   # as the Java judge: accept the last poll's, then close
                    consumer.commit_sync(30)
                consumer.close()
            except Exception as exc:
                emit({**self.event("error"), "error": type(exc).__name__, "message": str(exc)})
        emit(self.event("closed"))

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(60)


def main() -> None:
    emit({"event": "ready"})
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "start":
                settings = dict(w.split("=", 1) for w in words[3:])
                member = Member(words[1], words[2].split(","), settings)
                if MEMBERS.setdefault(words[1], member) is not member:
                    raise ValueError(f"member {words[1]} is running")
                member.thread.start()
            elif words[0] == "stop":
                if words[1] in MEMBERS:
                    MEMBERS.pop(words[1]).stop()
            elif words[0] == "quit":
                break
            else:
                raise ValueError(line.strip())
        except Exception as exc:
            emit({"event": "bad-command", "error": type(exc).__name__, "message": str(exc)})
    for member in list(MEMBERS.values()):
        member.stop()
    emit({"event": "bye"})


if __name__ == "__main__":
    main()
