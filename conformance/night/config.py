"""A night's settings: what `python -m conformance fuzz` was asked for."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from conformance.night.database import RedisUrl


@dataclass(frozen=True)
class Shard:
    """Machine `index` of `count` (`fuzz --shard K/N`, 1-based): its own seeds, and every
    N-th program of the sweep and entry of the baseline, so that N shards cover what one long
    night would, without overlap."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def pick(self, items: list) -> list:
        return items[self.index - 1::self.count]


def parse_shard(text: str) -> Shard:
    """`K/N` with 1 <= K <= N; ValueError with the reason otherwise."""
    k, sep, n = text.partition("/")
    if not (sep and k.strip().isdigit() and n.strip().isdigit()):
        raise ValueError(f"{text!r} is not K/N (this machine's number and the number of machines, as 2/4)")
    shard = Shard(int(k), int(n))
    if not 1 <= shard.index <= shard.count:
        raise ValueError(f"{text}: K must be from 1 to N")
    return shard


@dataclass(frozen=True)
class NightConfig:
    backend: str
    seconds: float
    max_examples: int | None = None  # in all workers; with a seed, bounds a night without the clock
    seed: int | None = None
    workers: int = 1
    report_dir: Path = Path("reports/fuzz")
    db: Path | RedisUrl | None = None  # a folder, or a Redis server that all shards share
    shard: Shard | None = None
    baseline: Path | None = None
    known_issues: Path | None = None  # None: conformance/known_issues.toml
    chunk: int = 10  # examples per Hypothesis run (each with a seed of its own)
    example_timeout: float = 60.0
    shrinks_per_class: int = 3  # a class whose repro stays long is shrunk again, this often in all
    shrink_seconds: float | None = 60.0  # per class and shrink
    shrink_calls: int | None = None  # per class and shrink, in candidate runs: a night without the clock
    sweep: bool = True  # interleave the sweep's small programs (generators.sweep) with random ones
    small_examples: bool = True  # half the examples small (engine.examples)
    recycle_after: int = 2000
    max_rss_mb: int = 3000
    command: str = ""
    progress: bool | None = None  # None: only on a terminal

    @property
    def grace(self) -> float:
        """How long past the deadline the supervisor waits for workers to write what they have."""
        return min(30.0, max(5.0, self.seconds * 0.1))

    def share(self, worker: int) -> int | None:
        """A worker's part of --max-examples."""
        if self.max_examples is None:
            return None
        return self.max_examples // self.workers + (1 if worker < self.max_examples % self.workers else 0)

    def reduction_seconds(self, deadline: float) -> float | None:
        """The last pass's time: up to the shrink budget, and half the grace period past the
        deadline, so that a bug found in the last minute is still reported small."""
        if self.shrink_seconds is None:
            return None
        return max(1.0, min(self.shrink_seconds, deadline + self.grace / 2 - time.time()))
