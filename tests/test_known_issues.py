"""known_issues.toml: loading, and which issue a finding is classified under."""

from dataclasses import replace

import pytest

from conformance import known_issues, program_facts
from conformance.known_issues import Context, Shows
from conformance.oracles.mismatch import BugClass
from conformance.report.signatures import Signature

ISSUES = known_issues.load()
BY_ID = {i.id: i for i in ISSUES}


def sig(oracle, aspect, eager="", backend="", *constructs, later=False):
    """A finding's signature; exceptions carry no constructs (their message names the bug)."""
    return Signature(BugClass(oracle, aspect, eager, backend, later), None if oracle == "exceptions" else constructs)


BROAD = replace(ISSUES[0], id="broad", shows=(Shows(("exceptions",), aspect=("backend raised during backward",)),))
NARROW = replace(ISSUES[0], id="narrow", shows=(Shows(("exceptions",), message=("A view was created",)),))
VIEW = sig("exceptions", "backend raised during backward", "no exception",
           "RuntimeError during backward: A view was created in no_grad mode and its base")


def test_the_most_specific_shows_wins_whatever_the_order():
    # Planted fault: a broad entry listed first would claim the narrow one's finding.
    narrower = replace(NARROW, shows=(Shows(("exceptions",), aspect=("backend raised during backward",),
                                            message=("A view was created",)),))
    assert known_issues.classify(VIEW, "thunder", [BROAD, narrower]).id == "narrow"
    assert known_issues.classify(VIEW, "thunder", [narrower, BROAD]).id == "narrow"


def test_a_finding_only_the_broad_entry_matches_stays_with_it():
    other = sig("exceptions", "backend raised during backward", "no exception", "AssertionError during backward")
    assert known_issues.classify(other, "thunder", [NARROW, BROAD]).id == "broad"
    assert known_issues.classify(sig("outputs", "value", "", "", "inplace"), "thunder", [NARROW, BROAD]) is None


def test_an_issue_of_another_backend_is_not_matched():
    assert known_issues.classify(VIEW, "inductor", [NARROW]) is None


def test_each_field_of_shows_must_hold():
    # One finding, and for each field one table that asks what it has and one that asks
    # what it has not: each field is checked, none ignored.
    found = sig("flags", "requires_grad", "True", "False", "inplace", "module", later=True)
    holds = {"aspect": ("requires_grad",), "eager": ("True",), "backend": ("False",), "call": "later",
             "constructs": ("inplace",), "any_of": ("module", "detach"), "others": ("inplace", "module")}
    fails = {"aspect": ("grad_fn",), "eager": ("False",), "backend": ("True",), "call": "first",
             "constructs": ("inplace", "detach"), "any_of": ("detach",), "others": ("inplace",)}
    for field in holds:
        assert Shows(("flags",), **{field: holds[field]}).matches(found, None), field
        assert not Shows(("flags",), **{field: fails[field]}).matches(found, None), field
    assert not Shows(("gradients",)).matches(found, None)


def test_an_exception_side_is_matched_by_its_words_a_flag_exactly():
    raised = sig("exceptions", "raised at another stage", "RuntimeError during call: bad", "AssertionError during backward")
    assert Shows(("exceptions",), eager=("during call",), backend=("during backward",)).matches(raised, None)
    assert not Shows(("exceptions",), eager=("during backward",)).matches(raised, None)
    assert Shows(("exceptions",), message=("bad",)).matches(raised, None)
    flag = sig("flags", "grad_fn", "a grad_fn", "grad_fn None, the input itself")
    assert not Shows(("flags",), backend=("grad_fn None",)).matches(flag, None)
    assert Shows(("flags",), backend=("grad_fn None, the input itself",)).matches(flag, None)


