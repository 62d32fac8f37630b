"""Shrinking: a budget per class for Hypothesis's shrinker, and a memo of example results.

Shrinking is where a fuzzing run spends most of its time: every candidate runs eager and
a fresh compilation. Many candidates are the same Program (a changed draw that renders
identically), so results are memoised per (program, schedule) within a run; and the
shrinker gets an explicit budget per class of mismatch instead of Hypothesis's 300 s
per run shared by every class.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterator

DEFAULT_SHRINK_SECONDS = 60.0
# Hypothesis's candidate runs per class in a night, besides the seconds: the last pass
# (reduction.reduce) takes a half-shrunk program the rest of the way in seconds, and runs
# spent on one class are runs not spent drawing new programs. As many as the suite's ci profile.
DEFAULT_SHRINK_CALLS = 150
DEFAULT_RUN_SECONDS = 300.0  # Hypothesis's own bound on a run's shrinking


@dataclass(frozen=True)
class Budget:
    """How long Hypothesis may shrink: per class of mismatch, and per run (all classes).

    Per class in seconds or candidate runs (or both): running out ends the shrinking of that
    class, and Hypothesis goes on to the next. Per run likewise: running out ends the run,
    and the classes not shrunk yet are reported as found (the suite resumes those still too
    long). Budgets in runs make a seeded run deterministic: the same minimal programs, hence
    the same signatures, on a fast machine and a slow one; budgets in seconds bound a
    fuzzing night by the clock instead.

    `skip(class_key)` says a class is not worth shrinking (any more, or in this run): another
    worker of the night has its repro, or the fuzzer shrinks it in a later replay. It is asked when the class's shrink starts and before each of its
    candidates; the class is then reported as far as it got. A class is known by the
    `class_key` of the exception type Hypothesis tells failures apart by."""

    seconds: float | None = DEFAULT_SHRINK_SECONDS
    calls: int | None = None
    run_seconds: float | None = DEFAULT_RUN_SECONDS
    run_calls: int | None = None
    skip: Callable[[str], bool] | None = None

    def __post_init__(self):
        if self.seconds is None and self.calls is None:
            raise ValueError("a shrink budget needs seconds, calls or both per class")

    @property
    def in_runs_only(self) -> bool:
        """Counted in candidate runs only: the run does not depend on the clock."""
        return self.seconds is None and self.run_seconds is None

    @staticmethod
    def _spent(limit_s, limit_calls, start, calls: int) -> bool:
        return (limit_calls is not None and calls - start[1] >= limit_calls) or (
            limit_s is not None and time.perf_counter() - start[0] >= limit_s)


_shrinking: list = []  # the class Hypothesis is shrinking now, if any (see shrinking_class)


def shrinking_class():
    """The class key of the failure Hypothesis is shrinking at this moment (within
    shrink_budget), or None while it generates. A driver uses it to keep a shrink candidate's
    other classes from starting shrinks of their own: each would cost as much again."""
    return _shrinking[-1] if _shrinking else None


@contextlib.contextmanager
def shrink_budget(budget: Budget | float) -> Iterator[None]:
    """Shrink within `budget` (seconds per class, or a Budget), keeping the smallest example.

    Hypothesis has one deadline for all the bugs of a run (MAX_SHRINKING_SECONDS, 300 s),
    and it stops after 500 successful shrinks in all (MAX_SHRINKS): with
    report_multiple_bugs, the classes after a slow one are reported unshrunk. Here both are
    lifted. While the engine shrinks one class, a candidate run past that class's budget
    raises the shrinker's own StopShrinking, which ends the shrinking of that class only;
    past the run's budget, the engine's own exit ends the run, as its deadline would. The
    check sits on the engine's test_function, which every candidate goes through (some
    shrink passes call the engine directly, past the shrinker's own stall check).
    Hypothesis has no public setting for any of this; its engine and shrinker (hypothesis
    6.1xx, pinned in constraints.txt) have these names. If they go away, shrinking keeps
    Hypothesis's own limits.
    """
    from hypothesis.internal.conjecture import engine, shrinker

    budget = budget if isinstance(budget, Budget) else Budget(seconds=budget)
    runner = getattr(engine, "ConjectureRunner", None)
    stop = getattr(shrinker, "StopShrinking", None)
    slow = getattr(getattr(engine, "ExitReason", None), "very_slow_shrinking", None)
    if not (hasattr(engine, "MAX_SHRINKING_SECONDS") and hasattr(engine, "MAX_SHRINKS") and stop is not None
            and slow is not None and callable(getattr(runner, "exit_with", None))
            and callable(getattr(runner, "shrink", None)) and callable(getattr(runner, "test_function", None))):
        yield
        return
    old = engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS, runner.shrink, runner.test_function
    original_shrink, original_test_function = runner.shrink, runner.test_function

    def skipped(key) -> bool:
        return key is not None and budget.skip is not None and budget.skip(key)

    def shrink_one_class(self, initial, *args, **kwargs):
        now = (time.perf_counter(), self.call_count)
        self.__dict__.setdefault("_conformance_run_start", now)
        origin = getattr(initial, "interesting_origin", None)
        self._conformance_class_key = getattr(getattr(origin, "exc_type", None), "class_key", None)
        if skipped(self._conformance_class_key):
            return initial
        self._conformance_class_start = now
        _shrinking.append(self._conformance_class_key)
        try:
            return original_shrink(self, initial, *args, **kwargs)
        finally:
            self._conformance_class_start = None
            _shrinking.pop()

    def test_function(self, data):
        start = getattr(self, "_conformance_class_start", None)
        if start is not None:
            if Budget._spent(budget.run_seconds, budget.run_calls, self._conformance_run_start, self.call_count):
                self.exit_with(slow)
            if Budget._spent(budget.seconds, budget.calls, start, self.call_count) or skipped(
                    self._conformance_class_key):
                raise stop
        try:
            return original_test_function(self, data)
        finally:
            if budget.in_runs_only and getattr(self, "first_bug_found_time", None) is not None:
                # Hypothesis's other clock: with report_multiple_bugs it stops generating 10 s
                # after the first bug, so a slow machine would run fewer examples. Counted
                # in runs, the run stops at max_examples or its own count-based limits.
                self.first_bug_found_time = math.inf

    engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS = float("inf"), 10**9
    runner.shrink, runner.test_function = shrink_one_class, test_function
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS, runner.shrink, runner.test_function = old


class Memo:
    """A bounded LRU of results keyed by (program, schedule): both are frozen data."""

    def __init__(self, run: Callable, size: int = 4096):
        self.run = run
        self.size = size
        self.cache: OrderedDict = OrderedDict()
        self.hits = 0
        self.misses = 0  # distinct examples actually run

    def __call__(self, program, backend, schedule):
        key = (program, schedule)
        if key in self.cache:
            self.hits += 1
            self.cache.move_to_end(key)
            return self.cache[key]
        self.misses += 1
        result = self.run(program, backend, schedule)
        self.cache[key] = result
        if len(self.cache) > self.size:
            self.cache.popitem(last=False)
        return result
