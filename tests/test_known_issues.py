"""known_issues.toml: loading, and which issue a signature is classified under."""

from dataclasses import replace

import pytest

from conformance import known_issues

ISSUES = known_issues.load()
BROAD = replace(ISSUES[0], id="broad", signatures=("exceptions.backend raised during backward | *",))
NARROW = replace(ISSUES[0], id="narrow", signatures=("exceptions.backend raised during * | *A view was created*",))
VIEW = ("exceptions.backend raised during backward | no exception / RuntimeError during backward: "
        "A view was created in no_grad mode and its base")


def test_the_most_specific_pattern_wins_whatever_the_order():
    assert known_issues.classify(VIEW, "thunder", [BROAD, NARROW]).id == "narrow"
    assert known_issues.classify(VIEW, "thunder", [NARROW, BROAD]).id == "narrow"


def test_a_signature_only_the_broad_pattern_matches_stays_with_it():
    other = "exceptions.backend raised during backward | no exception / AssertionError during backward"
    assert known_issues.classify(other, "thunder", [NARROW, BROAD]).id == "broad"
    assert known_issues.classify("outputs.value | first call @ inplace", "thunder", [NARROW, BROAD]) is None


def test_an_issue_of_another_backend_is_not_matched():
    assert known_issues.classify(VIEW, "inductor", [NARROW]) is None


def test_the_shipped_file_loads_with_unique_ids():
    assert len({i.id for i in ISSUES}) == len(ISSUES) > 10


def test_the_view_issue_names_requires_grad_not_the_inference_flag():
    # no-grad-view-requires-grad-dropped is about requires_grad (and grad_fn); an inference_mode
    # program's `is_inference` mismatch is inference-mode-ignored.
    view = next(i for i in ISSUES if i.id == "no-grad-view-requires-grad-dropped")
    inference = "flags.is_inference | eager True, backend False | first call @ inference_mode set_grad_enabled(True)"
    requires_grad = inference.replace("is_inference", "requires_grad").replace("inference_mode ", "")
    assert known_issues.classify(requires_grad, "thunder", ISSUES) == view
    assert known_issues.classify(inference, "thunder", ISSUES).id == "inference-mode-ignored"


def test_a_backward_error_no_issue_names_is_new():
    # backward-fails-after-grad-mode-changes once matched `exceptions.backend raised during
    # backward | *`: every backward error of thunder was "known" under its title, three other
    # bugs among them (cpu-scalar-broadcast-cotangent-unsummed's expand of an unsummed
    # cotangent, a slice's pad of a size-0 dim, a sizeless torch.zeros), and a new one would be.
    head = "exceptions.backend raised during backward | no exception / "
    by_id = {i.id: i for i in ISSUES}
    expected = {
        "RuntimeError during backward: a message no issue names @ plain ops": None,
        "RuntimeError during backward: expand(torch.FloatTensor{[N, N]}, size=[N]): the number of s @ plain ops":
            "cpu-scalar-broadcast-cotangent-unsummed",
        "RuntimeError during backward: The input size N, plus negative padding N and N resulted in  @ plain ops":
            "slice-backward-pads-size-zero-dim",
        "AssertionError during backward: AssertionError @ inplace": "backward-fails-after-grad-mode-changes",
    }
    for tail, issue in expected.items():
        assert known_issues.classify(head + tail, "thunder", ISSUES) == by_id.get(issue), tail


def test_an_issue_with_ops_is_only_a_program_that_calls_one_of_them():
    # A value mismatch of plain ops is relu-of-nan-is-zero-with-grad's signature whatever op
    # differs; its `ops` keep the issue to programs that call relu, so another op's is new.
    from conformance.program import Assign, Call, Program, TensorInput

    relu = next(i for i in ISSUES if i.id == "relu-of-nan-is-zero-with-grad")
    sig = "outputs.value | first call @ plain ops"
    a = (TensorInput("a", (3,), requires_grad=True, special="nan"),)
    calls_relu = Program(a, (Assign("t0", Call("sin", ("a",))), Assign("t1", Call("relu", ("t0",)))), ("t1",))
    calls_sigmoid = Program(a, (Assign("t0", Call("sigmoid", ("a",))),), ("t0",))
    assert known_issues.classify(sig, "thunder", [relu], calls_relu) == relu
    assert known_issues.classify(sig, "thunder", [relu], calls_sigmoid) is None
    assert known_issues.classify(sig, "thunder", [relu]) == relu  # a signature alone says no more


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
    for (mode, where), program in _programs_updating().items():
        assert known_issues.updates_while_grad_off(program) == (mode == "off"), where


