"""Oracles: each compares one observable of two SideOutcomes and returns Mismatches.

`compare` runs them all in a fixed order and puts the mismatch that names the cause first:
an exception (a call that raised on one side only has nothing else worth comparing), then
a grad-mode marker that differs from eager's.
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
    flagged = {m.call for m in found if m.kind in AUTOGRAD_FLAGS}
    return sorted(found, key=lambda m: _cause_first(m, flagged))


# The flags that decide whether backward runs through an output.
AUTOGRAD_FLAGS = ("flags.requires_grad", "flags.grad_fn")


def _cause_first(m: Mismatch, flagged: set) -> int:
    # The first mismatch names the example's bug (its signature, the class it shrinks
    # under). An exception leaves nothing else of its call to compare; except an error in
    # backward of a call whose outputs' requires_grad or grad_fn differ: backward through an
    # output that lost requires_grad raises 'does not require grad', and one that gained it
    # runs a backward eager never built; the flag is the cause, the error follows from it
    # (and a broad known issue of backward errors would take a new bug of flags for its own).
    # A grad-mode marker that differs from eager's _set_grad_enabled calls is the cause of
    # the flags, gradients and grad mode after the call that differ with it, whatever the
    # regions around it; ranked after those, each arrangement was a class of its own.
    if m.oracle == "exceptions":
        return 3 if m.aspect.endswith("during backward") and m.call in flagged else 0
    return 1 if m.kind == "traces.markers" else 2


__all__ = ["compare", "CHECKS", "ORACLES", "Mismatch", "ConformanceMismatch", "exception_class"]
