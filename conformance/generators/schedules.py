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
    # A module's call in eval mode (`model.eval()` before it, `model.train()` before the next
    # call in training mode): a forward that reads `self.training` computes otherwise, and a
    # cache must tell the two apart.
    training: bool = True
    # After the call (and its step), the caller sets the parameters' gradients to None, as
    # `optimizer.zero_grad()` does; False: they accumulate into the next call (gradient
    # accumulation), where a forward that reads `p.grad` sees them.
    zero_grad: bool = True

    def caller(self) -> str:
        """The state the call is made in: `no_grad`, `no_grad under autocast`."""
        return self.ambient + (" under autocast" if self.autocast else "")

    def describe(self) -> str:
        """How the call is made, for reports: `no_grad under autocast, then a step`."""
        return self.caller() + ("" if self.training else " in eval mode") + (", then a step" if self.step else "") \
            + ("" if self.zero_grad else ", gradients kept")


Schedule = tuple[CallSpec, ...]

# The construct an example has where a call is made under the caller's autocast (in signatures,
# construct counts, known issues' tables): a bug of the function's own autocast regions and one
# of the caller's are two bugs.
AMBIENT_AUTOCAST = "autocast(ambient)"
# ... and where the caller takes an optimizer step on a module's parameters between calls.
OPTIMIZER_STEP = "optimizer step"
# ... and where a module is called in eval mode.
EVAL_MODE = "model.eval()"
# ... and where a module's gradients are kept from one call to the next.
GRADIENTS_KEPT = "gradients kept"


def in_eval_mode(schedule: Schedule) -> bool:
    """Whether a call of the schedule is made in eval mode (`model.eval()` before it)."""
    return not all(spec.training for spec in schedule)


def keeps_gradients(schedule: Schedule) -> bool:
    """Whether a call of the schedule leaves its gradients for the next (no `zero_grad()`)."""
    return not all(spec.zero_grad for spec in schedule)


def caller_constructs(schedule: Schedule, module: bool = False) -> frozenset[str]:
    """The constructs the calls add to the program's (a step only where there are parameters)."""
    found = {AMBIENT_AUTOCAST} if any(spec.autocast for spec in schedule) else set()
    if module and any(spec.step for spec in schedule):
        found.add(OPTIMIZER_STEP)
    if module and in_eval_mode(schedule):
        found.add(EVAL_MODE)
    if module and keeps_gradients(schedule):
        found.add(GRADIENTS_KEPT)
    return frozenset(found)


# Built once: a strategy built in each draw is validated in each draw (7% of the generator's time).
MAYBE_FLAG = st.one_of(st.none(), st.booleans())


@st.composite
def call_specs(draw, n_inputs: int, module: bool = False) -> CallSpec:
    ambient = draw(st.sampled_from(AMBIENT_MODES), label="call.ambient")
    flags = tuple(draw(MAYBE_FLAG, label=f"call.requires_grad[{i}]") for i in range(n_inputs))
    # One call in four under autocast: most programs hold no product it changes, and shrinking
    # goes to 0 (no autocast).
    autocast = draw(st.integers(0, 3), label="call.autocast") == 3
    step = draw(st.booleans(), label="call.step")
    # A module's call in eval mode one time in four (shrinks to training mode), and its
    # gradients kept one time in four; only a module draws them, so that a function's draws
    # stay as they were.
    training = not module or draw(st.integers(0, 3), label="call.eval") != 3
    zero_grad = not module or draw(st.integers(0, 3), label="call.keep_gradients") != 3
    return CallSpec(ambient, flags if any(f is not None for f in flags) else (), autocast=autocast, step=step,
                    training=training, zero_grad=zero_grad)


def schedules(n_inputs: int, max_calls: int = 6, module: bool = False) -> st.SearchStrategy[Schedule]:
    # A list, so that shrinking can drop any call, not only the last ones; each call gets
    # fresh input values (values_seed) by its position.
    return st.lists(call_specs(n_inputs, module), min_size=1, max_size=max_calls).map(
        lambda calls: tuple(replace(c, values_seed=i) for i, c in enumerate(calls)))


SINGLE_CALL: Schedule = (CallSpec(),)
