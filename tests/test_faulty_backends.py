"""Each planted fault is caught, by the oracle meant to catch it, within 200 examples.

The faulty backends (conformance/backends/faulty.py) wrap eager, so this runs without a
compiler. `find` returns the shrunk example, so the test also shows what the harness
would report for the fault.
"""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from conformance.backends import get
from conformance.check import failure_message, run_example
from conformance.generators.schedules import CallSpec
from conformance.program import constructs, render
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
         "ignores_ambient_autocast": PRODUCTS.map(lambda ex: (ex[0], tuple(replace(c, autocast=True) for c in ex[1]))),
         "stale_autocast_cache": PRODUCTS.map(lambda ex: (ex[0], (CallSpec(), CallSpec(autocast=True, values_seed=1))))}
BUDGET = settings(max_examples=200, database=None, derandomize=True, deadline=None,
                  phases=[Phase.generate, Phase.shrink],
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
    # Without an optimizer step between calls the parameters never change and the fault is
    # invisible: the shrunk schedule keeps a step before the call that differs.
    backend = get("conformance.backends.faulty:stale_parameter_values")

    def caught(example):
        return any(m.oracle == "outputs" for m in run_example(example[0], backend, example[1]).mismatches)

    program, schedule = find(examples(modules="always"), caught, settings=BUDGET)
    first = min(m.call for m in run_example(program, backend, schedule).mismatches if m.oracle == "outputs")
    assert any(spec.step for spec in schedule[:first]), (render(program), schedule)
