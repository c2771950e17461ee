"""Go clients judge transactions, on roster and on Apache Kafka 4.4 alike: franz-go (pkg/kgo) and
IBM/sarama, pinned in tests/go/go.mod (programs in tests/go/, built once per source checksum by
tests/support/go_judges.py).

- A transactional producer of each commits one transaction and aborts one: franz-go's and
  sarama's readers see the commit and not the abort at read_committed, both at read_uncommitted
  (franz-go also shows both markers). franz-go does so with Transaction Version 2 from its first
  transaction (it learns the finalized transaction.version from ApiVersions, which it first asks
  at a version roster does not serve), sarama with the classic protocol.
- A franz-go producer fenced by a second one with its transactional.id (a zombie): its write is
  refused with INVALID_PRODUCER_EPOCH, its commit fails, nothing of it is read.
- Three franz-go producers' transactions interleaved, two aborted: both readers keep only the
  committed ones at read_committed, fetching whole or batch by batch.
- franz-go's GroupTransactSession (a static member: kgo.InstanceID) copies a topic while it is
  SIGKILLed at several points and restarted: the output at read_committed holds every input record
  exactly once, and the group's committed offsets are the input's end.
- Two such sessions (static members, a transactional.id each) copy a topic through a
  rebalance and a SIGKILL of each: exactly once, offsets at the end.
- Two such sessions with the consumer group protocol (KIP-848: each TxnOffsetCommit carries the
  member epoch), the second joining while the first copies: exactly once, offsets at the end.
- sarama's consumer group copies a topic with AddMessageToTxnWithGroupMetadata (KIP-447): every
  record exactly once, offsets at the end.
"""
from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.support import go_judges
from tests.support.go_judges import GoProgram
from tests.support.judges import roster_broker, target, topic_with  # noqa: F401
from tests.support.kafka_peer import unique_name
from tests.support.transactions import fetch_offsets, log_entries

ROSTER = pytest.param("roster", marks=[pytest.mark.interop, pytest.mark.xdist_group("go-judges")])
KAFKA = pytest.param("kafka", marks=[pytest.mark.interop, pytest.mark.xdist_group("kafka")])
TARGETS = pytest.mark.parametrize("target", [ROSTER, KAFKA], indirect=True)

PER_TRANSACTION = 3
SENTINEL = "end-of-test"     # written plainly after the transactions: where a reader may stop
LOOP_PARTITIONS = 2
LOOP_RECORDS = 400            # 200 a partition; each run is killed within its first transactions
LOOP_BATCH = 25
# (the event after which the loop is SIGKILLed, and how many of them in that run first)
KILLS = (("committed", 1), ("produced", 2), ("assigned", 1), ("produced", 1))


@pytest.fixture(scope="session")
def binaries():
    return go_judges.build()


def run(binaries, name: str, *args: str, until: str) -> GoProgram:
    """Run a program to the end: its `until` event, then a clean exit."""
    program = GoProgram(binaries, name, *args).start()
    try:
        program.wait_for(lambda: program.select(until) or program.select("error"),
                         f"{name} {args[0]}: '{until}'")
        assert not program.select("error"), program.select("error")
        assert program.proc.wait(30) == 0, program.stderr[-30:]
    finally:
        program.kill9()
    return program


def read(binaries, bootstrap: str, topic: str, isolation: str) -> tuple[list[str], int]:
    """franz-go reading the topic to its end at `isolation`: the values, and how many markers."""
    reader = run(binaries, "franz", "read", "-brokers", bootstrap, "-topic", topic,
                 "-isolation", isolation, until="end")
    return [e["value"] for e in reader.select("record")], len(reader.select("marker"))


def read_with_sarama(binaries, bootstrap: str, topic: str, isolation: str) -> list[str]:
    """sarama reading partition 0 up to the SENTINEL record (it never shows markers)."""
    reader = run(binaries, "sarama", "read", "-brokers", bootstrap, "-topic", topic,
                 "-isolation", isolation, "-until", SENTINEL, until="end")
    return [e["value"] for e in reader.select("record")]


