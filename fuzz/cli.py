"""Command line: the live campaign, corpus replay and the atheris harnesses.

  python -m fuzz live   [--seconds N] [--seed S] [--save DIR]   mutated requests at a live broker
  python -m fuzz replay [FILE ...]                               the regression corpus, or FILEs
  python -m fuzz atheris [--seconds N] [TARGET ...]              coverage-guided, per decoder
  python -m fuzz all    [--seconds N]                            live + replay + atheris (make fuzz)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from fuzz.live import (
    CORPUS,
    RSS_BOUND_MIB,
    Campaign,
    Target,
    corpus_files,
    finding_class,
    known_open,
    load_case,
    open_classes,
    replay_case,
    time_seed,
)
from fuzz.mutate import KNOWN_HEAVY


def live(seconds: float, seed: int, save: Path | None, rss_mib: int,
         avoid_heavy: bool = True, apis: set[int] | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="roster-fuzz-") as tmp:
        target = Target(Path(tmp) / "data").start()
        try:
            campaign = Campaign(target, seed, save, rss_mib,
                                avoid=KNOWN_HEAVY if avoid_heavy else (), apis=apis)
            findings = campaign.run(seconds=seconds)
        finally:
            target.stop()
    known = open_classes()
    serious = [f for f in findings if f.kind != "slow" and finding_class(f) not in known
               and not known_open(f)]
    print(f"live: {len(findings)} finding(s), {len(serious)} new and serious (not slow, not "
          f"of a class an open corpus case has); "
          f"repro: python -m fuzz live --seed {seed} --seconds {seconds:g}")
    return 1 if serious else 0


def replay(files: list[Path], rss_mib: int) -> int:
    files = files or corpus_files()
    failing = []
    with tempfile.TemporaryDirectory(prefix="roster-fuzz-") as tmp:
        target = Target(Path(tmp) / "data").start()
        try:
            for path in files:
                payloads, meta = load_case(path)
                problem = replay_case(target, payloads, rss_mib, int(meta.get("expect answers", 0)))
                status = "ok" if problem is None else f"FAIL {problem[0]}: {problem[1]}"
                print(f"{path}: "
                      f"{meta.get('api', '?')}: {status}")
                if problem is not None:
                    failing.append(path)
                    if problem[0] in ("died", "unresponsive", "rss"):
                        target.restart()
        finally:
            target.stop()
    print(f"replay: {len(files) - len(failing)}/{len(files)} cases pass")
    return 1 if failing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    sub = parser.add_subparsers(dest="command", required=True)
    p_live = sub.add_parser("live")
    p_live.add_argument("--seconds", type=float, default=60)
    p_live.add_argument("--seed", type=int, default=None)
    p_live.add_argument("--save", type=Path, default=CORPUS / "new",
                        help="where findings are saved (default fuzz/corpus/new)")
    p_live.add_argument("--rss-mib", type=int, default=RSS_BOUND_MIB)
    p_live.add_argument("--apis", default=None,
                        help="only these API keys, comma-separated (e.g. 11,12,13,14: groups)")
    p_live.add_argument("--heavy", action="store_true",
                        help="also push the fields of known heavy findings to extremes "
                             f"({', '.join(KNOWN_HEAVY)})")
    p_replay = sub.add_parser("replay")
    p_replay.add_argument("files", nargs="*", type=Path)
    p_replay.add_argument("--rss-mib", type=int, default=RSS_BOUND_MIB)
    p_atheris = sub.add_parser("atheris")
    p_atheris.add_argument("--seconds", type=int, default=60, help="per target")
    p_atheris.add_argument("targets", nargs="*")
    p_all = sub.add_parser("all")
    p_all.add_argument("--seconds", type=int, default=600)
    args = parser.parse_args(argv)

    if args.command == "live":
        seed = time_seed() if args.seed is None else args.seed
        apis = {int(k) for k in args.apis.split(",")} if args.apis else None
        return live(args.seconds, seed, args.save, args.rss_mib, not args.heavy, apis)
    if args.command == "replay":
        return replay(args.files, args.rss_mib)
    from fuzz.atheris_run import run_targets
    if args.command == "atheris":
        return run_targets(args.targets, args.seconds)
    # all: the live campaign gets half the time, atheris the other half across its targets
    seed = time_seed()
    started = time.monotonic()
    results = [replay([], RSS_BOUND_MIB),
               live(args.seconds / 2, seed, CORPUS / "new", RSS_BOUND_MIB)]
    from fuzz.atheris_targets import TARGETS
    left = args.seconds - (time.monotonic() - started)
    results.append(run_targets([], max(10, int(left / len(TARGETS)))))
    print(f"fuzz all: {time.monotonic() - started:.0f} s")
    return max(results)


if __name__ == "__main__":
    sys.exit(main())
