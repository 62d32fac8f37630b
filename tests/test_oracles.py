"""Each oracle on hand-made Outcomes: a case it must pass, and a planted fault it must catch."""

import dataclasses

import pytest
import torch

from conformance import oracles
from conformance.generators.schedules import CallSpec
from conformance.grad_mode import GradState
from conformance.oracles import exceptions, flags, gradients, grad_mode, outputs, recompiles, traces
from conformance.oracles.mismatch import ConformanceMismatch, class_key, exception_class
from conformance.outcome import CacheStats, CallOutcome, ErrorInfo, Leaf, SideOutcome, TraceFacts


def tensor(values, requires_grad=False, has_grad_fn=False, dtype=torch.float32, is_inference=False):
    t = torch.tensor(values, dtype=dtype)
    return Leaf("tensor", t, tuple(t.shape), str(dtype).removeprefix("torch."), "cpu", requires_grad,
                has_grad_fn, not has_grad_fn, is_inference)


def call(ambient="grad", outputs=(), grads=None, after=None, error=None, state=(True, False), **kw):
    return CallOutcome(CallSpec(ambient), tuple(outputs), after or {}, grads or {}, error, GradState(*state), **kw)


def side(*calls, name="eager", cache=None, policy=None):
    return SideOutcome(name, list(calls), cache, recompile_policy=policy)


def eager_and(backend_calls, eager_calls, **kw):
    return side(*eager_calls), side(*backend_calls, name="backend", **kw)


BASE = call(outputs=[tensor([1.0, 2.0], True, True), Leaf("python", True)],
            grads={"a": tensor([1.0, 1.0]), "b": None}, after={"a": tensor([1.0, 2.0], True)})


def changed(c: CallOutcome, **kw) -> CallOutcome:
    return dataclasses.replace(c, **kw)


# -- outputs -------------------------------------------------------------------------

def test_outputs_pass_on_equal_and_within_tolerance():
    close = changed(BASE, outputs=(tensor([1.0, 2.0 + 1e-7], True, True), Leaf("python", True)))
    assert outputs.check(*eager_and([close], [BASE])) == []


def test_outputs_nan_equals_nan():
    nan = changed(BASE, outputs=(tensor([float("nan")]),))
    assert outputs.check(*eager_and([nan], [nan])) == []


@pytest.mark.parametrize("fault, aspect", [
    (dict(outputs=(tensor([1.0, 2.5], True, True), Leaf("python", True))), "value"),
    (dict(outputs=(tensor([1.0, 2.0], True, True), Leaf("python", False))), "python value"),
    (dict(outputs=(tensor([1.0, 2.0], True, True, dtype=torch.float64), Leaf("python", True))), "dtype"),
    (dict(outputs=(tensor([[1.0, 2.0]], True, True), Leaf("python", True))), "shape"),
    (dict(outputs=(tensor([1.0, 2.0], True, True),)), "structure"),
    (dict(after={"a": tensor([0.0, 2.0], True)}), "input value"),
])
def test_outputs_catch_planted_faults(fault, aspect):
    found = outputs.check(*eager_and([changed(BASE, **fault)], [BASE]))
    assert [m.aspect for m in found] == [aspect]
    assert found[0].call == 0 and found[0].ambient == "grad"


def test_low_precision_tolerance_is_wider_but_finite():
    e = changed(BASE, outputs=(tensor([1.0], dtype=torch.bfloat16),))
    ok = changed(BASE, outputs=(tensor([1.0078125], dtype=torch.bfloat16),))  # one bf16 ulp at 1
    bad = changed(BASE, outputs=(tensor([1.5], dtype=torch.bfloat16),))
    assert outputs.check(*eager_and([ok], [e])) == []
    assert [m.aspect for m in outputs.check(*eager_and([bad], [e]))] == ["value"]


# -- flags ---------------------------------------------------------------------------

def test_flags_pass_when_equal():
    assert flags.check(*eager_and([BASE], [BASE])) == []


@pytest.mark.parametrize("leaf, aspects", [
    (tensor([1.0, 2.0], False, False), ["requires_grad", "grad_fn"]),
    (tensor([1.0, 2.0], True, False), ["grad_fn"]),
    (tensor([1.0, 2.0], True, True, is_inference=True), ["is_inference"]),
    (tensor([1.0, 2.0], True, "reading grad_fn raises RuntimeError"), ["grad_fn"]),
])
def test_flags_catch_planted_faults(leaf, aspects):
    found = flags.check(*eager_and([changed(BASE, outputs=(leaf, Leaf("python", True)))], [BASE]))
    assert [m.aspect for m in found] == aspects