def test_a_table_with_an_unknown_field_or_no_table_is_refused(tmp_path):
    text = known_issues.PATH.read_text()
    for bad, says in ((text.replace('message = ["Unknown attribute', 'mesage = ["Unknown attribute', 1), "mesage"),
                      (text.replace('[[issue.shows]]\noracle = "exceptions"\nmessage = ["Unknown attribute requires_grad_"]',
                                    "", 1), "no \\[\\[issue.shows"),
                      (text.replace('oracle = "exceptions"\nmessage = ["Unknown', 'oracle = "exception"\nmessage = ["Unknown',
                                    1), "exception"),
                      # a construct every signature leaves out: the table could never match
                      (text.replace('message = ["Unknown attribute requires_grad_"]',
                                    'message = ["Unknown attribute requires_grad_"]\nconstructs = ["return_is_grad_enabled"]',
                                    1), "never matched")):
        assert bad != text
        (tmp_path / "k.toml").write_text(bad)
        with pytest.raises(known_issues.BadKnownIssues, match=says):
            known_issues.load(tmp_path / "k.toml")


def test_the_shipped_file_loads_with_unique_ids():
    assert len({i.id for i in ISSUES}) == len(ISSUES) > 10


def test_the_view_issue_names_requires_grad_not_the_inference_flag():
    # no-grad-view-requires-grad-dropped is about requires_grad (and grad_fn); an inference_mode
    # program's `is_inference` mismatch is inference-mode-ignored.
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    view = BY_ID["no-grad-view-requires-grad-dropped"]
    a = (TensorInput("a", (2,), requires_grad=True),)
    program = Program(a, (GradRegion("set_grad_enabled", (Assign("t0", Call("reshape", ("a",))),), False),), ("t0",))
    inference = sig("flags", "is_inference", "True", "False", "inference_mode", "set_grad_enabled(False)")
    requires_grad = sig("flags", "requires_grad", "True", "False", "set_grad_enabled(False)")
    assert known_issues.classify(requires_grad, "thunder", ISSUES, program, Context("grad")) == view
    assert known_issues.classify(inference, "thunder", ISSUES, program, Context("grad")).id == "inference-mode-ignored"


def test_a_backward_error_no_issue_names_is_new():
    # backward-fails-after-grad-mode-changes once matched `exceptions.backend raised during
    # backward | *`: every backward error of thunder was "known" under its title, three other
    # bugs among them (cpu-scalar-broadcast-cotangent-unsummed's expand of an unsummed
    # cotangent, a slice's pad of a size-0 dim, a sizeless torch.zeros), and a new one would be.
    expected = {
        "RuntimeError during backward: a message no issue names": None,
        "RuntimeError during backward: expand(torch.FloatTensor{[N, N]}, size=[N]): the number of s":
            "cpu-scalar-broadcast-cotangent-unsummed",
        "RuntimeError during backward: The input size N, plus negative padding N and N resulted in ":
            "slice-backward-pads-size-zero-dim",
        "AssertionError during backward: AssertionError": "backward-fails-after-grad-mode-changes",
    }
    for backend, issue in expected.items():
        found = sig("exceptions", "backend raised during backward", "no exception", backend)
        program = BY_ID["cpu-scalar-broadcast-cotangent-unsummed"].program  # calls one of its ops
        assert known_issues.classify(found, "thunder", ISSUES, program) == BY_ID.get(issue), backend


def test_an_issue_with_ops_is_only_a_program_that_calls_one_of_them():
    # A value mismatch of plain ops is relu-of-nan-is-zero-with-grad's signature whatever op
    # differs; its `ops` keep the issue to programs that call relu, so another op's is new.
    from conformance.program import Assign, Call, Program, TensorInput

    relu = BY_ID["relu-of-nan-is-zero-with-grad"]
    found = sig("outputs", "value")
    a = (TensorInput("a", (3,), requires_grad=True, special="nan"),)
    calls_relu = Program(a, (Assign("t0", Call("sin", ("a",))), Assign("t1", Call("relu", ("t0",)))), ("t1",))
    calls_sigmoid = Program(a, (Assign("t0", Call("sigmoid", ("a",))),), ("t0",))
    assert known_issues.classify(found, "thunder", [relu], calls_relu) == relu
    assert known_issues.classify(found, "thunder", [relu], calls_sigmoid) is None
    assert known_issues.classify(found, "thunder", [relu]) is None  # nothing to check its ops on


def test_an_issue_naming_an_op_the_catalogue_lacks_is_refused(tmp_path):
    text = known_issues.PATH.read_text().replace('ops = ["relu"]', 'ops = ["rellu"]', 1)
    (tmp_path / "k.toml").write_text(text)
    with pytest.raises(known_issues.BadKnownIssues, match="rellu"):
        known_issues.load(tmp_path / "k.toml")


