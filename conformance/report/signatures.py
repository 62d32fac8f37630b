"""Signatures: a short, stable identity for a mismatch, so that one bug found by fifty
programs is one entry. Computed on the shrunk example: the oracle and aspect that differ,
the constructs the minimal program still needs, and the ambient mode of the call that
differed (and whether it came after another call: then the cache is involved)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from conformance.generators.schedules import (AMBIENT_AUTOCAST, EVAL_MODE, GRADIENTS_KEPT, OPTIMIZER_STEP, Schedule,
                                              caller_constructs)
from conformance.oracles.mismatch import BugClass, Mismatch, class_key
from conformance.program import Program, constructs


# Where the symptom names the bug by itself, the constructs of the program add only noise
# (an exception message; marker arguments that differ, which has one cause however the
# regions are arranged).
_SYMPTOM_IS_ENOUGH = ("exceptions", "traces")


@dataclass(frozen=True)
class Signature:
    """A bug's identity on the shrunk example: its class, and the constructs the shrunk program
    still needs (None where the symptom alone names the bug). Its text (`str`) is what
    summary.json and reports show: `<oracle>.<aspect> | <symptom> |
    <first or later call> @ <constructs>`."""

    bug: BugClass
    constructs: tuple[str, ...] | None

    def __str__(self) -> str:
        if self.constructs is None:
            # First or later call only steers shrinking here: the message names the bug.
            return f"{self.bug.kind} | {self.bug.symptom}" if self.bug.symptom else self.bug.kind
        return f"{self.bug} @ {' '.join(self.constructs) or 'plain ops'}"


def signature(m: Mismatch, program: Program, schedule: Schedule) -> Signature:
    """The mismatch's class, plus the constructs the shrunk program still needs, where the
    symptom alone does not name the bug."""
    bug = class_key(m)
    if bug.oracle in _SYMPTOM_IS_ENOUGH:
        return Signature(bug, None)
    # The caller's autocast or eval mode in the call that differed or one before it (whose
    # compilation a cache may reuse), and a step taken or gradients kept before it.
    at = m.call if m.call is not None and m.call < len(schedule) else None
    upto, before = (schedule, schedule) if at is None else (schedule[:at + 1], schedule[:at])
    caller = ((caller_constructs(upto, program.is_module) & {AMBIENT_AUTOCAST, EVAL_MODE})
              | (caller_constructs(before, program.is_module) & {OPTIMIZER_STEP, GRADIENTS_KEPT}))
    return Signature(bug, tuple(sorted(constructs(program) - {"return_is_grad_enabled"} | caller)))


def slug(record: dict) -> str:
    """A folder name for a record's signature and the known issue its program was classified
    as (one signature can be two bugs): readable prefix, hash for uniqueness."""
    head = "".join(c if c.isalnum() else "-" for c in f"{record['oracle']}.{record['aspect']}").strip("-")
    known = record.get("known")
    key = record["signature"] if known is None else f"{record['signature']}\n{known}"
    return f"{head[:48]}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"
