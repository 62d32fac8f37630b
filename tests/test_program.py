"""The Program IR and its renderer: valid Python, round trips, nesting, statement counts."""

import ast

import pytest
from hypothesis import given, settings

from conformance import runner, serialize
from conformance.generators import programs, schedules
from conformance.program import (
    GRAD_ENABLED, Assign, Call, Create, GradRegion, Helper, HelperCall, IfGradEnabled, InPlace, Program,
    RequiresGrad, SetGradMode, TensorInput, constructs, count_statements, render, render_body,
)

X = TensorInput("a", (2,), requires_grad=True)


def nested(depth: int) -> Program:
    body = (Assign("t0", Call("sin", ("a",))),)
    kinds = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
    for d in range(depth):
        body = (GradRegion(kinds[d % 4], body, enabled=bool(d % 2)),)
    return Program((X,), body, ("t0",))


def test_renders_what_a_person_would_write():
    p = Program(
        (X,),
        (GradRegion("no_grad", (Assign("t0", Create("ones", (2,))), Assign("t1", Call("mul", ("a", "t0"))))),
         Assign("t2", Call("add", ("a", "t1")))),
        ("t2", GRAD_ENABLED),
    )
    assert render(p) == (
        "import torch\n\n\n"
        "def fn(a):\n"
        "    with torch.no_grad():\n"
        "        t0 = torch.ones((2,))\n"
        "        t1 = a * t0\n"
        "    t2 = a + t1\n"
        "    return t2, torch.is_grad_enabled()\n"
    )


def test_nests_to_depth_four_and_runs():
    p = nested(4)
    source = render(p)
    assert source.count("with torch.") == 4
    ast.parse(source)
    side = runner.run(p, None, schedules_single())
    assert side.calls[0].error is None, side.calls[0].error


def schedules_single():
    from conformance.generators import SINGLE_CALL

    return SINGLE_CALL


def test_every_statement_kind_renders_and_round_trips():
    helper = Helper("helper0", "no_grad", ("p0",), (Assign("t9", Call("cos", ("p0",))),), "t9")
    p = Program(
        (X, TensorInput("b", (), "int64")),
        (
            SetGradMode("torch._C._set_grad_enabled", False),
            Assign("t0", HelperCall("helper0", ("a",))),
            IfGradEnabled((Assign("t1", Call("sin", ("a",))),), (Assign("t1", Call("cos", ("a",))),)),
            SetGradMode("torch.set_grad_enabled", True),
            Assign("t2", Create("arange", (3,), requires_grad=True)),
            InPlace("t1", "add_", "b"),
            RequiresGrad("t2"),
        ),
        ("t1", "t2"),
        helpers=(helper,),
        parameters=(TensorInput("w0", (2,), requires_grad=True),),
    )
    source = render(p)
    ast.parse(source)
    assert "@torch.no_grad()\ndef helper0(p0):" in source
    assert "class Model(torch.nn.Module):" in source
    assert "torch.arange(3.0, requires_grad=True)" in source
    assert serialize.loads(serialize.dumps(p)) == p
    assert render(serialize.loads(serialize.dumps(p))) == source
    assert constructs(p) >= {"@no_grad", "if_is_grad_enabled", "inplace", "requires_grad_", "module",
                             "torch._C._set_grad_enabled(False)", "create_requires_grad"}
    # 7 statements + 2 branch bodies + the if's else + helper (1 + 1) + return
    assert count_statements(p) == 7 + 2 + 1 + 2 + 1


def test_body_is_the_function_body_only():
    assert render_body(nested(1)) == "with torch.no_grad():\n    t0 = torch.sin(a)\nreturn t0"


def test_bad_json_is_rejected_with_a_reason():
    with pytest.raises(serialize.BadProgram, match="unknown node type"):
        serialize.loads('{"type": "Nope"}')
    with pytest.raises(serialize.BadProgram, match="not JSON"):
        serialize.loads("{")


@settings(max_examples=300)
@given(programs())
def test_generated_programs_are_valid_python_and_round_trip(p):
    source = render(p)
    ast.parse(source)
    assert serialize.loads(serialize.dumps(p)) == p


def test_swarm_leaves_kinds_out_of_some_programs_and_keeps_every_kind_reachable():
    from conformance.generators import STATEMENT_KINDS
    from conformance.generators.programs import swarm

    seen = []

    @settings(max_examples=200, database=None)
    @given(swarm(STATEMENT_KINDS, "statements", always=("op",)))
    def draw(kinds):
        seen.append(kinds)

    draw()
    assert all("op" in kinds for kinds in seen)
    assert any(len(kinds) < len(STATEMENT_KINDS) for kinds in seen)
    assert all(any(kind in kinds for kinds in seen) for kind in STATEMENT_KINDS)
    # never only the kinds that are always on: that draw keeps every kind
    assert all(len(kinds) > 1 for kinds in seen)