def markers(bootstrap: str, topic: str, count: int, timeout_s: float = 30.0) -> list[int]:
    """The producer epochs of the topic's transaction markers, once `count` are in the log:
    Kafka answers EndTxn before it writes the marker, so the last one can still be on its way
    when the producer reports its abort."""
    deadline = time.monotonic() + timeout_s
    while True:
        epochs = [epoch for kind, _, epoch in log_entries(bootstrap, topic) if kind != "data"]
        if len(epochs) >= count or time.monotonic() > deadline:
            return epochs
        time.sleep(0.1)   # polling the log: no event tells a client a marker was written


@TARGETS
@pytest.mark.parametrize("client", ["franz", "sarama"])
def test_a_commit_is_visible_and_an_abort_is_not_at_read_committed(binaries, target, client):
    topic = topic_with(target, f"go-{client}-txn", 1)
    producer = run(binaries, client, "produce", "-brokers", target.bootstrap, "-topic", topic,
                   "-txid", unique_name(f"{client}-producer"), "-count", str(PER_TRANSACTION),
                   until="aborted")
    assert [e["event"] for e in producer.events] == ["committed", "aborted"]
    # franz-go speaks Transaction Version 2 from its first transaction, as both brokers finalize
    # it (each EndTxn bumps the epoch its marker carries); sarama the classic protocol
    epochs = markers(target.bootstrap, topic, 2)
    assert epochs == ([epochs[0], epochs[0] + 1] if client == "franz" else [epochs[0]] * 2)
    produce_input(target.bootstrap, topic, [SENTINEL], 1)
    committed = [f"c-{i}" for i in range(PER_TRANSACTION)] + [SENTINEL]
    both = committed[:-1] + [f"a-{i}" for i in range(PER_TRANSACTION)] + [SENTINEL]
    assert read(binaries, target.bootstrap, topic, "committed") == (committed, 2)
    assert read(binaries, target.bootstrap, topic, "uncommitted") == (both, 2)
    assert read_with_sarama(binaries, target.bootstrap, topic, "committed") == committed
    assert read_with_sarama(binaries, target.bootstrap, topic, "uncommitted") == both


@TARGETS
@pytest.mark.parametrize("fetch_bytes", ["0", "1"], ids=["whole", "batch-by-batch"])
def test_interleaved_transactions_read_committed(binaries, target, fetch_bytes):
    """Three franz-go producers interleave in one partition, two transactions aborted; both Go
    readers drop exactly the aborted ranges, also when every fetch returns one batch (so each
    starts inside an open range and relies on the fetch's aborted-transactions list)."""
    topic = topic_with(target, "go-interleaved", 1)
    run(binaries, "franz", "interleave", "-brokers", target.bootstrap, "-topic", topic,
        "-txid", unique_name("interleaved"), until="done")
    produce_input(target.bootstrap, topic, [SENTINEL], 1)
    reader = run(binaries, "franz", "read", "-brokers", target.bootstrap, "-topic", topic,
                 "-isolation", "committed", "-fetch-bytes", fetch_bytes, until="end")
    assert [e["value"] for e in reader.select("record")] == ["b1", "c1", "c2", SENTINEL]
    sarama = run(binaries, "sarama", "read", "-brokers", target.bootstrap, "-topic", topic,
                 "-isolation", "committed", "-until", SENTINEL, "-fetch-bytes", fetch_bytes,
                 until="end")
    assert [e["value"] for e in sarama.select("record")] == ["b1", "c1", "c2", SENTINEL]


