"""The last shrink pass on the Program IR: what it removes, what it keeps, its budget."""

from dataclasses import replace

import pytest

from conformance import reduction
from conformance.generators.schedules import CallSpec
from conformance.program import (
    GRAD_ENABLED, Assign, Call, Create, GradRegion, Helper, HelperCall, IfGradEnabled, InPlace, Program,
    TensorInput, count_statements, render, render_body,
)
from conformance.reduction import canonical_names, reduce, well_scoped

A = TensorInput("a", (2, 3), requires_grad=True)
B = TensorInput("b", (), dtype="float64")

# Dead code before and after the statement that matters, a branch, and names that a
# deletion in Hypothesis's choice sequence would have renumbered.
PROGRAM = Program(
    (A, B),
    (Assign("t0", Create("ones", ())),
     Assign("t1", Call("mul_scalar", ("a",))),
     GradRegion("no_grad", (Assign("t2", Call("add_scalar", ("t1",))), Assign("t3", Call("sin", ("b",))))),
     IfGradEnabled((Assign("t4", Call("sum", ("t2",))),), (Assign("t4", Call("mean", ("t2",))),))),
    ("t4", "t3"),
    seed=7,
)
SCHEDULE = (CallSpec("grad"), CallSpec("no_grad", (True, None)), CallSpec("grad", values_seed=2))


def adds_one_under_no_grad(program, schedule):
    """The planted "bug": some `x + 1` runs inside `with torch.no_grad()`."""
    def walk(block, in_no_grad):
        for s in block:
            if isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "add_scalar" and in_no_grad:
                return True
            if isinstance(s, GradRegion) and walk(s.body, in_no_grad or s.kind == "no_grad"):
                return True
            if isinstance(s, IfGradEnabled) and (walk(s.then, in_no_grad) or walk(s.orelse, in_no_grad)):
                return True
        return False

    return walk(program.body, False) or None


def test_reduces_to_the_statement_that_matters():
    r = reduce(PROGRAM, SCHEDULE, adds_one_under_no_grad)
    assert render_body(r.program) == "with torch.no_grad():\n    t0 = a + 1\nreturn a"
    assert r.program.inputs == (TensorInput("a", ()),)  # b unused, then removed; a made plain
    assert [(c.ambient, c.requires_grad) for c in r.schedule] == [("grad", ())]
    assert r.program.seed == 0
    assert count_statements(r.program) == 3 < count_statements(PROGRAM)


def test_keeps_what_the_bug_needs():
    def needs_the_branch_and_b(program, schedule):
        return any(isinstance(s, IfGradEnabled) for s in program.body) and "b" in render(program) or None

    r = reduce(PROGRAM, SCHEDULE, needs_the_branch_and_b)
    assert any(isinstance(s, IfGradEnabled) for s in r.program.body)
    assert "b" in render(r.program) and well_scoped(r.program)


def test_a_non_finite_element_is_dropped_unless_the_bug_needs_it():
    special = replace(PROGRAM, inputs=(replace(A, special="nan"), replace(B, special="-inf")))
    assert reduce(special, SCHEDULE, adds_one_under_no_grad).program.inputs == (TensorInput("a", ()),)

    def needs_a_nan(program, schedule):
        return adds_one_under_no_grad(program, schedule) and program.inputs[0].special == "nan" or None

    assert reduce(special, SCHEDULE, needs_a_nan).program.inputs == (TensorInput("a", (), special="nan"),)


def test_a_decorated_helper_is_inlined_as_a_region_of_its_mode():
    # `x + 1` under no_grad, inside a @torch.no_grad() helper called from an enable_grad region:
    # the repro a person writes has the region and no helper.
    helper = Helper("helper0", "no_grad", ("p0",),
                    (Assign("t0", Call("sin", ("p0",))), Assign("t1", Call("add_scalar", ("t0",)))), "t1")
    program = Program((A,), (GradRegion("enable_grad", (Assign("t0", HelperCall("helper0", ("a",))),)),),
                      ("t0",), (helper,))

    def adds_one_with_grad_off(program, schedule):  # in a no_grad region or a no_grad helper
        return adds_one_under_no_grad(program, schedule) or any(
            h.decorator == "no_grad" and adds_one_under_no_grad(replace(program, body=(GradRegion("no_grad", h.body),)), schedule)
            for h in program.helpers) or None

    assert adds_one_with_grad_off(program, ())
    r = reduce(program, (CallSpec("grad"),), adds_one_with_grad_off)
    assert r.program.helpers == ()
    assert render_body(r.program) == "with torch.no_grad():\n    t0 = a + 1\nreturn a"

    # The region is the decorator's mode, whichever it is; without the edit the helper stays.
    enable = replace(helper, decorator="enable_grad")
    (inlined,) = reduction._inlined(program.body, {"helper0": enable})
    assert inlined[0].body[0].kind == "enable_grad"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reduction, "_inlined", lambda block, helpers: iter(()))
        assert reduce(program, (CallSpec("grad"),), adds_one_with_grad_off).program.helpers