def test_flags_say_when_an_output_is_the_input_itself():
    new = tensor([1.0, 2.0], True, True)
    itself = dataclasses.replace(tensor([1.0, 2.0], True, False), is_input="a")
    found = flags.check(*eager_and([changed(BASE, outputs=(itself, Leaf("python", True)))],
                                   [changed(BASE, outputs=(new, Leaf("python", True)))]))
    assert [(m.eager, m.backend) for m in found] == [("a grad_fn", "grad_fn None, the input itself")]
    # Both returning the input (`return a`) is no difference, and a new tensor says nothing more.
    assert flags.check(*eager_and([changed(BASE, outputs=(itself, Leaf("python", True)))],
                                  [changed(BASE, outputs=(itself, Leaf("python", True)))])) == []
    plain = flags.check(*eager_and([changed(BASE, outputs=(tensor([1.0, 2.0], True, False), Leaf("python", True)))],
                                   [BASE]))
    assert [m.backend for m in plain] == ["grad_fn None"]


def test_flags_of_inputs_after_the_call():
    found = flags.check(*eager_and([changed(BASE, after={"a": tensor([1.0, 2.0], False)})], [BASE]))
    assert [(m.aspect, m.where) for m in found] == [("requires_grad", "a after call")]


# -- gradients -----------------------------------------------------------------------

def test_gradients_pass_when_equal():
    assert gradients.check(*eager_and([BASE], [BASE])) == []


@pytest.mark.parametrize("grads, aspect", [
    ({"a": None, "b": None}, "missing gradient"),
    ({"a": tensor([1.0, 1.0]), "b": tensor([0.0])}, "spurious gradient"),
    ({"a": tensor([2.0, 2.0]), "b": None}, "value"),
])
def test_gradients_catch_planted_faults(grads, aspect):
    found = gradients.check(*eager_and([changed(BASE, grads=grads)], [BASE]))
    assert [m.aspect for m in found] == [aspect]


def test_zeros_are_not_none():
    zeros = changed(BASE, grads={"a": tensor([0.0, 0.0]), "b": None})
    none = changed(BASE, grads={"a": None, "b": None})
    assert [m.aspect for m in gradients.check(*eager_and([zeros], [none]))] == ["spurious gradient"]


# -- exceptions ----------------------------------------------------------------------

ERR = ErrorInfo("RuntimeError", "boom", "call")


def test_exceptions_both_raising_agree():
    failed = changed(BASE, error=ERR)
    assert exceptions.check(*eager_and([changed(BASE, error=ErrorInfo("TypeError", "other", "call"))], [failed])) == []
    asserted = changed(BASE, error=ErrorInfo("AssertionError", "the program's own assert", "call"))
    assert exceptions.check(*eager_and([asserted], [asserted])) == []


@pytest.mark.parametrize("eager_error, backend_error, aspect", [
    (None, ERR, "backend raised during call"),
    (ERR, None, "eager raised during call"),
    (None, ErrorInfo("RuntimeError", "x", "backward"), "backend raised during backward"),
    (ERR, ErrorInfo("RuntimeError", "x", "backward"), "raised at another stage"),
    (ERR, ErrorInfo("AssertionError", "internal invariant", "call"), "backend raised an internal AssertionError"),
])
def test_exceptions_catch_one_sided_raises(eager_error, backend_error, aspect):
    found = exceptions.check(*eager_and([changed(BASE, error=backend_error)], [changed(BASE, error=eager_error)]))
    assert [m.aspect for m in found] == [aspect]


def test_value_oracles_skip_calls_that_raised():
    failed = changed(BASE, error=ERR, outputs=())
    pair = eager_and([failed], [BASE])
    assert outputs.check(*pair) == [] and flags.check(*pair) == [] and gradients.check(*pair) == []


# -- grad mode -----------------------------------------------------------------------

def test_grad_mode_pass_and_catch():
    off = changed(BASE, state_after=GradState(False, False))
    assert grad_mode.check(*eager_and([off], [off])) == []
    assert [m.aspect for m in grad_mode.check(*eager_and([BASE], [off]))] == ["grad enabled after call"]
    inf = changed(BASE, state_after=GradState(True, True))
    assert [m.aspect for m in grad_mode.check(*eager_and([inf], [BASE]))] == ["inference mode after call"]


# -- recompiles ----------------------------------------------------------------------

# (grad enabled, inputs, a module's training flag): the runner's keys end with the flag
K_GRAD, K_NOGRAD, K_GRAD_EVAL = (True, (), True), (False, (), True), (True, (), False)


