"""The identity backend: runs the program as eager PyTorch. It must never mismatch."""

from __future__ import annotations

from typing import Callable

import torch


class EagerBackend:
    name = "eager"
    capabilities: frozenset[str] = frozenset()
    declarations: frozenset = frozenset()  # held to eager in everything

    def compile(self, fn: Callable) -> Callable:
        return fn

    def cache_stats(self, compiled):
        return None

    def trace_facts(self, compiled):
        return None

    recompile_policy = None

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}
