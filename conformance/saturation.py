"""Constructs that a reported bug saturates, which a night stops drawing.

Against thunder 0.2.6, 94% of the programs that create a tensor with `requires_grad=True`,
and 89% of those that call `requires_grad_()`, fail first with the TypeError or the
AttributeError of a known issue, and an exception ends the example: nothing behind it is
compared. Such programs were a third of a night's examples (1,200 fresh programs, the
census of 2026-12-03), found nothing new once those issues were found in the first seconds,
and the bugs that need rare combinations of other constructs were not met.

So each worker counts, per construct, the programs that use it and those of them whose
first mismatch was an exception of a class already found. A construct is saturated when at
least MIN_PROGRAMS used it and SHARE of them ended so (no other construct came near: the
next, decorated enable_grad helpers, 64%, since they often hold one of the two). New
programs are then drawn without it. It is a verdict about the backend under test, not about
the generator: a backend that fixes the bug never saturates the construct, and its programs
are drawn again. Replays are never filtered (they must reproduce what was found).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

MIN_PROGRAMS = 30
SHARE = 0.85


@dataclass
class Saturation:
    used: Counter = field(default_factory=Counter)  # programs run, per construct
    stopped: Counter = field(default_factory=Counter)  # of those, ended by a found exception

    def count(self, constructs, stopped: bool) -> None:
        for c in constructs:
            self.used[c] += 1
            self.stopped[c] += stopped

    def saturated(self) -> frozenset[str]:
        return frozenset(c for c, n in self.used.items() if n >= MIN_PROGRAMS and self.stopped[c] >= SHARE * n)

    def why(self, construct: str) -> dict:
        return {"programs": self.used[construct], "stopped": self.stopped[construct]}