@TARGETS
def test_a_fenced_franz_producer_cannot_write_or_commit(binaries, target):
    """A zombie: producer A's transaction is open when producer B starts with the same
    transactional.id; A's next write is refused with INVALID_PRODUCER_EPOCH (both brokers answer
    it so), its commit fails, and read_committed sees B's record alone."""
    topic = topic_with(target, "go-zombie", 1)
    zombie = run(binaries, "franz", "zombie", "-brokers", target.bootstrap, "-topic", topic,
                 "-txid", unique_name("zombie"), until="fenced")
    [fenced] = zombie.select("fenced")
    assert fenced["produce"].startswith("INVALID_PRODUCER_EPOCH"), fenced
    assert fenced["commit"], fenced
    produce_input(target.bootstrap, topic, [SENTINEL], 1)
    assert read(binaries, target.bootstrap, topic, "committed")[0] == ["b-0", SENTINEL]


def input_values(count: int) -> list[str]:
    return [f"in-{i}" for i in range(count)]


def produce_input(bootstrap: str, topic: str, values: list[str], partitions: int) -> list[str]:
    """Plain (non-transactional) records, round robin over the partitions."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    return values


def copied_ends(runs: list[GoProgram]) -> dict[int, int]:
    """The highest next offset per input partition that any run saw committed."""
    ends: dict[int, int] = {}
    for program in runs:
        for event in program.select("committed"):
            for partition, offset in event["next"].items():
                ends[int(partition)] = max(ends.get(int(partition), 0), offset)
    return ends


def wait_for_the_copy(program: GoProgram, runs: list[GoProgram], bootstrap: str, group: str,
                      source: str, ends: dict[int, int]) -> None:
    """Until the group's committed offsets are the input's end: seen in the runs' commit events,
    or else asked of the broker (a run killed between its commit and the event never told)."""
    program.wait_for(
        lambda: copied_ends(runs) == ends or fetch_offsets(bootstrap, group, source, ends) == ends,
        lambda: f"the copy to reach {ends}: {copied_ends(runs)}")


@TARGETS
def test_franz_group_transact_session_copies_exactly_once_through_kill9(binaries, target):
    source = topic_with(target, "go-loop-in", LOOP_PARTITIONS)
    sink = topic_with(target, "go-loop-out", LOOP_PARTITIONS)
    values = produce_input(target.bootstrap, source, input_values(LOOP_RECORDS),
                           LOOP_PARTITIONS)
    ends = {p: LOOP_RECORDS // LOOP_PARTITIONS for p in range(LOOP_PARTITIONS)}
    group, txid = unique_name("go-loop"), unique_name("go-loop-tx")
    args = ("loop", "-brokers", target.bootstrap, "-in", source, "-out", sink, "-group", group,
            "-txid", txid, "-instance", "copier-1", "-batch", str(LOOP_BATCH))
    runs: list[GoProgram] = []
    try:
        for event, times in KILLS:
            program = GoProgram(binaries, "franz", *args).start()
            runs.append(program)
            program.wait_for(lambda: len(program.select(event)) >= times or copied_ends(runs) == ends,
                             f"the loop's {event} #{times}")
            program.kill9()
        last = GoProgram(binaries, "franz", *args).start()
        runs.append(last)
        wait_for_the_copy(last, runs, target.bootstrap, group, source, ends)
        last.stop()
        assert last.select("closed"), last.stderr[-30:]
    finally:
        for program in runs:
            program.kill9()
    assert not [e for program in runs for e in program.select("error")]
    output, markers = read(binaries, target.bootstrap, sink, "committed")
    duplicates = [value for value, n in Counter(output).items() if n > 1]
    assert duplicates == []
    assert sorted(output) == sorted(f"{value}|copied" for value in values)
    assert fetch_offsets(target.bootstrap, group, source, range(LOOP_PARTITIONS)) == ends


class PairCopy:
    """400 records in 4 partitions, copied by franz-go loops (static members, a transactional.id
    each, 10 records a transaction) into another topic; `check` is what every such copy must
    end with."""

    def __init__(self, binaries, target, name: str, *flags: str) -> None:
        self.binaries, self.target, self.flags = binaries, target, flags
        partitions, records = 4, 400
        self.source = topic_with(target, f"{name}-in", partitions)
        self.sink = topic_with(target, f"{name}-out", partitions)
        self.values = produce_input(target.bootstrap, self.source, input_values(records),
                                    partitions)
        self.ends = {p: records // partitions for p in range(partitions)}
        self.group = unique_name(name)
        self.runs: list[GoProgram] = []

    def member(self, name: str) -> GoProgram:
        program = GoProgram(self.binaries, "franz", "loop", "-brokers", self.target.bootstrap,
                            "-in", self.source, "-out", self.sink, "-group", self.group,
                            "-txid", f"{self.group}-{name}", "-instance", name,
                            "-batch", "10", *self.flags).start()
        self.runs.append(program)
        return program

    def commits(self, program: GoProgram, count: int) -> None:
        program.wait_for(lambda: len(program.select("committed")) >= count
                         or copied_ends(self.runs) == self.ends, f"{count} commits")

    def finish(self, program: GoProgram) -> None:
        """Until the copy is done; then every run is stopped (a clean leave)."""
        wait_for_the_copy(program, self.runs, self.target.bootstrap, self.group, self.source,
                          self.ends)
        for run in self.runs:
            run.stop()

    def check(self) -> None:
        assert not [e for program in self.runs for e in program.select("error")]
        output, _ = read(self.binaries, self.target.bootstrap, self.sink, "committed")
        assert sorted(output) == sorted(f"{value}|copied" for value in self.values)
        assert fetch_offsets(self.target.bootstrap, self.group, self.source,
                             range(len(self.ends))) == self.ends


@TARGETS
def test_two_franz_sessions_copy_exactly_once_through_rebalances_and_kill9(binaries, target):
    """Two static members, each with its own transactional.id: B joins while A copies (a
    rebalance: KIP-447 fences commits of the old generation), A is SIGKILLed and comes back,
    then B is; the output still holds every input record once and the offsets are the end."""
    copy = PairCopy(binaries, target, "go-pair")
    try:
        a = copy.member("a")
        copy.commits(a, 3)
        b = copy.member("b")
        copy.commits(b, 2)
        a.kill9()
        copy.commits(copy.member("a"), 1)
        b.kill9()
        copy.finish(copy.member("b"))
    finally:
        for program in copy.runs:
            program.kill9()
    copy.check()


@TARGETS
def test_two_franz_sessions_of_the_consumer_group_protocol_copy_exactly_once(binaries, target):
    """KIP-447 with KIP-848: two GroupTransactSessions with the consumer group protocol, B
    joining while A copies (its partitions move to B once A has revoked them), each commit a
    TxnOffsetCommit at the member's epoch: every input record copied once, offsets at the end,
    and no transaction fails (each `End` error would be an "error" event)."""
    copy = PairCopy(binaries, target, "go-848", "-protocol", "consumer")
    try:
        a = copy.member("a")
        copy.commits(a, 3)
        b = copy.member("b")
        b.wait_for(lambda: any(e["partitions"] for e in b.select("assigned")),
                   "b's share of the partitions")
        copy.finish(b)
    finally:
        for program in copy.runs:
            program.kill9()
    assert all(program.select("closed") for program in copy.runs)
    copy.check()


@TARGETS
def test_sarama_consumer_group_copies_exactly_once_with_add_message_to_txn(binaries, target):
    source = topic_with(target, "go-sarama-in", 2)
    sink = topic_with(target, "go-sarama-out", 1)
    values = produce_input(target.bootstrap, source, input_values(20), 2)
    group = unique_name("go-sarama")
    copier = run(binaries, "sarama", "copy", "-brokers", target.bootstrap, "-in", source,
                 "-out", sink, "-group", group, "-txid", unique_name("go-sarama-tx"),
                 "-expect", str(len(values)), until="done")
    assert copier.select("done") == [{"event": "done", "copied": len(values)}]
    output, markers = read(binaries, target.bootstrap, sink, "committed")
    assert sorted(output) == sorted(f"{value}|copied" for value in values)
    assert markers == len(values)      # one transaction a record
    assert fetch_offsets(target.bootstrap, group, source, range(2)) == {0: 10, 1: 10}
