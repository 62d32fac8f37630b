"""Every one-op program over a small domain of shapes and values: the nightly job runs them
all before it draws random programs.

Some bugs need one op on one shape or one value, and nothing else: a size-1 vector times a
matrix (`a @ b`, a: [1], b: [1, 3]), a slice of a tensor with a size-0 dim, relu of a NaN
where an input requires grad. Random programs meet such a point seldom (each of those three
was hit by 1 to 9 of nights 58-69), since a program also draws regions, other ops and their
shapes, and the point must reach an output. Enumerated, each is a single run. This is
SmallCheck's idea (Runciman, Naylor and Lindblad, Haskell Symposium 2008: test every input up
to a small size) beside Hypothesis's random search, which keeps the programs with structure.

Every float input requires grad and the call is under grad, so that a backend builds its
backward (where a decomposition can differ from eager) and the gradients are compared.
"""

from __future__ import annotations

from conformance.generators.schedules import SINGLE_CALL, Schedule
from conformance.ops import BINARY, UNARY, Meta, infer
from conformance.program import Assign, Call, Program, TensorInput

# Shapes that have met thunder's op bugs: 0-d, empty, size 1, a broadcasting 1, batched.
SHAPES = ((), (0,), (1,), (3,), (1, 3), (3, 0), (3, 1), (2, 1, 3), (2, 0, 3))
# The pairs of an elementwise binary op: fewer shapes, whose pairs still broadcast every way
# (0-d with any, [1] with [3], [1, 3] with [3, 1] ...); matmul takes all of SHAPES.
PAIR_SHAPES = ((), (0,), (1,), (3,), (1, 3), (3, 0), (3, 1))
# A non-finite element, in one shape: an op's decomposition can differ from eager there.
SPECIAL_SHAPE = (3,)
SPECIALS = ("nan", "inf", "-inf")


def _input(name: str, shape: tuple[int, ...], special: str = "") -> TensorInput:
    return TensorInput(name, shape, "float32", "cpu", requires_grad=True, special=special)


def _program(op: str, inputs: tuple[TensorInput, ...]) -> Program | None:
    if infer(op, tuple(Meta(i.shape, i.dtype, i.device) for i in inputs)) is None:
        return None
    body = (Assign("t0", Call(op, tuple(i.name for i in inputs))),)
    return Program(inputs, body, ("t0",))


def single_op_programs() -> list[Program]:
    """The sweep's programs, unary ops first (the cheaper), in a fixed order."""
    unary = [(op, (_input("a", s),)) for op, _ in UNARY for s in SHAPES]
    unary += [(op, (_input("a", SPECIAL_SHAPE, v),)) for op, _ in UNARY for v in SPECIALS]
    binary = [(op, (_input("a", s), _input("b", t))) for op, _ in BINARY
              for s in (SHAPES if op == "matmul" else PAIR_SHAPES)
              for t in (SHAPES if op == "matmul" else PAIR_SHAPES)]
    programs = (_program(op, inputs) for op, inputs in unary + binary)
    return [p for p in programs if p is not None]


def single_op_examples() -> list[tuple[Program, Schedule]]:
    return [(p, SINGLE_CALL) for p in single_op_programs()]
