"""Which classes of mismatch a night has done with, and what their repros explain.

A settled class's later hits are counted, not shrunk. But one class of mismatch can be two
bugs (a wrong value from a lost write-back and from a wrong gradient formula look alike), and
the second one would hide behind the first all night. So the night keeps, per class, what each
recorded repro has that its bug may need (`Needs`: its ops and its constructs): a later hit in a
program that lacks part of every one of them is not explained by the bugs recorded, and is worth
a second look (Worker.second_look).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from conformance.engine import MAX_STATEMENTS
from conformance.night.messages import Needs, Shrunk
from conformance.oracles.mismatch import BugClass, class_key


@dataclass
class Settled:
    """A class is settled once a repro of it has at most MAX_STATEMENTS statements, or it was
    shrunk `shrinks_per_class` times (in any worker) without getting that short."""

    shrinks_per_class: int
    shrinks: Counter = field(default_factory=Counter)
    classes: set[BugClass] = field(default_factory=set)
    shortest: dict[tuple[BugClass, str | None], int] = field(default_factory=dict)  # statements recorded
    needs: dict[BugClass, set[Needs]] = field(default_factory=lambda: defaultdict(set))

    def learn(self, s: Shrunk) -> None:
        self.shrinks[s.bug] += 1
        short = s.statements is not None and s.statements <= MAX_STATEMENTS
        if short or self.shrinks[s.bug] >= self.shrinks_per_class:
            self.classes.add(s.bug)
        if s.statements is not None:  # recorded
            bug = (s.bug, s.known)
            self.shortest[bug] = min(self.shortest.get(bug, s.statements), s.statements)
        if s.needs is not None:
            self.needs[s.bug].add(s.needs)

    def __contains__(self, bug: BugClass) -> bool:
        return bug in self.classes

    def has(self, bug: BugClass, known: str | None, statements: int | None = None) -> bool:
        """Whether a record of this class and known issue (None: not a known one) was made, of at
        most `statements` statements where given."""
        made = self.shortest.get((bug, known))
        return made is not None and (statements is None or made <= statements)

    def unexplained(self, result) -> list[BugClass]:
        """The classes of a hit's mismatches, in order, that no recorded repro of theirs
        explains in the part of the program the mismatch can come from (slicing.relevant: the
        whole program has what some repro has far more often). Not only the first class: a
        mismatch that follows another (a flag behind a wrong value) is a bug of its own as
        often as not."""
        from conformance.slicing import relevant

        out: list[BugClass] = []
        for m in result.mismatches:
            bug = class_key(m)
            if bug not in out and not self.explains(bug, Needs.of(relevant(result.program, m))):
                out.append(bug)
        return out

    def explains(self, bug: BugClass, have: Needs) -> bool:
        """Whether some repro of the class has nothing that a program that has `have` lacks
        (ops, constructs). A class settled without a short repro explains everything: it has
        been looked at."""
        repros = self.needs.get(bug)
        if not repros:
            return True
        return any(n.met_by(have) for n in repros)
