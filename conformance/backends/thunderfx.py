"""thunder through torch.compile: `thunder.dynamo.thunderfx(fn)`. Dynamo splits the function
into graphs, sets grad mode for real between them, and gives thunder the regions it supports.

Recompiles are not modelled: Dynamo guards on grad mode itself and counts graphs, not
compilations of the function (as for torch.compile), so the recompiles oracle says "not
applicable". No trace facts: a function's traces are split over Dynamo's subgraphs, and the
markers the traces oracle reads are those of thunder.jit's one trace.
"""

from __future__ import annotations

import warnings
from typing import Callable

import torch

from conformance.backends.thunder import _import_thunder


class ThunderFXBackend:
    name = "thunderfx"
    capabilities: frozenset[str] = frozenset()
    declarations: frozenset = frozenset()  # held to eager in everything
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
