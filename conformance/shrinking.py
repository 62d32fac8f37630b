"""Shrinking: a time budget for Hypothesis's shrinker, and a memo of example results.

Shrinking is where a fuzzing run spends most of its time: every candidate runs eager and
a fresh compilation. Many candidates are the same Program (a changed draw that renders
identically), so results are memoised per (program, schedule) within a run; and the
shrinker gets an explicit budget per class of mismatch instead of Hypothesis's 300 s
per run shared by every class.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from typing import Callable, Iterator

DEFAULT_SHRINK_SECONDS = 60.0


@contextlib.contextmanager
def shrink_budget(seconds: float) -> Iterator[None]:
    """Give each class of mismatch `seconds` of shrinking, keeping the smallest example so far.

    Hypothesis has one deadline for all the bugs of a run (MAX_SHRINKING_SECONDS, 300 s) and
    stops after 500 successful shrinks in all (MAX_SHRINKS). With report_multiple_bugs an
    area that finds eight classes would leave the last ones unshrunk; so the deadline is
    restarted for each class Hypothesis shrinks, and time is the only bound. Hypothesis has
    no public setting for either; its engine (hypothesis 6.1xx, pinned in constraints.txt)
    reads these names. If they go away, shrinking keeps Hypothesis's own limits rather than
    failing.
    """
    from hypothesis import reporting
    from hypothesis.internal.conjecture import engine

    runner = getattr(engine, "ConjectureRunner", None)
    if not (hasattr(engine, "MAX_SHRINKING_SECONDS") and hasattr(engine, "MAX_SHRINKS")
            and callable(getattr(runner, "shrink", None))):
        yield
        return
    old = engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS, runner.shrink
    outer = reporting.current_reporter()
    original_shrink = runner.shrink

    def shrink_one_class(self, *args, **kwargs):
        self.finish_shrinking_deadline = time.perf_counter() + seconds
        return original_shrink(self, *args, **kwargs)

    def reporter(text: str) -> None:
        # Hypothesis's "more than five minutes ... PLEASE REPORT THIS" is about its own
        # limit; ours is shorter on purpose, and the smallest example so far is kept.
        if not text.startswith("WARNING: Hypothesis has spent more than five minutes"):
            outer(text)

    engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS, runner.shrink = seconds, 10**9, shrink_one_class
    try:
        with reporting.with_reporter(reporter):
            yield
    finally:
        engine.MAX_SHRINKING_SECONDS, engine.MAX_SHRINKS, runner.shrink = old


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
