"""Runs a Program on one side (eager or a backend) under a call schedule into a SideOutcome.

The rendered source is executed afresh per side, so a backend sees real bytecode, real
`with` blocks and real helper functions, as it would in a user's code. Grad mode is
restored after every call, whatever the program or the backend left behind.
"""

from __future__ import annotations

import contextlib
import linecache
import time
import traceback
from typing import Any, Callable

import torch

from conformance import grad_mode, text
from conformance.generators.schedules import CallSpec, Schedule
from conformance.outcome import CallOutcome, ErrorInfo, Leaf, SideOutcome
from conformance.program import GradRegion, Program, SetGradMode, TensorInput, device, render, statements_in

_counter = 0


class Timer:
    """Seconds spent per phase, for `python -m conformance bench`; None costs nothing."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


def _phase(timer: "Timer | None", name: str):
    return timer.phase(name) if timer is not None else contextlib.nullcontext()


def load(program: Program, source: str | None = None) -> Any:
    """Execute the program's source and return its entry point (`fn` or `Model`)."""
    global _counter
    source = source if source is not None else render(program)
    _counter += 1
    filename = f"<conformance-program-{_counter}>"
    # Registered so that tracebacks, and thunder's trace comments, show the program's lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own rendered programs
    return namespace[program.entry_point]


def _generator(*parts: int) -> torch.Generator:
    seed = 0
    for p in parts:
        seed = (seed * 1_000_003 + p) % (2**63)
    return torch.Generator().manual_seed(seed)


def make_tensor(spec: TensorInput, gen: torch.Generator, requires_grad: bool | None = None) -> torch.Tensor:
    """Deterministic values for an input: small integers, or normal floats."""
    if spec.dtype == "bool":
        t = torch.randint(0, 2, spec.shape, generator=gen).bool()
    elif spec.dtype == "int64":
        t = torch.randint(-3, 4, spec.shape, generator=gen)
    else:
        t = torch.randn(spec.shape, generator=gen).to(getattr(torch, spec.dtype))
        if spec.special and t.numel():
            t.view(-1)[torch.randint(t.numel(), (), generator=gen)] = float(spec.special)
    t = t.to(spec.device)
    flag = spec.requires_grad if requires_grad is None else requires_grad
    if flag and t.is_floating_point():
        t.requires_grad_()
    return t


def make_inputs(program: Program, spec: CallSpec) -> list[torch.Tensor]:
    flags = spec.requires_grad or (None,) * len(program.inputs)
    return [
        make_tensor(inp, _generator(program.seed, spec.values_seed, i), flag)
        for i, (inp, flag) in enumerate(zip(program.inputs, flags))
    ]


def make_parameters(program: Program) -> list[torch.Tensor]:
    return [make_tensor(p, _generator(program.seed, 7919, i), False) for i, p in enumerate(program.parameters)]


def cotangent(out: torch.Tensor, program: Program, call: int, index: int) -> torch.Tensor:
    g = torch.randn(out.shape, generator=_generator(program.seed, 104729, call, index))
    return g.to(dtype=out.dtype, device=out.device)


def _read(x: torch.Tensor, attr: str) -> Any:
    """An autograd attribute, or the text of what reading it raises.

    Reading grad_fn (or is_leaf, or grad) raises for a view made under no_grad whose base
    was later modified in place with grad on; what a user sees is then the observation.
    """
    try:
        value = getattr(x, attr)
    except RuntimeError as exc:
        return f"reading {attr} raises {type(exc).__name__}"
    return (value is not None) if attr == "grad_fn" else value


def observe(x: Any, is_input: str = "") -> Leaf:
    if isinstance(x, torch.Tensor):
        with grad_mode.clean():
            value = x.detach().to("cpu", copy=True)
        return Leaf(
            kind="tensor",
            value=value,
            shape=tuple(x.shape),
            dtype=str(x.dtype).removeprefix("torch."),
            device=x.device.type,
            requires_grad=x.requires_grad,
            has_grad_fn=_read(x, "grad_fn"),
            is_leaf=_read(x, "is_leaf"),
            is_inference=x.is_inference(),
            is_input=is_input,
        )
    return Leaf(kind="python", value=x)


def _observe_grad(t: torch.Tensor) -> Leaf | None:
    # .grad of a non-leaf is always None (and warns): only leaves accumulate gradients.
    if _read(t, "is_leaf") is not True:
        return None
    g = _read(t, "grad")
    if isinstance(g, str):
        return Leaf(kind="python", value=g)
    return None if g is None else observe(g)


def error_info(exc: BaseException, stage: str) -> ErrorInfo:
    # Cut here, once: a backend may raise a message of megabytes, and each report holds it.
    return ErrorInfo(type(exc).__name__, text.cut("".join(traceback.format_exception_only(exc)).strip()), stage)


def _flatten(result: Any, n: int) -> tuple[Any, ...]:
    return tuple(result) if n > 1 else (result,)


