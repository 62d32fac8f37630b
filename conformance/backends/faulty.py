"""Backends with one planted fault each, built on eager: the proof that each oracle catches
what it claims to. Fast (no compiler), so tests/ can fuzz them for hundreds of examples.

Each is a factory usable as a SPEC, e.g. `conformance.backends.faulty:stale_grad_mode_cache`.
"""

from __future__ import annotations

from typing import Callable

import torch

from conformance import grad_mode
from conformance.backends.base import CACHE_COUNTERS
from conformance.outcome import CacheStats


class _Wrapping:
    """Eager, with a hook around each call; counts a compilation per distinct cache key."""

    capabilities: frozenset[str] = frozenset({CACHE_COUNTERS})
    declarations: frozenset = frozenset()  # held to eager in everything
    recompile_policy = "per key"
    fault = ""

    def __init__(self):
        self.name = f"faulty[{self.fault}]"

    def cache_key(self, args) -> tuple:
        return (torch.is_grad_enabled(),) + tuple(
            (tuple(a.shape), a.dtype, a.device.type, a.requires_grad) for a in args if isinstance(a, torch.Tensor)
        ) + (any(torch.is_autocast_enabled(d) for d in grad_mode.AUTOCAST_DEVICES),)

    def module_key(self, fn) -> tuple:
        """What of a module a correct cache checks: its training flag (`model.eval()`)."""
        return (fn.training,) if isinstance(fn, torch.nn.Module) else ()

    def call(self, fn, args, compiled):
        return fn(*args)

    def compile(self, fn: Callable) -> Callable:
        backend = self

        def compiled(*args):
            key = backend.cache_key(args) + backend.module_key(fn)
            if key in compiled.keys:
                compiled.stats.hits += 1
            else:
                compiled.stats.misses += 1
                compiled.keys[key] = torch.is_grad_enabled()
            compiled.current_key = key
            return backend.call(fn, args, compiled)

        compiled.keys = {}
        compiled.stats = CacheStats(0, 0)
        return compiled

    def cache_stats(self, compiled) -> CacheStats:
        return CacheStats(compiled.stats.hits, compiled.stats.misses)

    def trace_facts(self, compiled):
        return None

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}


class AlwaysGrad(_Wrapping):
    """Runs the body with grad enabled, whatever the ambient mode (flags, gradients)."""

    fault = "body always runs with grad enabled"

    def call(self, fn, args, compiled):
        before = torch.is_grad_enabled()
        with torch.enable_grad():
            out = fn(*args)
            flipped_off = not torch.is_grad_enabled()
        # Keep a plain set_grad_enabled(False) of the program visible after the call, so that
        # this backend breaks the body only, not the grad mode it leaves behind.
        torch._C._set_grad_enabled(False if flipped_off else before)
        return out


class StaleGradModeCache(_Wrapping):
    """Drops the ambient grad mode from the cache key: a later call under another mode
    reuses the mode of the first compilation (recompiles: too few; flags)."""

    fault = "ambient grad mode dropped from the cache key"

    def cache_key(self, args) -> tuple:
        return super().cache_key(args)[1:]

    def call(self, fn, args, compiled):
        with torch.set_grad_enabled(compiled.keys[compiled.current_key]):
            out = fn(*args)
            after = torch.is_grad_enabled()
        torch._C._set_grad_enabled(after)
        return out


class RecompilesEveryCall(_Wrapping):
    """Never hits its cache (recompiles: too many)."""

    fault = "cache never hits"

    def compile(self, fn):
        compiled = super().compile(fn)
        inner = compiled

        def again(*args):
            inner.keys.clear()
            return inner(*args)

        again.stats = inner.stats
        return again


class ForgetsGradModeChange(_Wrapping):
    """Restores the ambient grad mode after each call, so a program that leaves grad
    disabled on return is not reflected (grad_mode), as a compiler that tracks grad
    mode only inside its trace would."""

    fault = "grad mode change not written back after the call"

    def call(self, fn, args, compiled):
        before = torch.is_grad_enabled()
        try:
            return fn(*args)
        finally:
            torch._C._set_grad_enabled(before)


class IgnoresGradModeCalls(_Wrapping):
    """Treats torch._C._set_grad_enabled as a no-op inside the body, as thunder did before
    it supported no_grad (flags, gradients)."""

    fault = "torch._C._set_grad_enabled ignored"

    def call(self, fn, args, compiled):
        with grad_mode.replaced_set_grad_enabled(lambda original, mode: None):
            return fn(*args)


class InlinesFunctions(_Wrapping):
    """Runs a torch.autograd.Function's forward as plain code, in the caller's grad mode, and
    differentiates it instead of calling its backward (gradients, flags)."""

    fault = "autograd.Function forward inlined"

    class _Context:
        def save_for_backward(self, *tensors):
            pass

        def mark_non_differentiable(self, *tensors):
            pass

    def call(self, fn, args, compiled):
        with grad_mode.replaced_function_apply(lambda cls, *a: cls.forward(self._Context(), *a)):
            return fn(*args)


