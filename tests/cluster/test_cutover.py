"""A live pipeline moved from roster to the three-node Kafka cluster while a producer keeps
writing (docs/moving-to-kafka.md): a static group of three confluent-kafka members and a
roster.client static member (a group of its own) read and commit on roster; MirrorMaker 2
copies the records and translates the groups' offsets into the cluster; the members move one
at a time, then the producer. Every read is logged with the side it happened on, and the test
asserts:
- no acknowledged record is lost (each group read every acked id, on one side or the other);
- every record read twice was read once on roster and once on the cluster, inside its
  partition's hand-over window (from where the cluster side resumed to where roster stopped),
  and nothing is read twice on one side;
- `roster migrate --execute` first puts the topic on the cluster with roster's partition
  count and configs (min.insync.replicas, which MirrorMaker never copies);
- the cluster side resumes where MirrorMaker put the group, never past where roster stopped;
- where the roster reader of a partition had stopped before the cluster side resumed it, the
  window is MirrorMaker's translation re-read alone: measured, printed, and at most
  offset.lag.max once MirrorMaker has translated the final commit (the test waits for that
  before a group's first member joins the cluster, as docs/moving-to-kafka.md says);
  elsewhere the window also holds the records read on roster while the group spanned both
  (a group cannot be on two clusters at once: members moved one at a time overlap);
- the static members form on the cluster, and one restarted there gets its partitions back
  with no rebalance;
- the pipeline's users and ACLs move with it: roster is secured (SCRAM, StandardAuthorizer,
  nothing without an ACL) and every client of the pipeline runs as its SASL user on both
  sides (the members as the reader, the producers as the writer), so the pipeline working on
  the cluster is those users authenticating there and the ACLs `roster migrate` carried
  allowing it; and the cluster refuses what roster refused: the reader's write
  (TOPIC_AUTHORIZATION_FAILED), the writer joining the members' group
  (GROUP_AUTHORIZATION_FAILED) and the reader with a wrong password. MirrorMaker alone
  reads and writes as the brokers' PLAINTEXT super user;
- the time the cut-over took, printed.
The Spark streaming job's move is tests/cluster/test_cutover_spark.py, on the same cluster."""
from __future__ import annotations

import os
import time
from collections import Counter, defaultdict

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from roster.admin import acls as acl_wire
from roster.admin.client import AdminClient as RosterAdmin
from roster.security import users as user_wire
from roster.security.acls import AclBinding, Operation, Pattern, Permission, Resource
from tests.cluster import access
from tests.cluster.secured_roster import SHA512, admin_properties, secured_roster
from tests.support.cli import roster
from tests.support.kafka_peer import unique_name
from tests.support.live_pipeline import (
    Login,
    PacedProducer,
    Reads,
    RosterClientMember,
    StaticMember,
)
from tests.support.mirror_maker import MirrorMaker

pytestmark = pytest.mark.xdist_group("kafka_cluster")

PARTITIONS = 6
RATE = 100      # records per second
LAG_MAX = 10    # offset.lag.max: an offset sync at least every 11 records of a partition
WAIT_S = 120.0


def reading(reads: Reads, side: str, member: str, at_least_id: int = -1):
    return lambda rows: any(r.side == side and r.member == member and r.value >= at_least_id
                            for r in rows)


def pipeline_acls(topic: str, groups: tuple[str, ...], reader: str,
                  writer: str) -> list[AclBinding]:
    """The reader reads the topic in the pipeline's groups; the writer writes it; nothing
    else (an idempotent producer needs no more than WRITE on its topic, KIP-679)."""
    allow, literal = Permission.ALLOW, Pattern.LITERAL
    return [AclBinding(Resource.TOPIC, topic, literal, f"User:{reader}", "*", Operation.READ,
                       allow),
            AclBinding(Resource.TOPIC, topic, literal, f"User:{writer}", "*", Operation.WRITE,
                       allow),
            *(AclBinding(Resource.GROUP, g, literal, f"User:{reader}", "*", Operation.READ,
                         allow) for g in groups)]


