"""The one place that touches torch's global state.

Everything else in the harness enters an ambient mode with `ambient(...)`, and gets
grad mode and inference mode back as they were, whatever the program did (left grad
disabled on return, raised inside a region) or the backend did (thunder writes its
final grad mode back into PyTorch after each call). Each side of an example runs
`isolated()`: whatever a backend leaves changed (grad mode, inference mode, autocast,
the default dtype), the next example starts from the state this one started from.
"""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass
from typing import Iterator

import torch

# The ambient modes a compiled function is called under, simplest first.
AMBIENT_MODES = (
    "grad",  # the default: grad enabled
    "no_grad",  # with torch.no_grad(): f(x)
    "enable_grad_in_no_grad",  # with torch.no_grad(): with torch.enable_grad(): f(x)
    "set_grad_enabled_false",  # torch.set_grad_enabled(False); f(x)
    "inference_mode",  # with torch.inference_mode(): f(x)
)

# How a person would write each ambient mode, for repros.
AMBIENT_SOURCE = {
    "grad": None,
    "no_grad": "with torch.no_grad():",
    "enable_grad_in_no_grad": "with torch.no_grad(), torch.enable_grad():",
    "set_grad_enabled_false": "torch.set_grad_enabled(False)",
    "inference_mode": "with torch.inference_mode():",
}


@dataclass(frozen=True)
class GradState:
    grad_enabled: bool
    inference_mode: bool


def current() -> GradState:
    return GradState(torch.is_grad_enabled(), torch.is_inference_mode_enabled())


@dataclass(frozen=True)
class GlobalState:
    """Torch's process-wide state that a program or a backend can leave changed."""

    grad_enabled: bool
    inference_mode: bool
    default_dtype: torch.dtype
    autocast: tuple[tuple[str, bool, torch.dtype], ...]  # per device type: enabled, dtype


AUTOCAST_DEVICES = ("cpu", "cuda")
# Guards that turned a leaked inference mode off: kept for good, since a guard restores the
# mode it found (inference mode on) when it is destroyed.
_INFERENCE_OFF_GUARDS: list = []


def snapshot() -> GlobalState:
    return GlobalState(torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(),
                       tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AUTOCAST_DEVICES))


def restore(state: GlobalState) -> list[str]:
    """Set back whatever differs from `state`; the names of what differed."""
    now = snapshot()
    changed = [f for f in ("inference_mode", "grad_enabled", "default_dtype", "autocast")
               if getattr(now, f) != getattr(state, f)]
    if now.inference_mode != state.inference_mode:
        # An inference-mode guard left entered (a `with` a backend began and never ended) sets
        # the mode it found when it is destroyed: in a reference cycle, whenever the garbage
        # collector next runs, in some later example or test. Collected now, it sets it now.
        gc.collect()
        now = snapshot()
    if now.inference_mode != state.inference_mode:
        guard = torch._C._InferenceMode(state.inference_mode)  # noqa: SLF001 - no public setter exists
        _INFERENCE_OFF_GUARDS.append(guard)
    if torch.is_grad_enabled() != state.grad_enabled:
        torch._C._set_grad_enabled(state.grad_enabled)
    if now.default_dtype != state.default_dtype:
        torch.set_default_dtype(state.default_dtype)
    for device, enabled, dtype in state.autocast:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    return changed


def broken() -> str | None:
    """Why torch no longer runs an op in this thread, or None while it does. A backend can leave
    the thread's dispatch state broken, after which every op raises, eager's too (torch.compile
    failing on a view made in inference mode: pytorch/pytorch#169477): no later example of the
    process means anything. Not set back: a state that cannot be read cannot be restored."""
    try:
        torch.zeros(1).add_(1)
    except Exception as exc:  # noqa: BLE001 - whatever it is, the process is of no more use
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


@contextlib.contextmanager
def isolated(changed: list[str] | None = None) -> Iterator[None]:
    """Run the block, then restore torch's global state as it was; `changed` gets what the
    block had left changed."""
    before = snapshot()
    try:
        yield
    finally:
        left = restore(before)
        if changed is not None:
            changed.extend(left)


