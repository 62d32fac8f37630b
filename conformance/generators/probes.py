"""The night's first programs: each grad-mode construct once, alone, and the grad-mode boundary
of every op at once, so that a fault in one of a compiler's grad-mode parts shows in a night's
first seconds, before the random search spends them shrinking what it met first.

A grad-mode fault needs a grad-mode construct and something that reads what it did, and a
night's random programs meet a given pair in its first dozens of examples: 5 to 15 s into a
night on thunder, most of it shrinking the first ones' bugs (docs/benchmarks.md). Two families
of programs, enumerated, show most such faults in a few runs each:

- one construct: each way to change grad mode (a no_grad, enable_grad or set_grad_enabled
  region, a plain `torch.set_grad_enabled` or `torch._C._set_grad_enabled` call, a helper
  decorated with either, a branch on `torch.is_grad_enabled()`) around `a * 2` (no_grad on float64 too), its
  value read after it with grad on, called under grad, then no_grad, then grad: the marker (the mode inside), the tagging
  and the VJP (the value read after), the write-back (the mode after a plain call) and the
  cache check (the second call must not reuse the first one's trace, the third not the
  second's) each decide something a user sees;
- the grad-mode boundary in batches: `with torch.no_grad():` around every op of a batch, each
  value then read with grad on (`* 2`), all returned. A compiler decides per symbol what grad
  mode made, so a fault can hold for some ops only (views, reductions...). No output requires
  grad in eager; one that does is the op's. A batch that differs is taken apart into its ops'
  own programs (generators.sweep.boundary_programs), which are the repros;
- the readers of a constant, in one batch: a value made under no_grad read with grad on by
  every binary op beside an input that requires grad (`t = u(t0, a)`), each op's VJP keeping
  the rule that a tagged value is a constant on its own.

A batch is one compile for many ops: the whole boundary costs about what four of its one-op
programs cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.generators.schedules import SINGLE_CALL, CallSpec, Schedule
from conformance.generators.sweep import boundary_programs
from conformance.ops import BINARY, FAMILIES, Meta, infer
from conformance.program import (Assign, Call, GradRegion, Helper, HelperCall, IfGradEnabled,
                                 Program, SetGradMode, TensorInput)

if TYPE_CHECKING:
    from conformance.oracles.mismatch import Mismatch

# Grad on, then off (a trace of grad on must not be reused), then on again (nor one of grad off).
PROBE_SCHEDULE: Schedule = (CallSpec("grad", values_seed=0), CallSpec("no_grad", values_seed=1),
                            CallSpec("grad", values_seed=2))
# Ops a batch of the boundary holds: few enough that a batch that differs is taken apart soon.
BATCH = 8

_A = (TensorInput("a", (3,), requires_grad=True),)
_MADE = Assign("t0", Call("mul_scalar", ("a",)))  # t0 = a * 2
_READ = Assign("t1", Call("mul", ("t0", "a")))  # t1 = t0 * a: its gradient tells whether t0 is a constant


def _around(*before_and_after, returns=("t1",), helpers=(), inputs=_A) -> Program:
    return Program(inputs, tuple(before_and_after), returns, helpers)


def construct_programs() -> list[Program]:
    """Each way to change grad mode once, around `t0 = a * 2`, with `t1 = t0 * a` after it."""
    off = [GradRegion("no_grad", (_MADE,)), GradRegion("set_grad_enabled", (_MADE,), False)]
    programs = [_around(region, _READ) for region in off]
    # A compiler's tag rides on its proxies, which carry the dtype: float64 as well.
    programs.append(_around(off[0], _READ, inputs=(TensorInput("a", (3,), "float64", requires_grad=True),)))
    # Turned on, grad shows in t0 itself, called under no_grad (an output beside it that does
    # not require grad would meet thunder's every-output-differentiable bug instead).
    programs.append(_around(GradRegion("enable_grad", (_MADE,)), returns=("t0",)))
    programs += [_around(SetGradMode(api, False), _MADE, SetGradMode(api, True), _READ)
                 for api in ("torch.set_grad_enabled", "torch._C._set_grad_enabled")]
    programs.append(_around(SetGradMode("torch.set_grad_enabled", False), _MADE, returns=("t0",)))
    for decorator in ("no_grad", "enable_grad"):  # @torch.no_grad(): t1 reads a constant; @torch.enable_grad(): as above
        helper = Helper("helper0", decorator, ("p0",), (Assign("r0", Call("mul_scalar", ("p0",))),), "r0")
        call = Assign("t0", HelperCall("helper0", ("a",)))
        programs.append(_around(call, _READ, helpers=(helper,)) if decorator == "no_grad"
                        else _around(call, returns=("t0",), helpers=(helper,)))
    programs.append(_around(IfGradEnabled((_MADE,), (Assign("t0", Call("add_scalar", ("a",))),)), _READ))
    return programs


@dataclass(frozen=True)
class Probe:
    """A program to run first, with the one-op programs it is taken apart into where it differs
    (none: it is a repro as it is)."""

    program: Program
    schedule: Schedule
    parts: tuple[Program, ...] = ()

    def part_for(self, m: Mismatch) -> Program | None:
        """The one-op program of the value a mismatch names (the k-th returned value is the
        k-th op's)."""
        k = m.returned
        return self.parts[k] if k is not None and k < len(self.parts) else None


def probes() -> list[Probe]:
    """The night's first programs: the constructs, then the batches of the boundary and of the
    readers of a constant."""
    batches = boundary_batches() + [(_reading_batch(reader_programs()), reader_programs())]
    return [Probe(p, PROBE_SCHEDULE) for p in construct_programs()] + [
        Probe(batch, SINGLE_CALL, tuple(parts)) for batch, parts in batches]


def reader_programs() -> list[Program]:
    """`with torch.no_grad(): t0 = a * 2`, then `t1 = u(t0, a)` returned, for every binary op u
    that takes them: u's backward must give `a` a gradient through its second argument only (t0
    is a constant), a rule each op's VJP keeps on its own."""
    programs = []
    for op, _ in BINARY:
        if infer(op, (Meta.of(_A[0]), Meta.of(_A[0]))) is not None:
            body = (GradRegion("no_grad", (_MADE,)), Assign("t1", Call(op, ("t0", "a"))))
            programs.append(Program(_A, body, ("t1",)))
    return programs


def _reading_batch(programs: list[Program]) -> Program:
    """The reader programs as one: the region once, then each op's `t{k} = u(t0, a)`."""
    reads = tuple(Assign(f"t{k + 1}", p.body[1].value) for k, p in enumerate(programs))
    return Program(_A, (programs[0].body[0], *reads), tuple(r.target for r in reads))


def probe_examples() -> list[tuple[Program, Schedule]]:
    """The probes' programs that are repros as they are: the constructs' and the batches' one-op
    programs (what the conformance suite runs: it needs no batch to save compiles)."""
    return [(p, PROBE_SCHEDULE) for p in construct_programs()] + [
        (p, SINGLE_CALL) for p in boundary_programs() + reader_programs()]


def boundary_batches() -> list[tuple[Program, list[Program]]]:
    """The grad-mode boundary of every op, at most BATCH ops a program, those of one family and
    input shape together (a family's ops share a compiler's rules, so one batch's ops do not
    hide each other's faults behind a failure of another kind): each batch with the one-op
    programs it is taken apart into."""
    family = {op: name for name, ops in FAMILIES.items() for op in ops}
    groups: dict[tuple, list[Program]] = {}
    for p in boundary_programs():
        groups.setdefault((p.inputs, family.get(p.body[0].body[0].value.op, "")), []).append(p)
    batches = []
    for (inputs, _), programs in groups.items():
        for k in range(0, len(programs), BATCH):
            part = programs[k:k + BATCH]
            batches.append((_batch(inputs, part), part))
    return batches


def _batch(inputs: tuple[TensorInput, ...], programs: list[Program]) -> Program:
    """One program of the boundary programs `with torch.no_grad(): t0 = u(a)`, `t1 = t0 * 2`:
    every op in one region, each value then doubled and returned."""
    made, read, returns = [], [], []
    for k, p in enumerate(programs):
        op = p.body[0].body[0].value
        made.append(Assign(f"t{2 * k}", op))
        read.append(Assign(f"t{2 * k + 1}", Call("mul_scalar", (f"t{2 * k}",))))
        returns.append(f"t{2 * k + 1}")
    return Program(inputs, (GradRegion("no_grad", tuple(made)), *read), tuple(returns))
