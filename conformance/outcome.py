"""What one side (eager or a backend) showed a user when running one example.

Outcomes are plain data, built by the runner and read by the oracles; they hold CPU
copies of tensors, never the live tensors, so comparing them cannot change them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.generators.schedules import CallSpec
from conformance.grad_mode import GradState


@dataclass(frozen=True)
class Leaf:
    """One observed value: a tensor (with the autograd flags a user can read) or a Python value."""

    kind: str  # "tensor" or "python"
    value: Any  # a detached CPU copy for tensors
    shape: tuple[int, ...] = ()
    dtype: str = ""
    device: str = ""
    requires_grad: bool = False
    has_grad_fn: bool | str = False  # a str when reading grad_fn raises
    is_leaf: bool = True
    is_inference: bool = False
    is_input: str = ""  # for an output: the input or parameter it is (the same object), if any


@dataclass(frozen=True)
class ErrorInfo:
    type: str
    message: str
    stage: str  # "setup", "call" or "backward"

    def line(self) -> str:
        return f"{self.type} during {self.stage}: {self.headline()[:300]}"

    def headline(self) -> str:
        """The message's first line; where that line only introduces a cause (Dynamo's
        "BackendCompilerFailed: backend='aot_eager' raised:"), the cause's line with it: the
        first line alone would give every compiler failure one signature."""
        lines = [line for line in self.message.strip().splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].rstrip().endswith(":"):
            return f"{lines[0].rstrip()} {lines[1].strip()}"
        return lines[0] if lines else ""


@dataclass(frozen=True)
class TraceFacts:
    """White-box facts about the traces a call used (thunder only), as plain data."""

    markers_first: tuple[bool, ...]  # args of the marker symbols in the first trace
    markers_execution: int  # marker symbols left in the final execution trace
    backward_outputs: int | None  # non-None gradients the backward trace returns; None: no backward
    first: str = ""
    execution: str = ""
    backward: str = ""
    # In trace order: ("marker", enabled) or ("op", ((output name, tagged detached), ...)).
    events: tuple = ()


@dataclass
class CallOutcome:
    spec: CallSpec
    outputs: tuple[Leaf, ...] = ()
    # Inputs and parameters after the call: in-place updates are observable.
    after: dict[str, Leaf] = field(default_factory=dict)
    # Gradients after backward, of inputs, parameters and returned leaves; None: no .grad.
    grads: dict[str, Leaf | None] = field(default_factory=dict)
    error: ErrorInfo | None = None
    state_after: GradState | None = None
    # Eager only: the torch._C._set_grad_enabled calls the program made, in order.
    set_grad_calls: tuple[bool, ...] | None = None
    traces: TraceFacts | None = None
    # What a correct cache must tell apart: ambient grad mode and input signature.
    cache_key: tuple | None = None


@dataclass
class CacheStats:
    hits: int
    misses: int


@dataclass
class SideOutcome:
    side: str  # "eager" or the backend's name
    calls: list[CallOutcome] = field(default_factory=list)
    cache: CacheStats | None = None  # None: the backend has no cache counters
    recompile_policy: str | None = None  # see oracles.recompiles.expected_compilations
    setup_error: ErrorInfo | None = None
    # The backend raised when asked for its cache counters or traces (stage "cache_stats" or "trace_facts").
    introspection_error: ErrorInfo | None = None
    # What the backend declares may differ from eager (backends.base.Declaration); eager: none.
    declarations: frozenset = frozenset()
