"""The night's end: merge what the workers recorded, triage it, write the reports, print the table."""

from __future__ import annotations

import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from conformance.night import baseline as baselines
from conformance.night.database import RedisUrl, losses
from conformance.report.records import merge, save
from conformance.text import printable


def finish(night, interrupted: bool) -> int:
    """Write summary.json, index.html and a folder per signature; 1 where something is new."""
    from conformance import __version__
    from conformance.backends import get
    from conformance.report.write import write_run

    cfg = night.cfg
    baseline = baselines.load_baseline(cfg.baseline)
    for r in night.crash_records:  # saved with the workers' records: a merge of shards reads them there
        save(r, night.folder / "findings" / "supervisor", "s")
    records = merge(night.folder / "findings")
    for r in records:
        r["unshrunk_hits"] = night.hits.get(r.get("class", ""), 0)
    records = baselines.with_status(records, baseline)
    try:
        versions = {"python": sys.version.split()[0], "gradmode-conformance": __version__, **get(cfg.backend).versions()}
    except Exception:  # a backend's versions() failing must not lose the night
        versions = {}
    fixed, replayed, not_replayed = [], [], []
    if baseline is not None and interrupted:  # replaying takes up to a minute; Ctrl-C promises seconds
        not_replayed = [m["signature"] for m in baselines.unseen(baseline, records)]
    elif baseline is not None:  # a shard replays its share: the merge joins them
        share = dict(baseline, mismatches=cfg.shard.pick(baseline["mismatches"])) if cfg.shard else baseline
        fixed, replayed = baselines.replay_unseen(share, records, cfg.backend)
    seconds = time.time() - night.start
    constructs = sum((s.constructs + Counter(s.now.constructs if s.now else {}) for s in night.slots), Counter())
    extra = {"workers": [{"id": s.id, "examples": s.examples, "peak_rss_mb": round(s.peak_rss_mb, 1),
                          "restarts": s.restarts, "crashes": s.crashes,
                          "seconds": {k: round(v, 1) for k, v in
                                      (s.spent + Counter(s.now.seconds if s.now else {})).items()}}
                         for s in night.slots],
             "fixed_since_baseline": fixed, "still_there_on_replay": replayed, "interrupted": interrupted,
             "baseline_not_replayed": not_replayed,  # after Ctrl-C: neither fixed nor still there
             "construct_examples": dict(constructs),
             "unshrunk_hits": dict(night.hits),
             # Shrunk, but shown only behind a reported bug's mismatch: maybe its consequence, not reported.
             "shown_only_behind": dict(night.only_behind),
             "run": uuid.uuid4().hex,  # tells a merge that two folders are one night's report
             "shard": str(cfg.shard) if cfg.shard else None}
    if isinstance(cfg.db, RedisUrl):  # where a Redis went away, the workers went on with a local folder
        extra["database"] = {"redis": str(cfg.db), "lost": losses(night.folder / "findings")}
    index = write_run(night.folder, backend_name=cfg.backend, seed=cfg.seed, command=cfg.command,
                      examples=night.total(), seconds=round(seconds, 1), versions=versions, records=records,
                      extra=extra)
    print_table(records, fixed, night.total(), seconds, index, night.out)
    if replayed:
        night.out.write(f"{len(replayed)} earlier signature(s) not hit tonight still reproduce when replayed\n")
    if not_replayed:
        night.out.write(f"{len(not_replayed)} earlier signature(s) not hit tonight were not replayed: interrupted\n")
    return 1 if any(r["status"] == "new" for r in records) else 0


def print_table(records: list[dict], fixed: list[str], examples: int, seconds: float, index: Path, out) -> None:
    out.write(f"{examples} examples in {seconds:.0f} s; {len(records)} signature(s)\n")
    for r in records:
        out.write(f"  {r['status']:<12} {r['statements']:>2} stmts  {printable(r['signature'])}\n")
    for sig in fixed:
        out.write(f"  {'fixed':<12}          {printable(sig)}\n")
    out.write(f"report: {index}\n")
