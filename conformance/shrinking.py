"""Shrinking: a time budget for Hypothesis's shrinker, and a memo of example results.

Shrinking is where a fuzzing run spends most of its time: every candidate runs eager and
a fresh compilation. Many candidates are the same Program (a changed draw that renders
identically), so results are memoised per (program, schedule) within a run; and the
shrinker gets an explicit budget instead of Hypothesis's 300 s per run.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Callable, Iterator

DEFAULT_SHRINK_SECONDS = 60.0


@contextlib.contextmanager
def shrink_budget(seconds: float) -> Iterator[None]:
    """Stop shrinking after `seconds` per Hypothesis run, keeping the smallest example so far.

    Hypothesis has no public setting for this; its engine reads MAX_SHRINKING_SECONDS
    (hypothesis 6.1xx, pinned in constraints.txt). If the name goes away, shrinking keeps
    Hypothesis's own limit rather than failing.
    """
    from hypothesis import reporting
    from hypothesis.internal.conjecture import engine

    if not hasattr(engine, "MAX_SHRINKING_SECONDS"):
        yield
        return
    old = engine.MAX_SHRINKING_SECONDS
    outer = reporting.current_reporter()

    def reporter(text: str) -> None:
        # Hypothesis's "more than five minutes ... PLEASE REPORT THIS" is about its own
        # limit; ours is shorter on purpose, and the smallest example so far is kept.
        if not text.startswith("WARNING: Hypothesis has spent more than five minutes"):
            outer(text)

    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        with reporting.with_reporter(reporter):
            yield
    finally:
        engine.MAX_SHRINKING_SECONDS = old


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
