"""thunder.jit, with its cache option as a parameter, and white-box access to its traces."""

from __future__ import annotations

import warnings
from typing import Any, Callable

from conformance.backends.base import CACHE_COUNTERS, TRACES, BackendUnavailable
from conformance.outcome import CacheStats, TraceFacts

CACHE_OPTIONS = ("constant values", "symbolic values", "no caching")
MARKER = "set_grad_enabled"  # the symbol id of ltorch._set_grad_enabled_with_warning


def _import_thunder():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import thunder
    except Exception as exc:  # ImportError, or thunder failing inside its own import
        raise BackendUnavailable(
            f"thunder could not be imported ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
            "install the reference stack with `make venv` (torch 2.9.1, lightning-thunder 0.2.6: "
            "thunder 0.2.6 does not import with torch 2.13 or later)"
        ) from None
    return thunder


class ThunderBackend:
    capabilities = frozenset({CACHE_COUNTERS, TRACES})
    declarations: frozenset = frozenset()  # held to eager in everything

    def __init__(self, cache: str = "constant values", executors: tuple[str, ...] | None = None):
        if cache not in CACHE_OPTIONS:
            raise BackendUnavailable(f"unknown thunder cache option {cache!r}; expected one of {CACHE_OPTIONS}")
        self.thunder = _import_thunder()
        self.cache = cache
        self.executors = executors
        suffix = "" if cache == "constant values" else f"[cache={cache}]"
        if executors:
            suffix += f"[executors={','.join(executors)}]"
        self.name = "thunder" + suffix
        self.recompile_policy = "every call" if cache == "no caching" else "per key"
        # thunder warns on every grad-mode marker and on missing optional executors.
        warnings.filterwarnings("ignore", module=r"thunder(\..*)?")
        warnings.filterwarnings("ignore", message=r".*torch\._C\._set_grad_enabled.*")

    def compile(self, fn: Callable) -> Callable:
        kwargs: dict[str, Any] = {"cache": self.cache}
        if self.executors is not None:
            kwargs["executors"] = list(self.executors)
        return self.thunder.jit(fn, **kwargs)

    def cache_stats(self, compiled: Callable) -> CacheStats:
        return CacheStats(self.thunder.cache_hits(compiled), self.thunder.cache_misses(compiled))

    def trace_facts(self, compiled: Callable) -> TraceFacts | None:
        cs = self.thunder.compile_stats(compiled)
        traces = cs.last_traces
        if not traces:
            return None
        return trace_facts(traces, _backward_traces_of(cs, traces))

    def versions(self) -> dict[str, str]:
        import torch

        return {"torch": torch.__version__, "thunder": getattr(self.thunder, "__version__", "unknown")}


def _backward_traces_of(cs, traces) -> list:
    # last_backward_traces is only updated on a cache miss; on a hit the entry used is
    # the one whose computation traces the call made current.
    for entry in cs.interpreter_cache:
        if entry.computation_traces is traces:
            return list(entry.backward_traces or [])
    return list(cs.last_backward_traces or [])


def trace_facts(traces, backward_traces) -> TraceFacts:
    from thunder.core.proxies import ProxyTag, TensorProxy

    first, execution = traces[0], traces[-1]
    markers: list[bool] = []
    # Whether grad is on while tracing: the marker args tell where it changes; before the
    # first marker it is the ambient mode, which the cache key makes the same as at compile.
    events = []
    for bsym in first.bound_symbols:
        if bsym.sym.id == MARKER:
            markers.append(bool(bsym.args[0]))
            events.append(("marker", bool(bsym.args[0])))
            continue
        arg_names = {a.name for a in bsym.flat_args if isinstance(a, TensorProxy)}
        outs = [o for o in bsym.flat_outs if isinstance(o, TensorProxy) and o.name not in arg_names]
        if outs and "UNPACK" not in str(bsym.sym.id) and "RETURN" not in str(bsym.sym.id):
            events.append(("op", tuple((o.name, ProxyTag.DETACHED_AUTOGRAD_GRAPH in o.tags) for o in outs)))
    markers_execution = sum(1 for b in execution.bound_symbols if b.sym.id == MARKER)
    backward_outputs = None
    backward_src = ""
    if backward_traces:
        bw = backward_traces[-1]
        backward_src = str(bw)
        ret = bw.bound_symbols[-1]
        backward_outputs = sum(1 for a in ret.flat_args if isinstance(a, TensorProxy))
    return TraceFacts(
        markers_first=tuple(markers),
        markers_execution=markers_execution,
        backward_outputs=backward_outputs,
        first=str(first),
        execution=str(execution),
        backward=backward_src,
        events=tuple(events),
    )
