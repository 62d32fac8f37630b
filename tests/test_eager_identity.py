"""The identity backend never mismatches: a false alarm costs a compiler engineer an hour.

1,000 generated programs (with call schedules), eager against eager, all oracles. (A longer check:
`python -m conformance fuzz --backend eager --seconds 600`, which must find nothing.)"""

import pytest
from hypothesis import given, settings

from conformance.backends import get
from conformance.check import failure_message, run_example
from conformance.suite import examples

EAGER = get("eager")


@pytest.mark.slow
@settings(max_examples=1000)
@given(examples())
def test_eager_backend_never_mismatches(example):
    program, schedule = example
    result = run_example(program, EAGER, schedule)
    assert not result.mismatches, failure_message(result)
