"""The backward slice of a program from the value a mismatch compares (conformance.slicing)."""

from __future__ import annotations

from conformance.oracles.mismatch import Mismatch
from conformance.program import (Assign, Call, GradRegion, HelperCall, Helper, IfGradEnabled, InPlace, Program,
                                 Read, SetGradMode, TensorInput, render_body)
from conformance.slicing import relevant

A, B = TensorInput("a", (2,), requires_grad=True), TensorInput("b", (2,))


def flag(where: str) -> Mismatch:
    return Mismatch("flags", "requires_grad", where, "True", "False", 0, "grad")


def test_a_flag_of_one_return_keeps_only_what_made_it():
    program = Program((A, B), (
        GradRegion("no_grad", (Assign("t0", Call("exp", ("a",))),)),
        Assign("t1", Call("sin", ("b",))),
        InPlace("t1", "add_", "a"),
        Assign("t2", Call("cos", ("t0",))),
    ), ("t1", "t2"))
    assert render_body(relevant(program, flag("return[0]"))) == render_body(Program((A, B), (
        Assign("t1", Call("sin", ("b",))), InPlace("t1", "add_", "a")), ("t1", "t2")))
    kept = relevant(program, flag("return[1]")).body
    assert kept == (GradRegion("no_grad", (Assign("t0", Call("exp", ("a",))),)), Assign("t2", Call("cos", ("t0",))))


def test_an_update_through_a_view_is_kept_for_its_base():
    program = Program((A, B), (
        Assign("t0", Call("exp", ("a",))),
        Assign("t1", Call("reshape", ("t0",))),
        GradRegion("no_grad", (InPlace("t1", "mul_", "b"),)),
        Assign("t2", Call("sin", ("b",))),
    ), ("t0", "t2"))
    kept = relevant(program, flag("return[0]")).body
    assert GradRegion("no_grad", (InPlace("t1", "mul_", "b"),)) in kept
    assert Assign("t2", Call("sin", ("b",))) not in kept


def test_an_input_read_after_the_call_keeps_its_updates_and_what_they_read():
    program = Program((A, B), (
        Assign("t0", Call("exp", ("a",))),
        Assign("t1", Call("cos", ("a",))),
        InPlace("b", "add_", "t1"),
    ), ("t0",))
    assert relevant(program, flag("b after call")).body == program.body[1:]


def test_a_helper_call_a_branch_and_a_plain_mode_change_before_what_is_kept_stay():
    helper = Helper("helper0", "no_grad", ("p0",), (Assign("t9", Call("exp", ("p0",))),), "t9")
    other = Helper("helper1", "no_grad", ("p0",), (Assign("t9", Call("sin", ("p0",))),), "t9")
    program = Program((A, B), (
        SetGradMode("torch.set_grad_enabled", False),
        Assign("t0", HelperCall("helper0", ("a",))),
        Assign("t5", HelperCall("helper1", ("b",))),
        Assign("t3", Read("requires_grad", "t0")),
        IfGradEnabled((Assign("t1", Call("sin", ("t0",))),), (Assign("t1", Call("cos", ("t0",))),), "t3"),
        SetGradMode("torch.set_grad_enabled", True),
    ), ("t1", "t5"), helpers=(helper, other))
    sliced = relevant(program, flag("return[0]"))
    assert sliced.body == program.body[:2] + program.body[3:5]
    assert sliced.helpers == (helper,)


def test_a_mismatch_that_can_come_from_anywhere_keeps_the_whole_program():
    program = Program((A, B), (Assign("t0", Call("exp", ("a",))), Assign("t1", Call("sin", ("b",)))), ("t0",))
    raised = Mismatch("exceptions", "backend raised", "call", "no exception", "RuntimeError", 0, "grad")
    mode = Mismatch("grad_mode", "grad enabled after call", "torch.is_grad_enabled()", "True", "False", 0, "grad")
    assert relevant(program, raised) == program and relevant(program, mode) == program
    gradient = Mismatch("gradients", "value", "a.grad", "1", "2", 0, "grad")
    assert relevant(program, gradient).body == program.body[:1]  # what no return reads is dead
