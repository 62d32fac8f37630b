"""Each planted fault is caught, by the oracle meant to catch it, within 200 examples.

The faulty backends (conformance/backends/faulty.py) wrap eager, so this runs without a
compiler. The first example that shows a fault is enough: shrinking is tested on its own
(tests/test_shrinking.py, tests/test_reduction.py), and here it took most of the time.
"""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from conformance.backends import get
from conformance.check import failure_message, run_example
from conformance.generators.schedules import CallSpec
from conformance.program import Assign, Call, Program, TensorInput, constructs, render
from conformance.suite import examples

CASES = {
    "always_grad": "flags",
    "stale_grad_mode_cache": "recompiles",
    "recompiles_every_call": "recompiles",
    "forgets_grad_mode_change": "grad_mode",
    "ignores_grad_mode_calls": "flags",
    "inlines_functions": "gradients",
    "scales_gradients": "gradients",
    "perturbs_outputs": "outputs",
    "raises_on_grad_mode_calls": "exceptions",
    "ignores_autocast": "outputs",
    "ignores_ambient_autocast": "outputs",
    "stale_autocast_cache": "outputs",
    "drops_create_graph": "flags",
    "drops_buffer_updates": "outputs",
    "stale_parameter_values": "outputs",
    "stale_training_mode": "outputs",
    "stale_gradient_reads": "outputs",
}
# A fault in one construct is looked for in programs that draw it, where one in twenty or more
# shows it (so that 200 examples catch it whatever draws the generator adds: derandomized
# samples move with every new draw).
# The caller's autocast shows in a product (of the binary family), called under it; a cache
# that drops it, in a call under it after one without.
PRODUCTS = examples(regions=(), statements=("op",), families=("binary",))
DRAWS = {"inlines_functions": examples(statements=("helper",)),
         "ignores_autocast": examples(regions=("autocast",), statements=("op", "region"), families=("binary",)),
         "drops_create_graph": examples(statements=("grad",), modules="always"),
         "drops_buffer_updates": examples(modules="always", statements=("op",)),
         "stale_parameter_values": examples(modules="always"),
         # a forward that reads `self.training`, called in both modes
         "stale_training_mode": examples(modules="always", statements=("read", "if")).map(
             lambda ex: (ex[0], ex[1] + (CallSpec(training=False, values_seed=9),))),
         # a forward that reads `p.grad is None`, called again with the gradients kept
         "stale_gradient_reads": examples(modules="always", statements=("read", "if")).map(
             lambda ex: (ex[0], tuple(replace(c, zero_grad=False) for c in ex[1]) + (CallSpec(values_seed=9),))),
         "ignores_ambient_autocast": PRODUCTS.map(lambda ex: (ex[0], tuple(replace(c, autocast=True) for c in ex[1]))),
         "stale_autocast_cache": PRODUCTS.map(lambda ex: (ex[0], (CallSpec(), CallSpec(autocast=True, values_seed=1))))}
BUDGET = settings(max_examples=200, database=None, derandomize=True, deadline=None,
                  phases=[Phase.generate],
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@pytest.mark.parametrize("fault, oracle", CASES.items(), ids=list(CASES))
def test_planted_fault_is_caught_by_its_oracle(fault, oracle):
    backend = get(f"conformance.backends.faulty:{fault}")

    def caught(example):
        return any(m.oracle == oracle for m in run_example(example[0], backend, example[1]).mismatches)

    program, schedule = find(DRAWS.get(fault, examples()), caught, settings=BUDGET)
    result = run_example(program, backend, schedule)
    assert any(m.oracle == oracle for m in result.mismatches), failure_message(result)


def test_spec_of_unknown_factory_is_a_clear_error():
    from conformance.backends import BackendUnavailable

    with pytest.raises(BackendUnavailable, match="has no callable 'nope'"):
        get("conformance.backends.faulty:nope")
    with pytest.raises(BackendUnavailable, match="cannot import backend module"):
        get("no_such_module:factory")
    with pytest.raises(BackendUnavailable, match="unknown backend 'thundr'"):
        get("thundr")


def test_a_backend_that_ignores_autocast_decorators_is_caught():
    # Programs of helpers and no region: only a `@torch.autocast(...)` function can show it (one
    # program in 40: a quarter of the helpers, whose result must come of the product).
    backend = get("conformance.backends.faulty:ignores_autocast")

    def caught(example):
        return any(m.oracle == "outputs" for m in run_example(example[0], backend, example[1]).mismatches)

    strategy = examples(regions=(), statements=("helper",), families=("binary",))
    program, schedule = find(strategy, caught, settings=settings(BUDGET, max_examples=400))
    assert "@autocast" in constructs(program), render(program)


def test_a_backend_that_reuses_parameter_values_is_caught_after_the_callers_step():
    # `return a * self.w0`: without an optimizer step between the calls the parameter never
    # changes and the fault is invisible; with one, the second call's output differs. (The
    # generic test above may catch the fault otherwise: an update of a parameter in place.)
    backend = get("conformance.backends.faulty:stale_parameter_values")
    program = Program((TensorInput("a", (2,)),), (Assign("t0", Call("mul", ("a", "self.w0"))),), ("t0",),
                      parameters=(TensorInput("w0", (2,), requires_grad=True),))
    for step in (False, True):
        found = run_example(program, backend, (CallSpec(step=step), CallSpec(values_seed=1))).mismatches
        assert [(m.oracle, m.aspect, m.call) for m in found][:1] == ([("outputs", "value", 1)] if step else []), found
