"""hash_set_order against what `new ArrayList<>(new HashSet<>(list))` printed on OpenJDK 17
for the same lists (the expected values below were produced by the JDK, not by this code)."""
from __future__ import annotations

from roster.protocol.java_order import coordinator_order, hash_set_order, timeline_hash_order
from roster.protocol.partitioning import java_string_hash

TEN = ["orders", "payments", "clicks", "audit", "events", "logs", "metrics", "users", "carts",
       "refunds"]


def test_ten_names_in_a_table_of_sixteen():
    assert hash_set_order(TEN) == (
        "carts", "audit", "payments", "clicks", "orders", "metrics", "logs", "events", "users",
        "refunds")


def test_a_repeated_name_counts_towards_the_table_size():
    eleven = TEN + ["shipments"]
    # 11 names: 16 buckets; the same 11 with "orders" sent twice: 32 buckets, another order
    assert hash_set_order(eleven) == (
        "carts", "audit", "payments", "clicks", "orders", "metrics", "logs", "shipments",
        "events", "users", "refunds")
    assert hash_set_order(TEN + ["orders", "shipments"]) == (
        "payments", "shipments", "users", "refunds", "carts", "audit", "clicks", "orders",
        "metrics", "logs", "events")


def test_names_in_one_bucket_keep_the_order_they_were_sent_in():
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert hash_set_order(["Aa", "BB", "x"]) == ("Aa", "BB", "x")
    assert hash_set_order(["BB", "Aa", "x"]) == ("BB", "Aa", "x")


def test_hashes_run_over_utf16_code_units():
    assert hash_set_order(["é-topic", "日本", "a\U0001F600b", "plain"]) == (
        "plain", "é-topic", "日本", "a\U0001F600b")
    assert java_string_hash("a\U0001F600b") % 2**32 == (
        ((97 * 31 + 0xD83D) * 31 + 0xDE00) * 31 + 98) % 2**32


# coordinator_order against the orders Kafka 4.4 answered (five __consumer_offsets partitions:
# "" and "x.simple" in partition 0, "x.nobody" and "x.share" in 1, "x.classic" in 3)
def g(name: str) -> str:
    return f"list_and_describe_edges.{name}"


def test_groups_come_by_partition_in_hash_map_order_each_partition_as_asked():
    asked = [g("nobody"), "", g("classic"), g("classic")]
    assert coordinator_order(asked, 5, empty_first=False) == [
        "", g("classic"), g("classic"), g("nobody")]           # DescribeGroups
    assert coordinator_order([g("nobody"), "", g("share"), g("share")], 5, empty_first=True) \
        == ["", g("nobody"), g("share"), g("share")]           # ShareGroupDescribe


def test_an_empty_id_goes_first_only_where_the_api_turns_it_away_first():
    # (the rule the answers above follow: the newer describes answer "" INVALID_GROUP_ID before
    # any partition; DescribeGroups and DeleteGroups treat it as a group of partition 0)
    asked = [g("simple"), g("nobody"), ""]
    assert coordinator_order(asked, 5, empty_first=True) == ["", g("simple"), g("nobody")]
    assert coordinator_order(asked, 5, empty_first=False) == [g("simple"), "", g("nobody")]


def test_timeline_hash_map_order():
    """As Kafka 4.4's org.apache.kafka.timeline.TimelineHashMap (kafka-server-common 4.4.0)
    iterated these keys, put into an empty map in this order."""
    assert timeline_hash_order(["range", "uniform"]) == ["uniform", "range"]
    assert timeline_hash_order(["uniform", "range"]) == ["uniform", "range"]
    assert timeline_hash_order(["a", "b", "c"]) == ["c", "b", "a"]
    assert timeline_hash_order(["orders", "payments", "clicks", "audit", "events"]) == [
        "clicks", "events", "audit", "orders", "payments"]
    assert timeline_hash_order([f"x{i}" for i in range(1, 14)]) == [
        "x7", "x10", "x4", "x12", "x9", "x1", "x6", "x3", "x8", "x11", "x5", "x13", "x2"]
    assert timeline_hash_order(["Aa", "BB"]) == ["BB", "Aa"]     # one slot: last added first
    assert timeline_hash_order(["BB", "Aa"]) == ["Aa", "BB"]