def refusals(bootstrap: str, topic: str, group: str, reader, writer) -> dict[str, str]:
    """What the pipeline's users may not do, as each side answers it: the reader writing,
    the writer reading in the members' group, the reader with a wrong password."""
    return {
        "reader writes": access.produce(bootstrap, reader.user, reader.password, SHA512,
                                        topic, b"-1"),
        "writer reads": access.consume(bootstrap, writer.user, writer.password, SHA512, topic,
                                       group),
        "wrong password": access.login(bootstrap, reader.user, reader.password + "x", SHA512),
    }


REFUSED = {"reader writes": "TOPIC_AUTHORIZATION_FAILED",
           "writer reads": "GROUP_AUTHORIZATION_FAILED",
           "wrong password": "_AUTHENTICATION"}


def test_live_cutover_from_roster_to_the_cluster(cluster, tmp_path, capsys):
    topic = unique_name("cut-clicks")
    static_group, client_group = unique_name("cut-static"), unique_name("cut-client")
    reader = Login(unique_name("cut-reader"), "reader-secret")
    writer = Login(unique_name("cut-writer"), "writer-secret")
    source = secured_roster(tmp_path / "roster")
    try:
        _cutover(cluster, source, tmp_path, capsys, topic, static_group, client_group, reader,
                 writer)
    finally:
        source.stop()


