"""Stopping a streaming query while its foreachBatch function is inside a Py4J call must stop
it cleanly. Spark 4.3 recognises that interruption by matching the Py4J error text with a
regular expression that recurses once per character; on a default 1 MB thread stack the
stream thread dies with a StackOverflowError printed to the driver's stderr (the query still
reports no exception, so only the log shows it). The tests' session gives the driver a larger
thread stack (tests/spark/session.py).

The driver JVM's stderr is not the test process's Python-level stderr, so the query runs in a
child process on the tests' own local_session settings and the test reads what the JVM wrote."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

REPO = Path(__file__).resolve().parents[2]

# the batch function runs a Spark job far too long to finish, waits until Spark runs it, and
# the main thread stops the query then: stop() interrupts the job inside the Py4J call
SCRIPT = textwrap.dedent("""
    import threading, time
    from tests.spark.session import local_session

    spark = local_session("roster-stream-stop")
    interrupted = threading.Event()

    def batch(df, batch_id):
        try:
            df.sparkSession.range(10**12).selectExpr("sum(id)").collect()
        except Exception:
            interrupted.set()
            raise

    query = spark.readStream.format("rate").load().writeStream.foreachBatch(batch).start()
    deadline = time.monotonic() + 120
    while not spark.sparkContext.statusTracker().getActiveJobsIds():
        assert time.monotonic() < deadline, "the batch's job never started"
        time.sleep(0.1)
    query.stop()
    print("interrupted-in-call", interrupted.is_set(), flush=True)
    print("query-exception", query.exception(), flush=True)
    spark.stop()
""")


def test_stopping_a_query_inside_a_py4j_call_prints_no_stack_overflow():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    # the stop really landed inside the batch function's Py4J call
    assert "interrupted-in-call True" in done.stdout, output[-4000:]
    assert "query-exception None" in done.stdout, output[-4000:]
    assert "StackOverflowError" not in output, output[:4000]