@contextlib.contextmanager
def preserved() -> Iterator[None]:
    """Restore grad mode on exit. Inference mode needs no restoring: it is only ever
    entered by `with`, whose exit runs even when the body raises."""
    before = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch._C._set_grad_enabled(before)


@contextlib.contextmanager
def ambient(mode: str, autocast: str = "") -> Iterator[None]:
    """Run the block under one of AMBIENT_MODES (inside torch.autocast on the device type
    `autocast`, where one is given, in its default dtype), and restore the state afterwards."""
    if mode not in AMBIENT_MODES:
        raise ValueError(f"unknown ambient grad mode {mode!r}; expected one of {AMBIENT_MODES}")
    if autocast:
        with torch.autocast(autocast), ambient(mode):
            yield
        return
    with preserved():
        if mode == "grad":
            with torch.enable_grad():
                yield
        elif mode == "no_grad":
            with torch.no_grad():
                yield
        elif mode == "enable_grad_in_no_grad":
            with torch.no_grad(), torch.enable_grad():
                yield
        elif mode == "set_grad_enabled_false":
            torch.set_grad_enabled(False)
            yield
        else:
            with torch.inference_mode():
                yield


@contextlib.contextmanager
def clean() -> Iterator[None]:
    """Grad enabled, inference mode off: the state for backward and for set-up."""
    with preserved(), torch.enable_grad():
        yield


@contextlib.contextmanager
def replaced_set_grad_enabled(replacement) -> Iterator[None]:
    """Within the block, torch._C._set_grad_enabled(mode) calls replacement(original, mode).

    Every grad-mode context manager and torch.set_grad_enabled go through it, so this is
    how eager code's grad-mode changes are observed (or, for planted faults, broken).
    """
    original = torch._C._set_grad_enabled
    torch._C._set_grad_enabled = lambda mode: replacement(original, mode)
    try:
        yield
    finally:
        torch._C._set_grad_enabled = original


@contextlib.contextmanager
def replaced_function_apply(replacement) -> Iterator[None]:
    """Within the block, `F.apply(*args)` of every torch.autograd.Function F calls
    replacement(F, *args) (for planted faults)."""
    original = torch.autograd.Function.__dict__["apply"]
    torch.autograd.Function.apply = classmethod(replacement)
    try:
        yield
    finally:
        torch.autograd.Function.apply = original


@contextlib.contextmanager
def autocast_ignored() -> Iterator[None]:
    """Within the block, entering a `torch.autocast` does nothing, whether it is a region or a
    decorator made before the block (for planted faults: a compiler that drops autocast)."""
    cls = torch.autocast
    enter, leave = cls.__enter__, cls.__exit__
    cls.__enter__, cls.__exit__ = (lambda self: None), (lambda self, *exc: False)
    try:
        yield
    finally:
        cls.__enter__, cls.__exit__ = enter, leave


@contextlib.contextmanager
def replaced_autograd_grad(replacement) -> Iterator[None]:
    """Within the block, `torch.autograd.grad(...)` calls replacement(original, ...) (for planted
    faults: a compiler that differentiates inside the function its own way)."""
    original = torch.autograd.grad
    torch.autograd.grad = lambda *args, **kwargs: replacement(original, *args, **kwargs)
    try:
        yield
    finally:
        torch.autograd.grad = original


def recording_set_grad_enabled(log: list[bool]):
    """Record every torch._C._set_grad_enabled call made by eager code in the block.

    The sequence is what thunder's first trace must show as marker symbols. Only used
    around the eager side: thunder looks the function up itself while tracing.
    """

    def record(original, enabled) -> None:
        log.append(bool(enabled))
        original(enabled)

    return replaced_set_grad_enabled(record)


# Whether torch.is_grad_enabled() is true under each ambient mode (inference mode disables grad).
AMBIENT_GRAD_ENABLED = {
    "grad": True,
    "no_grad": False,
    "enable_grad_in_no_grad": True,
    "set_grad_enabled_false": False,
    "inference_mode": False,
}
