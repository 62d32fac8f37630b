"""Each planted fault is caught, by the oracle meant to catch it, within 200 examples.

The faulty backends (conformance/backends/faulty.py) wrap eager, so this runs without a
compiler. `find` returns the shrunk example, so the test also shows what the harness
would report for the fault.
"""

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from conformance.backends import get
from conformance.check import failure_message, run_example
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
}
# A fault in one construct is looked for in programs that draw it.
DRAWS = {"inlines_functions": examples(statements=("op", "helper")), "ignores_autocast": examples(regions=("autocast",)),
         "drops_create_graph": examples(statements=("op", "grad")),
         "drops_buffer_updates": examples(modules="always"),
         # the caller's autocast shows in a product outside the function's own autocast regions
         "ignores_ambient_autocast": examples(regions=(), statements=("op",)),
         "stale_autocast_cache": examples(regions=(), statements=("op",))}
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
    # Programs with helpers and no region: only a `@torch.autocast(...)` function can show it.
    backend = get("conformance.backends.faulty:ignores_autocast")

    def caught(example):
        return any(m.oracle == "outputs" for m in run_example(example[0], backend, example[1]).mismatches)

    program, schedule = find(examples(regions=(), statements=("op", "helper")), caught, settings=BUDGET)
    assert "@autocast" in constructs(program), render(program)
