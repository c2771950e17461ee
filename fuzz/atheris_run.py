"""Run each atheris harness (fuzz/atheris_targets.py) in its own process with a time limit.

A harness that finds something stops (libFuzzer writes the input as crash-<sha1>); the input is
kept in fuzz/corpus/atheris/<target>/ as a regression case, its signature is added to
FUZZ_IGNORE and the harness is restarted for the rest of its time, so one known finding does
not hide the next. A native crash (no Python signature) ends that target's run.

The growing coverage corpus lives outside the repository (FUZZ_WORK, default
$TMPDIR/roster-atheris) and is seeded with valid inputs built by fuzz.generate.
"""
from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from fuzz.atheris_targets import TARGETS
from fuzz.live import CORPUS, REPO

SAVED = CORPUS / "atheris"


def seeds(target: str) -> list[bytes]:
    """Valid inputs for `target`, so the fuzzer starts from deep inside the format."""
    from fuzz.generate import Generator, World, advertised_versions
    rng = random.Random(11)
    gen = Generator(rng, World({"fuzzed": (uuid.UUID(int=1), 2)}))
    if target == "codec":
        return [gen.request(k, v)[0] for _ in range(2) for k, _, v in advertised_versions()]
    if target == "heartbeat":
        return [bytes([v]) + gen.request(12, v)[0] for _ in range(3) for v in range(5)]
    if target == "consumer_protocol":
        return [b"\x01" + gen.subscription() for _ in range(6)] + \
            [b"\x00" + gen.assignment() for _ in range(6)]
    if target == "group_records":
        from roster.protocol import group_records as g
        out = []
        for key, value in (
                (g.OffsetKey("fuzz-group", "fuzzed", 0), g.OffsetValue(5, -1, "m", 1, -1)),
                (g.GroupKey("fuzz-group"), g.GroupValue("consumer", 1, "range", "m1", 2, ()))):
            k, v = g.encode_key(key), g.encode_value(value)
            out.append(bytes([len(k), 0]) + k + v)
        return out
    if target in ("batch", "record_codec"):
        return [gen.record_batch() for _ in range(8)] + [gen.record_batch() * 2]
    return []


def _known(signature: str, target: str) -> str:
    from fuzz.atheris_targets import BY_TYPE
    return signature.split("@")[0] if target in BY_TYPE else signature


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def run_target(target: str, seconds: int, say=print) -> list[Path]:
    work = Path(os.environ.get("FUZZ_WORK") or Path(tempfile.gettempdir()) / "roster-atheris")
    corpus, seed_dir = work / target / "corpus", work / target / "seeds"
    for d in (corpus, seed_dir):
        d.mkdir(parents=True, exist_ok=True)
    for data in seeds(target):
        (seed_dir / hashlib.sha1(data).hexdigest()).write_bytes(data)
    saved_dir = SAVED / target
    found: list[Path] = []
    # findings already kept are not findings again: their signatures are skipped from the start
    ignored = sorted({_known(line.split(":", 1)[1].strip(), target)
                      for note in saved_dir.glob("*.txt")
                      for line in note.read_text().splitlines()
                      if line.startswith("signature:") and "native" not in line})
    deadline = time.monotonic() + seconds
    while (left := int(deadline - time.monotonic())) >= 5:
        artifacts = Path(tempfile.mkdtemp(prefix=f"atheris-{target}-"))
        log_path = artifacts / "log.txt"
        dirs = [str(corpus), str(seed_dir)]
        command = [sys.executable, "-m", "fuzz.atheris_targets", target,
                   f"-max_total_time={left}", f"-artifact_prefix={artifacts}/", "-timeout=10",
                   "-rss_limit_mb=3072", "-print_final_stats=1", *dirs]
        env = {**os.environ, "FUZZ_IGNORE": "|".join(ignored),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                           os.environ.get("PYTHONPATH")]))}
        with open(log_path, "w") as log:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  timeout=left + 120).returncode
        text = log_path.read_text(errors="replace")
        runs = re.findall(r"Done (\d+) runs", text) \
            or re.findall(r"stat::number_of_executed_units: (\d+)", text)
        crashes = sorted(p for p in artifacts.iterdir() if p.name.split("-")[0] in
                         ("crash", "timeout", "oom", "leak"))
        if not crashes:
            shutil.rmtree(artifacts, ignore_errors=True)
            say(f"atheris {target}: no finding in {left} s "
                f"({runs[-1] if runs else '?'} runs, exit {code})")
            break
        signatures = re.findall(r"FUZZ-SIGNATURE (\S+)", text)
        signature = signatures[-1] if signatures else None
        for crash in crashes:
            kind = crash.name.split("-")[0]
            name = f"{kind}-{_slug(signature or 'native')}-{crash.name.rsplit('-', 1)[-1][:12]}"
            saved_dir.mkdir(parents=True, exist_ok=True)
            dest = saved_dir / name
            if dest.exists():  # kept already, note and all
                continue
            shutil.copy(crash, dest)
            found.append(dest)
            summary = _summary(text)
            dest.with_suffix(".txt").write_text(
                f"target: {target}\nsignature: {signature or 'native crash'}\n{summary}\n"
                f"repro: python -m fuzz.atheris_targets {target} {dest.relative_to(REPO)}\n")
            say(f"atheris {target}: FINDING {kind} {signature or '(native crash)'}: {summary}\n"
                f"  saved: {dest}\n  repro: python -m fuzz.atheris_targets {target} {dest}")
        shutil.rmtree(artifacts, ignore_errors=True)
        if signature is None or signature in ignored:
            break
        ignored.append(signature)
    return found


def _summary(text: str) -> str:
    for pattern in (r"=== Uncaught Python exception: ===\n(.+)",
                    r"(memory allocation of \d+ bytes failed)", r"(Fatal Python error: .+)",
                    r"(==\d+== ERROR: .+)"):
        m = re.search(pattern, text)
        if m:
            return m.group(1).strip()[:300]
    return "see log"


def run_targets(targets: list[str], seconds_each: int) -> int:
    targets = targets or list(TARGETS)
    found = []
    for target in targets:
        found += run_target(target, seconds_each)
    print(f"atheris: {len(found)} new finding(s) in {', '.join(targets)}")
    return 1 if found else 0
