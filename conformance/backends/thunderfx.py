"""thunder through torch.compile: `thunder.dynamo.thunderfx(fn)`. Dynamo splits the function
into graphs, sets grad mode for real between them, and gives thunder the regions it supports.

Recompiles are not modelled: Dynamo guards on grad mode itself and counts graphs, not
compilations of the function (as for torch.compile), so the recompiles oracle says "not
applicable". No trace facts: a function's traces are split over Dynamo's subgraphs, and the
markers the traces oracle reads are those of thunder.jit's one trace.

What it declares, checked by hand on thunder 0.2.6 and torch 2.9.1: each graph is compiled with
its backward at the first call, so an error eager raises in backward may come at the call, with
eager's own message (`b.unbind(0)[0].mul_(0.5)` on a view made under the caller's no_grad:
eager's backward raises "A view was created in no_grad mode and its base ... modified inplace",
thunderfx's call raises BackendCompilerFailed caused by that same RuntimeError).
"""

from __future__ import annotations

import warnings
from typing import Callable

import torch

from conformance.backends.base import Declaration
from conformance.backends.thunder import _import_thunder


class ThunderFXBackend:
    name = "thunderfx"
    capabilities: frozenset[str] = frozenset()
    declarations = frozenset({Declaration.BACKWARD_ERRORS_AT_CALL})
    recompile_policy = None

    def __init__(self):
        self.thunder = _import_thunder()
        from thunder.dynamo import thunderfx

        self._thunderfx = thunderfx
        warnings.filterwarnings("ignore", module=r"thunder(\..*)?")

    def compile(self, fn: Callable) -> Callable:
        # A fresh Dynamo cache per example: guards and recompile limits must not leak across.
        torch._dynamo.reset()
        return self._thunderfx(fn)

    def cache_stats(self, compiled):
        return None

    def trace_facts(self, compiled):
        return None

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__, "thunder": getattr(self.thunder, "__version__", "unknown")}
