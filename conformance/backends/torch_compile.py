"""torch.compile (TorchDynamo), `aot_eager` by default, `inductor` where a C++ compiler is.

Recompiles are not modelled: Dynamo compiles one graph per graph break, so its counters
count graphs, not compilations of the function, and a grad-mode change may itself break
the graph. The recompiles oracle therefore says "not applicable" for this backend.

What it declares (backends.base.Declaration), checked by hand on torch 2.9.1: with AOTAutograd
(`aot_eager`, `inductor`) the backward is traced at the first call, so a backward error shows
at the call, and the captured graph is cleared of dead code, so `t0 = torch.abs(a)` of a bool
`a` that nothing reads raises in eager only. Dynamo's `eager` backend runs the captured graph
as it is: it raises there as eager does, and its backward is eager's.
"""

from __future__ import annotations

import shutil
from typing import Callable

import torch

from conformance.backends.base import BackendUnavailable, Declaration

BACKENDS = ("aot_eager", "inductor", "eager")
_AOT = frozenset({Declaration.BACKWARD_ERRORS_AT_CALL, Declaration.DEAD_CODE_REMOVED})


class TorchCompileBackend:
    capabilities: frozenset[str] = frozenset()
    recompile_policy = None

    def __init__(self, backend: str = "aot_eager"):
        if backend not in BACKENDS:
            raise BackendUnavailable(f"unknown torch.compile backend {backend!r}; expected one of {BACKENDS}")
        if backend == "inductor" and not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
            raise BackendUnavailable("torch.compile[backend=inductor] needs a C++ compiler (g++ or clang++) on PATH")
        self.backend = backend
        self.declarations = frozenset() if backend == "eager" else _AOT
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
