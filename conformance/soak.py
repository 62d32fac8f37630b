"""`python -m conformance soak`: global state never leaks from one example into the next.

Runs generated examples against a backend that raises at random points and leaves torch's
global state changed on purpose (backends.faulty.Chaotic), and counts the examples after
which that state differs from what it was when the example started. The harness restores it
in one place (grad_mode.isolated, around each side of an example), so the count must be 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class SoakResult:
    examples: int = 0
    leaks: int = 0  # examples after which the global state differed from their start
    leaked: Counter = field(default_factory=Counter)  # which part of the state, over those examples
    faults: Counter = field(default_factory=Counter)  # what the backend did, per kind

    def line(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items()))
        leaked = "" if not self.leaks else " (" + ", ".join(f"{k} {v}" for k, v in sorted(self.leaked.items())) + ")"
        return f"{self.examples} examples, {self.leaks} leaked global state{leaked}; the backend's faults: {faults}"


def soak(examples: int, seed: int = 0) -> SoakResult:
    from hypothesis import HealthCheck, Phase, given, settings

    from conformance import grad_mode
    from conformance.backends.faulty import Chaotic
    from conformance.check import run_example
    from conformance.engine import examples as example_strategy
    from conformance.engine import seeded

    backend = Chaotic(seed)
    result = SoakResult()

    @settings(max_examples=examples, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(example_strategy())
    def one(example):
        program, schedule = example
        before = grad_mode.snapshot()
        run_example(program, backend, schedule)
        left = grad_mode.restore(before)  # set back here too, so that one leak is counted once
        result.examples += 1
        if left:
            result.leaks += 1
            result.leaked.update(left)

    seeded(one, seed)()
    result.faults = Counter(backend.done)
    return result
