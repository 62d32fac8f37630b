"""What a generator knows while it draws one body: the variables in scope and their Metas.

Python has no block scope, so a variable assigned inside `with` stays visible after it;
only the branches of an `if` and helper bodies get scopes of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.ops import OPS, Meta
from conformance.program import Helper


@dataclass
class Names:
    """Fresh-name counters shared by every scope of one program."""

    temps: int = 0
    helpers: int = 0
    functions: int = 0

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps - 1}"

    def helper(self) -> str:
        self.helpers += 1
        return f"helper{self.helpers - 1}"

    def function(self) -> str:
        self.functions += 1
        return f"Fn{self.functions - 1}"


@dataclass
class Scope:
    env: dict[str, Meta]
    names: Names
    helpers: list[Helper]
    device: str = "cpu"
    # Helpers are defined at module level; a helper body calls no other helper.
    in_helper: bool = False
    labels: set[str] = field(default_factory=set)
    ops: tuple[str, ...] = tuple(OPS)  # the ops this program draws from (swarm testing)
    views: set[str] = field(default_factory=set)  # the variables a view op (or detach) made
    flags: list[str] = field(default_factory=list)  # the variables a Read bound: bools, not tensors
    # The inputs and parameters that require grad (as declared; a call may change an input's).
    differentiable: frozenset[str] = frozenset()

    def child(self) -> "Scope":
        return Scope(dict(self.env), self.names, self.helpers, self.device, self.in_helper, self.labels, self.ops,
                     set(self.views), list(self.flags), self.differentiable)

    def variables(self) -> list[str]:
        return sorted(self.env, key=_name_order)

    def latest(self) -> str | None:
        """The temporary assigned last, if any (dicts keep the order names were added)."""
        return next((n for n in reversed(self.env) if is_temporary(n)), None)


def is_temporary(name: str) -> bool:
    """A value the body computed (t0, t1, ...), not an input or a parameter."""
    return name[0] == "t" and name[1:].isdigit()


def _name_order(name: str) -> tuple[int, str]:
    # Inputs (a, b, ...) before parameters before temporaries, temporaries by number,
    # so that shrinking towards index 0 means towards the inputs.
    if name.startswith("self."):
        return (1, name)
    if name[0] in "tph" and name[1:].isdigit():
        return (2, f"{int(name[1:]):06d}")
    return (0, name)
