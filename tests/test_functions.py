"""torch.autograd.Function in generated programs: drawn, rendered, run, reduced."""

from collections import Counter

import torch
from hypothesis import HealthCheck, given, settings

from conformance import reduction, serialize
from conformance.backends import get
from conformance.check import run_example
from conformance.generators.schedules import CallSpec
from conformance.program import (FUNCTION, REGION_KINDS, Assign, Call, GradRegion, Helper, HelperCall, Program, TensorInput,
                                 constructs, render)
from conformance.runner import load
from conformance.suite import examples

A = (TensorInput("a", (3,), requires_grad=True),)
FN = Helper("Fn0", FUNCTION, ("p0",), (GradRegion("enable_grad", (Assign("t0", Call("sin", ("p0",))),)),), "t0")
PROGRAM = Program(A, (Assign("t1", HelperCall("Fn0", ("a",))),), ("t1",), (FN,))


def test_a_function_renders_as_a_person_writes_it():
    assert render(PROGRAM) == '''import torch


class Fn0(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p0):
        ctx.save_for_backward(p0)
        with torch.enable_grad():
            t0 = torch.sin(p0)
        return t0

    @staticmethod
    def backward(ctx, grad):
        p0, = ctx.saved_tensors
        return p0 * grad.sum()


def fn(a):
    t1 = Fn0.apply(a)
    return t1
'''
    assert {"Function.apply", "enable_grad"} <= constructs(PROGRAM)
    assert serialize.loads(serialize.dumps(PROGRAM)) == PROGRAM


def test_eager_calls_the_custom_backward():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    load(PROGRAM)(a).backward(torch.ones(3))
    assert torch.equal(a.grad, a.detach() * 3)  # the input times the sum of the output's gradient, not cos(a)


def test_a_backend_that_differentiates_the_forward_instead_is_caught():
    # Planted fault: faulty.InlinesFunctions runs the forward as plain code and differentiates it.
    schedule = (CallSpec("grad"),)
    assert run_example(PROGRAM, get("eager"), schedule).mismatches == []
    found = run_example(PROGRAM, get("conformance.backends.faulty:inlines_functions"), schedule).mismatches
    assert {(m.oracle, m.where) for m in found} == {("gradients", "a.grad")}, found


def test_the_generator_draws_functions_with_regions_inside():
    seen: Counter = Counter()

    @settings(max_examples=900, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(statements=("op", "region", "set_grad", "helper")))
    def draw(example):
        program = example[0]
        for h in program.helpers:
            seen.update({"function": h.is_function, "non_differentiable": h.non_differentiable})
            seen.update(s.kind for s in h.body if h.is_function and isinstance(s, GradRegion))
        compile(render(program), "<program>", "exec")

    draw()
    # A fifth of the Functions mark their result non-differentiable (12 of 74 in 1,200 draws);
    # Hypothesis's first draws are the simplest: 600 held 32-38 Functions and 0-1 marked, these
    # 900 hold 61, 10 marked.
    assert seen["function"] >= 30 and seen["non_differentiable"] >= 1, seen
    regions = {k: seen[k] for k in REGION_KINDS if seen[k]}
    assert sum(regions.values()) >= 10 and len(regions) >= 3, seen  # forwards that change grad mode


def test_reduction_tries_the_program_without_the_function():
    # A "bug" that needs only sin under grad off: the Function is made a no_grad helper, which
    # is inlined, and the region goes too where grad is off anyway (the forward's mode).
    marked = Program(A, PROGRAM.body, ("t1",), (Helper("Fn0", FUNCTION, ("p0",), (Assign("t0", Call("sin", ("p0",))),),
                                                      "t0", non_differentiable=True),))

    def calls_sin(program, schedule):
        return "torch.sin" in render(program) or None

    r = reduction.reduce(marked, (CallSpec("grad"),), calls_sin)
    assert r.program.helpers == () and "torch.sin(a)" in render(r.program), render(r.program)
