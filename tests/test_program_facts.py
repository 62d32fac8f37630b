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


def test_an_autocast_region_leaves_grad_mode_as_its_body_set_it():
    # autocast restores autocast state on exit, not grad mode: a plain call inside it outlives it.
    # Planted fault: treating it as a grad-mode region would give t1 the mode of the region's entry.
    inside = (SetGradMode("torch.set_grad_enabled", False), op("t0"))
    program = Program(A, (GradRegion("autocast", inside, True), op("t1")), ("a",))
    assert modes(program, "grad") == {"t0": False, "t1": False}
    restored = Program(A, (GradRegion("no_grad", (GradRegion("autocast", (op("t0"),), True),)), op("t1")), ("a",))
    assert modes(restored, "grad") == {"t0": False, "t1": True}


def test_a_decorated_helper_runs_as_the_region_of_its_decorator():
    # @no_grad restores grad on return; @autocast does not (a plain call in it outlives it), but
    # puts its body in autocast. Planted fault: every helper taken as a grad-mode one.
    from conformance.program import Helper, HelperCall

    body = (SetGradMode("torch.set_grad_enabled", False), op("r0", "dot_self", "p0"))
    call = Assign("t0", HelperCall("helper0", ("a",)))
    for decorator, grad_after in (("no_grad", True), ("autocast", False)):
        program = Program(A, (call, op("t1")), ("t1",), (Helper("helper0", decorator, ("p0",), body, "r0"),))
        steps = {s.statement.target: s.mode for s in facts.run_order(program, "grad") if isinstance(s.statement, Assign)}
        assert steps["t1"].grad is grad_after, decorator
        assert bool(steps["r0"].autocast) is (decorator == "autocast") and not steps["t1"].autocast


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


def test_facts_of_autograd_functions_and_empty_aranges():
    from conformance.program import FUNCTION, Create, Helper, HelperCall

    def calling(helper, args=("a",)):
        return Program(A, (Assign("t1", HelperCall("Fn0", args)),), ("t1",), (helper,))

    returns_input = Helper("Fn0", FUNCTION, ("p0",), (), "p0")
    computes = Helper("Fn0", FUNCTION, ("p0", "p1"), (op("t0", "sin", "p0"),), "t0")
    sets_mode = Helper("Fn0", FUNCTION, ("p0",), (SetGradMode("torch.set_grad_enabled", False), op("t0", "sin", "p0")),
                       "t0")
    in_region = Helper("Fn0", FUNCTION, ("p0",), (GradRegion("no_grad", (op("t0", "sin", "p0"),)),), "t0")
    decorated = Helper("Fn0", "no_grad", ("p0",), (), "p0")  # a helper, not a Function
    assert facts.FACTS["a Function that returns its input"](calling(returns_input))
    assert not facts.FACTS["a Function that returns its input"](calling(computes, ("a", "b")))
    assert not facts.FACTS["a Function that returns its input"](calling(decorated))
    assert facts.FACTS["a Function given one tensor twice"](calling(computes, ("a", "a")))
    assert not facts.FACTS["a Function given one tensor twice"](calling(computes, ("a", "b")))
    assert facts.FACTS["a plain grad-mode call in a Function's forward"](calling(sets_mode))
    assert not facts.FACTS["a plain grad-mode call in a Function's forward"](calling(in_region))
    empty = Program(A, (Assign("t0", Create("arange", (0,))),), ("t0",))
    assert facts.FACTS["an empty torch.arange"](empty)
    assert not facts.FACTS["an empty torch.arange"](Program(A, (Assign("t0", Create("arange", (3,))),), ("t0",)))


def test_a_value_made_in_inference_mode_is_one_computed_in_its_region_or_under_the_callers():
    # Eager records nothing in inference mode even where grad is on (torch.inference_mode
    # docs); an output that requires grad there is inference-mode-ignored's, not a tagging bug.
    fact = facts.FACTS["a value made in inference mode"]
    region = Program(A, (GradRegion("enable_grad", (op("t0", "sin", "a"),)),), ("t0",))
    inner = Program(A, (op("t0"), GradRegion("inference_mode", (op("t1", "reshape", "t0"),)),), ("t1",))
    after = Program(A, (GradRegion("inference_mode", ()), op("t0", "sin", "a")), ("t0",))
    assert fact(region, "inference_mode") and fact(inner, "grad") and fact(inner, "no_grad")
    assert not fact(region, "grad") and not fact(region, "no_grad")
    assert not fact(after, "grad")  # the op runs after the region: recorded