def keyed(key, ambient="grad"):
    return changed(BASE, cache_key=key, spec=CallSpec(ambient))


@pytest.mark.parametrize("policy, keys, expected", [
    ("per key", [K_GRAD], 1), ("per key", [K_GRAD, K_GRAD], 1), ("per key", [K_GRAD, K_NOGRAD, K_GRAD], 2),
    ("every call", [K_GRAD, K_GRAD, K_GRAD], 3), ("every call", [], 0),
])
def test_recompile_model(policy, keys, expected):
    assert recompiles.expected_compilations(policy, keys) == expected


def test_recompile_model_refuses_unknown_policy():
    with pytest.raises(ValueError, match="unknown recompile policy"):
        recompiles.expected_compilations("sometimes", [])


def test_recompiles_pass_and_catch_both_directions():
    calls = [keyed(K_GRAD), keyed(K_NOGRAD, "no_grad")]
    ok = eager_and(calls, calls, cache=CacheStats(0, 2), policy="per key")
    assert recompiles.check(*ok) == []
    few = eager_and(calls, calls, cache=CacheStats(1, 1), policy="per key")
    many = eager_and(calls, calls, cache=CacheStats(0, 3), policy="per key")
    assert [m.aspect for m in recompiles.check(*few)] == ["too few compilations"]
    assert [m.aspect for m in recompiles.check(*many)] == ["too many compilations"]


def test_a_cache_may_or_may_not_check_a_modules_training_flag():
    # A forward that does not read `self.training` computes the same in eval mode: one
    # compilation or two are both correct for calls that differ only there; three are not.
    calls = [keyed(K_GRAD), keyed(K_GRAD_EVAL)]
    assert recompiles.compilation_range("per key", [c.cache_key for c in calls]) == (1, 2)
    for misses, found in [(1, []), (2, []), (3, ["too many compilations"])]:
        pair = eager_and(calls, calls, cache=CacheStats(2 - min(misses, 2), misses), policy="per key")
        assert [m.aspect for m in recompiles.check(*pair)] == found


def test_recompiles_not_applicable_without_counters():
    calls = [keyed(K_GRAD)]
    pair = eager_and(calls, calls)
    assert recompiles.check(*pair) == [] and not recompiles.applicable(pair[1])


# -- traces --------------------------------------------------------------------------

def facts(**kw):
    base = dict(markers_first=(False, True), markers_execution=0, backward_outputs=None,
                events=(("marker", False), ("op", (("t0", True),)), ("marker", True), ("op", (("t1", False),))))
    return TraceFacts(**(base | kw))


def with_facts(f, eager_calls=(False, True)):
    e = changed(BASE, set_grad_calls=eager_calls)
    return eager_and([changed(BASE, traces=f)], [e])


def test_traces_pass_on_faithful_traces():
    assert traces.check(*with_facts(facts())) == []


@pytest.mark.parametrize("f, aspect", [
    (facts(markers_first=(False,)), "markers"),
    (facts(markers_execution=2), "marker left in execution trace"),
    (facts(events=(("marker", False), ("op", (("t0", False),)), ("marker", True))), "untagged under no_grad"),
])
def test_traces_catch_planted_faults(f, aspect):
    assert [m.aspect for m in traces.check(*with_facts(f))] == [aspect]


def test_traces_judge_no_mode_where_eager_calls_were_not_recorded():
    # A torch.autograd.Function's forward changes grad mode: eager's calls there are not recorded
    # (thunder traces a forward on its own, without markers in the function's trace), so the
    # markers of this trace do not tell the mode each symbol ran in.
    untagged = facts(events=(("marker", False), ("op", (("t0", False),)), ("marker", True)))
    assert traces.check(*with_facts(untagged, eager_calls=None)) == []
    assert [m.aspect for m in traces.check(*with_facts(untagged))] == ["untagged under no_grad"]


def test_traces_backward_of_nothing():
    e = changed(BASE, outputs=(tensor([1.0]),), grads={"a": None}, set_grad_calls=(False, True))
    b = changed(BASE, outputs=(tensor([1.0]),), grads={"a": None}, traces=facts(backward_outputs=1))
    assert [m.aspect for m in traces.check(side(e), side(b, name="x"))] == ["backward computes detached values"]


# -- the exception classes -------------------------------------------------------------

