"""The previous night's summary.json: what is still there, what is fixed.

Each worker first replays its share of the baseline's repros (Worker.replay_baseline), so a bug
still there is reported in the night's first seconds. At the end, the supervisor replays each
baseline bug that the night did not report: not hitting a bug in one night's budget does not
make it fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.oracles.mismatch import class_key


def load_baseline(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"baseline {path} is not a readable summary.json ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("mismatches"), list):
        raise ValueError(f"baseline {path} is not a gradmode-conformance summary.json (no 'mismatches' list)")
    return data


def bug_of(entry: dict) -> str:
    """The bug a summary entry or a record is, as a later run matches it: its class as written
    (`class`), or, for a summary written before entries had one, its whole signature."""
    return entry.get("class") or entry["signature"]


def shows(entry: dict, result) -> list:
    """The mismatches of `result`, a run of an entry's program, that are its bug. By class, not
    signature: the constructs of a signature vary with how far a night's shrinking got."""
    from conformance.report.signatures import signature

    mismatches = result.mismatches if result else []
    if entry.get("class"):
        return [m for m in mismatches if str(class_key(m)) == entry["class"]]
    return [m for m in mismatches if str(signature(m, result.program, result.schedule)) == entry["signature"]]


def with_status(records: list[dict], baseline: dict | None) -> list[dict]:
    """Triage against the previous night: still there (the bug of a baseline entry), else
    known (in known_issues.toml) or new."""
    before = {bug_of(m) for m in (baseline or {}).get("mismatches", [])}
    for r in records:
        if bug_of(r) in before or r["signature"] in before:
            r["status"] = "still there"
        else:
            r["status"] = "known" if r.get("known") else "new"
    return records


def unseen(baseline: dict, records: list[dict]) -> list[dict]:
    """The baseline's mismatches whose signature tonight did not report. By signature, not by
    class: one class can be two bugs, and a bug fixed beside another of its class would never
    be reported fixed."""
    seen = {r["signature"] for r in records}
    return [m for m in baseline["mismatches"] if m["signature"] not in seen]


def replay_unseen(baseline: dict, records: list[dict], spec: str) -> tuple[list[str], list[str]]:
    """Baseline bugs not hit tonight: replay each recorded program; (fixed, still reproducing)."""
    from conformance import serialize
    from conformance.backends import get
    from conformance.check import run_example

    missing = unseen(baseline, records)
    if not missing:
        return [], []
    backend = get(spec)
    fixed, still = [], []
    for m in missing:
        if not m.get("program"):
            continue
        program, schedule = serialize.decode(m["program"]), serialize.decode(m["schedule"])
        (still if shows(m, run_example(program, backend, schedule)) else fixed).append(m["signature"])
    return fixed, still