def test_an_example_that_only_fails_as_it_is_comes_back_unchanged():
    r = reduce(PROGRAM, SCHEDULE, lambda p, s: (p, s) == (PROGRAM, SCHEDULE) or None)
    assert (r.program, r.schedule, r.kept) == (PROGRAM, SCHEDULE, 0)
    assert r.tried > 10  # it did try


def test_the_budget_in_tries_is_kept_and_gives_the_same_result_every_time():
    runs = [reduce(PROGRAM, SCHEDULE, adds_one_under_no_grad, max_tries=4) for _ in range(2)]
    assert all(r.tried in (4, 5) for r in runs)  # and one run to rename, past the budget
    assert runs[0].program == runs[1].program and runs[0].schedule == runs[1].schedule
    assert count_statements(runs[0].program) > 3  # not done within 4 tries


def test_every_candidate_is_well_scoped_and_smaller():
    seen = []

    def record(program, schedule):
        seen.append((program, schedule))
        return True

    reduce(PROGRAM, SCHEDULE, record, max_tries=200)
    assert seen and all(well_scoped(p) for p, _ in seen)
    sizes = [reduction.size(p, s) for p, s in seen]
    # each candidate was kept (the predicate always holds), so each is smaller than the one
    # before; the last one only renames (the same size)
    assert all(later < earlier for earlier, later in zip(sizes, sizes[1:-1]))
    assert sizes[-1] == sizes[-2] and seen[-1][0] == canonical_names(seen[-2][0])


def test_a_reducer_without_the_scope_check_would_be_caught(monkeypatch):
    # Planted fault: with the scope check gone, an always-failing predicate accepts
    # programs that read names never assigned, which the test above rejects.
    seen = []
    monkeypatch.setattr(reduction, "well_scoped", lambda p: True)
    reduce(PROGRAM, SCHEDULE, lambda p, s: seen.append(p) or True, max_tries=50)
    monkeypatch.undo()
    assert not all(well_scoped(p) for p in seen)


@pytest.mark.parametrize("program, ok", [
    (PROGRAM, True),
    (replace(PROGRAM, body=PROGRAM.body[2:]), False),  # t1 read, never assigned
    (replace(PROGRAM, returns=("t9",)), False),
    (replace(PROGRAM, returns=()), False),
    # a name assigned in one branch only is not read after the `if`
    (replace(PROGRAM, body=PROGRAM.body[:3] + (
        IfGradEnabled((Assign("t4", Call("sum", ("t2",))), Assign("t5", Call("sin", ("a",)))),
                      (Assign("t4", Call("mean", ("t2",))),)),), returns=("t5",)), False),
    (Program((A,), (InPlace("t0", "add_", "a"),), ("a",)), False),
    (Program((A,), (Assign("t0", HelperCall("helper0", ("a",))),), ("t0",)), False),  # no such helper
    (Program((A,), (Assign("t0", HelperCall("helper0", ("a",))),), ("t0",),
             (Helper("helper0", "no_grad", ("p0",), (Assign("t1", Call("sin", ("p0",))),), "t1"),)), True),
    (Program((A,), (Assign("t0", HelperCall("helper0", ("a",))),), ("t0",),
             (Helper("helper0", "no_grad", ("p0",), (Assign("t1", Call("sin", ("a",))),), "t1"),)), False),
    (Program((A,), (), (GRAD_ENABLED,)), True),
])
def test_well_scoped(program, ok):
    assert well_scoped(program) is ok


