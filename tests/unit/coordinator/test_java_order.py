"""java_hash_set_order against what `new ArrayList<>(new HashSet<>(list))` printed on OpenJDK 17
for the same lists (the expected values below were produced by the JDK, not by this code)."""
from __future__ import annotations

from roster.coordinator.java_order import java_hash_set_order, java_string_hash

TEN = ["orders", "payments", "clicks", "audit", "events", "logs", "metrics", "users", "carts",
       "refunds"]


def test_ten_names_in_a_table_of_sixteen():
    assert java_hash_set_order(TEN) == (
        "carts", "audit", "payments", "clicks", "orders", "metrics", "logs", "events", "users",
        "refunds")


def test_a_repeated_name_counts_towards_the_table_size():
    eleven = TEN + ["shipments"]
    # 11 names: 16 buckets; the same 11 with "orders" sent twice: 32 buckets, another order
    assert java_hash_set_order(eleven) == (
        "carts", "audit", "payments", "clicks", "orders", "metrics", "logs", "shipments",
        "events", "users", "refunds")
    assert java_hash_set_order(TEN + ["orders", "shipments"]) == (
        "payments", "shipments", "users", "refunds", "carts", "audit", "clicks", "orders",
        "metrics", "logs", "events")


def test_names_in_one_bucket_keep_the_order_they_were_sent_in():
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert java_hash_set_order(["Aa", "BB", "x"]) == ("Aa", "BB", "x")
    assert java_hash_set_order(["BB", "Aa", "x"]) == ("BB", "Aa", "x")


def test_hashes_run_over_utf16_code_units():
    assert java_hash_set_order(["é-topic", "日本", "a\U0001F600b", "plain"]) == (
        "plain", "é-topic", "日本", "a\U0001F600b")
    assert java_string_hash("a\U0001F600b") == (
        ((97 * 31 + 0xD83D) * 31 + 0xDE00) * 31 + 98) % 2**32
