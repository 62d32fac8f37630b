"""The identity backend never mismatches: a false alarm costs a compiler engineer an hour.

2,000 generated programs (with call schedules), eager against eager, all oracles."""

from hypothesis import given, settings

from conformance.backends import get
from conformance.check import failure_message, run_example
from conformance.suite import examples

EAGER = get("eager")


@settings(max_examples=2000)
@given(examples())
def test_eager_backend_never_mismatches(example):
    program, schedule = example
    result = run_example(program, EAGER, schedule)
    assert not result.mismatches, failure_message(result)
