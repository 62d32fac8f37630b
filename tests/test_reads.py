"""Reads of autograd state in generated programs: drawn, rendered, compared."""

from collections import Counter

from hypothesis import HealthCheck, given, settings

from conformance.backends import get
from conformance.check import run_example
from conformance.generators.schedules import CallSpec
from conformance.program import READS, Assign, Call, Program, Read, TensorInput, constructs, render_body
from conformance.suite import examples

A = (TensorInput("a", (2,), requires_grad=True),)


def test_a_read_renders_as_a_person_writes_it():
    body = (Assign("t0", Call("mul_scalar", ("a",))), Assign("t1", Read("grad_fn_is_none", "t0")),
            Assign("t2", Read("inference_mode_enabled")))
    assert render_body(Program(A, body, ("t1", "t2"))) == (
        "t0 = a * 2\nt1 = t0.grad_fn is None\nt2 = torch.is_inference_mode_enabled()\nreturn t1, t2")


def test_a_read_is_compared_and_a_backend_that_runs_the_body_with_grad_on_is_caught():
    # Planted fault: faulty.AlwaysGrad runs the body with grad on under the caller's no_grad,
    # so the value made there requires grad; the read returns it, the outputs oracle compares
    # it (the value itself is not returned: only the read shows the fault).
    body = (Assign("t0", Call("mul_scalar", ("a",))), Assign("t1", Read("requires_grad", "t0")))
    program = Program(A, body, ("t1",))
    assert run_example(program, get("eager"), (CallSpec("no_grad"),)).mismatches == []
    found = run_example(program, get("conformance.backends.faulty:always_grad"), (CallSpec("no_grad"),)).mismatches
    assert [(m.kind, m.eager, m.backend) for m in found] == [("outputs.python value", "False", "True")]


def test_the_generator_draws_every_read_and_branches_on_them():
    seen: Counter = Counter()

    @settings(max_examples=600, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(statements=("op", "read", "if", "region")))
    def draw(example):
        seen.update(constructs(example[0]))

    draw()
    assert {f"read_{attr}" for attr in READS} | {"if_read"} <= set(seen), seen
    assert seen["if_read"] >= 3, seen  # not at the edge of the sample: a branch on a read is 1 in ~100