def test_an_update_of_a_zero_dim_double_input_is_seen_through_what_is_that_input():
    # `t1 = helper0(a, a)` of a `@torch.no_grad()` helper that returns its second parameter is a
    # itself: `t1.zero_()` updates a (torch.compile drops it). Planted fault: a helper that
    # returns something else, or an input of another dtype, is no such update.
    from conformance.program import Helper, HelperCall

    double = (TensorInput("a", (), dtype="float64"),)
    helper = Helper("helper0", "no_grad", ("p0", "p1"), (op("t0", arg="p0"),), "p1")
    body = (Assign("t1", HelperCall("helper0", ("a", "a"))), InPlace("t1", "zero_", None))
    program = Program(double, body, ("t1",), helpers=(helper,))
    assert facts.updates_a_zero_dim_double_input(program)
    assert not facts.updates_a_zero_dim_double_input(Program(A[:1], body, ("t1",), helpers=(helper,)))
    returns_t0 = Helper("helper0", "no_grad", ("p0", "p1"), (op("t0", arg="p0"),), "t0")
    assert not facts.updates_a_zero_dim_double_input(Program(double, body, ("t1",), helpers=(returns_t0,)))
    view = (op("t1", "reshape"), InPlace("t1", "add_", "a"))
    assert facts.updates_a_zero_dim_double_input(Program(double, view, ("a",)))


def test_a_leaf_cast_for_autocast_without_grad_then_with_grad_in_one_region():
    # Eager's autocast cache (torch 2.9) keeps the first cast: only this order, in one region, shows.
    fact = facts.FACTS["a leaf cast for autocast without grad, then with grad"]
    product = op("t1", "dot_self")
    no_grad_first = GradRegion("no_grad", (op("t0", "dot_self"),))
    assert fact(Program(A, (GradRegion("autocast", (no_grad_first, product), True),), ("t1",)))
    assert not fact(Program(A, (GradRegion("autocast", (product, no_grad_first), True),), ("t1",)))  # other order
    two = (GradRegion("autocast", (no_grad_first,), True), GradRegion("autocast", (product,), True))
    assert not fact(Program(A, two, ("t1",)))  # the cache is emptied between the regions
    disabled = GradRegion("autocast", (no_grad_first, GradRegion("autocast", (product,), False)), True)
    assert not fact(Program(A, (disabled,), ("t1",)))  # no cast where autocast is off
    assert not fact(Program(A, (GradRegion("autocast", (GradRegion("no_grad", (op("t0", "dot_self", "b"),)), product),
                                           True),), ("t1",)))  # another tensor


def test_a_function_returning_its_input_applied_with_grad_off():
    from conformance.program import FUNCTION, Helper, HelperCall

    fact = facts.FACTS["a Function that returns its input, applied with grad off"]
    returning = Helper("Fn0", FUNCTION, ("p0",), (), "p0")
    applied = Assign("t0", HelperCall("Fn0", ("a",)))
    in_no_grad = Program(A, (GradRegion("no_grad", (applied,)),), ("t0",), helpers=(returning,))
    assert fact(in_no_grad, "grad") and fact(Program(A, (applied,), ("t0",), helpers=(returning,)), "no_grad")
    assert not fact(Program(A, (applied,), ("t0",), helpers=(returning,)), "grad")  # recorded: a view with history
    computing = Helper("Fn0", FUNCTION, ("p0",), (op("t9", "sin", "p0"),), "t9")
    assert not fact(Program(A, (GradRegion("no_grad", (applied,)),), ("t0",), helpers=(computing,)))


def test_a_zero_dim_double_updated_after_a_graph_break():
    from conformance.program import RequiresGrad

    fact = facts.FACTS["an update of a 0-d float64 value after a graph break"]
    inputs = (TensorInput("a", (), "float64"), TensorInput("c", (1, 0), "float64"))
    made, update = op("t0", "mul_scalar", "a"), InPlace("t0", "mul_scalar_", None)
    assert fact(Program(inputs, (made, RequiresGrad("c"), update), ("t0",)))
    assert not fact(Program(inputs, (made, update, RequiresGrad("c")), ("t0",)))  # updated before the break
    floats = (TensorInput("a", (), "float32"), inputs[1])
    assert not fact(Program(floats, (made, RequiresGrad("c"), update), ("t0",)))  # float32 is kept


def test_a_helper_that_updates_its_parameter_updates_the_zero_dim_double_input_it_was_given():
    from conformance.program import Helper, HelperCall

    double = (TensorInput("a", (), "float64"), TensorInput("b", ()))
    helper = Helper("helper0", "autocast", ("p0",), (op("r0", arg="p0"), InPlace("p0", "copy_", "r0")), "r0")
    updates = Program(double, (Assign("t0", HelperCall("helper0", ("a",))),), ("t0",), (helper,))
    assert facts.updates_a_zero_dim_double_input(updates)
    other = Program(double, (Assign("t0", HelperCall("helper0", ("b",))),), ("t0",), (helper,))
    assert not facts.updates_a_zero_dim_double_input(other)  # b is float32
