"""One example end to end: run a Program on eager and on a backend, compare, raise.

This is the function a property test calls; it raises one exception class per kind
of mismatch found (see oracles.mismatch), carrying the evidence for the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import oracles, runner, slicing
from conformance.backends.base import Declaration
from conformance.generators.schedules import SINGLE_CALL, Schedule
from conformance.oracles.mismatch import Mismatch, exception_class
from conformance.outcome import SideOutcome
from conformance.program import Program, render


@dataclass
class Result:
    program: Program
    schedule: Schedule
    source: str
    eager: SideOutcome
    backend: SideOutcome
    mismatches: list[Mismatch] = field(default_factory=list)


def run_example(program: Program, backend, schedule: Schedule = SINGLE_CALL,
                oracle_names: tuple[str, ...] = oracles.ORACLES, timer: runner.Timer | None = None) -> Result:
    with runner._phase(timer, "render"):
        source = render(program)
    eager = runner.run(program, None, schedule, source, timer)
    side = runner.run(program, backend, schedule, source, timer)
    with runner._phase(timer, "oracles"):
        found = oracles.compare(eager, side, oracle_names)
    if Declaration.DEAD_CODE_REMOVED in side.declarations and _eager_raised_alone(eager, side):
        # The backend may skip what nothing reads: its reference is eager of the live program,
        # so an error eager raises only in a dead statement is not one the backend owes.
        live = slicing.dead_code_reference(program, tuple(c.ambient for c in schedule))
        if live != program:
            full, eager = eager, runner.run(live, None, schedule, None, timer)
            with runner._phase(timer, "oracles"):
                found = oracles.compare(eager, side, oracle_names)
            # It may also run the dead code: a call that raised what the whole program raises in
            # eager (`torch.autograd.grad` of a value that does not require grad) is eager's.
            as_written = {i for i, (f, b) in enumerate(zip(full.calls, side.calls))
                          if f.error and b.error and (f.error.type, f.error.headline()) == (b.error.type,
                                                                                    b.error.headline())}
            found = [m for m in found if m.call not in as_written]
    return Result(program, schedule, source, eager, side, found)


def _eager_raised_alone(eager: SideOutcome, backend: SideOutcome) -> bool:
    """A call of eager raised where the backend's did not (it may have raised in backward)."""
    def at_call(c) -> bool:
        return c.error is not None and c.error.stage == "call"

    return any(at_call(e) and not at_call(b) for e, b in zip(eager.calls, backend.calls))


def failure_message(result: Result) -> str:
    lines = [f"{len(result.mismatches)} mismatch(es) between eager and {result.backend.side}:"]
    lines += ["  " + m.line() for m in result.mismatches[:12]]
    lines += ["", "program:", result.source, "inputs: " + describe_inputs(result.program)]
    lines.append("calls: " + "; ".join(describe_call(c) for c in result.schedule))
    return "\n".join(lines)


def describe_inputs(program: Program) -> str:
    def one(i):
        grad = ", requires_grad" if i.requires_grad else ""
        dev = f", {i.device}" if i.device != "cpu" else ""
        special = f", one element {i.special}" if i.special else ""
        return f"{i.name}: {i.dtype}{list(i.shape)}{dev}{grad}{special}"

    return ", ".join(one(i) for i in program.inputs + program.parameters)


def describe_call(spec) -> str:
    flags = ""
    if spec.requires_grad:
        flags = " with requires_grad " + str(["as declared" if f is None else f for f in spec.requires_grad])
    return spec.describe() + flags


def raise_for(result: Result) -> None:
    """Raise the exception class of the result's first mismatch, if it has any."""
    if not result.mismatches:
        return
    exc = exception_class(result.mismatches[0])(result.mismatches, failure_message(result))
    exc.result = result
    raise exc
