"""`make run`'s job end to end (roster.pipeline, its own broker and Spark, on a free port and a
data directory of its own): every batch Spark finished is printed, the lag summary counts only
what Spark has not processed (its checkpoint is a batch ahead of the group's commits), and the
closing hints are the commands for this run: `make serve` with its PORT and DATA does start the
broker on that data, and the hinted `roster groups describe` finds the group there."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from roster.pipeline import GROUP, INSTANCE, SOURCE, closing_hints, spark_processed
from tests.spark.session import c1_environment

pytestmark = [pytest.mark.spark, pytest.mark.interop]

ROOT = Path(__file__).resolve().parents[2]


def hinted(output: str, starts: str) -> str:
    """The hinted command line that starts with `starts` (its comment cut off)."""
    for line in output.splitlines():
        if line.strip().startswith(starts):
            return line.split("#", 1)[0].strip()
    raise AssertionError(f"no hint starting {starts!r} in:\n{output}")


def run_pipeline(data: Path) -> str:
    """The job on a free port until Spark has finished two batches (the time is only a cap)."""
    done = subprocess.run(
        [sys.executable, "-m", "roster.pipeline", "--port", "0", "--data-dir", str(data),
         "--batches", "2", "--seconds", "240"], capture_output=True, text=True, timeout=400,
        cwd=ROOT, stdin=subprocess.DEVNULL, env=c1_environment())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def lag_rows(output: str) -> dict[int, dict[str, str]]:
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("TOPIC ")
                  and "SPARK-PROCESSED" in line)
    names = lines[header].split()
    rows = {}
    for line in lines[header + 1:]:
        cells = line.split()
        if len(cells) != len(names) or cells[0] != SOURCE:
            break
        rows[int(cells[1])] = dict(zip(names, cells))
    return rows


def test_make_run_prints_every_batch_true_lag_and_hints_for_this_run(tmp_path):
    data = tmp_path / "run-data"
    output = run_pipeline(data)
    checkpoint = data / "checkpoints" / "clicks"

    printed = [int(m) for m in re.findall(r"^batch (\d+): ", output, re.MULTILINE)]
    finished = sorted(int(p.name) for p in (checkpoint / "commits").iterdir()
                      if p.name.isdigit())
    assert finished and printed == list(range(printed[0], printed[-1] + 1)), printed
    assert set(finished) <= set(printed), (finished, printed)

    processed = spark_processed(checkpoint)
    rows = lag_rows(output)
    assert sorted(rows) == sorted(p for t, p in processed if t == SOURCE), (rows, processed)
    for partition, row in rows.items():
        spark = processed[(SOURCE, partition)]
        assert int(row["SPARK-PROCESSED"]) == spark, row
        group = int(row["GROUP-OFFSET"]) if row["GROUP-OFFSET"] != "-" else -1
        assert group <= spark, row
        assert int(row["LAG"]) == int(row["LOG-END-OFFSET"]) - spark, row

    port = int(re.search(r"make serve PORT=(\d+)", output).group(1))
    assert output.rstrip().endswith(closing_hints(port, data).splitlines()[-1])
    serve = hinted(output, "make serve")
    assert shlex.split(serve)[2:] == [f"PORT={port}", f"DATA={data}"], serve
    assert hinted(output, "make run") == serve.replace("make serve", "make run")
    describe = hinted(output, ".venv/bin/roster groups describe")
    assert describe.endswith(f"--bootstrap-server 127.0.0.1:{port}"), describe

    # the hints work as typed: the broker comes back on this run's data, and the group is there
    broker = subprocess.Popen(shlex.split(serve), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True,
                              stdin=subprocess.DEVNULL)
    try:
        for line in broker.stdout:
            if line.startswith("roster listening on "):
                break
        else:
            pytest.fail(f"`{serve}` did not start a broker")
        described = subprocess.run(shlex.split(describe), cwd=ROOT, capture_output=True,
                                   text=True, timeout=60)
        assert described.returncode == 0, described.stderr
        assert GROUP in described.stdout and INSTANCE in described.stdout, described.stdout
    finally:
        os.killpg(broker.pid, signal.SIGTERM)
        broker.wait(30)
