"""One-tensor in-place methods (`x.relu_()`, `buf.zero_()`, `p.mul_(0.5)`) and the indexing,
filling and `*_like` ops: drawn, rendered as a person writes them, compared."""

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

from conformance.backends import get
from conformance.check import run_example
from conformance.generators.schedules import CallSpec
from conformance.ops import CREATION, FAMILIES, INPLACE_UNARY
from conformance.program import (Assign, Call, Create, GradRegion, InPlace, Program, TensorInput, ops_called,
                                 render_body)
from conformance.serialize import decode, encode
from conformance.suite import examples

A = (TensorInput("a", (2, 3), requires_grad=True),)
DROPS = "tests.fake_backends:drops_inplace_methods"


def test_an_inplace_method_renders_as_a_person_writes_it_and_survives_json():
    body = (Assign("t0", Call("sin", ("a",))), GradRegion("no_grad", (InPlace("t0", "mul_scalar_"),)),
            InPlace("t0", "relu_"), Assign("t1", Call("masked_fill", ("t0",))))
    program = Program(A, body, ("t1",))
    assert render_body(program) == ("t0 = torch.sin(a)\nwith torch.no_grad():\n    t0.mul_(0.5)\nt0.relu_()\n"
                                    "t1 = t0.masked_fill(t0 > 0, 0.5)\nreturn t1")
    assert decode(encode(program)) == program


@pytest.mark.parametrize("method", sorted(set(INPLACE_UNARY) - {"mul_scalar_"}))
def test_a_lost_inplace_method_is_caught_and_eager_agrees_with_itself(method):
    # Planted fault: the update does nothing. The value it should have changed is returned.
    program = Program(A, (Assign("t0", Call("mul_scalar", ("a",))), InPlace("t0", method)), ("t0",))
    schedule = (CallSpec("grad"),)
    assert run_example(program, get("eager"), schedule).mismatches == []
    found = run_example(program, get(DROPS), schedule).mismatches
    assert found and found[0].oracle in ("outputs", "gradients"), [m.line() for m in found]


def test_a_fill_that_fills_nothing_is_caught():
    program = Program(A, (Assign("t0", Call("masked_fill", ("a",))),), ("t0",))
    assert run_example(program, get("eager"), (CallSpec("grad"),)).mismatches == []
    found = run_example(program, get(DROPS), (CallSpec("grad"),)).mismatches
    assert [m.oracle for m in found][:1] == ["outputs"], [m.line() for m in found]


def test_the_generator_draws_every_inplace_method_and_every_new_op():
    seen: Counter = Counter()

    @settings(max_examples=500, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    # The families of the ops asked for only: drawn among all 56 ops, one of them is met about
    # once in 500 programs, at the edge of a derandomized sample that moves with every new draw.
    @given(examples(statements=("op", "inplace", "region"), families=("index and fill", "copy")))
    def draw(example):
        seen.update(ops_called(example[0]))

    draw()
    wanted = set(INPLACE_UNARY) | set(FAMILIES["index and fill"]) | {"to_round_trip"}
    assert wanted <= set(seen), sorted(wanted - set(seen))


def test_a_fresh_tensor_filled_in_place_is_drawn_and_a_lost_fill_is_caught():
    # `torch.empty((2, 3)).fill_(2.0)`: the fill is all the value there is; lost, it is garbage.
    program = Program(A, (Assign("t0", Create("empty_fill", (2, 3))), Assign("t1", Call("mul", ("a", "t0")))), ("t1",))
    assert "torch.empty((2, 3)).fill_(2.0)" in render_body(program)
    assert run_example(program, get("eager"), (CallSpec("grad"),)).mismatches == []
    found = run_example(program, get(DROPS), (CallSpec("grad"),)).mismatches
    assert found and found[0].oracle in ("outputs", "gradients"), [m.line() for m in found]
    seen: Counter = Counter()

    @settings(max_examples=100, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(statements=("create", "create_requires_grad")))
    def draw(example):
        seen.update(op for op in ops_called(example[0]) if op in CREATION)

    draw()
    assert set(seen) == set(CREATION), seen
