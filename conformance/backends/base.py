"""The small interface every backend implements, and what it declares it can be asked."""

from __future__ import annotations

import enum
from typing import Callable, Protocol

from conformance.outcome import CacheStats, TraceFacts

# Capabilities: an oracle whose capability a backend lacks says "not applicable".
CACHE_COUNTERS = "cache_counters"
TRACES = "traces"


class Declaration(enum.Enum):
    """A way a backend says it may differ from eager by design, not by bug. The oracles honour
    what a backend declares (and its repro.py does too) instead of special cases per backend;
    a backend that declares nothing is held to eager in everything a user can observe."""

    # Its backward is built at the call (AOTAutograd traces it at the first call), so an error
    # eager raises in backward may be raised by the call instead (pytorch/torchdynamo#1962).
    BACKWARD_ERRORS_AT_CALL = "an error of backward may be raised by the call"
    # It may skip a statement whose value nothing observable reads, and with it that statement's
    # error: eager's reference is then the program without such statements (slicing.live).
    DEAD_CODE_REMOVED = "a statement whose value nothing reads may not run"


class BackendUnavailable(Exception):
    """The backend cannot be loaded here; the message says what to install or fix."""


class Backend(Protocol):
    name: str
    capabilities: frozenset[str]
    declarations: frozenset[Declaration]  # empty: held to eager in everything

    def compile(self, fn: Callable) -> Callable:
        """Compile a function or nn.Module; called once per example."""

    def cache_stats(self, compiled: Callable) -> CacheStats | None: ...

    def trace_facts(self, compiled: Callable) -> TraceFacts | None: ...

    # "per key" or "every call" (see oracles.recompiles); None without cache counters.
    recompile_policy: str | None

    def versions(self) -> dict[str, str]: ...