def _differentiable(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.requires_grad and (x.is_floating_point() or x.is_complex())


def run_call(
    program: Program,
    callee: Callable,
    spec: CallSpec,
    index: int,
    params: list[torch.Tensor],
    record_set_grad: bool = False,
    timer: Timer | None = None,
    side: str = "eager",
) -> tuple[CallOutcome, tuple[Any, ...]]:
    """One call under its ambient mode, then backward; returns the outcome and raw outputs."""
    outcome = CallOutcome(spec)
    inputs = make_inputs(program, spec)
    outcome.cache_key = (
        grad_mode.AMBIENT_GRAD_ENABLED[spec.ambient],
        tuple((tuple(t.shape), t.dtype, t.device.type, t.requires_grad) for t in inputs),
        spec.autocast,
        spec.training,
    )
    calls: list[bool] = []
    raw: tuple[Any, ...] = ()
    with grad_mode.ambient(spec.ambient, device(program) if spec.autocast else ""), _phase(timer, f"{side} call"):
        try:
            if record_set_grad:
                with grad_mode.recording_set_grad_enabled(calls):
                    result = callee(*inputs)
            else:
                result = callee(*inputs)
            raw = _flatten(result, len(program.returns))
        except Exception as exc:  # the program's or the backend's: both are observations
            outcome.error = error_info(exc, "call")
        outcome.state_after = grad_mode.current()
    if record_set_grad:
        outcome.set_grad_calls = tuple(calls)
    names = [i.name for i in program.inputs] + [f"self.{p.name}" for p in program.parameters]
    tensors = inputs + params
    if outcome.error is None:
        outcome.outputs = tuple(observe(x, next((n for n, t in zip(names, tensors) if x is t), "")) for x in raw)
        differentiable = [(i, x) for i, x in enumerate(raw) if _differentiable(x)]
        if differentiable:
            try:
                with grad_mode.clean(), _phase(timer, f"{side} backward"):
                    torch.autograd.backward(
                        [x for _, x in differentiable],
                        [cotangent(x, program, index, i) for i, x in differentiable],
                    )
            except Exception as exc:
                outcome.error = error_info(exc, "backward")
        for i, x in enumerate(raw):
            if isinstance(x, torch.Tensor) and _read(x, "is_leaf") is True and x.requires_grad \
                    and not any(x is t for t in tensors):
                names.append(f"return[{i}]")
                tensors.append(x)
    outcome.after = {n: observe(t) for n, t in zip(names, tensors)}
    outcome.grads = {n: _observe_grad(t) for n, t in zip(names, tensors)}
    # The caller's step comes after what the call left is observed: a gradient that differs
    # is the gradients oracle's, and the next call's outputs show the step.
    if spec.step and outcome.error is None:
        sgd_step(params)
    if spec.zero_grad:  # `optimizer.zero_grad()`; else they accumulate into the next call
        for p in params:
            p.grad = None
    return outcome, raw


LEARNING_RATE = 0.1


def sgd_step(params: list[torch.Tensor]) -> None:
    """`with torch.no_grad(): p -= lr * p.grad` for each parameter with a gradient, as a user's
    training loop (or torch.optim.SGD) steps between calls."""
    with torch.no_grad():
        for p in params:
            if p.requires_grad and p.grad is not None:
                p -= LEARNING_RATE * p.grad


def run(program: Program, backend, schedule: Schedule, source: str | None = None,
        timer: Timer | None = None) -> SideOutcome:
    """Run the program on one side: `backend` is None for eager, else a Backend object.
    Whatever the side leaves changed in torch's global state is set back (grad_mode.isolated)."""
    with grad_mode.isolated():
        return _run(program, backend, schedule, source, timer)


def _introspect(side: SideOutcome, what: str, ask: Callable):
    """A backend's answer to cache_stats or trace_facts; None, noted, where asking raises."""
    try:
        return ask()
    except Exception as exc:  # a plug-in's introspection failing must not lose the example
        side.introspection_error = side.introspection_error or error_info(exc, what)
        return None


def _run(program: Program, backend, schedule: Schedule, source: str | None, timer: Timer | None) -> SideOutcome:
    side = SideOutcome("eager" if backend is None else backend.name,
                       declarations=frozenset(getattr(backend, "declarations", ())))
    label = "eager" if backend is None else "backend"
    params: list[torch.Tensor] = []
    module = None
    try:
        with grad_mode.clean():
            entry = load(program, source)
            if program.is_module:
                params = make_parameters(program)
                entry = module = entry(*params)
                params = [getattr(entry, p.name) for p in program.parameters]  # buffers too
            callee = entry if backend is None else backend.compile(entry)
    except Exception as exc:
        side.setup_error = error_info(exc, "setup")
        return side
    # The traces oracle's markers: what eager's grad-mode calls are, where the backend's first
    # trace can show them. thunder traces a torch.autograd.Function's forward on its own (one
    # symbol in the function's trace), so the calls made in a forward are not compared.
    record = backend is None and not any(
        isinstance(s, (GradRegion, SetGradMode)) for h in program.helpers if h.is_function for s in statements_in(h.body))
    for index, spec in enumerate(schedule):
        if module is not None:  # `model.eval()` / `model.train()` on the module the backend compiled
            module.train(spec.training)
        outcome, _ = run_call(program, callee, spec, index, params, record_set_grad=record, timer=timer, side=label)
        if backend is not None:
            outcome.traces = _introspect(side, "trace_facts", lambda: backend.trace_facts(callee))
        side.calls.append(outcome)
    if backend is not None:
        side.cache = _introspect(side, "cache_stats", lambda: backend.cache_stats(callee))
        side.recompile_policy = getattr(backend, "recompile_policy", None)
    return side
