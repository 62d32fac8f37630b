"""Which classes of mismatch a night has done with: their later hits are counted, not shrunk."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from conformance.engine import MAX_STATEMENTS
from conformance.night.messages import Shrunk


@dataclass
class Settled:
    """A class is settled once a repro of it has at most MAX_STATEMENTS statements, or it was
    shrunk `shrinks_per_class` times (in any worker) without getting that short."""

    shrinks_per_class: int
    shrinks: Counter = field(default_factory=Counter)
    classes: set[str] = field(default_factory=set)

    def learn(self, s: Shrunk) -> None:
        self.shrinks[s.class_key] += 1
        short = s.statements is not None and s.statements <= MAX_STATEMENTS
        if short or self.shrinks[s.class_key] >= self.shrinks_per_class:
            self.classes.add(s.class_key)

    def __contains__(self, class_key: str) -> bool:
        return class_key in self.classes
