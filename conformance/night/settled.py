"""Which classes of mismatch a night has done with: their later hits are counted, not shrunk."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from conformance.engine import MAX_STATEMENTS
from conformance.night.messages import Shrunk
from conformance.oracles.mismatch import BugClass


@dataclass
class Settled:
    """A class is settled once a repro of it has at most MAX_STATEMENTS statements, or it was
    shrunk `shrinks_per_class` times (in any worker) without getting that short."""

    shrinks_per_class: int
    shrinks: Counter = field(default_factory=Counter)
    classes: set[BugClass] = field(default_factory=set)

    def learn(self, s: Shrunk) -> None:
        self.shrinks[s.bug] += 1
        short = s.statements is not None and s.statements <= MAX_STATEMENTS
        if short or self.shrinks[s.bug] >= self.shrinks_per_class:
            self.classes.add(s.bug)

    def __contains__(self, bug: BugClass) -> bool:
        return bug in self.classes
