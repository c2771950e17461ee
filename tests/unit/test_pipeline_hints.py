"""`make run`'s closing hints are the commands for this run: a run on another port or data
directory hints `make serve PORT=.. DATA=..` and `--bootstrap-server`, never the defaults that
would reach another broker or data. (tests/spark/test_pipeline_run.py runs the job and types
the hints.)"""
from __future__ import annotations

from pathlib import Path

from roster.pipeline import closing_hints


def commands(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in text.splitlines()
            if line.startswith("  ")]


def test_a_default_run_hints_the_short_commands():
    assert commands(closing_hints(9092, Path("./data"))) == [
        "make serve",
        ".venv/bin/roster groups describe clicks-pipeline",
        ".venv/bin/roster offsets describe clicks-pipeline",
        "kcat -b 127.0.0.1:9092 -C -t click-counts -o -10 -e",
        "make run",
        ".venv/bin/roster groups history clicks-pipeline",
    ]


def test_another_port_and_data_dir_are_in_every_command():
    text = closing_hints(19096, Path("/srv/clicks"), http_port=9644)
    assert commands(text) == [
        "make serve PORT=19096 DATA=/srv/clicks",
        ".venv/bin/roster groups describe clicks-pipeline --bootstrap-server 127.0.0.1:19096",
        ".venv/bin/roster offsets describe clicks-pipeline --bootstrap-server 127.0.0.1:19096",
        "kcat -b 127.0.0.1:19096 -C -t click-counts -o -10 -e",
        "make run PORT=19096 DATA=/srv/clicks",
        ".venv/bin/roster groups history clicks-pipeline --bootstrap-server 127.0.0.1:19096",
    ]
    assert "`make serve PORT=19096 DATA=/srv/clicks HTTP_PORT=9644`" in text
    assert "kept in /srv/clicks" in text


def test_only_what_differs_from_the_makefile_is_given():
    assert commands(closing_hints(9092, Path("elsewhere")))[0] == "make serve DATA=elsewhere"
    assert commands(closing_hints(9093, Path("data")))[0] == "make serve PORT=9093"
