"""The record of an example that broke its worker: it died, hung where SIGALRM cannot reach it,
ran out of memory, wrote without end, or left torch unable to run an op."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from conformance.night.config import NightConfig


@dataclass(frozen=True)
class RunFailure:
    oracle: str  # "crash" or "hang"
    aspect: str  # "worker died", "out of memory", "output flood", "example timed out"
    detail: str  # what tells two failures of the aspect apart: "exit code -11 (signal 11)"

    @property
    def signature(self) -> str:
        # No constructs: one bug that breaks the process on many programs is one signature,
        # whose record keeps the smallest of them.
        return f"{self.oracle}.{self.aspect} | {self.detail}"


DIED = "crash", "worker died"
OUT_OF_MEMORY = "crash", "out of memory"
FLOOD = "crash", "output flood"
STUCK = "hang", "example timed out"
BROKEN = "crash", "torch left broken"
# The exit code of a worker whose last example left torch unable to run an op: its current.json
# is that example, which the supervisor records as BROKEN before it starts a fresh process.
BROKEN_EXIT = 75


def crash_record(cfg: NightConfig, wid: int, failure: RunFailure, note: str, seconds: float, examples: int) -> dict:
    """A record for the example a dead or killed worker was running (its current.json)."""
    from conformance.program import count_statements, render, render_body
    from conformance.serialize import decode

    path = Path(cfg.report_dir) / "findings" / f"w{wid}" / "current.json"
    try:
        data = json.loads(path.read_text())
        program, schedule = decode(data["program"]), decode(data["schedule"])
    except (OSError, ValueError, KeyError):
        data, program, schedule = None, None, None
    why = f"{failure.detail}; {note}" if note else failure.detail
    return {
        "signature": failure.signature, "oracle": failure.oracle, "aspect": failure.aspect,
        "known": None, "known_title": None, "summary": f"[{failure.oracle}.{failure.aspect}] {why}",
        "mismatches": [{"oracle": failure.oracle, "aspect": failure.aspect, "where": "worker process",
                        "eager": "returned", "backend": why, "call": None, "ambient": None, "line": why}],
        "statements": count_statements(program) if program else 0,
        "inputs": "", "calls": [c.ambient for c in schedule] if schedule else [],
        "body": render_body(program) if program else "(the example could not be recovered)",
        "source": render(program) if program else "", "program": data["program"] if program else None,
        "schedule": data["schedule"] if program else None, "backend": cfg.backend, "backend_spec": cfg.backend,
        "versions": {}, "hits": 1, "found_after_examples": examples, "found_after_seconds": seconds,
        "seed": cfg.seed, "command": cfg.command, "traces": None, "shrunk": False, "class": failure.signature,
    }
