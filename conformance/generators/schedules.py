"""Call schedules: the ambient grad modes (and autocast, and input flags) for each call of one example."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from conformance.grad_mode import AMBIENT_MODES


@dataclass(frozen=True)
class CallSpec:
    ambient: str = "grad"
    # Per input: the requires_grad flag of the re-created input for this call, None for
    # the program's own flag. Only floating inputs can require grad; others ignore it.
    requires_grad: tuple[bool | None, ...] = ()
    # Fresh values per call, so a cache that baked a value in shows up.
    values_seed: int = 0
    # Called inside `torch.autocast` on the program's device (its default dtype), as a training
    # step calls a model under mixed precision: the compiled function's products compute in it.
    autocast: bool = False
    # After the call's backward, the caller takes an SGD step on the module's parameters
    # (`with torch.no_grad(): p -= 0.1 * p.grad`), as a training loop does: the next call must
    # see the new values.
    step: bool = False

    def caller(self) -> str:
        """The state the call is made in: `no_grad`, `no_grad under autocast`."""
        return self.ambient + (" under autocast" if self.autocast else "")

    def describe(self) -> str:
        """How the call is made, for reports: `no_grad under autocast, then a step`."""
        return self.caller() + (", then a step" if self.step else "")


Schedule = tuple[CallSpec, ...]

# The construct an example has where a call is made under the caller's autocast (in signatures,
# construct counts, known issues' tables): a bug of the function's own autocast regions and one
# of the caller's are two bugs.
AMBIENT_AUTOCAST = "autocast(ambient)"
# ... and where the caller takes an optimizer step on a module's parameters between calls.
OPTIMIZER_STEP = "optimizer step"


def caller_constructs(schedule: Schedule, module: bool = False) -> frozenset[str]:
    """The constructs the calls add to the program's (a step only where there are parameters)."""
    found = {AMBIENT_AUTOCAST} if any(spec.autocast for spec in schedule) else set()
    if module and any(spec.step for spec in schedule):
        found.add(OPTIMIZER_STEP)
    return frozenset(found)


@st.composite
def call_specs(draw, n_inputs: int) -> CallSpec:
    ambient = draw(st.sampled_from(AMBIENT_MODES), label="call.ambient")
    flags = tuple(draw(st.one_of(st.none(), st.booleans()), label=f"call.requires_grad[{i}]") for i in range(n_inputs))
    # One call in four under autocast: most programs hold no product it changes, and shrinking
    # goes to 0 (no autocast).
    autocast = draw(st.integers(0, 3), label="call.autocast") == 3
    step = draw(st.booleans(), label="call.step")
    return CallSpec(ambient, flags if any(f is not None for f in flags) else (), autocast=autocast, step=step)


def schedules(n_inputs: int, max_calls: int = 6) -> st.SearchStrategy[Schedule]:
    # A list, so that shrinking can drop any call, not only the last ones; each call gets
    # fresh input values (values_seed) by its position.
    return st.lists(call_specs(n_inputs), min_size=1, max_size=max_calls).map(
        lambda calls: tuple(replace(c, values_seed=i) for i, c in enumerate(calls)))


SINGLE_CALL: Schedule = (CallSpec(),)