class ScalesGradients(_Wrapping):
    """Doubles the gradient reaching each input (gradients, and nothing else)."""

    fault = "input gradients doubled"

    def call(self, fn, args, compiled):
        for a in args:
            if isinstance(a, torch.Tensor) and a.requires_grad:
                a.register_hook(lambda g: g * 2)
        return fn(*args)


class PerturbsOutputs(_Wrapping):
    """Adds 0.5 to floating outputs, without touching their autograd flags (outputs)."""

    fault = "floating outputs off by 0.5"

    def call(self, fn, args, compiled):
        out = fn(*args)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out

        def bump(x):
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
                with torch.no_grad():
                    y = x.detach() + 0.5
                return y.requires_grad_() if x.requires_grad and x.is_leaf else (x + 0.5 if x.requires_grad else y)
            return x

        outs = tuple(bump(x) for x in outs)
        return outs[0] if single else outs


class RaisesOnGradModeCalls(_Wrapping):
    """Raises NotImplementedError when the body changes grad mode (exceptions)."""

    fault = "raises on any grad-mode change"

    def call(self, fn, args, compiled):
        def refuse(original, mode):
            raise NotImplementedError("grad mode changes are not supported")

        with grad_mode.replaced_set_grad_enabled(refuse):
            return fn(*args)


class IgnoresAutocast(_Wrapping):
    """Runs `with torch.autocast(...)` regions and `@torch.autocast(...)` functions as plain
    code: a matmul in one computes in float32, not bfloat16 (outputs)."""

    fault = "ignores autocast regions"

    def call(self, fn, args, compiled):
        with grad_mode.autocast_ignored():
            return fn(*args)


class IgnoresAmbientAutocast(_Wrapping):
    """Runs the function outside the caller's autocast (on the CPU): a matmul computes in
    float32 where the caller asked for bfloat16 (outputs), as a compiler that reads autocast
    only from regions inside the function would."""

    fault = "ignores the caller's autocast"

    def call(self, fn, args, compiled):
        with torch.autocast("cpu", enabled=False):
            return fn(*args)


class StaleAutocastCache(_Wrapping):
    """Drops the caller's autocast from the cache key: a later call under another autocast
    state reuses the state of the first compilation (outputs, recompiles: too few)."""

    fault = "caller's autocast dropped from the cache key"

    def cache_key(self, args) -> tuple:
        return super().cache_key(args)[:-1]

    def call(self, fn, args, compiled):
        first = compiled.__dict__.setdefault("autocast", {}).setdefault(
            compiled.current_key, torch.is_autocast_enabled("cpu"))
        with torch.autocast("cpu", enabled=first):
            return fn(*args)


class DropsCreateGraph(_Wrapping):
    """Takes every `torch.autograd.grad` inside the function without `create_graph`: the
    gradient does not require grad, and nothing flows back through it (flags, gradients)."""

    fault = "torch.autograd.grad's create_graph ignored"

    def call(self, fn, args, compiled):
        with grad_mode.replaced_autograd_grad(lambda grad, *a, **k: grad(*a, **(k | {"create_graph": False}))):
            return fn(*args)


class DropsBufferUpdates(_Wrapping):
    """Sets a module's buffers back after each call, as a compiler that updates a functional
    copy of them and never writes it back would: running statistics stay as they were (outputs
    of a later call, the buffer after the call)."""

    fault = "buffer updates not written back"

    def call(self, fn, args, compiled):
        buffers = list(fn.buffers()) if isinstance(fn, torch.nn.Module) else []
        with torch.no_grad():
            before = [b.clone() for b in buffers]
        try:
            return fn(*args)
        finally:
            with torch.no_grad():
                for b, old in zip(buffers, before):
                    b.copy_(old)


class StaleParameterValues(_Wrapping):
    """Computes with the parameter values of its first call, as a compiler that baked them in
    would: gradients still reach the parameters, but after the caller's optimizer step a later
    call's outputs are those of the old weights (outputs)."""

    fault = "parameter values of the first call reused"

    def call(self, fn, args, compiled):
        if not isinstance(fn, torch.nn.Module):
            return fn(*args)
        params = dict(fn.named_parameters())
        with torch.no_grad():
            first = compiled.__dict__.setdefault("first_values", {n: p.clone() for n, p in params.items()})
        # p + (old - p).detach(): the old value, with the gradient of p itself
        stale = {n: p + (first[n] - p).detach() for n, p in params.items()}
        return torch.func.functional_call(fn, stale, args)


