"""Signatures: a short, stable identity for a mismatch, so that one bug found by fifty
programs is one entry. Computed on the shrunk example: the oracle and aspect that differ,
the constructs the minimal program still needs, and the ambient mode of the call that
differed (and whether it came after another call: then the cache is involved)."""

from __future__ import annotations

import fnmatch
import hashlib

from conformance.generators.schedules import Schedule
from conformance.oracles.mismatch import Mismatch
from conformance.program import Program, constructs


def signature(m: Mismatch, program: Program, schedule: Schedule) -> str:
    """`<oracle>.<aspect> @ <constructs> | <ambient mode of the call>[, later call]`."""
    used = " ".join(sorted(constructs(program))) or "plain ops"
    when = ", later call" if m.call not in (0, None) else ""
    return f"{m.kind} @ {used} | {m.ambient or 'any'}{when}"


def slug(sig: str) -> str:
    """A folder name for a signature: readable prefix, hash for uniqueness."""
    head = "".join(c if c.isalnum() else "-" for c in sig.split(" @ ")[0]).strip("-")
    return f"{head[:48]}-{hashlib.sha1(sig.encode()).hexdigest()[:8]}"


def matches(sig: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(sig, p) for p in patterns)