def _programs_updating():
    """Programs that update a tensor that requires grad in place, with grad on or off there."""
    from conformance.program import (Assign, Call, GradRegion, Helper, HelperCall, InPlace, Program, SetGradMode,
                                     TensorInput)

    ab = (TensorInput("a", (2,), requires_grad=True), TensorInput("b", (2,)))
    update = InPlace("t0", "sub_", "b")
    made = Assign("t0", Call("sin", ("a",)))
    off = {
        "in no_grad": (made, GradRegion("no_grad", (update,))),
        "after a plain grad-off call": (made, SetGradMode("torch.set_grad_enabled", False), update),
        "in the caller's mode, beside an enable_grad region":
            (GradRegion("enable_grad", (made,)), update),
        "in a @no_grad helper": (made, Assign("t1", HelperCall("helper0", ("t0", "b")))),
    }
    on = {
        "before a plain grad-off call": (made, update, SetGradMode("torch.set_grad_enabled", False)),
        "in enable_grad inside no_grad": (made, GradRegion("no_grad", (GradRegion("enable_grad", (update,)),))),
        "in the caller's mode, with nothing turning grad on": (made, update),
        "after a plain call turning it back on": (made, SetGradMode("torch._C._set_grad_enabled", False),
                                                  SetGradMode("torch._C._set_grad_enabled", True), update),
    }
    helper = (Helper("helper0", "no_grad", ("p0", "p1"), (InPlace("p0", "sub_", "p1"),), "p0"),)
    return {k: Program(ab, body, ("t0",), helper if "helper" in k[1] else ()) for k, body in
            {**{("off", w): b for w, b in off.items()}, **{("on", w): b for w, b in on.items()}}.items()}


def test_an_update_while_grad_is_off_is_told_from_one_with_grad_on():
    # The caller's mode decides where the function leaves it as it is: an update there is
    # made with grad off under an ambient no_grad, with grad on under grad.
    # where -> (off under an ambient grad, off under an ambient no_grad)
    expected = {"in no_grad": (True, True), "after a plain grad-off call": (True, True),
                "in the caller's mode, beside an enable_grad region": (False, True),
                "in a @no_grad helper": (True, True), "before a plain grad-off call": (False, True),
                "in enable_grad inside no_grad": (False, False),
                "in the caller's mode, with nothing turning grad on": (False, True),
                "after a plain call turning it back on": (False, False)}
    for (_, where), program in _programs_updating().items():
        under_grad, under_no_grad = expected[where]
        assert program_facts.updates_while_grad_off(program, "grad") == under_grad, where
        assert program_facts.updates_while_grad_off(program, "no_grad") == under_no_grad, where
        assert program_facts.updates_while_grad_off(program) == (under_grad or under_no_grad), where


