"""torch.compile (TorchDynamo), `aot_eager` by default, `inductor` where a C++ compiler is.

Recompiles are not modelled: Dynamo compiles one graph per graph break, so its counters
count graphs, not compilations of the function, and a grad-mode change may itself break
the graph. The recompiles oracle therefore says "not applicable" for this backend.
"""

from __future__ import annotations

import shutil
from typing import Callable

import torch

from conformance.backends.base import BackendUnavailable

BACKENDS = ("aot_eager", "inductor", "eager")


class TorchCompileBackend:
    capabilities: frozenset[str] = frozenset()
    recompile_policy = None

    def __init__(self, backend: str = "aot_eager"):
        if backend not in BACKENDS:
            raise BackendUnavailable(f"unknown torch.compile backend {backend!r}; expected one of {BACKENDS}")
        if backend == "inductor" and not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
            raise BackendUnavailable("torch.compile[backend=inductor] needs a C++ compiler (g++ or clang++) on PATH")
        self.backend = backend
        self.name = "torch.compile" + ("" if backend == "aot_eager" else f"[backend={backend}]")

    def compile(self, fn: Callable) -> Callable:
        # A fresh cache per example: recompilation limits and guards must not leak across.
        torch._dynamo.reset()
        return torch.compile(fn, backend=self.backend)

    def cache_stats(self, compiled):
        return None

    def trace_facts(self, compiled):
        return None

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}