def _cutover(cluster, source, tmp_path, capsys, topic, static_group, client_group, reader,
             writer) -> None:
    plain, sasl = source.listener("PLAINTEXT"), source.listener("SASL_PLAINTEXT")
    admin = AdminClient({"bootstrap.servers": plain})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1, config={
            "min.insync.replicas": "2", "retention.ms": "86400000"})]).values():
        future.result(timeout=30)
    bindings = pipeline_acls(topic, (static_group, client_group), reader.user, writer.user)
    with RosterAdmin(plain) as client:   # ANONYMOUS, a super user on PLAINTEXT
        for login in (reader, writer):
            user_wire.add_wire(client, login.user, SHA512, login.password, 4096)
        acl_wire.add(client, bindings)
    # what MirrorMaker does not carry first: the topic with roster's partition count and
    # configs (min.insync.replicas among them, which MirrorMaker never copies), the
    # pipeline's users (their passwords from a file) and its ACLs
    users = tmp_path / "users.txt"
    users.write_text(f"{reader.user}={reader.password}\n{writer.user}={writer.password}\n")
    os.chmod(users, 0o600)
    migrate = ("migrate", "--bootstrap-server", sasl,
               "--command-config", admin_properties(tmp_path / "admin.properties"),
               "--to", cluster.sasl_bootstrap, "--users-file", str(users))
    done = roster(*migrate, "--execute")
    print(f"--- roster migrate --execute\n{done.stdout}{done.stderr}")   # with pytest -s
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{topic}" in done.stdout and "nothing left to migrate" in done.stdout, done.stdout
    assert f"{reader.user} {SHA512}" in done.stdout and f"{writer.user} {SHA512}" in done.stdout
    for binding in bindings:
        assert f"add ALLOW {binding.operation.name} for {binding.principal} from host *" in \
            done.stdout, binding
    assert reader.password not in done.stdout + done.stderr
    for login in (reader, writer):   # on every node before a client of the pipeline asks
        cluster.wait_authenticates(login.user, login.password, SHA512)
    target_admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = target_admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["min.insync.replicas"].value == "2"
    assert len(target_admin.list_topics(topic, timeout=10).topics[topic].partitions) == \
        PARTITIONS

    reads = Reads()
    # what the users may not do: refused on roster, and (below) the same on the cluster
    refused = {"roster": refusals(sasl, topic, static_group, reader, writer)}
    producer = PacedProducer(sasl, topic, PARTITIONS, RATE, login=writer).start()
    ids = [f"{static_group}-m{i}" for i in (1, 2, 3)]
    on_roster = {i: StaticMember(sasl, "roster", static_group, i, topic, reads,
                                 login=reader).start() for i in ids}
    client_id = f"{client_group}-rc"
    client = RosterClientMember(sasl, "roster", client_group, client_id, topic, reads,
                                login=reader).start()
    on_cluster: dict[str, StaticMember] = {}
    mirror = MirrorMaker(plain, cluster.bootstrap, [topic],
                         groups=f"{static_group}|{client_group}", offset_lag_max=LAG_MAX,
                         source_alias=unique_name("roster"))
    second = None
    try:
        for member in [*ids, client_id]:
            reads.wait_for(reading(reads, "roster", member), WAIT_S, f"{member} reads on roster")
        roster_assignment = {i: set(m.assigned) for i, m in on_roster.items()}
        assert set().union(*roster_assignment.values()) == set(range(PARTITIONS))

        mirror.start()
        # nothing moves before MirrorMaker has put both groups' offsets on the cluster
        mirror.wait_group_synced(static_group, topic, PARTITIONS, timeout_s=WAIT_S)
        mirror.wait_group_synced(client_group, topic, PARTITIONS, timeout_s=WAIT_S)
        started = time.monotonic()

        translated, close_enough = {}, {}
        for n, i in enumerate(ids):   # one static member at a time: stop, start on the cluster
            on_roster[i].stop()
            if n == 0:
                translated[static_group], close_enough[static_group] = \
                    mirror.await_final_translation(static_group, topic, PARTITIONS,
                                                   roster_assignment[i], LAG_MAX)
            on_cluster[i] = StaticMember(cluster.sasl_bootstrap, "cluster", static_group, i,
                                         topic, reads, login=reader).start()
            reads.wait_for(reading(reads, "cluster", i), WAIT_S, f"{i} reads on the cluster")
        client.stop()
        translated[client_group], close_enough[client_group] = \
            mirror.await_final_translation(client_group, topic, PARTITIONS,
                                           set(range(PARTITIONS)), LAG_MAX)
        client = RosterClientMember(cluster.sasl_bootstrap, "cluster", client_group,
                                    client_id, topic, reads, login=reader).start()
        reads.wait_for(reading(reads, "cluster", client_id), WAIT_S,
                       f"{client_id} reads on the cluster")

        # the producer last: stop on roster, let MirrorMaker copy the rest, go on on the cluster
        next_id = producer.stop()
        mirror.wait_mirrored(topic, PARTITIONS, timeout_s=WAIT_S)
        second = PacedProducer(cluster.sasl_bootstrap, topic, PARTITIONS, RATE, next_id,
                               login=writer).start()
        reads.wait_for(lambda rows: {r.group for r in rows if r.value >= next_id} ==
                       {static_group, client_group}, WAIT_S,
                       "both groups read what the producer writes on the cluster")
        took = time.monotonic() - started
        refused["cluster"] = refusals(cluster.sasl_bootstrap, topic, static_group, reader,
                                      writer)
        assert refused == {"roster": REFUSED, "cluster": REFUSED}, refused

        # the static members formed on the cluster; one restarted keeps its partitions and
        # nobody rebalances (Kafka's static membership, KIP-345)
        cluster_assignment = {i: set(m.assigned) for i, m in on_cluster.items()}
        assert set().union(*cluster_assignment.values()) == set(range(PARTITIONS))
        assert all(cluster_assignment.values()), cluster_assignment
        before = {i: (m.assignments, m.revocations) for i, m in on_cluster.items()}
        bounced = ids[1]
        on_cluster[bounced].stop()
        on_cluster[bounced] = StaticMember(cluster.sasl_bootstrap, "cluster", static_group,
                                           bounced, topic, reads, login=reader).start()
        reads.wait_for(lambda rows: on_cluster[bounced].assigned != set(), WAIT_S,
                       f"{bounced} rejoins")
        assert on_cluster[bounced].assigned == cluster_assignment[bounced]
        others = [i for i in ids if i != bounced]
        assert {i: before[i] for i in others} == \
            {i: (on_cluster[i].assignments, on_cluster[i].revocations) for i in others}

        last_id = second.stop()
        second_acked = second.acked
        acked = producer.acked | second_acked
        assert not producer.failed and not second.failed
        assert len(acked) == last_id   # every record written was acknowledged
        for group in (static_group, client_group):
            reads.wait_for(lambda rows: acked <= {r.value for r in rows if r.group == group},
                           WAIT_S, f"{group} reads every acknowledged record")
    finally:
        for member in [*on_roster.values(), *on_cluster.values()]:
            member.stop()
        client.stop()
        producer.stop()
        if second is not None:
            second.stop()
        mirror.stop()

    report = []
    for group in (static_group, client_group):
        rows = [r for r in reads.snapshot() if r.group == group]
        assert acked <= {r.value for r in rows}
        by_side = defaultdict(Counter)
        for r in rows:
            by_side[r.side][r.value] += 1
        # nothing is read twice on one side
        assert all(count == 1 for side in by_side.values() for count in side.values()), group
        resumed = {p: min((r.offset for r in rows if r.side == "cluster" and r.partition == p))
                   for p in range(PARTITIONS)}
        stopped = {p: max((r.offset for r in rows if r.side == "roster" and r.partition == p),
                          default=-1) + 1 for p in range(PARTITIONS)}
        twice = {(r.partition, r.offset) for r in rows if r.side == "cluster"
                 and by_side["roster"][r.value]}
        # every record read twice lies in its partition's hand-over window
        assert all(resumed[p] <= offset < stopped[p] for p, offset in twice), group
        # never a skip: the cluster side resumed at or before where roster stopped
        assert all(resumed[p] <= stopped[p] for p in range(PARTITIONS)), (resumed, stopped)
        # and where MirrorMaker put the group before its first member joined there (a later
        # checkpoint may still have moved it forward before the join)
        assert all(translated[group][p] <= resumed[p] for p in range(PARTITIONS)), \
            (group, translated[group], resumed)
        if group == client_group:
            translation_only = set(range(PARTITIONS))   # it stopped before it moved
        else:
            # the partitions of the first member moved: nobody on roster read them after it
            translation_only = roster_assignment[ids[0]]
        for p in range(PARTITIONS):
            window = stopped[p] - resumed[p]
            report.append((group, p, window, p in translation_only))
            # MirrorMaker's translation alone re-reads at most offset.lag.max records once it
            # has had the group's final commit (an offset sync at least every
            # offset.lag.max + 1 records, the group resumes one past the one before)
            if p in translation_only and close_enough[group]:
                assert window <= LAG_MAX, (group, p, window)
        assert len(twice) == sum(w for g, _, w, _ in report if g == group)

    with capsys.disabled():
        static_twice = sum(w for g, _, w, _ in report if g == static_group)
        client_twice = sum(w for g, _, w, _ in report if g == client_group)
        reread = [w for _, _, w, only in report if only]
        print(f"\ncut-over of a live pipeline ({RATE} records/s, {PARTITIONS} partitions, "
              f"offset.lag.max={LAG_MAX}): {took:.1f}s from the first member's move to both "
              f"groups reading the cluster producer's records; {len(acked)} records acked, "
              "none lost")
        waited = "" if all(close_enough.values()) else \
            " (MirrorMaker had not translated the final commit within 10 s)"
        print(f"  MirrorMaker translation re-read per partition (reader stopped before the "
              f"move): {sorted(reread)} (max {max(reread)}){waited}")
        print(f"  read twice: static group {static_twice} (with the members moved one at a "
              f"time), roster.client group {client_twice}")
        print(f"  users and ACLs: 2 SCRAM users and {len(bindings)} ACLs carried by roster "
              "migrate; the pipeline ran as those users on the cluster, which refused "
              f"what roster refused: {REFUSED}")