def test_an_issue_that_needs_a_fact_is_only_a_program_that_has_it():
    # `b.sub_(a)` and a plain `torch.set_grad_enabled(False)` have one set of constructs,
    # whichever comes first: the update while grad is off is inplace-while-grad-off-drops-
    # requires-grad, the one before it (grad on) inplace-from-grad-tensor-loses-autograd.
    # Planted fault: the issue without its `needs` no longer tells them apart.
    off_issue = BY_ID["inplace-while-grad-off-drops-requires-grad"]
    found = sig("flags", "requires_grad", "True", "False", "inplace", "torch.set_grad_enabled(False)")
    programs = _programs_updating()
    after, before = programs["off", "after a plain grad-off call"], programs["on", "before a plain grad-off call"]
    assert known_issues.classify(found, "thunder", ISSUES, after, Context("grad")) == off_issue
    assert known_issues.classify(found, "thunder", ISSUES, before, Context("grad")) != off_issue
    no_needs = [without_facts(i) if i == off_issue else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", no_needs, before, Context("grad")).id == off_issue.id


def test_an_issue_needing_a_fact_the_module_does_not_know_is_refused(tmp_path):
    text = known_issues.PATH.read_text().replace('needs = ["an update while grad is off"]', 'needs = ["an update"]')
    (tmp_path / "k.toml").write_text(text)
    with pytest.raises(known_issues.BadKnownIssues, match="an update"):
        known_issues.load(tmp_path / "k.toml")


def test_a_mul_of_a_computed_value_in_place_is_told_from_an_input_updated_so():
    # One signature, `gradients.value | first call @ inplace`, two bugs: `t0.mul_(b)` of a
    # value the function computed (thunder's backward reads the updated t0), and an input
    # updated by a tensor that requires grad (its graph is lost). On a tie of patterns, the
    # issue that asks more of the program (ops, a fact) wins, and the file's order only
    # between equals. Planted faults: without the fact, the input's update goes to the mul_
    # issue; without its ops and fact, the file's order gives the mul_ program to the other.
    from conformance.program import Assign, Call, InPlace, Program, TensorInput

    ab = (TensorInput("a", ()), TensorInput("b", (), requires_grad=True))
    computed = Program(ab, (Assign("t0", Call("mul_scalar", ("a",))), InPlace("t0", "mul_", "b")), ("t0",))
    input_updated = Program(ab, (InPlace("a", "mul_", "b"),), ("a", "b"))
    assert program_facts.multiplies_a_computed_value_in_place(computed)
    assert not program_facts.multiplies_a_computed_value_in_place(input_updated)
    found = sig("gradients", "value", "", "", "inplace")
    mul_id, input_id = "inplace-mul-backward-reads-updated-target", "inplace-from-grad-tensor-loses-autograd"
    assert known_issues.classify(found, "thunder", ISSUES, computed, Context("grad")).id == mul_id
    assert known_issues.classify(found, "thunder", ISSUES, input_updated, Context("grad")).id == input_id
    no_needs = [without_facts(i, ops=False) if i.id == mul_id else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", no_needs, input_updated, Context("grad")).id == mul_id
    asks_nothing = [without_facts(i) if i.id == mul_id else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", asks_nothing, computed, Context("grad")).id == input_id


def test_an_update_through_an_alias_is_told_from_empty_inputs_updated_so():
    # One signature, `outputs.value | first call @ inplace`, two bugs: an update through a
    # view of a value (thunder drops it from the base), and an update of an empty input that
    # thunder takes for an alias of another. The first needs the fact, which a view's update
    # has and the base's own update, or a flip's (a copy), has not. Planted fault: without
    # the fact and its ops the file's order gives the view's update to empty inputs.
    from conformance.program import Assign, Call, InPlace, Program, TensorInput

    # a size-0 `a`: empty inputs' issue needs one, so that both issues may be the program
    ab = (TensorInput("a", (0,), requires_grad=True), TensorInput("b", (), requires_grad=True))
    computed = (Assign("t0", Call("mul_scalar", ("a",))),)
    through_view = Program(ab, (*computed, Assign("t1", Call("unsqueeze", ("t0",))), InPlace("t1", "add_", "b")),
                           ("t0",))
    of_a_copy = Program(ab, (*computed, Assign("t1", Call("flip", ("t0",))), InPlace("t1", "add_", "b")), ("t0",))
    of_the_base = Program(ab, (*computed, Assign("t1", Call("unsqueeze", ("t0",))), InPlace("t0", "add_", "b")),
                          ("t1",))
    assert program_facts.updates_through_an_alias(through_view)
    assert not program_facts.updates_through_an_alias(of_a_copy)
    assert not program_facts.updates_through_an_alias(of_the_base)
    found = sig("outputs", "value", "", "", "inplace")
    alias_id, empty_id = "inplace-through-alias-of-grad-tensor-lost", "empty-inputs-treated-as-aliases"
    assert known_issues.classify(found, "thunder", ISSUES, through_view).id == alias_id
    assert known_issues.classify(found, "thunder", ISSUES, of_the_base).id == empty_id
    asks_nothing = [without_facts(i) if i.id == alias_id else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", asks_nothing, through_view).id == empty_id


def test_a_gradient_through_detach_alone_is_the_detach_issue():
    # thunder differentiates detach() (zeros), so an input used only through it gets a zero
    # gradient where eager's stays None: outputs-require-grad-spuriously seen in gradients.
    # Planted fault: the same symptom beside an in-place update of an input is not taken.
    issue = known_issues.classify(sig("gradients", "spurious gradient", "", "", "detach"), "thunder", ISSUES)
    assert issue.id == "outputs-require-grad-spuriously"
    other = known_issues.classify(sig("gradients", "spurious gradient", "", "", "inplace"), "thunder", ISSUES)
    assert other is None or other.id != "outputs-require-grad-spuriously"


def test_empty_inputs_aliasing_needs_a_size_zero_input():
    # empty-inputs-treated-as-aliases has broad patterns (`outputs.value | * @ *inplace*`):
    # without a size-0 input they took other bugs (a broadcasting copy_'s shape error, an
    # overwritten input's missing gradient). Planted fault: the issue without its `needs`.
    from conformance.program import InPlace, Program, TensorInput

    def update(shape):
        return Program((TensorInput("a", shape), TensorInput("b", shape)), (InPlace("a", "add_", "b"),), ("a",))

    empty_id = "empty-inputs-treated-as-aliases"
    found = sig("outputs", "value", "", "", "inplace", later=True)
    assert program_facts.has_a_size_zero_input(update((2, 0))) and not program_facts.has_a_size_zero_input(update((2,)))
    assert known_issues.classify(found, "thunder", ISSUES, update((2, 0))).id == empty_id
    assert known_issues.classify(found, "thunder", ISSUES, update((2,))) is None
    no_needs = [without_facts(i) if i.id == empty_id else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", no_needs, update((2,))).id == empty_id


def without_facts(issue, ops=True):
    """The issue with the facts (and, with ops, the ops) its tables ask of a program dropped."""
    return replace(issue, shows=tuple(replace(t, needs=(), ops=() if ops else t.ops) for t in issue.shows))


def test_a_region_entered_in_a_mode_the_function_set_is_told_from_one_entered_in_the_callers():
    # thunder's region exits restore the caller's mode (is-grad-enabled-reads-ambient-mode):
    # that shows only where a region is entered in a mode the function set. Two regions one
    # after the other have the same constructs as one inside the other; a requires_grad lost
    # after the sequence is no-grad-view-requires-grad-dropped. Planted fault: without the
    # fact, the nested program goes to the view issue too.
    from conformance.program import (Assign, Call, GradRegion, Helper, HelperCall, Program, SetGradMode,
                                     TensorInput)

    a = (TensorInput("a", (2,), requires_grad=True),)
    op = Assign("t0", Call("mul_scalar", ("a",)))
    helper = (Helper("helper0", "no_grad", ("p0",), (), "p0"),)
    call = Assign("t1", HelperCall("helper0", ("a",)))
    cases = {
        "nested": (True, (GradRegion("no_grad", (GradRegion("enable_grad", (op,)),)),), ()),
        "after a plain call": (True, (SetGradMode("torch.set_grad_enabled", True), GradRegion("no_grad", (op,))), ()),
        "a helper called in a region": (True, (GradRegion("enable_grad", (call, op)),), helper),
        "one after the other": (False, (GradRegion("no_grad", (op,)), GradRegion("enable_grad", (op,))), ()),
        "a plain call after the region": (False, (GradRegion("no_grad", (op,)),
                                                  SetGradMode("torch.set_grad_enabled", False)), ()),
        "a helper called plainly": (False, (call, op), helper),
    }
    fact = program_facts.reads_or_restores_a_mode_the_function_changed
    for name, (expected, body, helpers) in cases.items():
        assert fact(Program(a, body, ("t0",), helpers)) == expected, name
    assert not fact(Program(a, cases["nested"][1], ("t0",)), "no_grad")  # entered in the caller's mode, off
    # One set of constructs, three programs: a region nested in a mode the function set, a view
    # made where grad is off, and neither (a new bug). Planted fault: without its fact, the
    # ambient issue takes the third as known.
    found = sig("flags", "requires_grad", "True", "False", "enable_grad", Context("no_grad"))
    view = Assign("t0", Call("reshape", ("a",)))
    nested = Program(a, cases["nested"][1], ("t0",))
    views = Program(a, (GradRegion("no_grad", (view,)), GradRegion("enable_grad", (op,))), ("t0",))
    neither = Program(a, cases["one after the other"][1], ("t0",))
    ambient_id, view_id = "is-grad-enabled-reads-ambient-mode", "no-grad-view-requires-grad-dropped"
    assert known_issues.classify(found, "thunder", ISSUES, nested, Context("grad")).id == ambient_id
    assert known_issues.classify(found, "thunder", ISSUES, views, Context("grad")).id == view_id
    assert known_issues.classify(found, "thunder", ISSUES, neither, Context("grad")) is None
    no_fact = [without_facts(i) if i.id == ambient_id else i for i in ISSUES]
    assert known_issues.classify(found, "thunder", no_fact, neither, Context("grad")).id == ambient_id


def test_an_output_that_requires_grad_with_grad_off_throughout_is_its_own_issue():
    # thunder connects an in-place program's outputs to autograd with grad off: a cause of its
    # own, not outputs-require-grad-spuriously, which needs another output that requires grad
    # in eager (so grad on somewhere). A spurious flag with grad off throughout and no update
    # is neither: new (a backend that reads the caller's no_grad as grad on shows so).
    from conformance.program import Assign, Call, InPlace, Program, TensorInput

    ab = (TensorInput("a", (2,), requires_grad=True), TensorInput("b", (2,)))
    program = Program(ab, (Assign("t0", Call("mul_scalar", ("b",))), InPlace("t0", "sub_", "b"),
                           Assign("t1", Call("mul_scalar", ("a",)))), ("t1",))
    found = sig("flags", "requires_grad", "False", "True", "inplace")
    new_id = "inplace-program-outputs-require-grad-under-no-grad"
    spurious = "outputs-require-grad-spuriously"
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("no_grad", False, False)).id == new_id
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", False, True)).id == spurious
    no_update = Program(ab, (Assign("t1", Call("mul_scalar", ("a",))),), ("t1",))
    found = sig("flags", "requires_grad", "False", "True")
    assert known_issues.classify(found, "thunder", ISSUES, no_update, Context("no_grad", False, False)) is None
    assert known_issues.classify(found, "thunder", ISSUES, no_update, Context("grad", False, True)).id == spurious


def test_grad_mode_left_after_a_call_is_told_apart_by_whether_the_call_raised():
    # thunder writes a plain set_grad_enabled back after a call, except when the call raises
    # and on a cache hit. A backend that never writes it back shows the same symptom on a
    # first call that returns normally: new. Planted fault: the table without `raised` takes it.
    from conformance.program import Program, SetGradMode, TensorInput

    program = Program((TensorInput("a", ()),), (SetGradMode("torch.set_grad_enabled", False),), ("a",))
    found = sig("grad_mode", "grad enabled after call", "False", "True", "torch.set_grad_enabled(False)")
    raises_id = "grad-mode-not-written-back-when-call-raises"
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", raised=True)).id == raises_id
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", raised=False)) is None
    without = [replace(i, shows=tuple(replace(t, raised=None) for t in i.shows)) if i.id == raises_id else i
               for i in ISSUES]
    assert known_issues.classify(found, "thunder", without, program, Context("grad", raised=False)).id == raises_id


def test_an_issue_fixed_in_the_version_under_test_does_not_hold_there(tmp_path):
    from types import SimpleNamespace

    KI = known_issues
    text = KI.PATH.read_text().replace('id = "inference-mode-ignored"',
                                       'id = "inference-mode-ignored"\nfixed_in = {thunder = "0.2.7.dev0"}', 1)
    (tmp_path / "k.toml").write_text(text)
    issues = KI.load(tmp_path / "k.toml")
    fixed = next(i for i in issues if i.id == "inference-mode-ignored")
    assert fixed.fixed_in == (("thunder", "0.2.7.dev0"),)
    assert fixed.holds_on({"thunder": "0.2.6"}) and fixed.holds_on({"torch": "2.9.1"})
    assert not fixed.holds_on({"thunder": "0.2.7.dev0"}) and not fixed.holds_on({"thunder": "0.3.0"})
    assert fixed.holds_on({"thunder": "a checkout"})  # not a version: the bug is assumed there
    release, main = (SimpleNamespace(versions=lambda v=v: {"thunder": v}) for v in ("0.2.6", "0.2.7.dev0"))
    assert fixed in KI.holding(issues, release) and fixed not in KI.holding(issues, main)
    assert len(KI.holding(issues, main)) == len(issues) - 1


def test_a_spurious_requires_grad_is_thunders_bug_only_beside_an_output_that_requires_grad():
    # thunder marks every output differentiable once one connects the call to autograd
    # (outputs-require-grad-spuriously); alone, a no_grad result that requires grad is a
    # tagging fault. Its table once asked only "grad on somewhere in the call", and every
    # tagging fault of a planted thunder was filed under it: hidden.
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    a = (TensorInput("a", (3,), requires_grad=True),)
    program = Program(a, (GradRegion("no_grad", (Assign("t0", Call("sum", ("a",))),)),), ("t0",))
    found = sig("flags", "requires_grad", "False", "True", "no_grad")
    spurious = BY_ID["outputs-require-grad-spuriously"]
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", False, True)) == spurious
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", False, False)) is None
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad")) is None  # not known: new
    # Under the caller's inference_mode, eager records nothing even with grad turned on:
    # thunder's output that requires grad there is inference-mode-ignored's.
    enabled = Program(a, (GradRegion("enable_grad", (Assign("t0", Call("sum", ("a",))),)),), ("t0",))
    found = sig("flags", "requires_grad", "False", "True", "enable_grad")
    inference = known_issues.classify(found, "thunder", ISSUES, enabled, Context("inference_mode", False, False))
    assert inference == BY_ID["inference-mode-ignored"]
    assert known_issues.classify(found, "thunder", ISSUES, enabled, Context("no_grad", False, False)) is None


def test_the_context_says_whether_another_computed_output_requires_grad_in_eager():
    # End to end on a planted tagging fault (cumsum's outputs under no_grad keep grad): alone
    # it is new; beside an output that requires grad it is what thunder itself does.
    from conformance.backends import get
    from conformance.check import run_example
    from conformance.engine import context_of, finding_of
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    fault = get("tests.fake_backends:cumsum_keeps_grad_under_no_grad")
    a = (TensorInput("a", (3,), requires_grad=True),)
    region = GradRegion("no_grad", (Assign("t0", Call("cumsum", ("a",))),))
    alone = run_example(Program(a, (region,), ("t0",)), fault)
    beside = run_example(Program(a, (region, Assign("t1", Call("sin", ("a",)))), ("t0", "t1")), fault)
    beside_input = run_example(Program(a, (region,), ("t0", "a")), fault)  # `a` itself connects nothing
    assert [context_of(r).another_output_requires_grad for r in (alone, beside, beside_input)] == [False, True, False]
    assert finding_of(alone, "thunder", ISSUES).known is None
    assert finding_of(beside, "thunder", ISSUES).known == BY_ID["outputs-require-grad-spuriously"]
    assert finding_of(beside_input, "thunder", ISSUES).known is None


def test_an_issue_may_name_a_backend_with_its_options():
    # A bug of Dynamo that AOTAutograd hides holds for torch.compile[backend=eager] alone; a
    # family name holds for every option of it.
    dynamo = replace(ISSUES[0], backends=("torch.compile[backend=eager]",))
    assert dynamo.applies_to("torch.compile[backend=eager]")
    assert not dynamo.applies_to("torch.compile") and not dynamo.applies_to("torch.compile[backend=inductor]")
    family = replace(ISSUES[0], backends=("torch.compile",))
    assert family.applies_to("torch.compile[backend=inductor]") and not family.applies_to("thunder")


def _region_program(op):
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput

    region = GradRegion("inference_mode", (Assign("t0", Call(op, ("b",))),))
    return Program((TensorInput("b", ()),), (region,), ("t0",))


def test_an_example_that_broke_its_process_is_known_by_its_program():
    # A crash's symptom is the same for every bug that breaks torch: the program tells them apart.
    from conformance.night.crash import BROKEN, DIED, RunFailure, known_issue_of

    broke = RunFailure(*BROKEN, "every op raised after this example")
    issue = BY_ID["compile-view-in-inference-mode-region-breaks-torch"]
    assert issue.breaks_its_process
    assert known_issue_of(broke, _region_program("unsqueeze"), "torch.compile", ISSUES) == issue
    assert known_issue_of(broke, _region_program("unsqueeze"), "torch.compile[backend=eager]", ISSUES) is None
    assert known_issue_of(broke, _region_program("mul_scalar"), "torch.compile", ISSUES) is None  # no view
    assert known_issue_of(RunFailure(*DIED, "exit code -11"), _region_program("unsqueeze"), "torch.compile",
                          ISSUES) is None  # another way to break
    assert known_issue_of(broke, None, "torch.compile", ISSUES) is None  # the example was not recovered


@pytest.mark.slow
def test_an_example_run_apart_tells_whether_it_broke_its_process(tmp_path, monkeypatch):
    # Planted fault: a backend that leaves every later op raising after a call under inference_mode.
    from conformance.generators.schedules import CallSpec
    from conformance.night.crash import run_apart

    monkeypatch.setenv("BREAKS_COUNTER", str(tmp_path / "broken"))
    program, schedule = _region_program("mul_scalar"), (CallSpec(ambient="inference_mode"),)
    failure = run_apart(program, schedule, "tests.fake_backends:breaks_torch_under_inference_mode")
    assert failure is not None and failure.signature.startswith("crash.torch left broken")
    assert run_apart(program, schedule, "identity") is None


def test_a_call_under_the_callers_autocast_is_classified_as_the_function_runs_there():
    # Eager's autocast cache keeps a cast made under no_grad for the caller's whole autocast too:
    # the program needs no region of its own. Without the caller's autocast in the Context, the
    # same program with the same symptom is no known issue (planted: facts read without it).
    from conformance.generators.schedules import CallSpec
    from conformance.oracles.mismatch import Mismatch
    from conformance.program import Assign, Call, GradRegion, Program, TensorInput
    from conformance.generators.schedules import AMBIENT_AUTOCAST
    from conformance.report.signatures import signature

    a = (TensorInput("a", (2, 2), requires_grad=True), TensorInput("b", (2, 2)))
    product = Call("matmul", ("a", "b"))
    program = Program(a, (GradRegion("no_grad", (Assign("t0", product),)), Assign("t1", product)), ("t1",))
    m = Mismatch("flags", "requires_grad", "return[0]", "False", "True", 0, "grad")
    found = signature(m, program, (CallSpec(autocast=True),))
    assert AMBIENT_AUTOCAST in found.constructs
    assert AMBIENT_AUTOCAST not in signature(m, program, (CallSpec(),)).constructs
    later = replace(m, call=1)  # a cache may reuse what an earlier call under autocast compiled
    assert AMBIENT_AUTOCAST in signature(later, program, (CallSpec(autocast=True), CallSpec())).constructs
    assert AMBIENT_AUTOCAST not in signature(m, program, (CallSpec(), CallSpec(autocast=True))).constructs
    cache_bug = "eager-autocast-cache-keeps-a-cast-made-under-no-grad"
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad", autocast=True)).id == cache_bug
    assert known_issues.classify(found, "thunder", ISSUES, program, Context("grad")) is None
    # An entry that allows no other construct does not take a bug shown only under the caller's autocast.
    only_no_grad = replace(ISSUES[0], id="only-no-grad", shows=(Shows(("flags",), constructs=("no_grad",), others=()),))
    assert known_issues.classify(signature(m, program, (CallSpec(),)), "thunder", [only_no_grad], program).id == "only-no-grad"
    assert known_issues.classify(found, "thunder", [only_no_grad], program) is None


def test_a_signature_names_an_optimizer_step_taken_before_the_call_that_differed():
    # A module whose parameters the caller stepped: a bug that needs the step is another bug.
    from conformance.generators.schedules import OPTIMIZER_STEP, CallSpec
    from conformance.oracles.mismatch import Mismatch
    from conformance.program import Assign, Call, Program, TensorInput
    from conformance.report.signatures import signature

    module = Program((TensorInput("a", (2,)),), (Assign("t0", Call("mul", ("a", "self.w0"))),), ("t0",),
                     parameters=(TensorInput("w0", (2,), requires_grad=True),))
    m = Mismatch("outputs", "value", "return[0]", "1", "2", 1, "grad")
    stepped = (CallSpec(step=True), CallSpec(values_seed=1))
    assert OPTIMIZER_STEP in signature(m, module, stepped).constructs
    assert OPTIMIZER_STEP not in signature(m, module, (CallSpec(), CallSpec(step=True, values_seed=1))).constructs
    plain = Program(module.inputs, (Assign("t0", Call("mul", ("a", "a"))),), ("t0",))  # no parameter: no step
    assert OPTIMIZER_STEP not in signature(m, plain, stepped).constructs
