"""Oracles: each compares one observable of two SideOutcomes and returns Mismatches.

`compare` runs them all in a fixed order; the exceptions oracle comes first, since a
call that raised on one side only has nothing else worth comparing.
"""

from __future__ import annotations

from conformance.oracles import exceptions, flags, gradients, grad_mode, outputs, recompiles, traces
from conformance.oracles.mismatch import ORACLES, ConformanceMismatch, Mismatch, exception_class
from conformance.outcome import SideOutcome

CHECKS = {
    "exceptions": exceptions.check,
    "outputs": outputs.check,
    "flags": flags.check,
    "gradients": gradients.check,
    "grad_mode": grad_mode.check,
    "recompiles": recompiles.check,
    "traces": traces.check,
}
assert tuple(CHECKS) == ORACLES


def compare(eager: SideOutcome, backend: SideOutcome, oracles: tuple[str, ...] = ORACLES) -> list[Mismatch]:
    found: list[Mismatch] = []
    for name in oracles:
        found += CHECKS[name](eager, backend)
    return found


__all__ = ["compare", "CHECKS", "ORACLES", "Mismatch", "ConformanceMismatch", "exception_class"]
