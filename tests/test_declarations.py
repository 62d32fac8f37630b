"""What a backend declares may differ from eager by design (backends.base.Declaration): the
oracles and repro.py allow exactly that, and still catch everything else.

torch.compile (aot_eager) is the backend that declares both; it runs here on the CPU."""

from dataclasses import replace

import pytest

from conformance import slicing
from conformance.backends import Declaration, get
from conformance.check import run_example
from conformance.generators.schedules import CallSpec
from conformance.program import (Assign, Call, GradRegion, Helper, HelperCall, IfGradEnabled, InPlace, Program,
                                 SetGradMode, TensorInput)
from conformance.report.records import record_of
from conformance.suite import finding_of
from tests.test_report import run_repro

BOOL = TensorInput("a", (2,), "bool")
# The review's false alarm: eager raises on `torch.abs` of a bool whose value nothing reads.
DEAD_ERROR = Program((BOOL,), (Assign("t0", Call("abs", ("a",))), Assign("t1", Call("flip", ("a",)))), ("t1",))
# The review's design case: eager's backward raises (sigmoid's saved result updated in place);
# AOTAutograd traces that backward at the call, so torch.compile raises there.
A = TensorInput("a", (2,), requires_grad=True)
BACKWARD_ERROR = Program((A, TensorInput("b", (2,))),
                         (Assign("t0", Call("sigmoid", ("a",))), InPlace("t0", "add_", "b")), ("t0",))


def undeclared(spec="torch.compile"):
    """The backend with its declarations taken away: the planted fault of these tests."""
    backend = get(spec)
    backend.declarations = frozenset()
    return backend


def test_live_keeps_what_a_user_observes_and_drops_the_rest():
    body = (Assign("t0", Call("abs", ("a",))),  # dead
            Assign("t1", Call("reshape", ("a",))),  # a view of an input: updates through it are seen
            GradRegion("no_grad", (Assign("t2", Call("sin", ("c",))),)),  # dead: the region goes
            SetGradMode("torch.set_grad_enabled", False),  # grad mode after the call is observed
            Assign("t3", Call("cos", ("c",))), InPlace("t3", "add_", "c"), Assign("t4", Call("exp", ("t3",))),
            IfGradEnabled((Assign("t5", Call("sin", ("t4",))),), (Assign("t5", Call("cos", ("c",))),)))
    program = Program((TensorInput("a", (2,)), TensorInput("c", (2,))), body, ("t5",))
    live = slicing.live(program)
    assert live.body == body[1:2] + body[3:]
    assert slicing.live(live) == live


def test_live_drops_the_dead_statements_of_a_helper_and_the_helpers_nothing_calls():
    # `@torch.no_grad() def helper0(p0): p0.fill_(1.5); t0 = p0[[0, 0]]; return p0` on an empty
    # `a`: eager raises IndexError in the dead indexing; torch.compile inlines the helper and
    # removes it (a false alarm of the night before helpers were sliced).
    used = Helper("helper0", "no_grad", ("p0",), (InPlace("p0", "fill_"), Assign("t0", Call("fancy_index", ("p0",)))),
                  "p0")
    unused = Helper("helper1", "no_grad", ("p0",), (Assign("t1", Call("sin", ("p0",))),), "t1")
    program = Program((TensorInput("a", (0,)), TensorInput("b", (2,))),
                      (Assign("t2", HelperCall("helper0", ("a",))), Assign("t4", Call("cos", ("b",))),
                       Assign("t3", HelperCall("helper1", ("t4",)))), ("b",), helpers=(used, unused))
    live = slicing.live(program)
    # A call on an input is kept (a helper may update its argument in place: so does this one);
    # one on a value nothing reads goes, with the helper.
    assert live.body == program.body[:1]
    assert live.helpers == (Helper("helper0", "no_grad", ("p0",), used.body[:1], "p0"),)
    found = run_example(program, get("torch.compile"), (CallSpec(),))
    assert found.mismatches == [] and found.eager.calls[0].error is None, [m.line() for m in found.mismatches]
    assert [m.aspect for m in run_example(program, undeclared(), (CallSpec(),)).mismatches] == \
        ["eager raised during call"]


def test_torch_compile_declares_what_aot_autograd_does():
    assert get("torch.compile").declarations == {Declaration.BACKWARD_ERRORS_AT_CALL, Declaration.DEAD_CODE_REMOVED}
    assert get("torch.compile[backend=eager]").declarations == frozenset()  # runs the graph as it is
    assert get("eager").declarations == frozenset()


def test_an_error_of_dead_code_is_not_owed_by_a_backend_that_removes_it():
    result = run_example(DEAD_ERROR, get("torch.compile"), (CallSpec(),))
    assert result.mismatches == [], [m.line() for m in result.mismatches]
    assert result.eager.calls[0].error is None  # the reference was the live program
    found = run_example(DEAD_ERROR, undeclared(), (CallSpec(),)).mismatches
    assert [m.aspect for m in found] == ["eager raised during call"]


def test_an_error_of_live_code_is_still_owed():
    live_error = Program((BOOL,), (Assign("t0", Call("abs", ("a",))),), ("t0",))
    found = run_example(live_error, get("tests.fake_backends:removes_dead_code_masks_errors"), (CallSpec(),))
    assert [m.aspect for m in found.mismatches] == ["backend raised an internal AssertionError"]


