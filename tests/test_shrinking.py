"""The shrink budget: per class of mismatch, in candidate runs or seconds, on a plain
Hypothesis property with two bugs (no backend needed)."""

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from conformance.shrinking import Budget, shrink_budget


class TooLarge(Exception):
    pass


class TooLong(Exception):
    pass


def run_two_bugs(budget: Budget):
    """Runs a property with two bugs under `budget`; returns (runs after the first failure,
    the first and the final failing example of each bug)."""
    runs: list[list[int]] = []

    @settings(database=None, derandomize=True, max_examples=300, report_multiple_bugs=True,
              phases=[Phase.generate, Phase.shrink])
    @given(st.lists(st.integers(0, 1000), min_size=1))
    def prop(xs):
        runs.append(xs)
        if len(xs) > 3:
            raise TooLong(xs)
        if xs[0] > 500:
            raise TooLarge(xs)

    with shrink_budget(budget), pytest.raises(BaseExceptionGroup) as info:
        prop()
    final = {type(e).__name__: e.args[0] for e in info.value.exceptions}
    found = {"TooLong": next(xs for xs in runs if len(xs) > 3),
             "TooLarge": next(xs for xs in runs if len(xs) <= 3 and xs[0] > 500)}
    first = min(runs.index(xs) for xs in found.values())
    return len(runs) - first, found, final


def test_a_large_budget_shrinks_both_bugs_to_the_minimum():
    runs, _, final = run_two_bugs(Budget(seconds=None, calls=10**6, run_seconds=None))
    assert final == {"TooLarge": [501], "TooLong": [0] * 4}
    assert runs > 20  # shrinking ran: a budget of 3 calls per class runs at most 6


@pytest.fixture
def shrinks(monkeypatch):
    """The candidate runs of each class shrunk, observed where the engine starts one per class."""
    from hypothesis.internal.conjecture import engine

    seen: list[int] = []
    original = engine.ConjectureRunner.shrink

    def observed(self, *args, **kwargs):
        before = self.call_count
        try:
            return original(self, *args, **kwargs)
        finally:
            seen.append(self.call_count - before)

    monkeypatch.setattr(engine.ConjectureRunner, "shrink", observed)
    return seen


def test_running_out_ends_one_class_not_the_run(shrinks):
    # A budget per class: the first bug shrunk runs out, and the second still gets a shrinker
    # of its own. (Hypothesis's deadline ends the whole run instead, leaving it as found.)
    runs, found, final = run_two_bugs(Budget(seconds=None, calls=3, run_seconds=None))
    assert set(final) == {"TooLarge", "TooLong"}
    assert len(shrinks) == 2 and all(1 <= n <= 3 for n in shrinks), shrinks
    assert final != {"TooLarge": [501], "TooLong": [0] * 4}
    # The same on every run: what makes the ci profile deterministic.
    assert run_two_bugs(Budget(seconds=None, calls=3, run_seconds=None)) == (runs, found, final)


def test_the_run_budget_ends_the_run(shrinks):
    # Past the budget of the run, the classes not shrunk yet are reported as found.
    _, _, final = run_two_bugs(Budget(seconds=None, calls=10**6, run_seconds=None, run_calls=4))
    assert set(final) == {"TooLarge", "TooLong"}
    assert len(shrinks) == 1 and shrinks[0] <= 4, shrinks


def test_a_budget_needs_a_bound():
    with pytest.raises(ValueError, match="needs seconds, calls or both per class"):
        Budget(seconds=None, calls=None)


class _FastClock:
    """The time module, with a monotonic clock that moves 100 s per reading."""

    def __init__(self, real):
        self.real, self.readings = real, 0

    def monotonic(self):
        self.readings += 1
        return self.real.monotonic() + 100.0 * self.readings

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("budget, both_found", [
    (Budget(seconds=None, calls=50, run_seconds=None), True),
    (Budget(seconds=5.0, calls=50), False),
])
def test_runs_only_budgets_do_not_read_the_clock(monkeypatch, budget, both_found):
    # With report_multiple_bugs Hypothesis stops generating 10 s after its first bug; on a
    # slow machine (here a clock that races) a later bug would not be found. A budget in
    # runs only keeps generating to max_examples, as on a fast machine.
    import time as real_time

    from hypothesis.internal.conjecture import engine

    monkeypatch.setattr(engine, "time", _FastClock(real_time))
    seen = []

    @settings(database=None, derandomize=True, max_examples=100, report_multiple_bugs=True,
              phases=[Phase.generate, Phase.shrink])
    @given(st.integers(0, 10**6))
    def prop(n):
        seen.append(n)
        if n > 10**5 and len(seen) >= 6:
            raise TooLong(n)  # generated from the 6th example on; shrinking only goes down
        if 10 < n <= 10**5:
            raise TooLarge(n)

    with shrink_budget(budget), pytest.raises((BaseExceptionGroup, TooLarge, TooLong)) as info:
        prop()
    errors = info.value.exceptions if isinstance(info.value, BaseExceptionGroup) else [info.value]
    assert ({type(e).__name__ for e in errors} == {"TooLarge", "TooLong"}) is both_found


def test_a_class_another_worker_has_shrunk_is_left_as_found():
    # The fuzz workers skip a class the night already has a repro of: Budget.skip, asked
    # by the class_key the exception type carries (as oracles.mismatch's classes do).
    TooLong.class_key = "too long"
    try:
        _, found, final = run_two_bugs(Budget(seconds=None, calls=10**6, run_seconds=None,
                                              skip=lambda key: key == "too long"))
    finally:
        del TooLong.class_key
    # Not shrunk: a generated example (Hypothesis reports the smallest one it drew, not always
    # the first), not the [0, 0, 0, 0] that shrinking reaches.
    assert len(final["TooLong"]) > 3 and final["TooLong"] != [0] * 4, (found, final)
    assert final["TooLarge"] == [501]  # the other class is shrunk as before
