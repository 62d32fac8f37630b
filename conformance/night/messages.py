"""What the night's processes tell each other: typed messages, one class per kind.

Workers put them on the supervisor's queue; the supervisor forwards `Shrunk` to every worker's
inbox, so that no two workers shrink the same class of mismatch twice over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.oracles.mismatch import BugClass
from conformance.program import Program, constructs, ops_called


@dataclass(frozen=True)
class Beat:
    """A worker is alive: its counts so far (of this incarnation)."""

    worker: int
    examples: int
    rss_mb: float
    constructs: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # per activity
    swept: int = 0  # programs of the worker's share of the sweep run so far, over its incarnations


@dataclass(frozen=True)
class Needs:
    """What a repro has that its bug may need: the ops it calls and its constructs."""

    ops: frozenset[str]
    constructs: frozenset[str]

    @classmethod
    def of(cls, program: Program) -> Needs:
        return cls(ops_called(program), constructs(program))

    def met_by(self, other: Needs) -> bool:
        """Whether `other` has all this has."""
        return self.ops <= other.ops and self.constructs <= other.constructs


@dataclass(frozen=True)
class Shrunk:
    """A class of mismatch was shrunk and recorded; `statements` of its repro, None where the
    shrunk program showed the class only behind another (not recorded, see Worker.conclude)."""

    worker: int
    bug: BugClass
    signature: str  # as written in the record
    known: str | None
    statements: int | None
    needs: Needs | None = None  # of the recorded repro


@dataclass(frozen=True)
class Hit:
    """A later hit of a class already settled: counted, not shrunk."""

    worker: int
    bug: BugClass


@dataclass(frozen=True)
class Exit:
    """A worker's last word: `done` (its budget or the night is over) or `recycle` (restart it)."""

    last: Beat
    why: str


Message = Beat | Shrunk | Hit | Exit