def test_a_backward_error_may_come_from_the_call_where_the_backend_declares_it():
    result = run_example(BACKWARD_ERROR, get("torch.compile"), (CallSpec(),))
    assert (result.eager.calls[0].error.stage, result.backend.calls[0].error.stage) == ("backward", "call")
    assert result.mismatches == []
    found = run_example(BACKWARD_ERROR, undeclared(), (CallSpec(),)).mismatches
    assert [m.aspect for m in found] == ["raised at another stage"]


@pytest.mark.slow
@pytest.mark.parametrize("program", [DEAD_ERROR, BACKWARD_ERROR], ids=["dead code", "backward at the call"])
def test_the_repro_applies_the_declarations_as_the_oracles_do(tmp_path, program):
    backend = get("torch.compile")
    backend.spec = "torch.compile"
    result = run_example(program, undeclared(), (CallSpec(),))  # a record as the old oracles made it
    record = record_of(finding_of(result, backend.name, []), backend, command="test")
    assert record["declarations"] == ["BACKWARD_ERRORS_AT_CALL", "DEAD_CODE_REMOVED"]
    agrees = run_repro(tmp_path, record)
    assert agrees.returncode == 0 and "fixed" in agrees.stdout, agrees.stdout + agrees.stderr
    # Planted fault: the same record without the declarations reproduces.
    differs = run_repro(tmp_path, record | {"declarations": []})
    assert differs.returncode == 1 and "reproduces" in differs.stdout, differs.stdout + differs.stderr


@pytest.mark.slow
def test_a_repro_of_a_crash_reproduces_when_the_backend_kills_its_process(tmp_path):
    spec = "tests.fake_backends:segfaults_under_no_grad"
    program = Program((A,), (Assign("t0", Call("sin", ("a",))),), ("t0",))
    perturbed = get("conformance.backends.faulty:perturbs_outputs")
    result = run_example(program, perturbed, (CallSpec("no_grad"),))
    record = record_of(finding_of(result, perturbed.name, []), perturbed, command="test")
    record |= {"oracle": "crash", "backend": spec, "backend_spec": spec}
    died = run_repro(tmp_path, record)
    assert died.returncode == 1 and "process died (exit -11)" in died.stdout, died.stdout + died.stderr
    assert run_repro(tmp_path, record, spec="eager").returncode == 0  # the same repro, once fixed


def test_a_value_read_only_in_the_branch_not_taken_is_dead():
    # `t0 = torch.abs(a)` of a bool raises in eager; only the `else` of `if torch.is_grad_enabled()`
    # reads t0, and a call with grad on takes the other branch: Dynamo compiles that branch alone,
    # and AOTAutograd removes t0. Planted fault: a reference that keeps both branches.
    program = Program((BOOL,), (Assign("t0", Call("abs", ("a",))),
                                IfGradEnabled((Assign("t1", Call("flip", ("a",))),),
                                              (Assign("t1", Call("flip", ("t0",))),))), ("t1",))
    assert slicing.dead_code_reference(program, ("grad",)).body == (Assign("t1", Call("flip", ("a",))),)
    assert slicing.dead_code_reference(program, ("grad", "no_grad")) == slicing.live(program)  # two ways: kept
    # A branch on a Read's value beside it: which way that goes is not known statically, nor
    # the grad mode after it; nothing is replaced.
    from conformance.program import Read

    on_read = replace(program, body=(Assign("t9", Read("requires_grad", "a")),
                                     IfGradEnabled((Assign("t8", Call("flip", ("a",))),),
                                                   (Assign("t8", Call("flip", ("a",))),), condition="t9"))
                      + program.body)
    assert slicing.taken(on_read, ("grad",)) == on_read
    result = run_example(program, get("torch.compile"), (CallSpec(),))
    assert result.backend.calls[0].error is None and result.mismatches == [], [m.line() for m in result.mismatches]
    from unittest.mock import patch

    with patch.object(slicing, "taken", lambda p, ambients: p):
        found = run_example(program, get("torch.compile"), (CallSpec(),)).mismatches
    assert [m.aspect for m in found] == ["eager raised during call"]


def test_dead_code_the_backend_runs_may_raise_as_it_does_in_eager():
    # torch.compile drops the dead `abs` of a bool (eager raises there: the live program is the
    # reference) but runs the dead `torch.autograd.grad` (a graph break), which raises as eager's
    # whole program does where `a` does not require grad: that call is eager's, not a mismatch.
    from conformance.program import Grad

    program = Program((A, replace(BOOL, name="b")),
                      (Assign("t0", Grad(("a", "a"))), Assign("t1", Call("abs", ("b",))),
                       Assign("t2", Call("mul_scalar", ("a",)))), ("t2",))
    schedule = (CallSpec(), CallSpec(requires_grad=(False, None), values_seed=1))
    result = run_example(program, get("torch.compile"), schedule)
    assert result.mismatches == [], [m.line() for m in result.mismatches]
    assert result.eager.calls[1].error is None and result.backend.calls[1].error is not None  # the rule at work
