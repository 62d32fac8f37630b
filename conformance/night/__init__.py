"""The nightly job, `python -m conformance fuzz`: a supervisor and its worker processes.

- config.py: NightConfig, what the command line asked for;
- supervisor.py: starts, watches, restarts and stops the workers (the loop's picture is there);
- worker.py: one worker's loop: search and shrink random programs, sweep small ones, record;
- messages.py: what they tell each other; baseline.py: the previous night;
- summary.py: the reports at the end; crash.py and signals.py: the edges.
"""

from __future__ import annotations

from conformance.night.config import NightConfig


def run_night(cfg: NightConfig, out=None) -> int:
    """Run a night; 0: nothing new, 1: new mismatches (the CLI's exit codes)."""
    from conformance.night.signals import StopSignals
    from conformance.night.supervisor import Supervisor

    with StopSignals() as stopped:
        return Supervisor(cfg, out).run(stopped)