def test_an_issue_that_needs_a_fact_is_only_a_program_that_has_it():
    # `b.sub_(a)` and a plain `torch.set_grad_enabled(False)` have one set of constructs,
    # whichever comes first: the update while grad is off is inplace-while-grad-off-drops-
    # requires-grad, the one before it (grad on) inplace-from-grad-tensor-loses-autograd.
    # Planted fault: the issue without its `needs` takes both.
    off_issue = next(i for i in ISSUES if i.id == "inplace-while-grad-off-drops-requires-grad")
    sig = "flags.requires_grad | eager True, backend False | first call @ inplace torch.set_grad_enabled(False)"
    programs = _programs_updating()
    after, before = programs["off", "after a plain grad-off call"], programs["on", "before a plain grad-off call"]
    assert known_issues.classify(sig, "thunder", ISSUES, after) == off_issue
    assert known_issues.classify(sig, "thunder", ISSUES, before).id == "inplace-from-grad-tensor-loses-autograd"
    no_needs = [replace(i, needs=()) if i == off_issue else i for i in ISSUES]
    assert known_issues.classify(sig, "thunder", no_needs, before).id == off_issue.id


def test_an_issue_needing_a_fact_the_module_does_not_know_is_refused(tmp_path):
    text = known_issues.PATH.read_text().replace('needs = ["an update while grad is off"]', 'needs = ["an update"]', 1)
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
    assert known_issues.multiplies_a_computed_value_in_place(computed)
    assert not known_issues.multiplies_a_computed_value_in_place(input_updated)
    sig = "gradients.value | first call @ inplace"
    mul_id, input_id = "inplace-mul-backward-reads-updated-target", "inplace-from-grad-tensor-loses-autograd"
    assert known_issues.classify(sig, "thunder", ISSUES, computed).id == mul_id
    assert known_issues.classify(sig, "thunder", ISSUES, input_updated).id == input_id
    no_needs = [replace(i, needs=()) if i.id == mul_id else i for i in ISSUES]
    assert known_issues.classify(sig, "thunder", no_needs, input_updated).id == mul_id
    asks_nothing = [replace(i, needs=(), ops=()) if i.id == mul_id else i for i in ISSUES]
    assert known_issues.classify(sig, "thunder", asks_nothing, computed).id == input_id


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
    assert known_issues.updates_through_an_alias(through_view)
    assert not known_issues.updates_through_an_alias(of_a_copy)
    assert not known_issues.updates_through_an_alias(of_the_base)
    sig = "outputs.value | first call @ inplace"
    alias_id, empty_id = "inplace-through-alias-of-grad-tensor-lost", "empty-inputs-treated-as-aliases"
    assert known_issues.classify(sig, "thunder", ISSUES, through_view).id == alias_id
    assert known_issues.classify(sig, "thunder", ISSUES, of_the_base).id == empty_id
    asks_nothing = [replace(i, needs=(), ops=()) if i.id == alias_id else i for i in ISSUES]
    assert known_issues.classify(sig, "thunder", asks_nothing, through_view).id == empty_id


def test_a_gradient_through_detach_alone_is_the_detach_issue():
    # thunder differentiates detach() (zeros), so an input used only through it gets a zero
    # gradient where eager's stays None: outputs-require-grad-spuriously seen in gradients.
    # Planted fault: the same symptom beside an in-place update of an input is not taken.
    issue = known_issues.classify("gradients.spurious gradient | first call @ detach", "thunder", ISSUES)
    assert issue.id == "outputs-require-grad-spuriously"
    other = known_issues.classify("gradients.spurious gradient | first call @ inplace", "thunder", ISSUES)
    assert other.id != "outputs-require-grad-spuriously"


def test_empty_inputs_aliasing_needs_a_size_zero_input():
    # empty-inputs-treated-as-aliases has broad patterns (`outputs.value | * @ *inplace*`):
    # without a size-0 input they took other bugs (a broadcasting copy_'s shape error, an
    # overwritten input's missing gradient). Planted fault: the issue without its `needs`.
    from conformance.program import InPlace, Program, TensorInput

    def update(shape):
        return Program((TensorInput("a", shape), TensorInput("b", shape)), (InPlace("a", "add_", "b"),), ("a",))

    empty_id = "empty-inputs-treated-as-aliases"
    sig = "outputs.value | later call @ enable_grad inplace module"
    assert known_issues.has_a_size_zero_input(update((2, 0))) and not known_issues.has_a_size_zero_input(update((2,)))
    assert known_issues.classify(sig, "thunder", ISSUES, update((2, 0))).id == empty_id
    assert known_issues.classify(sig, "thunder", ISSUES, update((2,))) is None
    no_needs = [replace(i, needs=()) if i.id == empty_id else i for i in ISSUES]
    assert known_issues.classify(sig, "thunder", no_needs, update((2,))).id == empty_id