def test_canonical_names_renumber_in_source_order():
    p = Program(
        (TensorInput("c", ()),),
        (Assign("t3", HelperCall("helper2", ("c",))), Assign("t7", Call("add", ("t3", "self.w1")))),
        ("t7", GRAD_ENABLED),
        (Helper("helper2", "enable_grad", ("p0",), (Assign("t5", Call("sin", ("p0",))),), "t5"),),
        parameters=(TensorInput("w1", (), requires_grad=True),),
    )
    q = canonical_names(p)
    assert render(q) == render(p).replace("helper2", "helper0").replace("t5", "t0").replace("t3", "t1") \
        .replace("t7", "t2").replace("w1", "w0").replace("(c)", "(a)").replace("self, c", "self, a") \
        .replace("p0, c", "p0, a").replace("helper0(c)", "helper0(a)")
    assert "c" not in render_body(q).replace("torch", "")


def test_parameters_are_made_plain_and_unused_ones_dropped():
    w0, w1 = TensorInput("w0", (2, 0, 3), "float64", requires_grad=True), TensorInput("w1", (2,), requires_grad=True)
    module = Program((A,), (Assign("t0", Call("mul", ("self.w0", "a"))),), ("t0",), parameters=(w0, w1))

    def uses_w0(program, schedule):
        return "self.w0" in render_body(program) or None

    r = reduce(module, SCHEDULE, uses_w0)
    assert r.program.parameters == (TensorInput("w0", (), requires_grad=True),)
    assert render_body(r.program) == "t0 = self.w0 * a\nreturn a"  # a local minimum: each edit left fails


# ---------------------------------------------------------------- a bug behind another one

HIDDEN = Program(
    (TensorInput("a", (2,), requires_grad=True),),
    (Assign("t0", Call("detach", ("a",))),
     Assign("t1", Call("mul_scalar", ("t0",))),
     Assign("t2", Call("add_scalar", ("a",))),
     InPlace("t2", "add_", "a")),
    ("t2", "t1"),
)


def _hidden_finding():
    from conformance import known_issues
    from conformance.check import run_example
    from conformance.suite import finding_of, focus
    from tests.fake_backends import hides_a_bug

    backend = hides_a_bug()
    result = run_example(HIDDEN, backend)
    kinds = [m.kind for m in result.mismatches]
    assert kinds[0] == "outputs.value" and "flags.requires_grad" in kinds, kinds
    behind = focus(result, lambda key: key.kind == "outputs.value")
    return backend, behind, finding_of(behind, backend.name, known_issues.load())


def test_focus_puts_the_first_unmasked_mismatch_first():
    from conformance.check import run_example
    from conformance.suite import focus
    from tests.fake_backends import hides_a_bug

    result = run_example(HIDDEN, hides_a_bug())
    assert focus(result, lambda key: False) is result
    assert focus(result, lambda key: True) is None
    behind = focus(result, lambda key: key.oracle == "outputs")
    assert behind.mismatches[0].kind == "flags.requires_grad"
    assert sorted(map(id, behind.mismatches)) == sorted(map(id, result.mismatches))  # reordered, none lost
    assert [m for m in behind.mismatches[1:] if m.kind == "outputs.value"] == \
        [m for m in result.mismatches if m.kind == "outputs.value"]  # the others keep their order


def test_a_bug_behind_a_masked_one_is_reduced_to_a_program_without_it():
    from conformance.check import run_example
    from conformance.suite import reduce_finding

    backend, behind, finding = _hidden_finding()
    reduced = reduce_finding(finding, backend, [], masked=lambda key: key.kind == "outputs.value")
    assert "detach" not in render(reduced.result.program)
    again = run_example(reduced.result.program, backend, reduced.result.schedule)
    assert again.mismatches[0].kind == "flags.requires_grad"  # first now, unfocused
    assert str(reduced.signature).startswith("flags.requires_grad")
    # Planted fault: reducing only while the bug's mismatch comes first gets nowhere, since
    # no single edit removes `.detach()` (t1 reads t0) and the mask goes with it.
    stuck = reduce_finding(finding, backend, [])
    assert stuck is finding and "detach" in render(stuck.result.program)


# ---------------------------------------------------------------- one class, two known issues

def _requires_grad_issues(program, **constructs) -> list:
    """Known issues of `requires_grad` True in eager, False in the backend, one per name, whose
    pattern names the given constructs (fnmatch: "*enable_grad*" or exactly "enable_grad")."""
    from conformance.known_issues import KnownIssue

    return [KnownIssue(id=name, title=name, backends=("*",), program=program, schedule=(), oracle="flags",
                       signatures=(f"flags.requires_grad | eager True, backend False | * @ {used}",))
            for name, used in constructs.items()]


