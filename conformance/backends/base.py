"""The small interface every backend implements, and what it declares it can be asked."""

from __future__ import annotations

from typing import Callable, Protocol

from conformance.outcome import CacheStats, TraceFacts

# Capabilities: an oracle whose capability a backend lacks says "not applicable".
CACHE_COUNTERS = "cache_counters"
TRACES = "traces"


class BackendUnavailable(Exception):
    """The backend cannot be loaded here; the message says what to install or fix."""


class Backend(Protocol):
    name: str
    capabilities: frozenset[str]

    def compile(self, fn: Callable) -> Callable:
        """Compile a function or nn.Module; called once per example."""

    def cache_stats(self, compiled: Callable) -> CacheStats | None: ...

    def trace_facts(self, compiled: Callable) -> TraceFacts | None: ...

    # "per key" or "every call" (see oracles.recompiles); None without cache counters.
    recompile_policy: str | None

    def versions(self) -> dict[str, str]: ...
