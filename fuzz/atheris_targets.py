"""Coverage-guided (atheris / libFuzzer) harnesses for roster's pure decoders.

Each target takes arbitrary bytes and may only raise the exception its decoder documents for bad
input; anything else (or a crash of the process) is a finding. Run one target:

  python -m fuzz.atheris_targets TARGET [libFuzzer flags] [CORPUS_DIR ...]
  python -m fuzz.atheris_targets TARGET path/to/crash-file    # replay one input under libFuzzer
  python -m fuzz.atheris_targets --check TARGET FILE ...      # replay without atheris: exit 0 if
                                                             # every input is handled
`python -m fuzz atheris` (fuzz/atheris_run.py) runs every target in its own process with a time
limit, and keeps what they find in fuzz/corpus/atheris/<target>/.

FUZZ_IGNORE (a '|'-separated list of signatures "ExceptionType@file:line") lets a run continue
past findings already recorded, to look for new ones.
"""
from __future__ import annotations

import os
import sys
import traceback

TARGETS = ("codec", "heartbeat", "consumer_protocol", "group_records", "batch", "record_codec")


# Targets whose findings are told apart by exception type only: the record codec's compression
# libraries fail in a different line for every kind of damage, all with the same root cause.
BY_TYPE = ("record_codec",)


def _signature(exc: BaseException) -> str:
    if os.environ.get("FUZZ_TARGET") in BY_TYPE:
        return type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1] if frames else None
    return f"{type(exc).__name__}@{os.path.basename(where.filename)}:{where.lineno}" \
        if where else type(exc).__name__


_IGNORED = set(filter(None, os.environ.get("FUZZ_IGNORE", "").split("|")))


def _load(target: str):
    """(function(data), tuple of allowed exception types) for `target`."""
    if target == "codec":
        from roster.protocol.codec import decode_request
        from roster.protocol.errors import MalformedRequest

        def run(data: bytes) -> None:
            decode_request(data)
        return run, (MalformedRequest,)
    if target == "heartbeat":
        from roster.protocol.errors import MalformedRequest
        from roster.protocol.heartbeat_wire import decode_heartbeat

        def run(data: bytes) -> None:
            if data:
                decode_heartbeat(data[1:], data[0] % 5)
        return run, (MalformedRequest,)
    if target == "consumer_protocol":
        from roster.protocol.consumer_protocol import (
            ConsumerProtocolError,
            decode_assignment,
            decode_subscription,
        )

        def run(data: bytes) -> None:
            if data:
                (decode_subscription if data[0] & 1 else decode_assignment)(data[1:])
        return run, (ConsumerProtocolError,)
    if target == "group_records":
        from roster.protocol.group_records import RecordFormatError, decode

        def run(data: bytes) -> None:
            if len(data) < 2:
                return
            split = 2 + data[0] % max(1, len(data) - 1)
            value = None if data[1] == 0xFF else data[split:]
            decode(data[2:split], value)
        # group_log.py's replay catches exactly these two
        return run, (RecordFormatError, UnicodeDecodeError)
    if target == "batch":
        from roster.log import batch as batches
        from roster.log.api import CorruptBatch

        def run(data: bytes) -> None:
            for _ in batches.iter_batches(data):
                pass
            try:
                header = batches.parse_header(data)
            except CorruptBatch:
                return
            batches.header_problem(header)
            batches.validate(data)
            batches.first_record_at_or_after(data, 0)
        return run, (CorruptBatch,)
    if target == "record_codec":
        # through roster's own entry point for record bytes a broker sent (roster.client); the
        # record codec underneath is aiokafka's (roster.record_codec)
        import aiokafka.errors
        import kafka.errors

        from roster.client.records import CorruptRecords, decode_fetched

        def run(data: bytes) -> None:
            for record in decode_fetched("t", 0, data)[0]:
                list(record.headers)
        return run, (CorruptRecords, aiokafka.errors.CorruptRecordException,
                     kafka.errors.CorruptRecordException)
    raise SystemExit(f"unknown target {target!r}; targets: {', '.join(TARGETS)}")


def one_input(target: str):
    run, allowed = _load(target)

    def test_one_input(data: bytes) -> None:
        try:
            run(data)
        except allowed:
            pass
        except Exception as exc:
            if _signature(exc) in _IGNORED:
                return
            sys.stderr.write(f"FUZZ-SIGNATURE {_signature(exc)}\n")
            raise
    return test_one_input


def check(target: str, paths: list[str]) -> int:
    """Replay inputs without atheris; 0 when each is handled (returns or raises as allowed)."""
    os.environ["FUZZ_TARGET"] = target
    run, allowed = _load(target)
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            run(data)
        except allowed:
            pass
        except Exception as exc:  # noqa: BLE001
            failed += 1
            print(f"{path}: {_signature(exc)}: {type(exc).__name__}: {exc}"[:400])
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv[1:2] == ["--check"]:
        return check(argv[2], argv[3:])
    target = argv[1]
    os.environ["FUZZ_TARGET"] = target
    import atheris
    with atheris.instrument_imports(include=["roster"]):
        test_one_input = one_input(target)
    atheris.Setup([argv[0]] + argv[2:], test_one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