class StaleTrainingMode(_Wrapping):
    """Drops a module's training flag from the cache key, as a compiler that read `self.training`
    once and never checks it again would: after `model.eval()`, the forward still computes as
    in training (outputs, recompiles: too few)."""

    fault = "training flag of a module dropped from the cache key"

    def module_key(self, fn) -> tuple:
        return ()

    def call(self, fn, args, compiled):
        if not isinstance(fn, torch.nn.Module):
            return fn(*args)
        first, now = compiled.__dict__.setdefault("training", {}).setdefault(compiled.current_key, fn.training), fn.training
        fn.train(first)
        try:
            return fn(*args)
        finally:
            fn.train(now)


class StaleGradientReads(_Wrapping):
    """Reads a module's parameters' `.grad` as it was at the first call, as a compiler that
    traced `p.grad is None` once and never checks it again would: where the caller keeps the
    gradients from call to call, the forward still sees none (outputs)."""

    fault = "gradients read inside the function as at the first call"

    def call(self, fn, args, compiled):
        if not isinstance(fn, torch.nn.Module):
            return fn(*args)
        params = list(fn.parameters())
        first = compiled.__dict__.setdefault("grads", [None if p.grad is None else p.grad.clone() for p in params])
        now = [p.grad for p in params]
        for p, g in zip(params, first):
            p.grad = g
        try:
            return fn(*args)
        finally:  # the caller's backward accumulates into the gradients it kept
            for p, g in zip(params, now):
                p.grad = g


FAULTS = {
    "always_grad": AlwaysGrad,
    "stale_grad_mode_cache": StaleGradModeCache,
    "recompiles_every_call": RecompilesEveryCall,
    "forgets_grad_mode_change": ForgetsGradModeChange,
    "ignores_grad_mode_calls": IgnoresGradModeCalls,
    "inlines_functions": InlinesFunctions,
    "scales_gradients": ScalesGradients,
    "perturbs_outputs": PerturbsOutputs,
    "raises_on_grad_mode_calls": RaisesOnGradModeCalls,
    "ignores_autocast": IgnoresAutocast,
    "ignores_ambient_autocast": IgnoresAmbientAutocast,
    "stale_autocast_cache": StaleAutocastCache,
    "drops_create_graph": DropsCreateGraph,
    "drops_buffer_updates": DropsBufferUpdates,
    "stale_parameter_values": StaleParameterValues,
    "stale_training_mode": StaleTrainingMode,
    "stale_gradient_reads": StaleGradientReads,
}

# Factories for SPECs: conformance.backends.faulty:<name>
for _name, _cls in FAULTS.items():
    globals()[_name] = _cls


class _FailsInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("chaotic backend: raised in backward")


class Chaotic(_Wrapping):
    """For the soak (conformance/soak.py): at seeded random points it raises (compile, call,
    backward, cache_stats, trace_facts) or leaves torch's global state changed (grad mode,
    inference mode, autocast, the default dtype). What it did is counted in `done`."""

    fault = "raises at random points and leaves global state changed"
    FAULTS = ("compile", "call", "backward", "cache_stats", "trace_facts",
              "grad mode", "inference mode", "autocast", "default dtype")
    P = 0.05  # per fault and chance: most examples see none, every fault shows in a few hundred

    def __init__(self, seed: int = 0):
        super().__init__()
        import random
        from collections import Counter

        self.random = random.Random(seed)
        self.done: Counter = Counter()
        self.leaked: list = []  # inference-mode contexts entered and never exited, kept alive

    def _chance(self, fault: str) -> bool:
        if self.random.random() < self.P:
            self.done[fault] += 1
            return True
        return False

    def compile(self, fn):
        if self._chance("compile"):
            raise RuntimeError("chaotic backend: raised in compile")
        return super().compile(fn)

    def call(self, fn, args, compiled):
        if self._chance("call"):
            raise RuntimeError("chaotic backend: raised in call")
        out = fn(*args)
        if self._chance("backward"):
            out = tuple(_FailsInBackward.apply(x) if isinstance(x, torch.Tensor) and x.requires_grad else x
                        for x in (out if isinstance(out, tuple) else (out,)))
            out = out if len(out) > 1 else out[0]
        if self._chance("grad mode"):
            torch.set_grad_enabled(not torch.is_grad_enabled())
        if self._chance("inference mode"):
            cm = torch.inference_mode()
            cm.__enter__()
            self.leaked.append(cm)
        if self._chance("autocast"):
            torch.set_autocast_enabled("cpu", True)
            torch.set_autocast_dtype("cpu", torch.float16)
        if self._chance("default dtype"):
            torch.set_default_dtype(torch.float64)
        return out

    def cache_stats(self, compiled):
        if self._chance("cache_stats"):
            raise RuntimeError("chaotic backend: raised in cache_stats")
        return super().cache_stats(compiled)

    def trace_facts(self, compiled):
        if self._chance("trace_facts"):
            raise RuntimeError("chaotic backend: raised in trace_facts")
        return None


chaotic = Chaotic
