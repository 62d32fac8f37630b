"""Signatures: a short, stable identity for a mismatch, so that one bug found by fifty
programs is one entry. Computed on the shrunk example: the oracle and aspect that differ,
the constructs the minimal program still needs, and the ambient mode of the call that
differed (and whether it came after another call: then the cache is involved)."""

from __future__ import annotations

import fnmatch
import hashlib

from conformance.generators.schedules import Schedule
from conformance.oracles.mismatch import Mismatch, class_key
from conformance.program import Program, constructs


# Where the symptom names the bug by itself, the constructs of the program add only noise
# (an exception message; marker arguments that differ, which has one cause however the
# regions are arranged).
_SYMPTOM_IS_ENOUGH = ("exceptions.", "traces.")


def signature(m: Mismatch, program: Program, schedule: Schedule) -> str:
    """`<oracle>.<aspect> | <symptom> | <first or later call> @ <constructs>`.

    The class key (what Hypothesis shrinks each bug under), plus the constructs the
    shrunk program still needs, where the symptom alone does not name the bug."""
    key = class_key(m)
    if m.kind.startswith(_SYMPTOM_IS_ENOUGH):
        # First or later call only steers shrinking here: the message names the bug.
        return key.rsplit(" | ", 1)[0]
    used = " ".join(sorted(constructs(program) - {"return_is_grad_enabled"})) or "plain ops"
    return f"{key} @ {used}"


def slug(sig: str, known: str | None = None) -> str:
    """A folder name for a signature and the known issue its program was classified as (one
    signature can be two bugs): readable prefix, hash for uniqueness."""
    head = "".join(c if c.isalnum() else "-" for c in sig.split(" | ")[0]).strip("-")
    key = sig if known is None else f"{sig}\n{known}"
    return f"{head[:48]}-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def matches(sig: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(sig, p) for p in patterns)
