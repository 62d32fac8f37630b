"""The mutation self-test with a small budget: each part of thunder's grad-mode support,
broken on purpose, is told apart from thunder itself by some oracle within 200 examples.
(The eager-based faults are in tests/test_faulty_backends.py.) Here, beside the suite, because
it runs thunder: tests/ runs on fast fake backends. It tests the harness, not the backend
under test, so it runs whatever --backend the suite was given, where thunder imports."""

import pytest

from conformance.backends.mutants import MUTANTS
from conformance.selfcheck import hunt


@pytest.mark.parametrize("name", list(MUTANTS))
def test_thunder_mutant_is_caught(name):
    pytest.importorskip("thunder", reason="thunder is not installed: the mutants are thunder's parts broken")
    result = hunt(f"conformance.backends.mutants:{name}", "thunder", max_examples=200, seed=0)
    assert result["caught"], f"{name} not caught in 200 examples: {result}"