def test_each_kind_of_mismatch_raises_its_own_class():
    found = outputs.check(*eager_and([changed(BASE, outputs=(tensor([9.0, 9.0], True, True), Leaf("python", False)))],
                                     [BASE]))
    classes = {exception_class(m) for m in found}
    assert len(classes) == 2 and all(issubclass(c, ConformanceMismatch) for c in classes)
    later = dataclasses.replace(found[0], call=3)
    assert class_key(later) != class_key(found[0]) and exception_class(later) is not exception_class(found[0])


def test_compare_runs_every_oracle():
    assert set(oracles.CHECKS) == set(oracles.ORACLES)
    assert oracles.compare(*eager_and([BASE], [BASE])) == []


def test_compare_puts_the_cause_first():
    # A nested region's exit restored the wrong mode: the marker differs, and so does the
    # flag of the output computed after it. The marker names the bug, so it comes first.
    e = changed(BASE, set_grad_calls=(True, False, True))
    b = changed(BASE, outputs=(tensor([1.0, 2.0], False, False), Leaf("python", True)),
                traces=facts(markers_first=(True, False, False)))
    found = oracles.compare(side(e), side(b, name="backend"))
    assert [m.kind for m in found] == ["traces.markers", "flags.requires_grad", "flags.grad_fn"]
    raised = changed(b, error=ErrorInfo("RuntimeError", "boom", "call"))
    assert oracles.compare(side(e), side(raised, name="backend"))[0].oracle == "exceptions"


def test_a_backward_error_of_outputs_whose_flags_differ_follows_the_flags():
    # Backward through an output that lost requires_grad raises 'does not require grad': the
    # lost flag is the bug, the error its consequence, and leads only where no flag differs.
    # Planted fault: ranked first, every lost requires_grad would be a backward error's class.
    lost = changed(BASE, outputs=(tensor([1.0, 2.0], False, False), Leaf("python", True)),
                   error=ErrorInfo("RuntimeError", "element 0 of tensors does not require grad", "backward"))
    found = oracles.compare(side(BASE), side(lost, name="backend"))
    assert [m.kind for m in found] == ["flags.requires_grad", "flags.grad_fn", "exceptions.backend raised during backward"]
    alone = changed(BASE, error=ErrorInfo("RuntimeError", "boom", "backward"))
    assert oracles.compare(side(BASE), side(alone, name="backend"))[0].oracle == "exceptions"


def test_a_wrapped_compiler_error_is_told_apart_by_its_cause():
    # Dynamo's BackendCompilerFailed says what failed on its second line only: two different
    # failures must not share one signature.
    from conformance.oracles.mismatch import Mismatch

    def key(cause):
        err = ErrorInfo("BackendCompilerFailed", "torch._dynamo.exc.BackendCompilerFailed: backend='aot_eager' "
                        f"raised:\nRuntimeError: {cause}\n\nWhile executing %add_", "call")
        return class_key(Mismatch("exceptions", "backend raised during call", "call", "no exception", err.line(), 0,
                                  "grad"))

    inplace, view = key("Inplace update to inference tensor outside InferenceMode"), key("Cannot set version_counter")
    assert inplace != view
    assert inplace.backend.startswith("BackendCompilerFailed during call: RuntimeError: Inplace update")
    assert ErrorInfo("RuntimeError", "one line: no cause after it", "call").headline() == "one line: no cause after it"


def test_a_modules_calls_after_one_that_raised_on_one_side_are_not_compared():
    # The backend raised in backward at call 0 and took no step: its parameter after call 1,
    # its output and gradient differ from eager's as a consequence. A function's calls start
    # afresh, and its later calls are compared still.
    raised = ErrorInfo("RuntimeError", "raised in backward", "backward")
    w = {"self.w0": tensor([1.0])}
    eager = [call(outputs=[tensor([1.0])], after=w, grads={"self.w0": tensor([1.0])}),
             call(outputs=[tensor([1.0])], after=w, grads={"self.w0": tensor([1.0])})]
    backend = [changed(eager[0], error=raised),
               call(outputs=[tensor([2.0])], after={"self.w0": tensor([2.0])}, grads={"self.w0": tensor([3.0])})]
    found = oracles.compare(*eager_and(backend, eager))
    assert [(m.oracle, m.call) for m in found] == [("exceptions", 0)], [m.line() for m in found]
    plain = [changed(c, after={"a": tensor([1.0])}, grads={"a": tensor([1.0])}) for c in eager]
    plain_backend = [changed(plain[0], error=raised), changed(plain[1], outputs=(tensor([2.0]),))]
    found = oracles.compare(*eager_and(plain_backend, plain))
    assert [(m.oracle, m.call) for m in found] == [("exceptions", 0), ("outputs", 1)], [m.line() for m in found]
