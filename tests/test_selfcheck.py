"""The mutation self-test with a small budget: each part of thunder's grad-mode support,
broken on purpose, is told apart from thunder itself. (The eager-based faults are in
test_faulty_backends.py.)"""

import pytest

from conformance.backends.mutants import MUTANTS
from conformance.selfcheck import hunt


@pytest.mark.parametrize("name", list(MUTANTS))
def test_thunder_mutant_is_caught(name):
    pytest.importorskip("thunder")
    result = hunt(f"conformance.backends.mutants:{name}", "thunder", max_examples=200, seed=0)
    assert result["caught"], f"{name} not caught in 200 examples: {result}"
