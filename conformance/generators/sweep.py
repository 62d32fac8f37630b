"""Every one-op program over a small domain of shapes and values, and every program of three
small motifs: the nightly job runs them beside its random programs, half its runs each.

Some bugs need one op on one shape or one value, and nothing else: a size-1 vector times a
matrix (`a @ b`, a: [1], b: [1, 3]), a slice of a tensor with a size-0 dim, relu of a NaN
where an input requires grad. Random programs meet such a point seldom (each of those three
was hit by 1 to 9 of nights 58-69), since a program also draws regions, other ops and their
shapes, and the point must reach an output. Enumerated, each is a single run. This is
SmallCheck's idea (Runciman, Naylor and Lindblad, Haskell Symposium 2008: test every input up
to a small size) beside Hypothesis's random search, which keeps the programs with structure.

Every float input requires grad and the call is under grad, so that a backend builds its
backward (where a decomposition can differ from eager) and the gradients are compared.

The motifs are two-op and three-op shapes of program where a compiler's own rules, not an
op's, decide the result; each is enumerated over what varies in it:
- grad-mode boundary: `with torch.no_grad(): t0 = u(a)`, then `t1 = t0 * 2` returned, for every
  op u. A compiler decides per symbol what grad mode made (thunder tags the outputs of each
  symbol called while grad is off, and its VJP treats tagged values as constants), so a
  regression of that rule can hold for some ops only (views, reductions...): t1 then requires
  grad. Random programs put a given op in a region, and its value across it, seldom; this motif
  runs first of all in a night, in batches (generators.probes), so that such a fault shows in
  its first seconds.
- promotion: `t1 = u(a) + b`, an op on a bool, int64 or float32 tensor, then a 0-d float64
  tensor that requires grad. Zero-dim tensors do not decide the result's dtype (PyTorch's
  type promotion docs), and thunder got it wrong for `torch.sin` of an int (6 of nights
  58-71 missed it: it needs an integer input, a 0-d float64 one and an op between).
- view update: `t1 = v(a * 2)`, `t1.m_(b)`, then the view or its base read: autograd
  rebases the view's history (autograd mechanics docs), which a compiler must rewrite as
  copies. thunder's backward raised a TypeError for a 0-d base (10 of nights 58-71 missed
  it), and it drops the update from the base (the sweep's first run).
"""

from __future__ import annotations

from conformance.generators.schedules import SINGLE_CALL, Schedule
from conformance.ops import BINARY, FAMILIES, INPLACE, UNARY, Meta, infer, inplace_applies
from conformance.program import Assign, Call, GradRegion, InPlace, Program, TensorInput

# Shapes that have met thunder's op bugs: 0-d, empty, size 1, a broadcasting 1, batched.
SHAPES = ((), (0,), (1,), (3,), (1, 3), (3, 0), (3, 1), (2, 1, 3), (2, 0, 3))
# The pairs of an elementwise binary op: fewer shapes, whose pairs still broadcast every way
# (0-d with any, [1] with [3], [1, 3] with [3, 1] ...); matmul takes all of SHAPES.
PAIR_SHAPES = ((), (0,), (1,), (3,), (1, 3), (3, 0), (3, 1))
# A non-finite element, in one shape: an op's decomposition can differ from eager there.
SPECIAL_SHAPE = (3,)
SPECIALS = ("nan", "inf", "-inf")


# The promotion motif's inputs: the dtypes of `a` (b is 0-d float64) and the binary ops.
PROMOTED_DTYPES = ("bool", "int64", "float32")
PROMOTING_OPS = ("add", "mul")


def _input(name: str, shape: tuple[int, ...], special: str = "", dtype: str = "float32") -> TensorInput:
    return TensorInput(name, shape, dtype, "cpu", requires_grad=dtype.startswith("float"), special=special)


def _program(op: str, inputs: tuple[TensorInput, ...]) -> Program | None:
    if infer(op, tuple(Meta.of(i) for i in inputs)) is None:
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


def promotion_programs() -> list[Program]:
    """`t0 = u(a)`, `t1 = t0 <op> b` for every unary op u, a's dtype and binary op, b a 0-d
    float64 tensor that requires grad (a float32 a requires grad too)."""
    b = _input("b", (), dtype="float64")
    programs = []
    for dtype in PROMOTED_DTYPES:
        a = _input("a", SPECIAL_SHAPE, dtype=dtype)
        for u, _ in UNARY:
            t0 = infer(u, (Meta.of(a),))
            for op in PROMOTING_OPS:
                if t0 is None or infer(op, (t0, Meta.of(b))) is None:
                    continue
                body = (Assign("t0", Call(u, ("a",))), Assign("t1", Call(op, ("t0", "b"))))
                programs.append(Program((a, b), body, ("t1",)))
    return programs


# The boundary motif's input shapes, the first one an op takes (a transpose needs two dims).
BOUNDARY_SHAPES = ((2, 3), (3,))


def boundary_programs() -> list[Program]:
    """`with torch.no_grad(): t0 = u(a)` (or `u(a, b)`), then `t1 = t0 * 2` returned, for every
    op u; a and b require grad, so t1 must not."""
    programs = []
    for op, arity in [(op, 1) for op, _ in UNARY] + [(op, 2) for op, _ in BINARY]:
        for shape in BOUNDARY_SHAPES:
            inputs = tuple(_input(n, shape) for n in "ab"[:arity])
            made = infer(op, tuple(Meta.of(i) for i in inputs))
            if made is None or infer("mul_scalar", (made,)) is None:
                continue
            body = (GradRegion("no_grad", (Assign("t0", Call(op, tuple(i.name for i in inputs))),)),
                    Assign("t1", Call("mul_scalar", ("t0",))))
            programs.append(Program(inputs, body, ("t1",)))
            break
    return programs


def view_update_programs() -> list[Program]:
    """`t0 = a * 2`, `t1 = v(t0)`, `t1.m_(b)` for every view op v, shape of a and in-place
    method m, b 0-d (it broadcasts to any view): then `torch.sin(t1)` returned (an op reads
    the updated view), or t0 (the base, updated through it)."""
    b = _input("b", ())
    programs = []
    for view in FAMILIES["view"]:
        for shape in SHAPES:
            a = _input("a", shape)
            t1 = infer(view, (Meta.of(a),))
            for method in INPLACE:
                if t1 is None or not inplace_applies(method, t1, Meta.of(b)):
                    continue
                body = (Assign("t0", Call("mul_scalar", ("a",))), Assign("t1", Call(view, ("t0",))),
                        InPlace("t1", method, "b"))
                programs.append(Program((a, b), (*body, Assign("t2", Call("sin", ("t1",)))), ("t2",)))
                programs.append(Program((a, b), body, ("t0",)))
    return programs


# The sweep's parts, by name, in the order they run: each program is called once under grad.
# (The grad-mode boundary runs first of all, in batches, with generators.probes.)
SWEEPS = {"one op": single_op_programs, "promotion": promotion_programs, "view update": view_update_programs}


def sweep_examples() -> list[tuple[Program, Schedule]]:
    """The whole sweep: the one-op programs (the cheaper), then the other motifs."""
    return [(p, SINGLE_CALL) for part in SWEEPS.values() for p in part()]
