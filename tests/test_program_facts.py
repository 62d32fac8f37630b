"""program_facts: eager's grad mode followed through a program, and the facts known issues need."""

from conformance import program_facts as facts
from conformance.program import (GRAD_ENABLED, Assign, Call, GradRegion, IfGradEnabled, InPlace, Program, SetGradMode,
                                 TensorInput)

A = (TensorInput("a", (2,), requires_grad=True), TensorInput("b", (2,)))


def op(target, name="mul_scalar", arg="a"):
    return Assign(target, Call(name, (arg,)))


def modes(program, ambient):
    """target -> grad mode eager computes it in."""
    return {s.statement.target: s.mode.grad for s in facts.run_order(program, ambient)
            if isinstance(s.statement, Assign)}


def test_a_branch_on_is_grad_enabled_takes_the_side_the_mode_gives():
    branch = IfGradEnabled((op("t0"),), (op("t1"),))
    program = Program(A, (branch,), ("a",))
    assert set(modes(program, "grad")) == {"t0"}
    assert set(modes(program, "no_grad")) == {"t1"}
    assert set(modes(program, "enable_grad_in_no_grad")) == {"t0"}


def test_a_region_restores_on_exit_the_mode_it_was_entered_in():
    nested = GradRegion("no_grad", (GradRegion("enable_grad", (op("t0"),)), op("t1")))
    program = Program(A, (SetGradMode("torch.set_grad_enabled", False), nested, op("t2")), ("a",))
    assert modes(program, "grad") == {"t0": True, "t1": False, "t2": False}
    plain = Program(A, (nested, op("t2")), ("a",))
    assert modes(plain, "grad")["t2"] is True and modes(plain, "no_grad")["t2"] is False


def test_inference_mode_is_kept_where_grad_is_turned_back_on():
    program = Program(A, (GradRegion("inference_mode", (SetGradMode("torch.set_grad_enabled", True), op("t0"))),),
                      ("a",))
    step = next(s for s in facts.run_order(program, "grad") if isinstance(s.statement, Assign))
    assert step.mode == facts.Mode(grad=True, inference=True)


def test_a_view_made_where_grad_is_off():
    view = op("t0", "reshape")
    in_region = Program(A, (GradRegion("no_grad", (view,)),), ("t0",))
    in_callers_mode = Program(A, (view,), ("t0",))
    a_copy = Program(A, (GradRegion("no_grad", (op("t0", "flip"),)),), ("t0",))
    assert facts.makes_a_view_while_grad_off(in_region, "grad")
    assert not facts.makes_a_view_while_grad_off(in_callers_mode, "grad")
    assert facts.makes_a_view_while_grad_off(in_callers_mode, "no_grad")
    assert not facts.makes_a_view_while_grad_off(a_copy)


def test_grad_off_throughout_the_call():
    plain = Program(A, (op("t0"),), ("t0",))
    turned_on = Program(A, (GradRegion("enable_grad", (op("t0"),)),), ("t0",))
    assert facts.grad_is_off_throughout(plain, "no_grad") and not facts.grad_is_off_throughout(plain, "grad")
    assert not facts.grad_is_off_throughout(turned_on, "no_grad")
    assert facts.grad_is_off_throughout(plain)  # under some ambient mode


def test_grad_mode_read_or_restored_where_the_function_changed_it():
    changed = facts.reads_or_restores_a_mode_the_function_changed
    returns_it = Program(A, (SetGradMode("torch.set_grad_enabled", True),), ("a", GRAD_ENABLED))
    assert changed(returns_it, "no_grad") and not changed(returns_it, "grad")
    reads_in_region = Program(A, (GradRegion("no_grad", (IfGradEnabled((op("t0"),), (op("t0"),)),)),), ("a",))
    assert changed(reads_in_region, "grad") and not changed(reads_in_region, "no_grad")
    update = Program(A, (op("t0"), InPlace("t0", "sub_", "b")), ("t0",))
    assert not changed(update)
