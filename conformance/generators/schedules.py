"""Call schedules: the ambient grad modes (and input flags) for each call of one example."""

from __future__ import annotations

from dataclasses import dataclass

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


Schedule = tuple[CallSpec, ...]


@st.composite
def call_specs(draw, n_inputs: int, index: int) -> CallSpec:
    ambient = draw(st.sampled_from(AMBIENT_MODES), label=f"call{index}.ambient")
    flags = tuple(
        draw(st.one_of(st.none(), st.booleans()), label=f"call{index}.requires_grad[{i}]") for i in range(n_inputs)
    )
    return CallSpec(ambient, flags if any(f is not None for f in flags) else (), index)


@st.composite
def schedules(draw, n_inputs: int, max_calls: int = 6) -> Schedule:
    n = draw(st.integers(1, max_calls), label="calls")
    return tuple(draw(call_specs(n_inputs, i)) for i in range(n))


SINGLE_CALL: Schedule = (CallSpec(),)
