"""The record of an example that killed its worker or hung where SIGALRM cannot reach."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.night.config import NightConfig


def crash_record(cfg: NightConfig, wid: int, why: str, signature_kind: str, seconds: float, examples: int) -> dict:
    """A record for the example a dead or stuck worker was running."""
    from conformance.program import constructs, count_statements, render, render_body
    from conformance.serialize import decode

    path = Path(cfg.report_dir) / "findings" / f"w{wid}" / "current.json"
    try:
        data = json.loads(path.read_text())
        program, schedule = decode(data["program"]), decode(data["schedule"])
    except (OSError, ValueError, KeyError):
        program = schedule = None
    used = " ".join(sorted(constructs(program))) if program else "unknown program"
    modes = ",".join(c.ambient for c in schedule) if schedule else ""
    oracle = signature_kind.split(".")[0]
    return {
        "signature": f"{signature_kind} @ {used} | {modes}", "oracle": oracle, "aspect": signature_kind.split(".", 1)[1],
        "known": None, "known_title": None, "summary": f"[{signature_kind}] {why}",
        "mismatches": [{"oracle": oracle, "aspect": signature_kind.split(".", 1)[1], "where": "worker process",
                        "eager": "returned", "backend": why, "call": None, "ambient": None, "line": why}],
        "statements": count_statements(program) if program else 0,
        "inputs": "", "calls": [],
        "body": render_body(program) if program else "(the example could not be recovered)",
        "source": render(program) if program else "", "program": data["program"] if program else None,
        "schedule": data["schedule"] if program else None, "backend": cfg.backend, "backend_spec": cfg.backend,
        "versions": {}, "hits": 1, "found_after_examples": examples, "found_after_seconds": seconds,
        "seed": cfg.seed, "command": cfg.command, "traces": None, "shrunk": False, "class": signature_kind,
    }
