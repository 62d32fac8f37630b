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


def known_issue_of(failure: RunFailure, program, backend_name: str, issues: list):
    """The known issue (oracle "crash" or "hang") an example that broke its worker matches, by
    its program's constructs and facts: the symptom is the same for every such bug."""
    from conformance.known_issues import classify
    from conformance.oracles.mismatch import BugClass
    from conformance.program import constructs
    from conformance.report.signatures import Signature

    if program is None:
        return None
    sig = Signature(BugClass(failure.oracle, failure.aspect), tuple(sorted(constructs(program))))
    return classify(sig, backend_name, issues, program)


def run_apart(program, schedule, backend_spec: str, timeout: float = 300) -> RunFailure | None:
    """How running the example in a process of its own broke that process (it died, hung, or
    left torch unable to run an op), or None where the process came through: for a known issue
    of a crash, which would take with it the process that runs it."""
    import subprocess
    import sys

    from conformance import serialize

    data = json.dumps({"program": serialize.encode(program), "schedule": serialize.encode(schedule),
                       "backend": backend_spec})
    try:
        proc = subprocess.run([sys.executable, "-m", "conformance.night.crash"], input=data, text=True,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return RunFailure(*STUCK, f"no answer in {timeout:.0f} s")
    if proc.returncode == BROKEN_EXIT:
        return RunFailure(*BROKEN, "every op raised after this example")
    return RunFailure(*DIED, f"exit code {proc.returncode}") if proc.returncode else None


def _run_one_and_exit() -> None:
    # The child of run_apart: one example, then whether torch still runs an op.
    import sys

    from conformance import grad_mode, serialize
    from conformance.backends import get
    from conformance.check import run_example

    data = json.loads(sys.stdin.read())
    try:
        run_example(serialize.decode(data["program"]), get(data["backend"]), serialize.decode(data["schedule"]))
    except Exception:  # noqa: BLE001 - a harness error in a broken process says nothing more
        pass
    sys.exit(BROKEN_EXIT if grad_mode.broken() else 0)


def crash_record(cfg: NightConfig, wid: int, failure: RunFailure, note: str, seconds: float, examples: int) -> dict:
    """A record for the example a dead or killed worker was running (its current.json)."""
    from conformance import known_issues
    from conformance.program import count_statements, render, render_body
    from conformance.serialize import decode

    path = Path(cfg.report_dir) / "findings" / f"w{wid}" / "current.json"
    try:
        data = json.loads(path.read_text())
        program, schedule = decode(data["program"]), decode(data["schedule"])
    except (OSError, ValueError, KeyError):
        data, program, schedule = None, None, None
    why = f"{failure.detail}; {note}" if note else failure.detail
    # The night's own registry (fuzz --known-issues), as its other records are triaged against.
    issues = known_issues.load(cfg.known_issues) if cfg.known_issues else known_issues.load()
    known = known_issue_of(failure, program, cfg.backend, issues)
    return {
        "signature": failure.signature, "oracle": failure.oracle, "aspect": failure.aspect,
        "known": known.id if known else None, "known_title": known.title if known else None,
        "summary": f"[{failure.oracle}.{failure.aspect}] {why}",
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


if __name__ == "__main__":
    _run_one_and_exit()
